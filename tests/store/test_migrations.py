"""Schema migrations over real SQLite and PostgreSQL: databases made by older slurmlets (the first
release's tables, the last before accounting) keep their jobs and nodes when a new one opens them;
the migrated schema is tables.py's exactly; concurrent starts; `slurmlet db`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import MetaData, create_engine, insert, inspect, text

from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.core.plan import plan
from slurmlet.controller.store import migrate
from slurmlet.controller.store.engine import make_engine, normalize_url, sqlite_url
from slurmlet.controller.store.jobs import JobStore
from slurmlet.controller.store.migrations import HEAD
from slurmlet.controller.store.tables import metadata
from tests.conftest import BIN, ROOT, pg_available, pg_schema_url

CONF = parse_slurm_conf("ClusterName=t\nNodeName=node[1-2] CPUs=4 RealMemory=1000\n"
                        "PartitionName=debug Nodes=ALL Default=YES\n")
RES = {"cpus": 4, "memory": 1000, "gpus": 0}
OLD = ROOT / "tests" / "data" / "old_schema"
#: tables.py of the first release (the baseline, 0001) and of the last one before accounting (0010)
RELEASES = {"30d1ff0": "0001", "9107429": "0010"}


@pytest.fixture
def pg_url():
    """A PostgreSQL schema of this test's own (dropped at the end)."""
    if not pg_available():
        pytest.skip("PostgreSQL is not running at 127.0.0.1:5432")
    schema = f"mig_{uuid.uuid4().hex[:12]}"
    yield pg_schema_url(schema)
    import psycopg
    with psycopg.connect("host=127.0.0.1 port=5432 dbname=test", autocommit=True) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)])
def db_url(request, tmp_path: Path):
    """An empty database: SQLite in tmp_path, or a PostgreSQL schema of this test's own."""
    if request.param == "sqlite":
        return sqlite_url(str(tmp_path / "state"))
    return request.getfixturevalue("pg_url")


def old_metadata(commit: str) -> MetaData:
    spec = importlib.util.spec_from_file_location(f"old_tables_{commit}", OLD / f"tables_{commit}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.metadata


def raw_engine(url: str):
    return create_engine(normalize_url(url))


def old_database(url: str, commit: str) -> None:
    """The database that slurmlet at `commit` made (its make_engine: create_all), with a node, a
    finished job, two pending jobs (ids 1, 2, 3) and, where the table exists, a step."""
    md = old_metadata(commit)
    eng = make_engine(url, migrate=False)  # SQLite's pragmas (WAL) were the same then
    md.create_all(eng)
    jobs, nodes = md.tables["jobs"], md.tables["nodes"]
    with eng.begin() as c:
        c.execute(insert(nodes).values(name="node1", addr="127.0.0.1", hostname="node1", cpus=4, memory=1000,
                                       gpus=0, last_seen=100.0, registered_at=100.0))
        common = dict(user="alice", uid=1000, gid=1000, grp="alice", account="", qos="normal", partition="debug",
                      spec='{"nodes_min": 1, "workdir": "/tmp"}', script="#!/bin/sh\ntrue\n", environment="{}")
        c.execute(insert(jobs).values(name="done", state="COMPLETED", submit_time=100.0, start_time=101.0,
                                      end_time=102.0, nodes="node1", batch_host="node1", **common))
        c.execute(insert(jobs).values(name="waits", state="PENDING", submit_time=103.0, **common))
        c.execute(insert(jobs).values(name="held", state="PENDING", held="user", submit_time=104.0, **common))
        if "steps" in md.tables:
            c.execute(insert(md.tables["steps"]).values(job_id=1, step_id=0, name="hostname", state="COMPLETED",
                                                        layout="[]", request="{}", start_time=101.5))
    eng.dispose()


def revision_of(url: str) -> str | None:
    eng = raw_engine(url)
    with eng.connect() as c:
        rev = migrate.current(c)[0]
    eng.dispose()
    return rev


def differences(url: str, md: MetaData = metadata) -> list:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    eng = raw_engine(url)
    with eng.connect() as c:
        diff = compare_metadata(MigrationContext.configure(c, opts={"compare_type": True,
                                                                    "compare_server_default": True}), md)
    eng.dispose()
    return diff


def alembic_upgrade(url: str, target: str) -> None:
    """Alembic itself, from an empty database to `target` (no create_all)."""
    from alembic import command
    eng = raw_engine(url)
    with eng.connect() as c:
        command.upgrade(migrate.alembic_config(c), target)
        c.commit()
    eng.dispose()


# ---------------------------------------------------------------- the revisions
def test_head_is_the_newest_revision_and_the_chain_is_linear():
    script = migrate.script_directory()
    assert script.get_heads() == [HEAD]
    revs = [s.revision for s in reversed(list(script.walk_revisions()))]
    assert revs == [f"{i:04d}" for i in range(1, len(revs) + 1)]
    assert [r for r, _ in migrate.PRE_ALEMBIC] == revs[:len(migrate.PRE_ALEMBIC)]


def test_the_migrations_make_tables_py_exactly_and_undo_it(db_url: str):
    """A change to tables.py without a revision (or a revision that differs from it) fails here."""
    alembic_upgrade(db_url, "head")
    assert revision_of(db_url) == HEAD
    assert differences(db_url) == []
    from alembic import command
    eng = raw_engine(db_url)
    with eng.connect() as c:
        command.downgrade(migrate.alembic_config(c), "base")
        c.commit()
        assert inspect(c).get_table_names() == ["alembic_version"]
    eng.dispose()


@pytest.mark.parametrize("commit", RELEASES)
def test_each_old_release_is_a_revision(db_url: str, commit: str):
    """The baseline is the first release's schema as its create_all made it, and 0010 the last one
    before accounting; a database made by either is recognised as that revision."""
    alembic_upgrade(db_url, RELEASES[commit])
    assert differences(db_url, old_metadata(commit)) == []


# ---------------------------------------------------------------- opening databases
def test_a_new_database_is_made_from_tables_py_and_stamped(db_url: str):
    s = JobStore(make_engine(db_url), CONF)
    s.engine.dispose()
    assert revision_of(db_url) == HEAD
    assert differences(db_url) == []
    s = JobStore(make_engine(db_url), CONF)  # and opened again: left as it is
    s.engine.dispose()
    assert revision_of(db_url) == HEAD


def submit(s: JobStore, name: str) -> int:
    return s.submit(dict(script="#!/bin/sh\ntrue\n", name=name, partition="debug", user="alice", uid=1000,
                         gid=1000, group="alice", workdir="/tmp", environment={}), 200.0)


@pytest.mark.parametrize("commit", RELEASES)
def test_a_database_from_before_alembic_keeps_its_data(db_url: str, commit: str):
    old_database(db_url, commit)
    eng = raw_engine(db_url)
    with eng.connect() as c:
        assert migrate.current(c) == (None, RELEASES[commit])
    eng.dispose()

    s = JobStore(make_engine(db_url), CONF)
    try:
        assert revision_of(db_url) == HEAD
        assert differences(db_url) == []
        # the old rows, with the new columns' defaults where they were NOT NULL
        assert [(r.id, r.name, r.state, r.held) for r in s.job_rows(ids=[1, 2, 3])] == [
            (1, "done", "COMPLETED", None), (2, "waits", "PENDING", None), (3, "held", "PENDING", "user")]
        row = s.get_row(1)
        assert (row.end_time, row.suspended_secs, row.site_factor, row.array_max_tasks) == (102.0, 0.0, 0, None)
        assert s.public(row)["name"] == "done"
        [node] = s.node_rows()
        assert (node.name, node.cpus, node.pool) == ("node1", 4, None)
        if commit != "30d1ff0":
            [step] = s.step_rows([1])[1]
            assert step["name"] == "hostname"
        # the new column and tables work: a node in a pool, accounts, a new job after the old ones
        s.node_sync("node1", {"resources": {**RES, "pool": "gpu"}, "running": [], "finished": []}, 200.0)
        assert s.node_rows()[0].pool == "gpu"
        s.accounts.ensure_defaults(200.0)
        assert s.accounts.add("account", ["physics"], {}, 200.0)
        assert "physics" in s.accounts.tree().accounts
        assert submit(s, "new") == 4
        # and the old pending job is scheduled on the old node
        s.apply(plan(s.snapshot(200.0)), 200.0)
        assert s.get_row(2).state == "RUNNING" and s.get_row(2).batch_host == "node1"
    finally:
        s.engine.dispose()


def test_a_database_at_an_older_revision_is_upgraded(db_url: str):
    alembic_upgrade(db_url, "0005")
    eng = raw_engine(db_url)
    with eng.begin() as c:  # a job as slurmlet at 0005 wrote it (no later column)
        c.execute(text("INSERT INTO jobs (name, \"user\", uid, gid, grp, account, qos, \"partition\", state, "
                       "reason, priority, nice, submit_time, spec, script, environment, nodes, active, exit_code, "
                       "exit_signal, restarts, requeue, suspended_secs, site_factor) VALUES ('old', 'bob', 1, 1, "
                       "'bob', '', 'normal', 'debug', 'COMPLETED', 'None', 1, 0, 5.0, '{}', 'true', '{}', '', "
                       "false, 0, 0, 0, true, 0, 0)"))
    eng.dispose()
    eng = make_engine(db_url, migrate=False)
    assert migrate.prepare(eng) == ("0005", HEAD)
    eng.dispose()
    assert revision_of(db_url) == HEAD and differences(db_url) == []
    s = JobStore(make_engine(db_url), CONF)
    assert s.get_row(1).name == "old" and s.get_row(1).batch_max_rss is None
    assert submit(s, "next") == 2
    s.engine.dispose()


def test_tables_from_several_releases_are_upgraded(db_url: str):
    """Before Alembic, create_all made a newer slurmlet's new tables next to the older tables it
    could not change: such a mix is recognised at the revision it wholly has and upgraded."""
    old_database(db_url, "30d1ff0")
    eng = raw_engine(db_url)
    old_metadata("9107429").create_all(eng)  # steps, secrets, ... as 9107429 made them; jobs unchanged
    with eng.connect() as c:
        assert migrate.current(c) == (None, "0001")
    eng.dispose()
    s = JobStore(make_engine(db_url), CONF)
    s.engine.dispose()
    assert revision_of(db_url) == HEAD and differences(db_url) == []


def test_a_failed_upgrade_leaves_the_database_as_it_was(db_url: str, monkeypatch: pytest.MonkeyPatch):
    old_database(db_url, "30d1ff0")
    upgrade = migrate._upgrade

    def upgrade_then_fail(conn, start):
        upgrade(conn, start)
        raise RuntimeError("the power went out")
    monkeypatch.setattr(migrate, "_upgrade", upgrade_then_fail)
    with pytest.raises(RuntimeError, match="power"):
        make_engine(db_url)
    eng = raw_engine(db_url)
    with eng.connect() as c:
        assert sorted(inspect(c).get_table_names()) == ["jobs", "nodes"]
        assert migrate.current(c) == (None, "0001")
    eng.dispose()
    monkeypatch.undo()
    s = JobStore(make_engine(db_url), CONF)
    assert len(s.job_rows(ids=[1, 2, 3])) == 3
    s.engine.dispose()
    assert differences(db_url) == []


def test_a_database_from_a_newer_slurmlet_is_refused(db_url: str):
    make_engine(db_url).dispose()
    eng = raw_engine(db_url)
    with eng.begin() as c:
        migrate.stamp(c, "9999")
    eng.dispose()
    with pytest.raises(migrate.SchemaError, match="revision 9999"):
        make_engine(db_url)


@pytest.mark.parametrize("old", [None, "9107429"])
def test_concurrent_starts_make_or_upgrade_the_database_once(db_url: str, old: str | None):
    if old:
        old_database(db_url, old)
    errors: list[BaseException] = []
    go = threading.Barrier(4)

    def start() -> None:
        try:
            go.wait()
            make_engine(db_url).dispose()
        except BaseException as e:
            errors.append(e)
    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    eng = raw_engine(db_url)
    with eng.connect() as c:
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [HEAD]
        if old:
            assert c.execute(text("SELECT count(*) FROM jobs")).scalar() == 3
    eng.dispose()
    assert differences(db_url) == []


# ---------------------------------------------------------------- slurmlet db
def slurmlet_db(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "slurmlet"), "db", *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, SLURMLET_STATE_DIR="/nonexistent"))


def test_slurmlet_db_current_upgrade_history(tmp_path: Path):
    state = str(tmp_path / "state")
    r = slurmlet_db("current", "--state-dir", state)
    assert (r.returncode, r.stderr) == (1, f"slurmlet db: error: no database at {state}/slurmlet.db "
                                           f"(see --state-dir, --db)\n")
    old_database(sqlite_url(state), "9107429")
    r = slurmlet_db("current", "--state-dir", state)
    assert (r.returncode, r.stdout) == (0, "none: tables from before schema versions, matching 0010 "
                                           "(`slurmlet db upgrade` stamps and upgrades them)\n")
    r = slurmlet_db("upgrade", "--state-dir", state)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"tables from before schema versions matched 0010: upgraded to {HEAD} (head)\n"
    assert "Running upgrade 0010 -> 0011" in r.stderr
    r = slurmlet_db("current", "--state-dir", state)
    assert (r.returncode, r.stdout) == (0, f"{HEAD} (head)\n")
    r = slurmlet_db("upgrade", "--state-dir", state)
    assert (r.returncode, r.stdout) == (0, f"already at {HEAD} (head)\n")
    r = slurmlet_db("history", "--db", sqlite_url(state))
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{int(HEAD) - 1:04d} -> {HEAD} (head) (current), ")
    assert lines[-1] == "<base> -> 0001, Baseline: the first release's schema (30d1ff0): jobs and nodes"
    assert len(lines) == int(HEAD)


@pytest.mark.pg
def test_slurmlet_db_current_on_postgres(pg_url: str):
    r = slurmlet_db("current", "--db", pg_url)
    assert (r.returncode, r.stdout) == (0, "none: an empty database\n")
    make_engine(pg_url).dispose()
    r = slurmlet_db("current", "--db", pg_url)
    assert (r.returncode, r.stdout) == (0, f"{HEAD} (head)\n")
