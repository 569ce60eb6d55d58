"""The controller's fast path for the requests every job makes (app._Fast): a failure it does not
expect is answered as the app answers one (500), never with nothing, and the controller goes on."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from slurmlet.controller.api import jobs
from slurmlet.controller.app import create_app
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.runtime import Settings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

JOB = {"script": "#!/bin/sh\ntrue\n", "name": "t", "user": "root", "uid": 0, "gid": 0, "group": "root",
       "workdir": "/tmp", "hold": True}


@pytest.fixture
def client(tmp_path: Path, monkeypatch):
    """The app in process, with its Unix socket and spool (localsock.py) for this process's requests
    through cli.http, as the CLI sends them."""
    sock = tmp_path / "controller.sock"
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(""),
                              listen="127.0.0.1:6999", socket=str(sock)))
    monkeypatch.setenv("SLURMLET_SOCKET", str(sock))
    monkeypatch.setenv("SLURMLET_CONTROLLER", "http://127.0.0.1:6999")
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def test_an_unexpected_failure_is_a_500_and_the_next_request_is_served(client: TestClient, monkeypatch):
    async def broken(*_a, **_k):
        raise RuntimeError("a bug")

    real_submit = jobs.submit
    monkeypatch.setattr(jobs, "submit", broken)
    r = client.post("/api/v1/jobs", json=JOB)
    assert (r.status_code, r.text) == (500, "Internal Server Error")
    metrics = client.get("/metrics").text
    assert 'slurmlet_http_requests_total{method="POST",route="/api/v1/jobs",code="500"} 1' in metrics.splitlines()
    # through the spool (no middleware catches it there): the same 500, not an answer of nothing
    # (which the CLI would take for a refusal and send again by the socket)
    from slurmlet.cli import http
    sent = []
    real = http._over
    monkeypatch.setattr(http, "_over", lambda *a: sent.append(a) or real(*a))
    status, _, data = http.exchange("POST", "/api/v1/jobs", JOB)
    assert (status, data, sent) == (500, b"Internal Server Error", [])
    monkeypatch.setattr(jobs, "submit", real_submit)
    r = client.post("/api/v1/jobs", json=JOB)
    assert r.status_code == 201, r.text
    status, header, _ = http.exchange("POST", "/api/v1/jobs", JOB)
    assert status == 201 and http._location_id(status, header) == r.json()["job_id"] + 1
