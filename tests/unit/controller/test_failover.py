"""A controller among several (controller/failover.py), in process on SQLite, another controller's
lease taken by hand: in standby it answers ping and a root's takeover (each credential once, for
the controller it names) and refuses the rest, marked; a controller whose lease was taken from it
refuses a change, marked so that clients go on; one that cannot become active at its start gives
the lease up; slurm.conf is read again when a controller becomes active."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from slurmlet.common import cred
from slurmlet.common.wire import STANDBY
from slurmlet.controller.app import create_app
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.runtime import Settings
from slurmlet.controller.store.engine import make_engine
from slurmlet.controller.store.lease import Lease
from tests.conftest import wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

CONF = ("ClusterName=f\nSlurmctldHost=ctl1\nSlurmctldHost=ctl2\nSlurmctldTimeout=60\n"
        "NodeName=node1 CPUs=4 RealMemory=8000\nPartitionName=debug Nodes=ALL Default=YES\n")
KEY = b"k" * 32
JOB = {"script": "#!/bin/sh\ntrue\n", "name": "t", "user": "root", "uid": 0, "gid": 0, "group": "root",
       "workdir": "/tmp", "hold": True}


def root(method: str, target: str, body: bytes = b"") -> dict[str, str]:
    return {cred.HEADER: cred.sign(KEY, 0, "root", cred.bind(method, target, body))}


def submit(c: TestClient):  # a response
    import json
    body = json.dumps(JOB).encode()
    return c.post("/api/v1/jobs", content=body, headers={"content-type": "application/json",
                                                         **root("POST", "/api/v1/jobs", body)})


def other(url: str, name: str = "ctl1", index: int = 0) -> Lease:
    return Lease(make_engine(url), name, index, 60)


def settings(tmp_path: Path, host: str, **kw) -> Settings:
    conf = tmp_path / "slurm.conf"
    if not conf.exists():
        conf.write_text(CONF)
    return Settings(db_url=f"sqlite:///{tmp_path / 'db.sqlite'}", config=parse_slurm_conf(conf.read_text()),
                    key=KEY, host=host, reload=lambda: parse_slurm_conf(conf.read_text()), **kw)


def test_a_backup_in_standby_answers_ping_and_a_roots_takeover_once_and_refuses_the_rest(tmp_path: Path):
    s = settings(tmp_path, "ctl2")
    primary = other(s.db_url)
    assert primary.take(force=True)
    with TestClient(create_app(s)) as c:
        assert c.get("/api/v1/ping").json() == {"ok": True, "controllers": ["ctl1", "ctl2"], "index": 1,
                                                "role": "backup", "active": False, "holder_index": 0}
        r = c.get("/api/v1/jobs")
        assert (r.status_code, r.json()["detail"]["error"], r.headers[STANDBY]) == (
            503, "Slurm backup controller in standby mode", "60")
        # the gate's checks, as for every change: no credential, and not root
        assert c.post("/api/v1/takeover?index=1").status_code == 401
        user = {cred.HEADER: cred.sign(KEY, 1000, "alice", cred.bind("POST", "/api/v1/takeover?index=1"))}
        r = c.post("/api/v1/takeover?index=1", headers=user)
        assert (r.status_code, r.json()["detail"]["error"]) == (403, "Access/permission denied")
        wrong = "/api/v1/takeover?index=0"
        assert c.post(wrong, headers=root("POST", wrong)).json()["detail"]["error"] == "this is controller 1, not 0"
        target = "/api/v1/takeover?index=1"
        headers = root("POST", target)
        r = c.post(target, headers=headers)
        assert r.status_code == 200 and c.app.state.failover.active()
        assert not primary.renew()
        assert submit(c).status_code == 201
        # the primary takes it back by force (its start): this one refuses its next change, marked
        assert primary.take(force=True)
        r = submit(c)
        assert (r.status_code, r.headers[STANDBY]) == (503, "60") and "no longer holds the lease" in r.text
        wait_until(lambda: c.get("/api/v1/ping").json()["active"] is False, 10, what="standby")
        r = c.post(target, headers=headers)  # (the same credential again)
        assert r.status_code == 401 and not c.app.state.failover.active()


def test_a_controller_that_cannot_become_active_at_its_start_gives_the_lease_up(tmp_path: Path):
    spool = tmp_path / "a-file"
    spool.write_text("")
    s = settings(tmp_path, "ctl1", spool=str(spool))
    with pytest.raises(Exception):  # noqa: B017 - whatever the spool's refusal is
        with TestClient(create_app(s)):
            pass
    state = other(s.db_url, "ctl2", 1).read()
    assert (state.holder, state.live) == ("", False)  # (a backup takes it at its next look)


def test_slurm_conf_is_read_again_when_a_controller_becomes_active(tmp_path: Path):
    s = settings(tmp_path, "ctl2")
    primary = other(s.db_url)
    assert primary.take(force=True)
    with TestClient(create_app(s)) as c:
        (tmp_path / "slurm.conf").write_text(CONF + "MaxArraySize=7\n")
        primary.release()
        wait_until(lambda: c.get("/api/v1/ping").json()["active"], 10, what="the backup to take the lease")
        assert c.get("/api/v1/config").json()["max_array_size"] == 7
