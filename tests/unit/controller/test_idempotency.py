"""POST /api/v1/jobs with an Idempotency-Key (in-process app on SQLite): a retry whose first answer
was lost gets the job the first attempt made, also when that job now counts against a limit the
retry would be refused by; a key is good for one request only."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from slurmlet.controller.app import create_app
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.runtime import Settings
from tests.store.test_accounts import ENFORCE, team

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient


@pytest.fixture
def client(tmp_path: Path):
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(ENFORCE)))
    with TestClient(app) as c:
        store = app.state.ctl.store
        store.accounts.ensure_defaults(0.0)
        team(store)
        store.accounts.modify("qos", {"name": "normal"}, {"maxsubmitjobsperuser": "1"})
        yield c


def job(**kw) -> dict:
    return {"script": "#!/bin/sh\ntrue\n", "name": "t", "user": "alice", "uid": 1000, "gid": 1000, "group": "alice",
            "workdir": "/tmp", "hold": True, **kw}


def post(client: TestClient, body: dict, key: str):  # a response
    return client.post("/api/v1/jobs", json=body, headers={"Idempotency-Key": key})


def test_a_retry_gets_the_first_attempts_job_even_past_the_limit_that_job_reached(client: TestClient):
    first = post(client, job(), "k1")
    assert first.status_code == 201 and "idempotent-replayed" not in first.headers, first.text
    again = post(client, job(), "k1")  # alice may have one job: it is that one
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true", again.text
    assert again.json() == first.json() and again.headers["location"] == first.headers["location"]
    other = post(client, job(), "k2")  # a new submission is refused by the limit
    assert other.status_code == 400 and "job submit limit" in other.json()["detail"]["error"], other.text
    assert [j["job_id"] for j in client.get("/api/v1/jobs").json()["jobs"]] == [first.json()["job_id"]]


def test_a_key_is_for_one_request(client: TestClient):
    assert post(client, job(), "k1").status_code == 201
    r = post(client, job(name="other"), "k1")
    assert r.status_code == 400 and r.json()["detail"]["error"] == "Idempotency-Key: already used for a different request"
    assert len(client.get("/api/v1/jobs").json()["jobs"]) == 1
