"""A minimal HTTP/1.1 client for the CLI.

The CLI is run in loops by other tools, so this avoids `http.client` (which pulls in the email
package): it speaks HTTP/1.1 itself, with JSON request bodies written by cli/jsonwrite.py (no `json`
import). On the controller's host it sends requests through the controller's spool
(controller/spool.py, $SLURMLET_SPOOL) with nothing but `os` and `select`, and takes answers in
`marshal` (no JSON decoder to load); else it uses TCP (the `socket` module, imported then) and JSON.
The controller is found through `SLURMLET_CONTROLLER` (several, primary first, separated by commas:
the requests go to the active one, `_failover`), else the caller's own running `slurmlet up`
(`~/.slurmlet/clusters`: alone, it is used with its spool and key; several are named and none is
picked), else 127.0.0.1:6817 when root or the caller runs what listens there.
"""

from __future__ import annotations

import os

from slurmlet.cli.jsonwrite import dumps
from slurmlet.common.wire import BELL, CLUSTERS_DIR, DEFAULT_PORT, JSON, MARSHAL, SPOOL_ENV, SPOOL_MAX, WITHDRAW

TYPE_CHECKING = False  # keep typing out of the CLI's import path
if TYPE_CHECKING:
    import socket
    from typing import Any

DEFAULT = f"http://127.0.0.1:{DEFAULT_PORT}"


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


_FOUND: list[str] = []  #: the controller this process found (controller_url), once


def controller_url() -> str:
    """The controller's address: SLURMLET_CONTROLLER, else the one local cluster of the caller's own
    (its spool and key are then used as its exports would set them), else DEFAULT where root or the
    caller runs what listens there. Raises Unreachable, naming them, where the caller runs several
    clusters, or where another user's controller holds DEFAULT's port: it never picks one itself."""
    url = os.environ.get("SLURMLET_CONTROLLER")
    if url:
        return url if "://" in url else "http://" + url
    if _FOUND:
        return _FOUND[0]
    mine = own_clusters()
    if len(mine) > 1:
        raise Unreachable("more than one of your clusters is running: " + ", ".join(
            f"{c[0]} (state in {c[4]})" for c in mine) + "; set SLURMLET_CONTROLLER to the one to use "
            "(the exports `slurmlet up --state-dir DIR` prints)")
    if mine:
        url, spool, key = mine[0][:3]
        os.environ.setdefault(SPOOL_ENV, spool)
        os.environ.setdefault("SLURMLET_KEY_FILE", key)
    else:
        owner = listener_uid(DEFAULT_PORT)
        if owner is not None and owner not in (0, os.getuid()):
            raise Unreachable(f"the controller at 127.0.0.1:{DEFAULT_PORT} is run by uid {owner}, not by you or "
                              "root; set SLURMLET_CONTROLLER to use it")
        url = DEFAULT
    _FOUND.append(url)
    return url


def own_clusters() -> list[list[str]]:
    """The caller's running local clusters (`slurmlet up`'s records: address, spool, key file,
    controller pid, state directory), those whose controller is gone left out."""
    home = os.path.join(os.path.expanduser("~"), *CLUSTERS_DIR)
    try:
        names = sorted(os.listdir(home))
    except OSError:
        return []
    out = []
    for name in names:
        try:
            with open(os.path.join(home, name)) as f:
                lines = f.read().split("\n")
        except OSError:
            continue
        if len(lines) > 4 and lines[3].isdigit() and os.path.exists(f"/proc/{lines[3]}"):
            out.append(lines[:5])
    return out


def listener_uid(port: int) -> int | None:
    """Whose process listens on this host's TCP `port` (the kernel's socket table), None: nobody's."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().split("\n")[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 7 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                return int(cols[7])
    return None


def host_port(url: str) -> tuple[str, int]:
    """(host, port) of an address (the first of a list of several)."""
    rest = url.split(",", 1)[0].split("://", 1)[-1].rstrip("/")
    host, _, port = rest.partition(":")
    return host or "127.0.0.1", int(port.split("/")[0] or 80)


def exchange(method: str, path: str, body: object = None, *, url: str | None = None, timeout: float = 30.0,
             headers: dict[str, str] | None = None, signed: bool = False) -> tuple[int, str, bytes]:
    """One request: (status, the answer's header lines, its body), undecoded; raises Unreachable
    (no connection, or the connection lost before a whole answer came). On this host it goes through
    the controller's spool ($SLURMLET_SPOOL), where the kernel says who we are; else, or when the
    spool does not serve it (no spool, not taken, 421: another controller's), by TCP, where changes
    carry a credential for this one request (common/cred.py) and reads do when `signed` (what only
    an owner may read)."""
    urls = (url or controller_url()).split(",")
    host, port = host_port(urls[0])
    payload = b"" if body is None else dumps(body).encode("ascii")
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    if url is None:  # answers from this host's controller may come as marshal: no JSON decoder to load
        local = _head(method, path, host, port, f"Accept: {MARSHAL}, {JSON}\r\n" + extra, payload) + payload
        answer = _spooled(local, timeout)  # (one taken and not answered whole is not sent again: Unreachable)
        if answer is not None:
            status, header, data = _parsed(answer, host, port)
            if status != 421:
                return status, header, data
    sign = method != "GET" or signed
    if len(urls) == 1:
        return _tcp(method, path, payload, extra, sign, host, port, timeout)
    return _failover(method, path, payload, extra, sign, urls, timeout)


class _NoConnection(Unreachable):
    """The connection could not be made: nothing of the request was sent."""


def _tcp(method: str, path: str, payload: bytes, extra: str, sign: bool, host: str, port: int,
         timeout: float) -> tuple[int, str, bytes]:
    """The request sent by TCP to one controller, changes (and reads when `sign`) with a credential for
    this one attempt (common/cred.py)."""
    if sign:
        from slurmlet.common import cred
        c = cred.header_for_me(cred.bind(method, path, payload))
        if c is not None:
            extra = f"{cred.HEADER}: {c}\r\n" + extra
    import socket
    try:
        # a bytes host skips the idna codec (and the `re` import it brings)
        infos = socket.getaddrinfo(host.encode("ascii", "replace"), port, socket.AF_UNSPEC, socket.SOCK_STREAM)
        fam, typ, proto, _, addr = infos[0]
        s = socket.socket(fam, typ, proto)
        s.settimeout(timeout)
        s.connect(addr)
    except OSError as e:
        raise _NoConnection(f"Unable to contact slurm controller (connect failure) at {host}:{port}: {e}") from None
    status, header, data = _over(s, _head(method, path, host, port, extra, payload) + payload, host, port)
    if _marshal(header):  # (not asked for: marshal is for this host's controller)
        raise Unreachable(f"Unexpected answer from the slurm controller at {host}:{port}: {MARSHAL} over TCP")
    return status, header, data


_ACTIVE: list[int] = []  #: where this process last found the active controller among several


def _failover(method: str, path: str, payload: bytes, extra: str, sign: bool, urls: list[str],
              timeout: float) -> tuple[int, str, bytes]:
    """The request to the active one of several controllers (slurm.conf's SlurmctldHost), tried in
    order as 22.05's clients do, from where the active one was last found: past one that cannot be
    reached and one in standby (common/wire.STANDBY). While none is active (a backup is taking
    over), again each second, for up to 1.5 SlurmctldTimeout (a standby says it) from the first try, or
    MESSAGE_TIMEOUT where nobody answers. A read also goes on past a controller that took it and
    gave no answer (a paused one); a change is not sent twice (it may have been carried out), but a
    retry of it goes to the next controller first."""
    import time

    from slurmlet.common.wire import MESSAGE_TIMEOUT, STANDBY
    start = time.monotonic()
    until = start + MESSAGE_TIMEOUT
    first = _ACTIVE[0] if _ACTIVE else 0
    err: Unreachable | None = None
    while True:
        for k in range(len(urls)):
            i = (first + k) % len(urls)
            host, port = host_port(urls[i])
            try:
                status, header, data = _tcp(method, path, payload, extra, sign, host, port, timeout)
            except _NoConnection as e:
                err = e
                continue
            except Unreachable as e:
                if method != "GET":  # (a retry, as sbatch's with its Idempotency-Key, goes to the next first)
                    _ACTIVE[:] = [(i + 1) % len(urls)]
                    raise
                err = e
                continue
            if status == 503:
                wait = _header(header, STANDBY)
                if wait is not None:
                    try:  # (a backup in standby says how long a takeover may take)
                        until = start + 1.5 * float(wait)
                    except ValueError:
                        pass
                    err = Unreachable(f"Slurm backup controller in standby mode at {host}:{port}")
                    continue
            _ACTIVE[:] = [i]
            return status, header, data
        if time.monotonic() + 1 > until:
            assert err is not None
            raise err
        time.sleep(1.0)


def _header(header: str, name: str) -> str | None:
    """The value of header line `name` (lower case) in an answer's header lines (None: none)."""
    for line in header.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name:
            return v.strip()
    return None


def _marshal(header: str) -> bool:
    """Whether an answer's header lines say its body is marshal."""
    return f"\r\ncontent-type: {MARSHAL}" in header.lower()


def _head(method: str, path: str, host: str, port: int, extra: str, payload: bytes) -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n{extra}"
            f"Content-Type: {JSON}\r\nContent-Length: {len(payload)}\r\n\r\n").encode()


def _spooled(request: bytes, timeout: float) -> bytes | None:
    """The answer to a request sent through the controller's spool, $SLURMLET_SPOOL (see
    controller/spool.py), with nothing but `os` and `select`; None where it was not served so (no
    spool, nobody rings for it, not taken within common/wire.WITHDRAW seconds, refused with an answer
    of nothing): then TCP. Raises Unreachable when it was taken and no answer came within `timeout`
    seconds (it may have been carried out: it is not sent again)."""
    spool = os.environ.get(SPOOL_ENV)
    if not spool or len(request) > SPOOL_MAX:
        return None
    me = os.getuid()
    try:  # root's or one's own: another user's would read what we send
        if os.stat(spool).st_uid not in (0, me):
            return None
    except OSError:
        return None
    ring = None
    for bell, owners in ((f"{spool}/{BELL}.{me}", (me,)), (f"{spool}/{BELL}", (0, me))):
        try:  # one's own bell (the controller makes it), else the shared one
            if os.lstat(bell).st_uid in owners:
                ring = os.open(bell, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # ENXIO: nobody reads it
                break
        except OSError:
            continue
    if ring is None:
        return None
    name = os.urandom(16).hex()
    req, out = f"{spool}/{name}.req", f"{spool}/{name}.out"
    fd = None
    try:
        try:
            w = os.open(req, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:  # exactly 0600 whatever the umask: the controller takes no other
                os.fchmod(w, 0o600)
                view = memoryview(request)
                while view:
                    view = view[os.write(w, view):]
            finally:
                os.close(w)
            os.mkfifo(out, 0o600)
            fd = os.open(out, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
            os.fchmod(fd, 0o600)
            os.write(ring, f"{name}\n".encode())  # (one write, under PIPE_BUF: never split)
        except OSError:
            _remove(req, out)
            return None
        finally:
            os.close(ring)
        import select
        import time
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout
        taken = False
        chunks = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Unreachable(f"the slurm controller did not answer within {timeout:g} s")
            if not poll.poll(min(left, WITHDRAW) * 1000 if not taken else left * 1000):
                if not taken:
                    try:
                        os.unlink(req)  # not taken: withdrawn (of this unlink and the controller's, one wins)
                        _remove(out)
                        return None
                    except OSError:
                        taken = True
                continue
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
            taken = True
        return b"".join(chunks) or None  # (nothing: refused, ask by TCP)
    finally:
        if fd is not None:
            os.close(fd)


def _remove(*paths: str) -> None:
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass


def _over(s: socket.socket, request: bytes, host: str, port: int) -> tuple[int, str, bytes]:
    """The request sent and its answer read on connected socket `s` (closed after)."""
    try:
        with s:
            s.sendall(request)
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
    except OSError as e:
        raise Unreachable(f"Unable to contact slurm controller (connect failure) at {host}:{port}: {e}") from None
    return _parsed(b"".join(chunks), host, port)


def _parsed(raw: bytes, host: str, port: int) -> tuple[int, str, bytes]:
    """An HTTP answer read whole: (status, header lines, body); Unreachable when it is none."""
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
    return status, header, data


def request(method: str, path: str, body: object = None, *, url: str | None = None,
            timeout: float = 30.0, headers: dict[str, str] | None = None, signed: bool = False) -> Any:
    """One JSON request; returns the decoded answer or raises ControllerError / Unreachable
    (see `exchange`)."""
    status, header, data = exchange(method, path, body, url=url, timeout=timeout, headers=headers, signed=signed)
    return decoded(status, header, data, url)


def decoded(status: int, header: str, data: bytes, url: str | None = None) -> Any:
    try:
        if not data:
            doc = None
        elif _marshal(header):  # (only this host's controller sends it: exchange refuses it over TCP)
            import marshal
            doc = marshal.loads(data)
        else:
            import json
            doc = json.loads(data)
    except (ValueError, IndexError, EOFError, TypeError):
        # not the controller's JSON (a proxy's error page, a cut answer)
        host, port = host_port(url or controller_url())
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
    value = _header(header, "location")
    tail = value.rsplit("/", 1)[-1] if value is not None else ""
    return int(tail) if tail.isdigit() else None


def _dechunk(data: bytes) -> bytes:
    out: list[bytes] = []
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
    return decoded(status, header, data, None)
