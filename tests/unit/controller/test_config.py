"""slurm.conf parsing: the keys real sites use; unknown keys warn; bad values name the key."""

from __future__ import annotations

import pytest

from slurmlet.controller.config import ConfigError, parse_slurm_conf

REFERENCE = """
# the reference cluster's file, abridged
ClusterName=anchor
SlurmctldHost=vm(10.250.0.1)
KillWait=30
MinJobAge=300
SlurmdTimeout=300
DefMemPerCPU=1000
NodeName=node[1-4] CPUs=8 RealMemory=32000 Gres=gpu:8 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE PriorityTier=1 PreemptMode=REQUEUE
PartitionName=high Nodes=node[1-4] MaxTime=2-00:00:00 PriorityTier=10
FancyNewKey=1
"""


def test_reference_file():
    c = parse_slurm_conf(REFERENCE)
    assert c.cluster_name == "anchor"
    assert [n.name for n in c.nodes] == ["node1", "node2", "node3", "node4"]
    assert {(n.cpus, n.real_memory, n.gpus) for n in c.nodes} == {(8, 32000, 8)}
    assert c.kill_wait == 30 and c.min_job_age == 300 and c.slurmd_timeout == 300 and c.def_mem_per_cpu == 1000
    debug, high = c.partitions
    assert debug.default and debug.nodes is None and debug.max_time is None and debug.preempt_mode == "REQUEUE"
    assert not high.default and high.nodes == ("node1", "node2", "node3", "node4")
    assert high.max_time == 2 * 1440 and high.priority_tier == 10
    assert c.warnings == ("unknown key FancyNewKey",)


def test_empty_config_is_one_default_partition_over_all_nodes():
    c = parse_slurm_conf("")
    assert c.dynamic_nodes
    assert [(p.name, p.default, p.nodes) for p in c.partitions] == [("debug", True, None)]


def test_first_partition_becomes_default_and_typed_gres():
    c = parse_slurm_conf("NodeName=gpu[01-02] CPUs=4 RealMemory=100 Gres=gpu:h100:4\nPartitionName=a Nodes=gpu01\n")
    assert c.partitions[0].default
    assert [(n.name, n.gpus, n.gpu_type) for n in c.nodes] == [("gpu01", 4, "h100"), ("gpu02", 4, "h100")]


@pytest.mark.parametrize("text,needle", [
    ("KillWait=abc", "KillWait"),
    ("NodeName=n1 CPUs=x", "CPUs"),
    ("PartitionName=p MaxTime=1:2:3:4", "MaxTime"),
    ("NodeName=n[1-", "bad host list"),
    ("ClusterName", "Key=Value"),
])
def test_bad_values_name_the_key_and_line(text, needle):
    with pytest.raises(ConfigError) as e:
        parse_slurm_conf("ClusterName=x\n" + text)
    assert needle in str(e.value) and "line 2" in str(e.value)


def test_scheduler_and_preemption_settings():
    cfg = parse_slurm_conf(
        "SchedulerType=sched/backfill\n"
        "SchedulerParameters=bf_window=120,bf_resolution=30,bf_max_job_test=50,bf_continue,bf_policy=easy,"
        "bf_interval=5\n"
        "PreemptType=preempt/partition_prio\nPreemptMode=SUSPEND,GANG\nPreemptExemptTime=00:10:00\n"
        "PartitionName=low Nodes=ALL Default=YES GraceTime=30\n"
        "PartitionName=mid Nodes=ALL PreemptMode=requeue\n")
    sc = cfg.sched_config()
    assert (sc.backfill, sc.bf_window, sc.bf_resolution, sc.bf_max_job_test, sc.bf_continue, sc.bf_easy) == \
        (True, 120, 30, 50, True, True)
    assert (sc.preempt, sc.preempt_exempt_time) == (True, 600)
    assert cfg.bf_interval() == 5.0
    low, mid = cfg.partitions
    assert cfg.preempt_mode_of(low) == "SUSPEND" and low.grace_time == 30
    assert cfg.preempt_mode_of(mid) == "REQUEUE"
    plain = parse_slurm_conf("SchedulerType=sched/builtin\n").sched_config()
    assert (plain.backfill, plain.preempt, plain.bf_max_job_test, plain.bf_resolution) == (False, False, 100, 60)


@pytest.mark.parametrize("line, key", [
    ("SchedulerParameters=bf_window=-5", "bf_window"),
    ("SchedulerParameters=bf_resolution=x", "bf_resolution"),
    ("SchedulerParameters=bf_policy=greedy", "bf_policy"),
    ("SchedulerType=sched/wiki", "SchedulerType"),
    ("PreemptType=preempt/job_prio", "PreemptType"),
    ("PreemptMode=SOMETIMES", "PreemptMode"),
    ("PartitionName=p Nodes=ALL PreemptMode=CANCEL,REQUEUE", "PreemptMode"),
    ("PartitionName=p Nodes=ALL GraceTime=-1", "GraceTime"),
])
def test_bad_scheduler_settings_name_the_key(line, key):
    with pytest.raises(ConfigError, match=key):
        parse_slurm_conf(line + "\n")


def test_a_requeued_job_waits_what_slurmctld_makes_it_wait():
    """A real 22.05 sets a requeued job's BeginTime to now + cred_expire (120 s) + 1: the captures
    in tests/data show EligibleTime 121 s after the requeue."""
    assert parse_slurm_conf("NodeName=n1 CPUs=1\nPartitionName=p Nodes=ALL\n").requeue_delay == 121


def test_controllers_are_the_slurmctldhost_lines_in_order_and_each_finds_its_own():
    from slurmlet.controller.failover import HostError, role, whoami
    c = parse_slurm_conf("SlurmctldHost=ctl1(10.0.0.1)\nSlurmctldHost=ctl2\nSlurmctldHost=ctl3\nSlurmctldTimeout=30\n")
    assert c.controllers == ("ctl1(10.0.0.1)", "ctl2", "ctl3") and c.slurmctld_timeout == 30
    assert c.controller_names() == ("ctl1", "ctl2", "ctl3")
    assert [role(i, 3) for i in range(3)] == ["primary", "backup1", "backup2"]
    assert [role(i, 2) for i in range(2)] == ["primary", "backup"]
    assert whoami(c, "ctl2") == (1, "ctl2")
    with pytest.raises(HostError, match=r"--host ctl9: not one of SlurmctldHost's \(ctl1, ctl2, ctl3\)"):
        whoami(c, "ctl9")
    one = parse_slurm_conf("ClusterName=x\n")
    assert one.controller_names() == ("localhost",) and one.slurmctld_timeout == 120  # (22.05's default)
    assert whoami(one, None) == (0, "localhost")
    assert whoami(parse_slurm_conf("SlurmctldHost=vm\n"), None) == (0, "vm")  # (the only one: whatever the host)
    # the older keys, where no SlurmctldHost is
    old = parse_slurm_conf("ControlMachine=a\nBackupController=b\n")
    assert old.controller_names() == ("a", "b")
    assert not old.warnings


@pytest.mark.parametrize("text, needle", [
    ("SlurmctldHost=a\nSlurmctldHost=a\n", "SlurmctldHost: a host named twice"),
    ("SlurmctldHost=a(b\n", "SlurmctldHost: invalid value 'a(b'"),
    ("SlurmctldTimeout=soon\n", "SlurmctldTimeout"),
])
def test_bad_controller_lines_are_refused(text, needle):
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        parse_slurm_conf(text)
