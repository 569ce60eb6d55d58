"""Credentials signed with the cluster key: a changed, foreign, stale or misapplied one does not verify."""

from __future__ import annotations

import os
import time

from slurmlet.common import cred

FOR = cred.bind("POST", "/api/v1/jobs", b'{"script": "x"}')


def test_a_signed_credential_verifies_and_a_changed_one_does_not():
    key = os.urandom(32).hex().encode()
    c = cred.sign(key, 1000, "alice", FOR)
    uid, user, nonce, made = cred.verify(key, c, FOR)
    assert (uid, user) == (1000, "alice") and len(nonce) == 16 and abs(made - time.time()) < 60
    assert cred.verify(key, c.replace(":1000:", ":0:"), FOR) is None
    assert cred.verify(b"another key", c, FOR) is None
    assert cred.sign(key, 1000, "alice", FOR) != c  # a nonce of its own each time


def test_a_credential_is_for_the_request_it_names():
    key = b"k" * 32
    c = cred.sign(key, 1000, "alice", FOR)
    for other in (cred.bind("POST", "/api/v1/jobs", b'{"script": "y"}'), cred.bind("PUT", "/api/v1/jobs", b'{"script": "x"}'),
                  cred.bind("POST", "/api/v1/jobs?x=1", b'{"script": "x"}'), ""):
        assert cred.verify(key, c, other) is None
    assert cred.verify(key, c.replace(FOR, cred.bind("GET", "/")), cred.bind("GET", "/")) is None  # the MAC covers it


def test_a_credential_outside_its_lifetime_does_not_verify():
    key = b"k" * 32
    c = cred.sign(key, 1000, "alice", FOR, now=10_000.0)
    assert cred.verify(key, c, FOR, now=10_000.0 + cred.CRED_TTL)[:2] == (1000, "alice")
    assert cred.verify(key, c, FOR, now=10_000.0 + cred.CRED_TTL + 1) is None
    assert cred.verify(key, c, FOR, now=10_000.0 - cred.CRED_SKEW)[:2] == (1000, "alice")
    assert cred.verify(key, c, FOR, now=10_000.0 - cred.CRED_SKEW - 1) is None  # dated too far ahead


def test_a_nonce_is_good_once_for_its_credentials_lifetime():
    from slurmlet.controller.auth import Nonces
    n = Nonces()
    assert n.first_use("a", 0.0) and not n.first_use("a", 1.0) and n.first_use("b", 1.0)
    n.high = 2  # the next use prunes: "a" and "b" have not expired yet, so they stay refused
    assert n.first_use("c", 2.0) and not n.first_use("a", 3.0)
    later = cred.CRED_TTL + cred.CRED_SKEW + 10.0
    n.high = 0
    assert n.first_use("d", later) and "a" not in n.until  # expired ones are forgotten


def test_credentials_made_before_the_controller_started_are_refused():
    """Nonces live in memory: one used with the controller before a restart is refused by this one."""
    from slurmlet.controller.auth import Nonces
    n = Nonces(since=1000.7)
    assert not n.first_use("a", 1001.0, made=999) and n.first_use("b", 1001.0, made=1000)
