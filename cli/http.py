"""A minimal HTTP/1.1 JSON client for the CLI.

The CLI is run in loops by other tools, so this avoids `http.client` (which pulls in the email
package): it speaks HTTP/1.1 over a plain socket, with the standard library's `json`.
The controller is found through `SLURMLET_CONTROLLER`, else the running `slurmlet up`
(`~/.slurmlet/controller`), else 127.0.0.1:6817.
"""

from __future__ import annotations

import json
import os
import socket

DEFAULT = "http://127.0.0.1:6817"


class ControllerError(Exception):
    """The controller refused a request: `error` is Slurm's message, `pre` any lines before it."""

    def __init__(self, status: int, error: str, pre: list[str] | None = None, code: int = 1):
        super().__init__(error)
        self.status = status
        self.error = error
        self.pre = pre or []
        self.code = code


class Unreachable(Exception):
    """No controller answers at the configured address."""


def controller_url() -> str:
    url = os.environ.get("SLURMLET_CONTROLLER")
    if url:
        return url if "://" in url else "http://" + url
    path = os.path.join(os.path.expanduser("~"), ".slurmlet", "controller")
    try:
        with open(path) as f:
            v = f.read().strip()
            if v:
                return v
    except OSError:
        pass
    return DEFAULT


def _split(url: str) -> tuple[str, int]:
    rest = url.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.partition(":")
    return host or "127.0.0.1", int(port.split("/")[0] or 80)


def request(method: str, path: str, body: object = None, *, url: str | None = None,
            timeout: float = 30.0, headers: dict[str, str] | None = None, signed: bool = False) -> object:
    """One JSON request; returns the decoded answer or raises ControllerError / Unreachable
    (no connection, or the connection lost before a whole answer came). Changes carry a credential
    for this one request (common/cred.py); reads only when `signed` (what only an owner may read)."""
    host, port = _split(url or controller_url())
    payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    auth = ""
    if method != "GET" or signed:
        from slurmlet.common import cred
        c = cred.header_for_me(cred.bind(method, path, payload))
        if c is not None:
            auth = f"{cred.HEADER}: {c}\r\n"
    for k, v in (headers or {}).items():
        auth += f"{k}: {v}\r\n"
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n{auth}"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n").encode()
    try:
        # a bytes host skips the idna codec (and the `re` import it brings)
        infos = socket.getaddrinfo(host.encode("ascii", "replace"), port, socket.AF_UNSPEC, socket.SOCK_STREAM)
        fam, typ, proto, _, addr = infos[0]
        s = socket.socket(fam, typ, proto)
        try:
            s.settimeout(timeout)
            s.connect(addr)
            s.sendall(head + payload)
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        finally:
            s.close()
    except OSError as e:
        raise Unreachable(f"Unable to contact slurm controller (connect failure) at {host}:{port}: {e}") from None
    raw = b"".join(chunks)
    sep = raw.find(b"\r\n\r\n")
    if sep < 0:
        raise Unreachable("malformed answer from the controller")
    header, data = raw[:sep].decode("latin-1"), raw[sep + 4:]
    try:
        status = int(header.split(" ", 2)[1])
        if "transfer-encoding: chunked" in header.lower():
            data = _dechunk(data)
        doc = json.loads(data) if data else None
    except (ValueError, IndexError):  # not the controller's JSON (a proxy's error page, a cut answer)
        first = header.split("\r\n", 1)[0][:100]
        raise Unreachable(f"Unexpected answer from the slurm controller at {host}:{port}: {first}") from None
    if status >= 400:
        detail = doc.get("detail") if isinstance(doc, dict) else None
        if isinstance(detail, dict):
            raise ControllerError(status, detail.get("error", ""), detail.get("pre"), detail.get("code", 1))
        if isinstance(detail, list):  # pydantic validation: name the field
            msgs = ["{}: {}".format(".".join(str(p) for p in d.get("loc", [])[1:]), d.get("msg")) for d in detail]
            raise ControllerError(status, "; ".join(msgs))
        raise ControllerError(status, str(detail or doc))
    return doc


def _dechunk(data: bytes) -> bytes:
    out = []
    i = 0
    while True:
        j = data.find(b"\r\n", i)
        size = int(data[i:j].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[j + 2:j + 2 + size])
        i = j + 2 + size + 2


def submit_once(path: str, body: object) -> dict:
    """POST a submission with an idempotency key of this invocation's own, and try once more if the
    connection failed: if the first attempt did reach the controller (its answer was lost), the
    controller answers the retry with that job rather than making a second one."""
    headers = {"Idempotency-Key": os.urandom(16).hex()}
    try:
        return request("POST", path, body, headers=headers)
    except Unreachable:
        import time
        time.sleep(1.0)
    return request("POST", path, body, headers=headers)
