"""/metrics on the app in-process: the exposition parses, its values are what squeue and sinfo
would show; 413s for oversized bodies and scripts leave the state unchanged; the 5xx that
fuzzing found (tests/e2e/test_fuzz_api.py) stay 4xx."""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import pytest

from slurmlet.common import wire
from slurmlet.controller.api import limits
from slurmlet.controller.api.schemas import MAX_SCRIPT
from slurmlet.controller.app import create_app
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.runtime import Settings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's note about httpx
    from fastapi.testclient import TestClient

CONF = ("ClusterName=m\nNodeName=node[1-3] CPUs=4 RealMemory=8000\n"
        "PartitionName=debug Nodes=ALL Default=YES\nPartitionName=short Nodes=ALL MaxTime=5\n")
SCRIPT = "#!/bin/sh\nsleep 100\n"

# ---------------------------------------------------------------- a tiny exposition-format parser
_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf'^({_NAME})(?:\{{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\}})? '
                     r'(-?[0-9.eE+-]+|[+-]Inf|NaN)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


def parse_exposition(text: str) -> dict[str, dict]:
    """family -> {"type", "help", "samples": [(name, labels, value)]}; asserts the text format 0.0.4
    rules that Prometheus enforces: HELP and TYPE before the samples, known types, sample names of
    their family, no series twice, a newline at the end."""
    assert text.endswith("\n")
    fams: dict[str, dict] = {}
    seen: set[tuple] = set()
    current = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_ = line[7:].partition(" ")
            assert name not in fams, f"family {name} twice"
            fams[name] = current = {"help": help_, "type": None, "samples": []}
            current["name"] = name
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert current is not None and current["name"] == name, line
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            current["type"] = kind
        else:
            m = _SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            name, labels_text, value = m.groups()
            assert current is not None and current["type"], line
            fam = current["name"]
            assert name in [fam + s for s in _SUFFIXES.get(current["type"], ("",))], (name, fam)
            labels = dict(_LABEL.findall(labels_text or ""))
            key = (name, tuple(sorted(labels.items())))
            assert key not in seen, f"series twice: {line}"
            seen.add(key)
            current["samples"].append((name, labels, float(value.replace("Inf", "inf"))))
    return fams


def values(fams: dict, name: str, label: str) -> dict[str, float]:
    return {lab[label]: v for n, lab, v in fams[name]["samples"] if n == name}


# ---------------------------------------------------------------- the app
@pytest.fixture
def client(tmp_path: Path):
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(CONF),
                              debounce=0.0))
    with TestClient(app) as c:
        yield c


def _until(pred, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError("timed out")


def _register(client: TestClient, name: str) -> None:
    r = client.post(f"/api/v1/nodes/{name}/sync", json={"resources": {"cpus": 4, "memory": 8000}})
    assert r.status_code == 200, r.text


def test_metrics_match_squeue_and_sinfo(client: TestClient) -> None:
    _register(client, "node1")
    _register(client, "node2")  # node3 never registers: down
    ids = [client.post("/api/v1/jobs", json={"script": SCRIPT, "ntasks": 4}).json()["job_id"],  # node1 full
           client.post("/api/v1/jobs", json={"script": SCRIPT, "ntasks": 1}).json()["job_id"],  # node2 in part
           client.post("/api/v1/jobs", json={"script": SCRIPT, "nodes_min": 3}).json()["job_id"],  # waits
           client.post("/api/v1/jobs", json={"script": SCRIPT, "partition": "short", "hold": True}).json()["job_id"]]
    _until(lambda: sum(j["state"] == "RUNNING" for j in client.get("/api/v1/jobs").json()["jobs"]) == 2)
    client.post(f"/api/v1/jobs/{ids[1]}/hold")  # no effect on a running job; counted in the latency
    jobs = client.get("/api/v1/jobs").json()["jobs"]  # what squeue shows
    nodes = client.get("/api/v1/nodes").json()["nodes"]  # what sinfo shows
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    fams = parse_exposition(r.text)

    got = {(lab["state"], lab["partition"]): v for _, lab, v in fams["slurmlet_jobs"]["samples"] if v}
    want: dict[tuple[str, str], int] = {}
    for j in jobs:
        want[(j["state"], j["partition"])] = want.get((j["state"], j["partition"]), 0) + 1
    assert got == want == {("RUNNING", "debug"): 2, ("PENDING", "debug"): 1, ("PENDING", "short"): 1}
    assert values(fams, "slurmlet_jobs", "state")  # zero series present too
    assert ("PENDING", "short") in {(lab["state"], lab["partition"]) for _, lab, _ in fams["slurmlet_jobs"]["samples"]}
    assert fams["slurmlet_queue_depth"]["samples"][0][2] == 2

    by_state = values(fams, "slurmlet_nodes", "state")
    assert by_state == {"idle": 0, "mixed": 1, "allocated": 1, "draining": 0, "drained": 0, "down": 1}
    assert sorted(k for k, v in by_state.items() for _ in range(int(v))) == sorted(n["state"].lower() for n in nodes)
    assert values(fams, "slurmlet_cpus", "kind") == {"total": 12, "allocated": 5}

    diag = client.get("/api/v1/diag").json()
    cycles = values(fams, "slurmlet_sched_cycles_total", "pass")
    assert cycles["main"] >= 1 and cycles["main"] <= diag["main"]["cycles"]
    assert fams["slurmlet_jobs_started_total"]["samples"][0][2] == 2 == diag["jobs_started"]
    assert values(fams, "slurmlet_sched_cycle_max_microseconds", "pass")["main"] > 0
    assert fams["slurmlet_sched_cycles_total"]["type"] == "counter"
    assert fams["process_resident_memory_bytes"]["samples"][0][2] > 10 * 2**20

    # latency: one histogram per route template and method, cumulative buckets ending in _count
    h = fams["slurmlet_http_request_duration_seconds"]
    assert h["type"] == "histogram"
    series: dict[tuple, list] = {}
    for name, lab, v in h["samples"]:
        series.setdefault((lab["method"], lab["route"]), []).append((name, lab.get("le"), v))
    posts = series[("POST", "/api/v1/jobs")]
    assert [v for n, _, v in posts if n.endswith("_count")] == [4]
    hold = series[("POST", "/api/v1/jobs/{job_id}/hold")]  # the template, not /api/v1/jobs/2/hold
    assert [v for n, _, v in hold if n.endswith("_count")] == [1]
    for key, rows in series.items():
        buckets = [v for n, le, v in rows if n.endswith("_bucket")]
        assert buckets == sorted(buckets), key
        assert [le for n, le, _ in rows if n.endswith("_bucket")][-1] == "+Inf"
        assert buckets[-1] == [v for n, _, v in rows if n.endswith("_count")][0]
    codes = {(lab["route"], lab["code"]): v for _, lab, v in fams["slurmlet_http_requests_total"]["samples"]}
    assert codes[("/api/v1/jobs", "201")] == 4


def test_latency_labels_stay_bounded(client: TestClient) -> None:
    for i in range(20):
        client.get(f"/no/such/path/{i}")
        client.request("BREW", f"/coffee/{i}")
    fams = parse_exposition(client.get("/metrics").text)
    routes = {(lab["method"], lab["route"]) for _, lab, _ in fams["slurmlet_http_request_duration_seconds"]["samples"]}
    assert ("GET", "unmatched") in routes and ("other", "unmatched") in routes
    assert not any("/no/such" in r or "BREW" in m for m, r in routes)


def test_label_values_escaped() -> None:
    from slurmlet.controller.metrics import _Out
    out = _Out()
    out.family("x", "gauge", "h")
    out.sample("x", 1, partition='a"b\\c\nd')
    fams = parse_exposition("\n".join(out.lines) + "\n")
    assert fams["x"]["samples"][0][1]["partition"] == 'a\\"b\\\\c\\nd'


# ---------------------------------------------------------------- 413
def _count(client: TestClient) -> int:
    return len(client.get("/api/v1/jobs?history=true").json()["jobs"])


def test_script_over_max_script_size_is_413_and_changes_nothing(client: TestClient) -> None:
    before = _count(client)
    big = "#!/bin/sh\n" + "#" * MAX_SCRIPT  # one line over 4 MiB
    r = client.post("/api/v1/jobs", json={"script": big})
    assert r.status_code == 413
    d = r.json()["detail"]
    assert d["error"] == "Pathname of a file, directory or other parameter too long"
    assert d["limit"] == 4 * 2**20 and d["size"] == len(big)
    assert _count(client) == before
    ok = "#!/bin/sh\n" + "#" * (MAX_SCRIPT - 11) + "\n"  # exactly at the limit
    assert client.post("/api/v1/jobs", json={"script": ok, "hold": True}).status_code == 201
    assert _count(client) == before + 1
    # bytes, not characters: 2**20 + 1 four-byte characters are over the limit
    r = client.post("/api/v1/jobs", json={"script": "#!/bin/sh\n#" + "\U0001F600" * (2**20 + 1)})
    assert r.status_code == 413
    assert _count(client) == before + 1


def test_max_script_size_from_scheduler_parameters(tmp_path: Path) -> None:
    conf = parse_slurm_conf(CONF + "SchedulerParameters=max_script_size=100\n")
    with TestClient(create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=conf))) as c:
        assert c.post("/api/v1/jobs", json={"script": "#!/bin/sh\n" + "#" * 90, "hold": True}).status_code == 201
        r = c.post("/api/v1/jobs", json={"script": "#!/bin/sh\n" + "#" * 91})
        assert r.status_code == 413 and r.json()["detail"]["limit"] == 100
        assert _count(c) == 1


def test_body_over_the_limit_is_413_before_it_is_read(client: TestClient) -> None:
    before = _count(client)
    body = b'{"script": "' + b"x" * wire.MAX_BODY + b'"}'
    r = client.post("/api/v1/jobs", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json()["detail"]["error"] == limits.TOO_LONG and r.json()["detail"]["limit"] == wire.MAX_BODY

    def chunks():
        for _ in range(wire.MAX_BODY // 2**20 + 1):
            yield b"x" * 2**20
    r = client.post("/api/v1/jobs", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413  # chunked: no Content-Length, counted as it arrives
    r = client.put("/api/v1/secrets/a/b", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "the limit is 33554432 bytes" in r.json()["detail"]["error"]
    assert client.get("/api/v1/secrets").json()["secrets"] == []
    assert _count(client) == before


def test_chunked_body_under_the_limit_is_passed_on(client: TestClient) -> None:
    def chunks():
        yield b'{"script": "#!/bin/sh\\n'
        yield b'true\\n", "hold": true}'
    r = client.post("/api/v1/jobs", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 201, r.text


def test_packed_code_over_max_code_is_413(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    monkeypatch.setattr(limits, "MAX_CODE", 10)  # read when the route runs
    r = client.post("/api/v1/code", json={"data": base64.b64encode(b"x" * 11).decode()})
    assert r.status_code == 413 and r.json()["detail"]["limit"] == 10
    assert client.post("/api/v1/code", json={"data": base64.b64encode(b"x" * 10).decode()}).status_code == 200


# ---------------------------------------------------------------- 5xx found by fuzzing, now 4xx
@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/api/v1/jobs/32846600149260031096247789027328", None),  # was an OverflowError in SQLite
    ("PATCH", "/api/v1/jobs/32846600149260031096247789027328", {}),
    ("POST", "/api/v1/jobs/32846600149260031096247789027328/steps", {"argv": ["true"]}),
    ("POST", "/api/v1/jobs/1/steps/99999999999999999999/cancel", None),
    ("GET", "/api/v1/jobs/1/steps/99999999999999999999", None),
    ("POST", "/api/v1/jobs/2147483648/hold", None),
    ("POST", "/api/v1/jobs/2147483648/release", None),
    ("POST", "/api/v1/jobs/2147483648/requeue", None),
    ("POST", "/api/v1/jobs/release", {"ids": [149521693687068063593239408541696]}),
    ("POST", "/api/v1/jobs/cancel", {"ids": [2**63]}),
    ("POST", "/api/v1/nodes/n9/sync", {"running": [2**40]}),
    ("POST", "/api/v1/nodes/n9/sync", {"steps_running": ["1.2.3"]}),  # was a ValueError unpacking it
    ("POST", "/api/v1/nodes/n9/sync", {"finished": [{"job_id": 2**40}]}),
    ("POST", "/api/v1/jobs", {"script": SCRIPT, "uid": 10**30}),  # were OverflowErrors storing them
    ("POST", "/api/v1/jobs", {"script": SCRIPT, "gid": 2**63}),
    ("POST", "/api/v1/jobs", {"script": SCRIPT, "time_limit": 2**63}),
    ("PATCH", "/api/v1/jobs/1", {"time_limit": 10**30}),
    ("PATCH", "/api/v1/jobs/1", {"nice": 10**30}),
    ("GET", "/api/v1/jobs?since=1e400", None),
    ("GET", "/api/v1/jobs/1?wait=nan", None),  # waited forever
    ("POST", "/api/v1/runs", {"workload": {"experiment_name": "x", "command": "c",  # ZeroDivisionError
                                           "compute": {"num_accelerators": 1, "accelerator_type": "GPU_0xH100"}}}),
    ("POST", "/api/v1/runs", {"workload": {"experiment_name": "x", "command": "c",  # gpu_type over 64: a 500
                                           "compute": {"num_accelerators": 1, "accelerator_type": "GPU_1x" + "A" * 65}},
                              "dry_run": True}),
    ("POST", "/api/v1/runs", {"workload": {"experiment_name": "x", "command": "c",  # int([]): a TypeError
                                           "compute": {"num_accelerators": 1, "accelerator_type": "GPU_1xH100"}},
                              "uid": [], "dry_run": True}),
    ("POST", "/api/v1/runs", {"workload": {"experiment_name": "x", "command": "c",  # a ValidationError
                                           "compute": {"num_accelerators": 1, "accelerator_type": "GPU_1xH100"}},
                              "uid": 2**40, "dry_run": True}),
])
def test_bad_ids_are_4xx(client: TestClient, method: str, path: str, body: object) -> None:
    r = client.request(method, path, json=body)
    assert 400 <= r.status_code < 500, (r.status_code, r.text)


@pytest.mark.parametrize("value", [b"Infinity", b"-Infinity", b"NaN"])
def test_non_finite_numbers_are_422(client: TestClient, value: bytes) -> None:
    """Python's JSON reads them; an answer cannot hold them (a NaN begin time broke every job listing,
    and the 422 that named it failed to serialise: a 500)."""
    body = b'{"script": "#!/bin/sh\\n", "hold": true, "begin_time": ' + value + b"}"
    r = client.post("/api/v1/jobs", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "begin_time"]
    assert client.get("/api/v1/jobs").status_code == 200 and _count(client) == 0


@pytest.mark.parametrize("query", ["ids=abc", "ids=1,,x", "ids=99999999999999999999", "ids=-1"])
@pytest.mark.parametrize("route", ["/api/v1/priorities", "/api/v1/jobs"])
def test_bad_id_lists_are_400(client: TestClient, route: str, query: str) -> None:
    r = client.get(f"{route}?{query}")  # /api/v1/priorities?ids=abc was a ValueError
    assert r.status_code == 400 and r.json()["detail"]["error"] == "Invalid job id specified"


@pytest.mark.parametrize(("method", "path"), [("POST", "/api/v1/runs"), ("POST", "/api/v1/code"),
                                              ("PUT", "/api/v1/secrets/team/k")])
@pytest.mark.parametrize("body", [b"", b"{", b"\xff\xfe", b"null x"])
def test_bodies_that_are_no_json_are_400(client: TestClient, method: str, path: str, body: bytes) -> None:
    r = client.request(method, path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["detail"]["error"] == "expected a JSON body"  # was a 500


def test_a_new_sync_ends_the_long_poll_before_it(tmp_path: Path) -> None:
    """An agent that gives up on a long-poll (to report an exit at once) sends a new sync; the
    controller ends the old one's wait with no orders, so polls never pile up: one per node."""
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(CONF),
                              debounce=0.0, max_long_poll=600.0))  # a poll left alone waits 30 s
    with TestClient(app) as client:
        _one_poll_per_node(client)


def _one_poll_per_node(client: TestClient) -> None:
    import threading
    _register(client, "node1")
    sync = "/api/v1/nodes/node1/sync"

    def polls() -> float:
        return _metric(client, "slurmlet_agent_long_polls")

    answers: list[dict] = []
    threads = []
    for i in range(5):
        t = threading.Thread(target=lambda: answers.append(client.post(sync, json={"wait": 30}).json()))
        t.start()
        threads.append(t)
        _until(lambda i=i: len(answers) == i and polls() == 1)  # the one before has its (empty) answer
    assert client.post(sync, json={"wait": 0}).json() == {"orders": []}
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert answers == [{"orders": [], "superseded": True}] * 5
    assert polls() == 0


def _metric(client: TestClient, name: str) -> float:
    (value,) = [v for n, _, v in parse_exposition(client.get("/metrics").text)[name]["samples"]]
    return value
