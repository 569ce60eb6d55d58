"""POST /api/v1/jobs/batch on a real cluster: ids in order, all or nothing, the single submission's
rules per job (who may submit for whom), and the cap on the number of jobs."""

from __future__ import annotations

import httpx
import pytest

from slurmlet.common import cred
from slurmlet.controller.api.schemas import MAX_BATCH
from tests.conftest import Cluster, serve, signed

pytestmark = pytest.mark.e2e

JOB = {"script": "#!/bin/sh\ntrue\n", "name": "b", "workdir": "/tmp", "stdout": "/dev/null"}


@pytest.fixture(scope="module")
def bc(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("batch"), nodes=1, cpus=4))


def post(c: Cluster, jobs: list[dict], uid: int = 0, user: str = "root", headers: dict | None = None) -> httpx.Response:
    """Signed for (uid, user), unless `headers` bring a credential of their own."""
    auth = None if headers and cred.HEADER in headers else signed(cred.read_key(str(c.key_file)), uid, user)
    return httpx.post(c.url + "/api/v1/jobs/batch", json={"jobs": jobs}, headers=headers, auth=auth, timeout=60)


def job(user: str = "root", uid: int = 0, **kw) -> dict:
    return dict(JOB, user=user, uid=uid, gid=uid, group=user, **kw)


def total(c: Cluster) -> int:
    return len(c.api("GET", "/api/v1/jobs?history=true")["jobs"])


def test_ids_in_order_and_runnable_jobs_run(bc: Cluster):
    r = post(bc, [job(name=f"n{i}", hold=i > 0) for i in range(5)])
    assert r.status_code == 201, r.text
    ids = r.json()["job_ids"]
    assert len(set(ids)) == 5
    assert [bc.job(j)["name"] for j in ids] == [f"n{i}" for i in range(5)]
    assert bc.wait_state(ids[0], "COMPLETED")["exit_code"] == 0  # the batch woke the scheduler
    assert all(bc.job(j)["reason"] == "JobHeldUser" for j in ids[1:])


def test_one_bad_job_refuses_all_naming_it(bc: Cluster):
    before = total(bc)
    r = post(bc, [job(hold=True), job(hold=True), job(hold=True, partition="nosuch")])
    assert r.status_code == 400
    assert r.json()["detail"]["error"] == "jobs[2]: Invalid partition name specified"
    r = post(bc, [job(hold=True), job(hold=True, cpus_per_task=64)])  # no node has 64 CPUs
    assert r.status_code == 400 and r.json()["detail"]["error"].startswith("jobs[1]: ")
    r = post(bc, [job(hold=True), job(hold=True, test_only=True)])
    assert r.status_code == 400 and "test_only" in r.json()["detail"]["error"]
    r = post(bc, [job(hold=True), {**job(hold=True), "bogus": 1}])  # the schema: 422 naming the field
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "jobs", 1, "bogus"]
    assert total(bc) == before


def test_each_job_under_the_callers_rights(bc: Cluster):
    before = total(bc)
    # a user submits as themself only: one job naming another user refuses the batch
    r = post(bc, [job("alice", 1000, hold=True), job("bob", 1001, hold=True)], uid=1000, user="alice")
    assert r.status_code == 403 and r.json()["detail"]["error"].startswith("jobs[1]: ")
    r = post(bc, [job("alice", 1000, hold=True)], headers={cred.HEADER: "v1:0:root:0:00:forged"})
    assert r.status_code == 401
    assert total(bc) == before
    r = post(bc, [job("alice", 1000, hold=True)] * 2, uid=1000, user="alice")
    assert r.status_code == 201
    assert {bc.job(j)["user"] for j in r.json()["job_ids"]} == {"alice"}
    # root (an administrator) may submit for anyone
    r = post(bc, [job("alice", 1000, hold=True), job("bob", 1001, hold=True)])
    assert r.status_code == 201
    assert [bc.job(j)["user"] for j in r.json()["job_ids"]] == ["alice", "bob"]


def test_the_cap_and_the_empty_batch(bc: Cluster):
    before = total(bc)
    r = post(bc, [job(hold=True)] * (MAX_BATCH + 1))
    assert r.status_code == 422
    d = r.json()["detail"][0]
    assert d["loc"] == ["body", "jobs"] and f"at most {MAX_BATCH} items" in d["msg"]
    assert post(bc, []).status_code == 422
    r = post(bc, [job(hold=True)], headers={"Idempotency-Key": "k1"})  # not for a batch: refused, not ignored
    assert r.status_code == 400 and "Idempotency-Key" in r.json()["detail"]["error"]
    assert total(bc) == before
    r = post(bc, [job(hold=True)] * MAX_BATCH)
    assert r.status_code == 201 and len(set(r.json()["job_ids"])) == MAX_BATCH
    assert total(bc) == before + MAX_BATCH
