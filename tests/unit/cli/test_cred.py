"""The CLI's HMAC-SHA256 (over the built-in SHA-256, to start fast) is the standard one."""

from __future__ import annotations

import hmac
import os

from hypothesis import given, strategies as st

from cli import cred


@given(key=st.binary(min_size=0, max_size=200), text=st.text(max_size=300))
def test_mac_is_hmac_sha256(key: bytes, text: str):
    assert cred._mac(key, text) == hmac.new(key, text.encode(), "sha256").hexdigest()


def test_a_signed_credential_verifies_and_a_changed_one_does_not():
    key = os.urandom(32).hex().encode()
    c = cred.sign(key, 1000, "alice")
    assert cred.verify(key, c) == (1000, "alice")
    assert cred.verify(key, c.replace(":1000:", ":0:")) is None
    assert cred.verify(b"another key", c) is None


def test_signing_loads_no_openssl(tmp_path):
    """Every sbatch/scancel signs: it must not pay for hmac's OpenSSL (about 2.4 ms at start)."""
    import subprocess
    import sys
    key = tmp_path / "key"
    key.write_text(os.urandom(32).hex())
    code = ("import sys\nfrom cli import cred\nassert cred.header_for_me()\n"
            "print(','.join(m for m in ('hmac', '_hashlib', 'hashlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, SLURMLET_KEY_FILE=str(key)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
