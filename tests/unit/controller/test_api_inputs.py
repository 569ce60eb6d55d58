"""Hostile strings and bodies at the API (in-process app on SQLite): refused with a 4xx naming the
field, nothing stored, and the queue still readable afterwards."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from slurmlet.controller.app import create_app
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.runtime import Settings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

CONF = "ClusterName=m\nNodeName=node1 CPUs=4 RealMemory=8000\nPartitionName=debug Nodes=ALL Default=YES\n"


@pytest.fixture
def client(tmp_path: Path):
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(CONF)))
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize(("field", "value"), [
    ("name", "a\0b"), ("account", "acct\0"), ("qos", "\0"), ("workdir", "/tmp/\0x"), ("comment", "\0"),
    ("argv", ["ok", "b\0d"]), ("environment", {"A": "x\0y"}), ("environment", {"A\0": "x"}),
    ("environment", {"A=B": "x"}), ("environment", {"": "x"}),
    ("workdir", "/tmp/\ud800"), ("stdout", "/tmp/\udfff.out"), ("name", "\ud800"),
    ("workdir", "/" + "a" * 70000),
])
def test_strings_no_daemon_can_take_are_refused_naming_the_field(client: TestClient, field: str, value: object):
    # sent as JSON escapes (ensure_ascii): a lone surrogate is valid JSON, though no UTF-8
    r = client.post("/api/v1/jobs", content=json.dumps({"script": "#!/bin/sh\ntrue\n", field: value}),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert any(field in str(d.get("loc")) or field in d.get("msg", "") for d in r.json()["detail"]), r.json()
    jobs = client.get("/api/v1/jobs")
    assert jobs.status_code == 200 and jobs.json()["jobs"] == []


def test_a_deeply_nested_body_is_refused_not_a_500(client: TestClient):
    body = "[" * 100000 + "]" * 100000
    for path in ("/api/v1/jobs", "/api/v1/runs", "/api/v1/jobs/batch"):
        r = client.post(path, content=body, headers={"Content-Type": "application/json"})
        assert 400 <= r.status_code < 500, (path, r.status_code)
    assert client.get("/api/v1/jobs").status_code == 200


def test_ordinary_values_still_pass(client: TestClient):
    r = client.post("/api/v1/jobs", json={"script": "#!/bin/sh\ntrue\n", "name": "ünïcode ok",
                                          "environment": {"PATH": "/usr/bin", "EMPTY": ""}, "argv": ["a b", ""]})
    assert r.status_code == 201, r.text


LITERAL = {"Content-Type": "application/x-python-literal"}


def test_a_body_sent_as_a_python_literal_is_the_same_submission(client: TestClient):
    """The CLI sends bodies as `ascii()` of its dict (common/wire.py): the job is the one JSON would
    make, lone surrogates and non-ASCII text included, and the answer names it in Location."""
    body = {"script": "#!/bin/sh\ntrue\n", "name": "ünïcode ok", "environment": {"PATH": "/usr/bin", "E": ""},
            "comment": "'\"\\ \t", "nodes_min": 1, "exclusive": False, "time_limit": None}
    r = client.post("/api/v1/jobs", content=ascii(body), headers=LITERAL)
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"/api/v1/jobs/{r.json()['job_id']}"
    job = client.get(r.headers["location"]).json()
    assert (job["name"], job["comment"]) == ("ünïcode ok", "'\"\\ \t")
    bad = dict(body, workdir="/tmp/\ud800")  # as JSON: refused naming the field, nothing stored
    r = client.post("/api/v1/jobs", content=ascii(bad), headers=LITERAL)
    assert r.status_code == 422 and "workdir" in r.text
    assert len(client.get("/api/v1/jobs").json()["jobs"]) == 1


@pytest.mark.parametrize("text", [
    "__import__('os').system('touch /tmp/slurmlet-literal-ran')",  # a call: never evaluated
    "{'script': open('/etc/shadow').read()}", "{'script': 'a' + 'b'}", "{'nodes_min': 2**64}",
    "{'script': b'bytes'}", "{'x': {1, 2}}", "{'x': 1j}", "{'x': 1e999}", "{(1, 2): 'tuple key'}",
    "[" * 100000 + "]" * 100000, "{'script': '" + "a" * (1 << 20) + "'}", "{'a': ", "\xff\xfe",
])
def test_a_literal_body_that_is_not_plain_data_is_a_400_and_nothing_runs(client: TestClient, text: str):
    r = client.post("/api/v1/jobs", content=text.encode("latin-1"), headers=LITERAL)
    assert r.status_code == 400, (text[:60], r.status_code, r.text[:200])
    assert "Python literal" in r.json()["detail"]["error"] or "at most" in r.json()["detail"]["error"]
    assert not Path("/tmp/slurmlet-literal-ran").exists()
    assert client.get("/api/v1/jobs").json()["jobs"] == []


def test_literal_bodies_are_read_for_authenticated_changes_only(tmp_path: Path):
    """Parsing a literal costs more than JSON: a request without a credential (a read, or a change
    that is refused anyway) never has its literal body parsed, and one over LITERAL_MAX is refused
    before it is read."""
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(CONF),
                              key=b"k" * 32))
    costly = "[" + "[]," * 10000 + "]"
    with TestClient(app) as c:
        r = c.post("/api/v1/jobs", content=costly, headers=LITERAL)
        assert r.status_code == 401, r.text
        r = c.request("GET", "/api/v1/ping", content=costly, headers=LITERAL)
        assert r.status_code == 200, r.text
    with TestClient(create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db2.sqlite'}",
                                        config=parse_slurm_conf(CONF)))) as c:
        r = c.post("/api/v1/jobs", content="[" + "0," * 20000 + "]", headers=LITERAL)
        assert r.status_code == 400 and "Content-Length of at most" in r.json()["detail"]["error"]
