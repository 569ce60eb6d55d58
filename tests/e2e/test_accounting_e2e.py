"""sacctmgr, enforced associations and limits, and sshare on a real cluster, through the CLI."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import Cluster, serve, wait_until

pytestmark = pytest.mark.e2e

CONF = ("AccountingStorageEnforce=associations,limits,qos\nPriorityType=priority/multifactor\n"
        "PriorityWeightFairshare=10000\nPriorityWeightQOS=1000\nPriorityCalcPeriod=0\n")


@pytest.fixture(scope="module")
def acct_cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("acct"), nodes=2, cpus=2, extra_conf=CONF))


def ok(c: Cluster, *argv: str, input: str | None = None) -> str:
    r = c.run(list(argv), timeout=30, input=input)
    assert r.returncode == 0, (argv, r.stdout, r.stderr)
    return r.stdout


def reason(c: Cluster, jid: str) -> str:
    return ok(c, "squeue", "-h", "-j", jid, "-o", "%T %r").strip()


def test_sacctmgr_adds_shows_and_asks_before_it_commits(acct_cluster: Cluster):
    c = acct_cluster
    out = ok(c, "sacctmgr", "-i", "add", "account", "ml", "parent=root", "fairshare=10", "Description=ML team")
    assert out.splitlines() == [" Adding Account(s)", "  ml", " Settings", "  Description     = ml team",
                                "  Organization    = Parent/Account Name", " Associations",
                                "  A = ml         C = test      ", " Settings", "  Fairshare     = 10",
                                "  Parent        = root"]
    # without -i: shown, asked, and discarded unless the answer is yes
    out = ok(c, "sacctmgr", "add", "qos", "high", "Priority=10", input="n\n")
    assert out.splitlines()[-3:] == ["Would you like to commit changes? (You have 30 seconds to decide)",
                                      "(N/y): ", " Changes Discarded"]
    assert "high" not in ok(c, "sacctmgr", "-n", "-P", "show", "qos", "format=Name")
    ok(c, "sacctmgr", "add", "qos", "high", "Priority=10", input="y\n")
    assert ok(c, "sacctmgr", "-n", "-P", "show", "qos", "format=Name,Priority").splitlines() == ["normal|0", "high|10"]
    ok(c, "sacctmgr", "-i", "add", "user", "root", "Account=ml")
    ok(c, "sacctmgr", "-i", "modify", "user", "where", "name=root", "account=ml", "set", "qos=normal,high")
    lines = ok(c, "sacctmgr", "-P", "show", "assoc", "format=Account,User,Share,QOS").splitlines()
    assert lines == ["Account|User|Share|QOS", "root||1|normal", "root|root|1|normal", "ml||10|normal",
                     "ml|root|1|high,normal"]
    table = ok(c, "sacctmgr", "show", "user", "root")
    assert table.splitlines() == ["      User   Def Acct     Admin ", "---------- ---------- --------- ",
                                  "      root       root Administ+ "]
    r = c.run(["sacctmgr", "-i", "add", "user", "bob", "Account=nosuch"], timeout=30)
    assert r.returncode == 1 and r.stderr.splitlines() == [
        " This account 'nosuch' doesn't exist.", "        Contact your admin to add this account.",
        " No associations or wckeys created."]
    r = c.run(["sacctmgr", "-i", "delete", "qos", "nosuch"], timeout=30)
    assert (r.returncode, r.stdout) == (1, " Nothing deleted\n")
    r = c.run(["sacctmgr", "-i", "add", "account", "ml"], timeout=30)
    assert (r.returncode, r.stdout) == (1, " Nothing new added.\n")
    r = c.run(["sacctmgr", "-i", "add", "qos", "x", "MaxWall=abc"], timeout=30)
    assert (r.returncode, r.stderr) == (1, " Bad MaxWall time format: MaxWall=abc\n")
    r = c.run(["sacctmgr", "-i", "add", "qos", "x", "badopt=1"], timeout=30)
    assert (r.returncode, r.stdout) == (1, " Unknown option: badopt=1\n Use keyword 'where' to modify condition\n")
    r = c.run(["sacctmgr", "show", "foo"], timeout=30)
    assert r.returncode == 1 and r.stderr.startswith("No valid entity in list command\n")
    assert "x" not in ok(c, "sacctmgr", "-n", "-P", "show", "qos", "format=Name").split()


def test_enforced_associations_and_limits_through_sbatch(acct_cluster: Cluster):
    c = acct_cluster
    r = c.run(["sbatch", "-A", "nosuch", "--wrap", "true"], timeout=30)
    assert r.returncode == 1
    assert r.stderr.strip() == ("sbatch: error: Batch job submission failed: "
                                "Invalid account or account/partition combination specified")
    r = c.run(["sbatch", "--qos", "nosuch", "--wrap", "true"], timeout=30)
    assert r.returncode == 1 and r.stderr.strip().endswith("Invalid qos specification")
    ok(c, "sacctmgr", "-i", "modify", "qos", "normal", "set", "MaxJobsPerUser=1", "MaxSubmitJobsPerUser=2")
    first = ok(c, "sbatch", "--parsable", "-A", "ml", "--wrap", "sleep 60").strip()
    second = ok(c, "sbatch", "--parsable", "-A", "ml", "--wrap", "true").strip()
    wait_until(lambda: reason(c, first) == "RUNNING None", 20, 0.1, "the first job to run")
    wait_until(lambda: reason(c, second) == "PENDING QOSMaxJobsPerUserLimit", 20, 0.1, "the limit's reason")
    r = c.run(["sbatch", "-A", "ml", "--wrap", "true"], timeout=30)
    assert r.returncode == 1 and r.stderr.splitlines() == [
        "sbatch: error: QOSMaxSubmitJobPerUserLimit",
        "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
        "(job submit limit, user's size and/or time limits)"]
    ok(c, "scancel", first)
    wait_until(lambda: ok(c, "sacct", "-n", "-X", "-j", second, "-o", "State").strip() == "COMPLETED", 30, 0.1,
               "the second job to run once the first is gone")
    ok(c, "sacctmgr", "-i", "modify", "qos", "normal", "set", "MaxJobsPerUser=-1", "MaxSubmitJobsPerUser=-1")
    # sacct by account and QOS, and as JSON in Slurm's layout
    assert ok(c, "sacct", "-n", "-X", "-A", "ml", "-o", "JobID%10").split() == [first, second]
    assert ok(c, "sacct", "-n", "-X", "-A", "root", "-q", "normal", "-o", "JobID%10").split() == []
    doc = json.loads(ok(c, "sacct", "--json", "-j", second))
    job = doc["jobs"][0]
    assert doc["meta"]["Slurm"]["release"] == "22.05.8" and doc["errors"] == []
    assert job["job_id"] == int(second) and job["association"] == {"account": "ml", "cluster": "test",
                                                                    "partition": "debug", "user": "root"}
    assert job["state"] == {"current": "COMPLETED", "reason": "None"} and job["qos"] == "normal"
    assert job["exit_code"] == {"status": "SUCCESS", "return_code": 0}
    assert [s["step"]["id"] for s in job["steps"]] == ["batch"] and list(doc) == ["meta", "errors", "jobs"]
    assert {"type": "cpu", "name": None, "id": 1, "count": 1} in job["tres"]["allocated"]
    # sacct's refusals, as a real 22.05 words them
    for argv, err in ((["-u", "nosuchuser"], "sacct: error: Invalid user id: nosuchuser\n"),
                      (["-s", "XX"], "sacct: fatal: unrecognized job state value 'XX'\n")):
        r = c.run(["sacct", *argv], timeout=30)
        assert (r.returncode, r.stderr) == (1, err)
    r = c.run(["sacct", "-S", "now-1hour", "-E", "now-2hours"], timeout=30)
    assert r.returncode == 1 and r.stderr.startswith("sacct: error: Start time (")
    assert ok(c, "sacct", "-n", "-X", "-s", "CD") == ""  # -s without -S: the jobs in that state now
    assert ok(c, "sacct", "-n", "-X", "-s", "CD", "-j", second, "-o", "JobID%10").split() == [second]


def test_sshare_shows_the_tree_with_usage(acct_cluster: Cluster):
    c = acct_cluster
    jid = ok(c, "sbatch", "--parsable", "-A", "ml", "-n", "2", "--wrap", "sleep 2").strip()
    wait_until(lambda: ok(c, "sacct", "-n", "-X", "-j", jid, "-o", "State").strip() == "COMPLETED", 30, 0.1,
               "a 2-CPU job to use 4 CPU-seconds")
    lines = ok(c, "sshare", "-a").splitlines()
    assert lines[0].split() == ["Account", "User", "RawShares", "NormShares", "RawUsage", "EffectvUsage",
                                "FairShare"]
    raw_usage = {(ln[:20].strip(), ln[21:31].strip()): int(ln[55:66]) for ln in lines[2:]}
    assert set(raw_usage) >= {("root", ""), ("root", "root"), ("ml", ""), ("ml", "root")}
    # the jobs ran in ml: its usage is counted (CPU-seconds), root's own association has none
    assert raw_usage[("ml", "")] >= 3 and raw_usage[("ml", "root")] == raw_usage[("ml", "")]
    assert raw_usage[("root", "root")] == 0
    assert lines[3].startswith(" root") and lines[5].startswith("  ml")  # indented by depth
    long = ok(c, "sshare", "-a", "-l", "-P").splitlines()
    assert long[0] == ("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|"
                       "GrpTRESMins|TRESRunMins")


def test_preempt_qos_requeues_the_low_qos_job(fresh_cluster):
    c: Cluster = fresh_cluster(nodes=2, extra_conf="PreemptType=preempt/qos\nPreemptMode=REQUEUE\n"
                                                    "AccountingStorageEnforce=associations,qos\n").start()
    ok(c, "sacctmgr", "-i", "add", "qos", "low", "Priority=10")
    ok(c, "sacctmgr", "-i", "add", "qos", "high", "Priority=100", "Preempt=low", "PreemptMode=requeue")
    ok(c, "sacctmgr", "-i", "modify", "user", "root", "set", "qos=normal,low,high")
    lows = [ok(c, "sbatch", "--parsable", "-q", "low", "-N1", "--exclusive", "--requeue", "--wrap", "sleep 300").strip()
            for _ in range(2)]
    for j in lows:
        c.wait_state(int(j), "RUNNING")
    high = ok(c, "sbatch", "--parsable", "-q", "high", "-N1", "--exclusive", "--wrap", "sleep 300").strip()
    c.wait_state(int(high), "RUNNING")
    # the first low job went back to the queue (requeued, as its QOS's PreemptMode says); the other runs
    first = c.job(int(lows[0]))
    assert first["state"] == "PENDING" and first["restarts"] == 1
    assert c.job(int(lows[1]))["state"] == "RUNNING"
    runs = ok(c, "sacct", "-D", "-n", "-X", "-j", lows[0], "-o", "State").split()
    assert runs == ["PREEMPTED", "PENDING"]
    c.run(f"scancel {' '.join(lows + [high])}")


CAPTURE = Path(__file__).resolve().parents[1] / "data" / "slurm-2205-accounting.md"
#: the accounting database of the capture's "sacctmgr show" section, built with the capture's commands
SETUP = """add account physics Description="Physics department" Organization=science fairshare=40
add account theory parent=physics fairshare=20 Description="Theory group" Organization=science
add account chem,bio Description=lifesci Organization=lifesci
add user alice Account=physics DefaultAccount=physics
add user bob Account=chem,physics DefaultAccount=chem
add user carol Account=theory Partition=debug
add user eve Account=bio AdminLevel=Operator
add qos low Priority=10
add qos high Priority=100 Preempt=low PreemptMode=requeue
add qos limited Priority=50 MaxWall=00:10:00 MaxJobsPerUser=2 MaxSubmitJobsPerUser=4 MaxTRESPerJob=cpu=4 MaxTRESPerUser=gres/gpu=2 GrpTRES=gres/gpu=4 GrpJobs=3 Flags=DenyOnLimit
modify qos limited set MaxWall=00:20:00 GrpJobs=5
modify user where name=alice set qos+=high,low
modify user alice set DefaultQOS=normal
modify user where name=bob account=chem set MaxJobs=10"""


def captured(command: str) -> str:
    """The standard output a real Slurm 22.05 printed for `command` (tests/data capture)."""
    text = CAPTURE.read_text()
    start = text.index(f"```console\n$ {command}\n") + len(f"```console\n$ {command}\n")
    return text[start:text.index("```", start)]


@pytest.mark.parametrize("command", [
    "sacctmgr show assoc", "sacctmgr -P show assoc", "sacctmgr show qos", "sacctmgr -P show qos",
    "sacctmgr show account", "sacctmgr show user", "sacctmgr -P show user",
    "sacctmgr show assoc tree format=Account,User,Fairshare",
    "sacctmgr show assoc where account=physics format=Account,User,ParentName,Share",
    "sacctmgr show qos format=Name,Priority,Preempt,PreemptMode,Flags,MaxWall,MaxJobsPU,MaxSubmitPU,MaxTRES,MaxTRESPU,GrpTRES,GrpJobs",
    "sacctmgr show qos format=Name%20,Priority%5", "sacctmgr show tres",
    "sacctmgr show user alice withassoc format=User,DefaultAccount,Account,Partition,QOS,DefaultQOS",
])
def test_sacctmgr_shows_what_a_real_slurm_shows(reference_db: Cluster, command: str):
    r = reference_db.run(shlex.split(command), timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == captured(command)


@pytest.fixture(scope="module")
def reference_db(tmp_path_factory: pytest.TempPathFactory):
    conf = ("ClusterName=anchor\nNodeName=node[1-2] CPUs=2 RealMemory=4000\n"
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE\n")
    for c in serve(Cluster(tmp_path_factory.mktemp("refdb"), nodes=2, conf=conf)):
        for line in SETUP.splitlines():
            ok(c, "sacctmgr", "-i", *shlex.split(line))
        yield c
