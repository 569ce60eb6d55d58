"""Credentials signed with the cluster key: a changed, foreign or stale one does not verify."""

from __future__ import annotations

import os

from slurmlet.common import cred


def test_a_signed_credential_verifies_and_a_changed_one_does_not():
    key = os.urandom(32).hex().encode()
    c = cred.sign(key, 1000, "alice")
    assert cred.verify(key, c) == (1000, "alice")
    assert cred.verify(key, c.replace(":1000:", ":0:")) is None
    assert cred.verify(b"another key", c) is None


def test_a_credential_outside_its_lifetime_does_not_verify():
    key = b"k" * 32
    c = cred.sign(key, 1000, "alice", now=10_000.0)
    assert cred.verify(key, c, now=10_000.0 + cred.CRED_TTL) == (1000, "alice")
    assert cred.verify(key, c, now=10_000.0 + cred.CRED_TTL + 1) is None
    assert cred.verify(key, c, now=10_000.0 - cred.CRED_TTL - 1) is None
