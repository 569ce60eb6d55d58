"""A minimal HTTP/1.1 JSON client for the CLI.

The CLI is run in loops by other tools, so this avoids `http.client` (which pulls in the email
package): it speaks HTTP/1.1 over a plain socket, with the standard library's `json` for answers
(imported when one is decoded) and Python literals for request bodies (common/wire.py).
The controller is found through `SLURMLET_CONTROLLER`, else the running `slurmlet up`
(`~/.slurmlet/controller`), else 127.0.0.1:6817.
"""

from __future__ import annotations

import os
import socket

from slurmlet.common.wire import LITERAL, LITERAL_MAX

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


def _local(timeout: float) -> socket.socket | None:
    """A connection to the controller's Unix socket, $SLURMLET_SOCKET (`slurmlet up` exports it),
    where the kernel tells the controller who we are; None where there is none, or it cannot be
    reached (another host's path, a directory we may not enter, a controller gone): then TCP."""
    path = os.environ.get("SLURMLET_SOCKET")
    if not path:
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
        return s
    except OSError:
        s.close()
        return None


def _encode(body: object) -> tuple[bytes, str]:
    """A request body: a Python literal (common/wire.py) when small, else JSON."""
    text = ascii(body)
    if len(text) <= LITERAL_MAX:
        return text.encode("ascii"), LITERAL
    import json
    return json.dumps(body, separators=(",", ":")).encode(), "application/json"


def exchange(method: str, path: str, body: object = None, *, url: str | None = None, timeout: float = 30.0,
             headers: dict[str, str] | None = None, signed: bool = False) -> tuple[int, str, bytes]:
    """One request: (status, the answer's header lines, its body), undecoded; raises Unreachable
    (no connection, or the connection lost before a whole answer came). Changes carry a credential
    for this one request (common/cred.py); reads only when `signed` (what only an owner may read)."""
    host, port = _split(url or controller_url())
    payload, ctype = (b"", "application/json") if body is None else _encode(body)
    s = _local(timeout) if url is None else None
    local = s is not None
    auth = ""
    if (method != "GET" or signed) and s is None:  # on the local socket the kernel says who we are
        from slurmlet.common import cred
        c = cred.header_for_me(cred.bind(method, path, payload))
        if c is not None:
            auth = f"{cred.HEADER}: {c}\r\n"
    for k, v in (headers or {}).items():
        auth += f"{k}: {v}\r\n"
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n{auth}"
            f"Content-Type: {ctype}\r\nContent-Length: {len(payload)}\r\n\r\n").encode()
    try:
        if s is None:
            # a bytes host skips the idna codec (and the `re` import it brings)
            infos = socket.getaddrinfo(host.encode("ascii", "replace"), port, socket.AF_UNSPEC, socket.SOCK_STREAM)
            fam, typ, proto, _, addr = infos[0]
            s = socket.socket(fam, typ, proto)
            s.settimeout(timeout)
            s.connect(addr)
        try:
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
    except (ValueError, IndexError):
        status = 0
    if status < 100:  # not HTTP (or a cut answer)
        first = header.split("\r\n", 1)[0][:100]
        raise Unreachable(f"Unexpected answer from the slurm controller at {host}:{port}: {first}")
    if status == 421 and url is None and local:  # the local socket is another controller's: the one named, by TCP
        return exchange(method, path, body, url=f"http://{host}:{port}", timeout=timeout, headers=headers,
                        signed=signed)
    return status, header, data


def request(method: str, path: str, body: object = None, *, url: str | None = None,
            timeout: float = 30.0, headers: dict[str, str] | None = None, signed: bool = False) -> object:
    """One JSON request; returns the decoded answer or raises ControllerError / Unreachable
    (see `exchange`)."""
    status, header, data = exchange(method, path, body, url=url, timeout=timeout, headers=headers, signed=signed)
    return _decoded(status, header, data, url)


def _decoded(status: int, header: str, data: bytes, url: str | None) -> object:
    import json
    try:
        doc = json.loads(data) if data else None
    except (ValueError, IndexError):  # not the controller's JSON (a proxy's error page, a cut answer)
        host, port = _split(url or controller_url())
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


def _location_id(status: int, header: str) -> int | None:
    """The id a 201's `Location: /api/v1/jobs/ID` names (None: no such header)."""
    if status != 201:
        return None
    for line in header.split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "location":
            tail = value.strip().rsplit("/", 1)[-1]
            return int(tail) if tail.isdigit() else None
    return None


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
    controller answers the retry with that job rather than making a second one. A new job's id is
    read off the answer's Location when there is one (no JSON decoder loaded)."""
    headers = {"Idempotency-Key": os.urandom(16).hex()}
    try:
        status, header, data = exchange("POST", path, body, headers=headers)
    except Unreachable:
        import time
        time.sleep(1.0)
        status, header, data = exchange("POST", path, body, headers=headers)
    job_id = _location_id(status, header)
    if job_id is not None:
        return {"job_id": job_id}
    return _decoded(status, header, data, None)
