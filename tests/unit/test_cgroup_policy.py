"""cgroup.conf as the controller reads it and the agents apply it (nodeagent/cgroup.py)."""

from __future__ import annotations

from slurmlet.controller.config import parse_cgroup_conf
from slurmlet.nodeagent.cgroup import Policy


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
