"""cgroup.conf as the controller reads it and the agents apply it (nodeagent/cgroup.py)."""

from __future__ import annotations

from slurmlet.common.cgroupconf import Policy
from slurmlet.controller.config import parse_cgroup_conf


def test_cgroup_conf_keys_are_read_as_slurm_spells_them_and_unknown_ones_warned():
    values, warnings = parse_cgroup_conf("# site\nconstrainramspace=yes\nConstrainSwapSpace = yes  # no swap\n"
                                         "AllowedRAMSpace=90\nBogusKey=1\n\n")
    assert values == {"ConstrainRAMSpace": "yes", "ConstrainSwapSpace": "yes", "AllowedRAMSpace": "90"}
    assert warnings == ["cgroup.conf line 5: 'BogusKey' is not supported (ignored)"]


def test_memory_limits_follow_constrainramspace_and_allowedramspace():
    assert Policy().memory_limit(1000) is None  # Slurm's default: tracking only
    assert Policy.from_conf({"ConstrainRAMSpace": "yes"}).memory_limit(1000) == 1000
    assert Policy.from_conf({"ConstrainRAMSpace": "yes", "AllowedRAMSpace": "50"}).memory_limit(1000) == 500
    assert Policy.from_conf({"ConstrainRAMSpace": "yes"}).memory_limit(None) is None  # no memory asked
    p = Policy.from_conf({"ConstrainRAMSpace": "Yes", "ConstrainSwapSpace": "no", "AllowedRAMSpace": "lots"})
    assert (p.ram, p.swap, p.allowed_ram) == (True, False, 100.0)


def test_cpumap_gives_jobs_the_lowest_free_cpus_and_shares_the_least_used_when_short():
    from slurmlet.nodeagent.cgroup import CpuMap
    m = CpuMap([0, 1, 2, 3])
    assert m.take(1, 2) == [0, 1]
    assert m.take(2, 1) == [2]
    assert m.take(1, 2) == [0, 1]  # the same job asks again: the same CPUs
    assert m.take(3, 3) == [0, 1, 3]  # the free one, then the lowest-numbered of those used once
    m.release(1)
    m.release(2)
    m.release(3)
    assert m.take(4, 8) == [0, 1, 2, 3]  # declared with more CPUs than the machine has: all of them


def test_a_v1_group_given_cpus_is_made_where_no_cpuset_hierarchy_is_mounted(tmp_path):
    """ConstrainCores on a v1 host without the cpuset hierarchy: the job's group is made in the
    others (the agent binds the CPUs itself), not refused with an error."""
    from slurmlet.nodeagent.cgroup import Group
    g = Group("v1", {"freezer": str(tmp_path / "freezer" / "job_1"), "memory": str(tmp_path / "memory" / "job_1")})
    g.create(None, cpus=[0])
    assert (tmp_path / "freezer" / "job_1").is_dir() and (tmp_path / "memory" / "job_1").is_dir()


def test_the_process_limit_is_per_cpu_of_the_job_and_off_unless_asked():
    assert Policy().tasks_limit(4) is None  # Slurm has no such limit: none without the key
    p = Policy.from_conf({"SlurmletMaxTasksPerCPU": "512"})
    assert (p.tasks_limit(1), p.tasks_limit(4), p.tasks_limit(None)) == (512, 2048, 512)
    assert Policy.from_conf({"SlurmletMaxTasksPerCPU": "many"}).tasks_limit(4) is None
    assert p.confines and not Policy.from_conf({"ConstrainCores": "no"}).confines


def test_up_writes_the_recommended_cgroup_conf_and_no_confine_the_other_and_leaves_a_hand_written_one(tmp_path):
    from slurmlet.controller.commands import local
    conf = tmp_path / "cgroup.conf"
    assert local._write_cgroup_conf(str(tmp_path), None) is None
    values = parse_cgroup_conf(conf.read_text())[0]
    assert values == {"ConstrainCores": "yes", "ConstrainDevices": "yes", "ConstrainRAMSpace": "yes",
                      "SlurmletMaxTasksPerCPU": "512"}
    assert local._write_cgroup_conf(str(tmp_path), False) is None
    assert not Policy.from_conf(parse_cgroup_conf(conf.read_text())[0]).confines
    assert local._write_cgroup_conf(str(tmp_path), None) is None  # kept for the next `up`, as the shape is
    assert not Policy.from_conf(parse_cgroup_conf(conf.read_text())[0]).confines
    assert local._write_cgroup_conf(str(tmp_path), True) is None
    assert parse_cgroup_conf(conf.read_text())[0] == values
    conf.write_text("ConstrainRAMSpace=yes\n")
    assert local._write_cgroup_conf(str(tmp_path), False) == (f"{conf} was not written by slurmlet up: edit it to "
                                                              f"change what jobs are confined to")
    assert conf.read_text() == "ConstrainRAMSpace=yes\n"


def test_the_compose_cluster_confines_its_jobs_as_up_does():
    from slurmlet.controller.commands import local
    from tests.conftest import ROOT
    compose = parse_cgroup_conf((ROOT / "docker" / "cgroup.conf").read_text())
    assert compose == parse_cgroup_conf(local.CGROUP_CONF[True])
    assert "./docker/cgroup.conf:/etc/slurm/cgroup.conf:ro" in (ROOT / "docker-compose.yml").read_text()


def test_up_finds_the_directory_that_closes_its_python_to_other_users():
    import shutil
    import tempfile
    from pathlib import Path

    from slurmlet.controller.commands.local import closed_to_others
    base = Path(tempfile.mkdtemp(prefix="slurmlet-closed-"))  # (pytest's tmp_path is itself closed)
    try:
        base.chmod(0o755)
        closed, open_ = base / "closed", base / "open"
        for d in (closed, open_):
            (d / "bin").mkdir(parents=True)
            (d / "bin" / "python3").write_text("")
            (d / "bin" / "python3").chmod(0o755)
        closed.chmod(0o700)
        assert closed_to_others(str(closed / "bin" / "python3")) == str(closed)
        assert closed_to_others(str(open_ / "bin" / "python3")) is None
        (open_ / "bin" / "python3").chmod(0o750)
        assert closed_to_others(str(open_ / "bin" / "python3")) == str(open_ / "bin" / "python3")
    finally:
        shutil.rmtree(base)
