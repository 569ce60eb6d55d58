"""bench/sacctgen.py: the generated month of a 1,000-node site is a dump `simulate --sacct` reads,
with every kind of record the reader documents, and its slurm.conf is the site's."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import sacctgen
from slurmlet.controller.commands.simulate import _machine
from slurmlet.controller.config import parse_slurm_conf
from slurmlet.controller.sim import sacct, swf

N = 2000


@pytest.fixture(scope="module")
def text() -> str:
    return sacctgen.dump(N, seed=7)


def rows(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    header = lines[0].split("|")
    return [dict(zip(header, line.split("|"))) for line in lines[1:]]


def test_the_dump_is_sacct_22_05s_fields_and_the_same_for_the_same_seed(text):
    assert text.splitlines()[0] == sacctgen.HEADER
    assert sacctgen.HEADER == "|".join(("JobID", "JobIDRaw", "JobName", "Partition", "Account", "User", "QOS",
                                        "State", "ExitCode", "Submit", "Eligible", "Start", "End", "Elapsed",
                                        "Timelimit", "NCPUS", "NNodes", "ReqCPUS", "ReqNodes", "ReqTRES",
                                        "AllocTRES", "NodeList"))
    assert len(text.splitlines()) == N + 1
    assert sacctgen.dump(N, seed=7) == text
    assert sacctgen.dump(N, seed=8) != text


def test_every_record_is_read_and_every_skip_reason_appears(text):
    conf = parse_slurm_conf(sacctgen.slurm_conf())
    procs = _machine(conf)
    t = sacct.parse(text, "month.txt", procs)
    assert t.records == N
    assert len(t.jobs) + t.skipped_total == N
    assert set(t.skipped) == {sacct.SKIP_NEVER_STARTED, sacct.SKIP_NOT_FINISHED, sacct.SKIP_NO_CPUS}
    assert all(v > 0 for v in t.skipped.values())
    # every job fits the site; on a machine smaller than its widest job, the wider ones are skipped
    widest = max(j.procs for j in t.jobs)
    small = sacct.parse(text, "month.txt", widest - 1)
    assert small.skipped[swf.SKIP_TOO_WIDE] == sum(j.procs == widest for j in t.jobs)
    assert set(small.skipped) == {*t.skipped, swf.SKIP_TOO_WIDE}


def test_the_history_has_arrays_requeues_states_and_sizes_up_to_many_nodes(text):
    rs = rows(text)
    states = Counter(r["State"].split()[0] for r in rs)
    assert {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "REQUEUED", "RUNNING", "PENDING"} <= set(states)
    assert states["COMPLETED"] > N // 2
    # a job cancelled before it started, as 22.05 records it
    never = [r for r in rs if r["Start"] == "None"]
    assert never and all(r["State"].startswith("CANCELLED by ") and r["Elapsed"] == "00:00:00"
                         and r["NodeList"] == "None assigned" and r["AllocTRES"] == "" for r in never)
    # array tasks J_N, each with its own JobIDRaw
    tasks = [r for r in rs if "_" in r["JobID"] and "[" not in r["JobID"]]
    assert len({r["JobIDRaw"] for r in tasks}) == len({r["JobID"] for r in tasks}) > 10
    # with -D a requeued job's runs: REQUEUED, then the next with a new Submit, Eligible 121 s later
    by_id: dict[str, list[dict[str, str]]] = {}
    for r in rs:
        by_id.setdefault(r["JobID"], []).append(r)
    runs = [v for v in by_id.values() if v[0]["State"] == "REQUEUED" and len(v) == 2]
    assert runs
    for first, again in runs:
        assert again["Submit"] == first["End"]
        assert sacct._stamp(again["Eligible"]) - sacct._stamp(again["Submit"]) == 121
    cpus = [int(r["NCPUS"]) for r in rs]
    assert min(c for c in cpus if c) == 1 and max(cpus) >= 32 * 16
    assert {r["Partition"] for r in rs} == set(sacctgen.PARTITIONS)
    assert len({r["Account"] for r in rs}) > 10 and len({r["User"] for r in rs}) > 50


def test_the_site_is_1000_nodes_whose_cpus_are_the_machine():
    conf = parse_slurm_conf(sacctgen.slurm_conf())
    assert len(conf.nodes) == 1000
    assert _machine(conf) == sacctgen.CPUS == 34400
    assert {p.name for p in conf.partitions} == set(sacctgen.PARTITIONS)
    b = parse_slurm_conf(sacctgen.slurm_conf(age_weight=10000))
    assert b.priority_weights().age == 10 * conf.priority_weights().age
    assert len(parse_slurm_conf(sacctgen.slurm_conf(nodes=1100)).nodes) == 1100

