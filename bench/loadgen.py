"""Load against a running controller, shared by bench/bench.py and tests/e2e/test_load.py.

* `submit`: N job submissions through the REST API from C concurrent clients, each an httpx
  AsyncClient holding one keep-alive connection, every request signed with the cluster key as the
  CLI signs it (cli/cred.py). Single jobs (POST /api/v1/jobs) or batches (POST /api/v1/jobs/batch).
* `SimAgents`: registered nodes whose sync loop runs in this process: the body the real agent sends
  (nodeagent/agent.py `Agent._serve`: running/finished/... lists, `wait` 0 until registered and
  LONG_POLL after, cpu_load and free_mem), one long-poll after another. A launch order is answered
  as a job that ran `true`: reported finished, exit 0, on the next sync.

Everything runs on the caller's asyncio loop; nothing here sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
import grp
import os
import time
from dataclasses import dataclass, field

import httpx

from slurmlet.common import cred
from slurmlet.nodeagent.agent import LONG_POLL


def me() -> dict:
    """user/uid/gid/group of this process, as sbatch fills them in."""
    uid, user = cred.current_user()
    gid = os.getgid()
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    return {"user": user, "uid": uid, "gid": gid, "group": group}


def job_body(workdir: str, *, hold: bool = True, name: str = "load", partition: str | None = None) -> dict:
    """A `sbatch --wrap true` job's body (held unless told otherwise), output to /dev/null."""
    body = {"script": "#!/bin/sh\ntrue\n", "name": name, "workdir": workdir, "submit_dir": workdir,
            "stdout": "/dev/null", "hold": hold, **me()}
    if partition:
        body["partition"] = partition
    return body


def _signer(key: bytes, uid: int, user: str):
    async def sign(request: httpx.Request) -> None:
        binding = cred.bind(request.method, request.url.raw_path.decode("ascii"), request.content)
        request.headers[cred.HEADER] = cred.sign(key, uid, user, binding)
    return sign


def client(url: str, key: bytes, *, uid: int | None = None, user: str | None = None,
           timeout: float = 60.0) -> httpx.AsyncClient:
    """A keep-alive client whose requests carry a fresh credential (this process's user unless told)."""
    if uid is None or user is None:
        uid, user = cred.current_user()
    return httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(timeout, connect=10.0),
                             limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                             event_hooks={"request": [_signer(key, uid, user)]})


@dataclass
class SubmitResult:
    ids: list[int] = field(default_factory=list)  #: acknowledged job ids, in acknowledgement order
    latencies: list[float] = field(default_factory=list)  #: seconds per request
    errors: list[str] = field(default_factory=list)  #: "STATUS body" of refused requests
    elapsed: float = 0.0
    requests: int = 0


async def submit(url: str, key: bytes, body: dict | list[dict], n: int, *, concurrency: int = 8, batch: int = 0,
                 ready=None) -> SubmitResult:
    """Submit `n` jobs from `concurrency` clients: `n` copies of `body`, or the `n` bodies of a list;
    one job per request, or `batch` jobs per POST /api/v1/jobs/batch when `batch` > 0. The clients
    connect first (a ping each), then `ready()` is called, if given, and the clock starts."""
    res = SubmitResult()
    bodies = body if isinstance(body, list) else [body] * n
    assert len(bodies) == n
    per = max(1, batch)
    todo = iter([bodies[i:i + per] for i in range(0, n, per)])

    async def worker(cl: httpx.AsyncClient) -> None:
        for chunk in todo:
            t = time.perf_counter()
            if batch:
                r = await cl.post("/api/v1/jobs/batch", json={"jobs": chunk})
            else:
                r = await cl.post("/api/v1/jobs", json=chunk[0])
            res.latencies.append(time.perf_counter() - t)
            res.requests += 1
            if r.status_code != 201:
                res.errors.append(f"{r.status_code} {r.text[:300]}")
                continue
            doc = r.json()
            res.ids.extend(doc["job_ids"] if batch else [doc["job_id"]])

    clients = [client(url, key) for _ in range(concurrency)]
    try:
        for cl in clients:
            (await cl.get("/api/v1/ping")).raise_for_status()  # its keep-alive connection, opened
        if ready is not None:
            ready()
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(cl) for cl in clients))
        res.elapsed = time.perf_counter() - t0
    finally:
        for cl in clients:
            await cl.aclose()
    return res


def _submit_child(args: tuple, barrier, out) -> None:
    url, key, body, n, concurrency, batch = args
    try:
        r = asyncio.run(submit(url, key, body, n, concurrency=concurrency, batch=batch, ready=barrier.wait))
        out.put((r.ids, r.latencies, r.errors, r.requests))
    except BaseException as e:  # noqa: BLE001 - the parent reports it
        barrier.abort()
        out.put(([], [], [f"client process: {e!r}"], 0))


def submit_procs(url: str, key: bytes, body: dict, n: int, *, procs: int = 2, concurrency: int = 8,
                 batch: int = 0) -> tuple[SubmitResult, float]:
    """`submit` from `procs` processes with concurrency/procs clients each, started together: one
    Python process of httpx clients costs about a millisecond of CPU a request, and cannot keep up
    with the controller alone. Returns the merged result and the client processes' CPU seconds."""
    import multiprocessing
    import resource
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(procs + 1)
    out = ctx.Queue()
    per = max(1, batch)
    chunks = -(-n // per)
    shares = [(chunks * (i + 1) // procs - chunks * i // procs) * per for i in range(procs)]
    shares[-1] -= chunks * per - n
    assert isinstance(body, dict), "one body, copied"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ps = [ctx.Process(target=_submit_child, args=((url, key, body, k, concurrency // procs, batch), barrier, out))
          for k in shares]
    for p in ps:
        p.start()
    res = SubmitResult()
    try:
        barrier.wait(60)
        t0 = time.perf_counter()
        for _ in ps:
            ids, lat, errors, requests = out.get(timeout=600)
            res.ids += ids
            res.latencies += lat
            res.errors += errors
            res.requests += requests
        res.elapsed = time.perf_counter() - t0
    finally:
        for p in ps:
            p.join(30)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return res, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


class SimAgents:
    """`names` as nodes whose agents sync from this process (see the module's docstring)."""

    def __init__(self, url: str, key: bytes, names: list[str], *, cpus: int = 8, memory: int = 16000,
                 long_poll: float = LONG_POLL):
        self.url, self.key, self.names = url, key, list(names)
        self.cpus, self.memory, self.long_poll = cpus, memory, long_poll
        self.registered: set[str] = set()
        self.syncs = 0
        self.errors: list[str] = []
        self.all_registered = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._client: httpx.AsyncClient | None = None

    async def start(self) -> None:
        # one pool for all of them, a connection per agent (as each real agent has its own)
        self._client = httpx.AsyncClient(
            base_url=self.url, timeout=httpx.Timeout(self.long_poll + 30.0, connect=10.0),
            limits=httpx.Limits(max_connections=len(self.names) + 4, max_keepalive_connections=len(self.names) + 4),
            event_hooks={"request": [_signer(self.key, 0, "root")]})  # agents sign as root
        self._tasks = [asyncio.create_task(self._agent(n)) for n in self.names]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
        if self._client is not None:
            await self._client.aclose()

    async def _agent(self, name: str) -> None:
        registered = False
        finished: list[dict] = []
        backoff = 0.1
        resources = {"cpus": self.cpus, "memory": self.memory, "gpus": 0, "gpu_type": None, "addr": "127.0.0.1",
                     "hostname": name, "boot_time": time.time() - 3600, "arch": "x86_64", "os": "Linux sim",
                     "version": "22.05.8", "pool": None}
        while True:
            body: dict = {"running": [], "finished": finished, "suspended": [], "steps_running": [],
                          "steps_finished": [], "scripts_done": [],
                          "wait": 0.0 if finished or not registered else self.long_poll,
                          "cpu_load": 0.05, "free_mem": self.memory - 512}
            if not registered:
                body["resources"] = resources
            try:
                r = await self._client.post(f"/api/v1/nodes/{name}/sync", json=body)
            except httpx.HTTPError as e:
                self.errors.append(f"{name}: {e.__class__.__name__}")
                await asyncio.sleep(backoff)  # the controller is unreachable: the real agent's back-off
                backoff = min(backoff * 2, 5.0)
                continue
            self.syncs += 1
            if r.status_code == 404:
                registered = False
                continue
            if r.status_code >= 400:
                self.errors.append(f"{name}: {r.status_code} {r.text[:200]}")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.1
            if not registered:
                registered = True
                self.registered.add(name)
                if len(self.registered) == len(self.names):
                    self.all_registered.set()
            finished = []
            for order in r.json()["orders"]:
                if order.get("op") == "launch":
                    finished.append({"job_id": order["job_id"], "exit_code": 0, "end_time": time.time(),
                                     "restarts": order.get("restarts")})
                elif order.get("op") == "kill":
                    finished.append({"job_id": order["job_id"], "exit_code": 0, "signal": 15,
                                     "end_time": time.time()})


def percentile(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of `xs`."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]
