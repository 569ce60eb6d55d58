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


@pytest.mark.parametrize("ctype", ["application/x-python-literal", "text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", None])
def test_a_body_in_another_format_than_json_is_a_415_and_changes_nothing(client: TestClient, ctype: str | None):
    """Requests are JSON, one format (controller/gate.py decodes them): a body of any other type, or of
    none, is refused before a route sees it."""
    body = {"script": "#!/bin/sh\ntrue\n"}
    headers = {} if ctype is None else {"Content-Type": ctype}
    r = client.post("/api/v1/jobs", content=ascii(body) if ctype else json.dumps(body), headers=headers)
    assert r.status_code == 415, (ctype, r.status_code, r.text)
    assert "application/json" in r.json()["detail"]["error"]
    assert client.get("/api/v1/jobs").json()["jobs"] == []
    r = client.post("/api/v1/jobs", content=json.dumps(body), headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 201, r.text


