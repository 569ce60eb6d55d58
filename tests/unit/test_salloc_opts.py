"""salloc's command line and input variables (parse_salloc) and its command's environment
(allocation_environment), pure."""

from __future__ import annotations

import pytest

from slurmlet.cli.opts import parse_salloc
from slurmlet.cli.salloc import allocation_environment
from slurmlet.common.grammar import OptError


def parse(*argv: str, **env: str) -> dict:
    return parse_salloc(list(argv), env=env, cwd="/home/u", user="u", uid=1000, gid=1000, group="u", host="login")


def test_options_and_salloc_variables_with_the_command_line_winning() -> None:
    r = parse("-p", "gpu", "-t", "10", "bash", "-l", SALLOC_PARTITION="cpu", SALLOC_TIMELIMIT="5",
              SALLOC_ACCOUNT="proj")
    s = r["submit"]
    assert (s["partition"], s["time_limit"], s["account"]) == ("gpu", 10, "proj")
    assert r["command"] == ["bash", "-l"] and s["interactive"] and s["name"] == "interactive"
    assert s["stdout"] == "/dev/null" and s["requeue"] is False


def test_no_shell_kill_command_and_ignored_options() -> None:
    r = parse("--no-shell", "-K", "--mail-type=END")
    assert r["no_shell"] and r["submit"]["name"] == "no-shell" and r["kill_command"] == 15
    assert r["ignored"] == [["--mail-type", "END"]]
    assert parse("--kill-command=USR1", "true")["kill_command"] == 10
    assert parse("-J", "dbg", "true")["submit"]["name"] == "dbg"


def test_help_usage_and_bad_options() -> None:
    assert parse("--usage")["usage"] and parse("-h")["help"]
    with pytest.raises(OptError) as e:
        parse("--bogus")
    assert e.value.code == 255 and e.value.lines[0] == "salloc: unrecognized option '--bogus'"
    with pytest.raises(OptError):
        parse("-N", "0")


def test_the_commands_environment_is_salloc_1s_table() -> None:
    job = {"job_id": 7, "cluster": "c", "account": "proj", "user": "u", "alloc_cpus": [4, 4], "name": "dbg",
           "nodes": "n[1-2]", "num_nodes": 2, "partition": "debug", "qos": "normal", "alloc_tasks": [2, 2]}
    env = allocation_environment(job, parse("-n4", "-c2", "--mem=1G", "true")["submit"], {"PATH": "/bin"})
    assert env == {
        "PATH": "/bin", "SLURM_CLUSTER_NAME": "c", "SLURM_JOBID": "7", "SLURM_JOB_ID": "7",
        "SLURM_JOB_ACCOUNT": "proj", "SLURM_JOB_CPUS_PER_NODE": "4(x2)", "SLURM_JOB_NAME": "dbg",
        "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2",
        "SLURM_JOB_PARTITION": "debug", "SLURM_JOB_QOS": "normal", "SLURM_NODE_ALIASES": "(null)",
        "SLURM_SUBMIT_DIR": "/home/u", "SLURM_SUBMIT_HOST": "login", "SLURM_TASKS_PER_NODE": "2(x2)",
        "SLURM_NTASKS": "4", "SLURM_NPROCS": "4", "SLURM_CPUS_PER_TASK": "2", "SLURM_MEM_PER_NODE": "1024"}
