"""The SLURM_* environment table (tests/data/envtable/cases.txt, compared with 22.05 by
tests/e2e/test_env_table_e2e.py) is complete: every option of slurmlet's sbatch and srun option tables
(cli/getopt.py) has a case there, or is listed below as one that sets no variable, or as one the reference
cluster cannot run. Both lists are checked against 22.05: tests/data/envtable/slurm-2205-option-vars.json
(probe_options.py there) holds, for each option, what a job (sbatch) or step (srun) with it set beyond one
without it on the reference, or why no job ran. An option in neither list nor the table fails."""

from __future__ import annotations

import json

import pytest

from slurmlet.cli.getopt import Getopt, table
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "envtable"
PROBE = json.loads((DATA / "slurm-2205-option-vars.json").read_text())

#: options with no case that 22.05 sets no variable for (the probe's job or step had the same variables)
NO_VARIABLE = {
    "sbatch": {
        # the job's place, time and accounting: scheduling only
        "account", "begin", "clusters", "cluster-constraint", "contiguous", "core-spec", "cores-per-socket",
        "deadline", "delay-boot", "exclude", "gres-flags", "hold", "kill-on-invalid-dep", "mcs-label", "network",
        "nice", "nodefile", "nodelist", "oversubscribe", "power", "priority", "qos", "signal", "spread-job",
        "switches", "thread-spec", "time-min", "uid", "gid", "use-min-nodes", "wait-all-nodes", "wckey",
        "bb", "context", "comment", "propagate", "no-kill", "no-requeue", "requeue", "mail-type", "mail-user",
        # the script's files and directory, and sbatch's own behaviour
        "chdir", "error", "input", "output", "ignore-pbs", "parsable", "quiet", "verbose", "wait", "wrap",
    },
    "srun": {
        # the step's place and the job's scheduling (inside an allocation: the job's already)
        "account", "begin", "bb", "clusters", "cluster-constraint", "comment", "context", "contiguous",
        "core-spec", "cores-per-socket", "deadline", "delay-boot", "exclude", "gres-flags", "hold", "immediate",
        "jobid", "licenses", "mail-type", "mail-user", "mcs-label", "network", "nice", "no-kill", "nodefile",
        "nodelist", "oversubscribe", "partition", "power", "prefer", "priority", "propagate", "qos", "reboot",
        "relative", "reservation", "signal", "sockets-per-node", "spread-job", "switches", "thread-spec",
        "time", "time-min", "tmp", "uid", "gid", "use-min-nodes", "wckey", "overlap", "whole",
        # resources the step asks of its job's, with the job's variables kept (22.05 sets none of them)
        "cpus-per-gpu", "gpus", "gpus-per-socket", "mem-per-cpu", "mem-per-gpu", "mincpus", "gpu-bind",
        "gpu-freq", "accel-bind", "acctg-freq", "profile", "mpi", "resv-ports", "threads", "export",
        # srun's streams, files, broadcasts and its own behaviour
        "bcast", "bcast-exclude", "chdir", "compress", "disable-status", "epilog", "error", "input",
        "kill-on-bad-exit", "msg-timeout", "multi-prog", "open-mode", "output", "quiet", "quit-on-interrupt",
        "send-libs", "slurmd-debug", "task-epilog", "unbuffered", "verbose", "wait",
    },
}
#: options with no case whose job or step the reference cannot run (the probe's error), or that run none
NOT_RUN = {
    "sbatch": {
        "batch", "constraint", "prefer",  # the reference's nodes have no features
        "bbf",  # no burst buffer
        "licenses", "reservation", "tmp",  # none configured, none made, no TmpDisk
        "help", "usage", "version", "test-only",  # print and exit: no job
    },
    "srun": {
        "bbf", "constraint",  # as sbatch's
        "het-group",  # the job is not heterogeneous
        "no-allocate",  # needs -w and a privileged user's steps outside the allocation's bookkeeping
        "debugger-test",  # stops the tasks for a debugger
        "help", "usage", "version", "test-only", "pty", "x11",  # no step, or one that needs a terminal
    },
}


def _options(kind: str) -> list[str]:
    """The table's long options, one name each (an alias such as --tasks-per-node is its option's)."""
    return [name for name, _arity, key in table(kind).longs if name == key]


def _covered() -> dict[str, set[str]]:
    """The options each command is given in cases.txt, as its getopt reads them (short options too)."""
    out: dict[str, set[str]] = {"sbatch": set(), "srun": set()}

    def read(kind: str, words: list[str]) -> None:
        out[kind].update(key for key, _value, _written in Getopt(kind, [*words, "command"], table(kind)))
    for line in (DATA / "cases.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        _name, opts, step = (x.strip() for x in line.split("|"))
        command, *args = opts.split() or [""]
        if command == "srun":
            read("srun", args)
        elif command != "salloc":
            read("sbatch", opts.split())
        if step != "-":
            read("srun", step.split())
    return out


COVERED = _covered()


@pytest.mark.parametrize("kind", ["sbatch", "srun"])
def test_every_option_has_a_case_or_is_known_to_set_none(kind: str):
    missing = [o for o in _options(kind) if o not in COVERED[kind] | NO_VARIABLE[kind] | NOT_RUN[kind]]
    assert missing == [], f"{kind} options with no case in cases.txt and in no list here"


@pytest.mark.parametrize("kind", ["sbatch", "srun"])
def test_the_lists_hold_options_without_a_case_only(kind: str):
    listed = NO_VARIABLE[kind] | NOT_RUN[kind]
    assert sorted(listed - set(_options(kind))) == []  # no option the table lacks
    assert sorted(listed & COVERED[kind]) == []  # (a case says more than the list)
    assert sorted(NO_VARIABLE[kind] & NOT_RUN[kind]) == []


@pytest.mark.parametrize("kind", ["sbatch", "srun"])
def test_options_listed_as_setting_no_variable_set_none_in_slurm(kind: str):
    found = {o: PROBE[kind].get(o, {"error": "not probed"}) for o in sorted(NO_VARIABLE[kind])}
    assert {o: r for o, r in found.items() if r != {"added": {}, "changed": {}, "removed": []}} == {}


@pytest.mark.parametrize("kind", ["sbatch", "srun"])
def test_options_listed_as_not_run_did_not_run_on_the_reference(kind: str):
    ran = {o for o in NOT_RUN[kind] if o in PROBE[kind] and "error" not in PROBE[kind][o]}
    assert sorted(ran) == []


@pytest.mark.parametrize("kind", ["sbatch", "srun"])
def test_options_that_set_a_variable_in_slurm_have_a_case(kind: str):
    sets = {o for o, r in PROBE[kind].items() if "error" not in r and any(r.values())}
    assert sorted(sets - COVERED[kind]) == []
