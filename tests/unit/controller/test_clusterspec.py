"""The cloud-style JSON cluster spec: validation naming the field path, translation into the same
ClusterConfig slurm.conf gives, the parameters fixed at creation; NodeSets and Prolog lists."""

from __future__ import annotations

import asyncio
import copy
import json
import os

import pytest

from slurmlet.common.scripts import exit_code_env, run_scripts, script_paths
from slurmlet.controller.clusterspec import load, load_spec, parse_spec, spec_config
from slurmlet.controller.config import ConfigError, parse_slurm_conf

SPEC = {"slurmSpec": {
    "partitions": [{"id": "a4", "node_pool_ids": ["a4"]}],
    "login_node_pool_id": "login",
    "home_directory_storage": "/shared/home",
    "accounting": {"accounting_storage_enforce": "associations,limits,qos"},
    "scheduling": {"priority_type": "priority/multifactor", "priority_weight_age": 0, "priority_weight_assoc": 0,
                   "priority_weight_fairshare": 0, "priority_weight_job_size": 0, "priority_weight_partition": 0,
                   "priority_weight_qos": 0, "priority_weight_tres": "cpu=100,mem=150",
                   "preempt_type": "preempt/partition_prio", "preempt_mode": "SUSPEND,GANG",
                   "preempt_exempt_time": "00:00:00"},
    "prolog_bash_scripts": ["#!/bin/bash\necho 'First prolog script running'"],
    "epilog_bash_scripts": ["#!/bin/bash\necho 'Epilog script running'"]}}


def changed(path: str, value: object) -> dict:
    """SPEC with the field at `path` (dots; `-` deletes it) set to `value`."""
    doc = copy.deepcopy(SPEC)
    *head, last = path.split(".")
    node = doc
    for k in head:
        node = node[int(k)] if k.isdigit() else node[k]
    if value == "-":
        del node[last]
    else:
        node[last] = value
    return doc


def test_the_reference_spec_becomes_the_slurm_conf_keys_it_stands_for():
    cfg = spec_config(parse_spec(SPEC), "/state/scripts")
    want = parse_slurm_conf("PriorityType=priority/multifactor\nPriorityWeightAge=0\nPreemptType=preempt/partition_prio\n"
                            "PreemptMode=SUSPEND,GANG\nPreemptExemptTime=00:00:00\nPriorityWeightTRES=CPU=100,Mem=150\n")
    assert cfg.sched_config() == want.sched_config() and cfg.priority_weights() == want.priority_weights()
    assert cfg.preempt_mode == "SUSPEND,GANG" and cfg.raw["PriorityWeightTRES"] == "cpu=100,mem=150"
    assert cfg.raw["AccountingStorageEnforce"] == "associations,limits,qos"
    assert cfg.raw["Prolog"].startswith("/state/scripts/prolog-01-") and cfg.raw["Epilog"].count(",") == 0
    (part,) = cfg.partitions
    assert (part.name, part.default, part.nodes, part.features) == ("a4", True, (), ("a4",))
    assert cfg.login_pool == "login" and cfg.home_storage == "/shared/home" and cfg.dynamic_nodes
    # the partition is its pools' nodes, dynamically; the login pool is in no partition
    feats = {"n1": ("a4",), "n2": ("b",), "l1": ("login",)}
    assert cfg.partition_nodes(part, ["n1", "n2", "l1"], feats) == ["n1"]


def test_load_writes_the_scripts_in_order_and_a_json_config_path_is_a_spec(tmp_path):
    doc = changed("slurmSpec.prolog_bash_scripts", ["#!/bin/sh\necho one", "#!/bin/sh\necho two"])
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(doc))
    cfg = load(str(path), None, str(tmp_path / "state"))
    files = cfg.raw["Prolog"].split(",")
    assert [os.path.basename(f)[:10] for f in files] == ["prolog-01-", "prolog-02-"]
    assert [open(f).read() for f in files] == doc["slurmSpec"]["prolog_bash_scripts"]
    assert all(os.access(f, os.X_OK) for f in files)
    assert asyncio.run(run_scripts(cfg.raw["Prolog"], {"PATH": "/bin:/usr/bin"})) == (0, "one\ntwo\n")
    assert load_spec(str(path), str(tmp_path / "state")) == cfg


@pytest.mark.parametrize("path,value,error", [
    ("slurmSpec.scheduling.priority_weight_age", "5", "slurmSpec.scheduling.priority_weight_age: Input should be a "
                                                      "valid integer"),
    ("slurmSpec.scheduling.priority_weight_qos", -1, "slurmSpec.scheduling.priority_weight_qos: Input should be "
                                                     "greater than or equal to 0"),
    ("slurmSpec.scheduling.preempt_mode", "SOMETIMES", "slurmSpec.scheduling.preempt_mode: expected OFF, CANCEL, "
                                                       "REQUEUE or SUSPEND[,GANG], got 'SOMETIMES'"),
    ("slurmSpec.scheduling.preempt_type", "preempt/qos", "slurmSpec.scheduling.preempt_type: Input should be "
                                                         "'preempt/none' or 'preempt/partition_prio'"),
    ("slurmSpec.scheduling.preempt_exempt_time", "soon", "slurmSpec.scheduling.preempt_exempt_time: expected a "
                                                         "number, got 'soon'"),
    ("slurmSpec.scheduling.priority_weight_tres", "cpu", "slurmSpec.scheduling.priority_weight_tres: expected TRES="
                                                         "weight pairs"),
    ("slurmSpec.scheduling.priority_wieght_age", 1, "slurmSpec.scheduling.priority_wieght_age: unknown field"),
    ("slurmSpec.accounting.accounting_storage_enforce", "assocs", "slurmSpec.accounting.accounting_storage_enforce: "
                                                                  "unknown enforcement 'assocs'"),
    ("slurmSpec.partitions", [], "slurmSpec.partitions: List should have at least 1 item"),
    ("slurmSpec.partitions", "-", "slurmSpec.partitions: Field required"),
    ("slurmSpec.partitions.0.node_pool_ids", ["a4", "bad pool"], "slurmSpec.partitions.0.node_pool_ids.1: String "
                                                                 "should match pattern"),
    ("slurmSpec.partitions.0.id", 4, "slurmSpec.partitions.0.id: Input should be a valid string"),
    ("slurmSpec.home_directory_storage", "home", "slurmSpec.home_directory_storage: expected an absolute path"),
    ("slurmSpec.prolog_bash_scripts", "echo hi", "slurmSpec.prolog_bash_scripts: Input should be a valid list"),
    ("slurmSpec.login_node_pool_id", "a4", "slurmSpec.partitions.0.node_pool_ids: the login pool 'a4' runs no jobs"),
    ("slurmSpec.partitions", [{"id": "a", "node_pool_ids": ["x"]}, {"id": "a", "node_pool_ids": ["y"]}],
     "slurmSpec.partitions.1.id: 'a' is defined twice"),
    ("slurmSpec.nodes", 3, "slurmSpec.nodes: unknown field"),
])
def test_each_kind_of_invalid_spec_is_refused_naming_the_field(path, value, error):
    with pytest.raises(ConfigError) as e:
        parse_spec(changed(path, value))
    assert str(e.value).startswith("invalid cluster spec: " + error), str(e.value)


def test_not_a_spec_and_not_json(tmp_path):
    with pytest.raises(ConfigError, match="slurmSpec: Field required"):
        parse_spec({"spec": {}})
    with pytest.raises(ConfigError, match="expected a JSON object"):
        parse_spec([SPEC])
    bad = tmp_path / "c.json"
    bad.write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_spec(str(bad), str(tmp_path))
    with pytest.raises(ConfigError, match="cannot read"):
        load_spec(str(tmp_path / "missing.json"), str(tmp_path))


def test_fixed_parameters_are_named_and_live_ones_are_not():
    base = spec_config(parse_spec(SPEC), "/s")
    live = spec_config(parse_spec(changed("slurmSpec.scheduling.priority_weight_age", 100)), "/s")
    assert base.fixed_changes(live) == []
    for path, value, name in [("slurmSpec.login_node_pool_id", "gate", "slurmSpec.login_node_pool_id (login -> gate)"),
                              ("slurmSpec.home_directory_storage", "/h", "slurmSpec.home_directory_storage "
                                                                         "(/shared/home -> /h)"),
                              ("slurmSpec.accounting", {}, "slurmSpec.accounting.accounting_storage_enforce "
                                                           "(associations,limits,qos -> (null))"),
                              ("slurmSpec.partitions.0.node_pool_ids", ["a4", "a5"],
                               "slurmSpec.partitions[a4].node_pool_ids (a4 -> a4,a5)")]:
        assert base.fixed_changes(spec_config(parse_spec(changed(path, value)), "/s")) == [name]
    assert base.fixed_changes(parse_slurm_conf("")) == ["the configuration's kind (spec -> slurm.conf)"]


def test_slurm_conf_fixed_keys_and_nodesets():
    conf = ("ClusterName=c1\nNodeName=n[1-2] CPUs=4 Feature=big\nNodeSet=pool_a4 Feature=a4\n"
            "PartitionName=a4 Nodes=pool_a4,n1 Default=YES\nPartitionName=all Nodes=ALL\n")
    cfg = parse_slurm_conf(conf)
    a4, every = cfg.partitions
    assert a4.nodes == ("n1",) and a4.features == ("a4",) and every.nodes is None
    assert cfg.node("n2").features == ("big",) and cfg.warnings == ()
    assert cfg.partition_nodes(a4, ["n1", "n2", "d1", "d2"], {"d1": ("a4",), "d2": ("b",)}) == ["n1", "d1"]
    assert cfg.fixed_changes(parse_slurm_conf(conf.replace("Feature=a4", "Feature=a5"))) == []
    assert cfg.fixed_changes(parse_slurm_conf(conf.replace("c1", "c2"))) == ["ClusterName (c1 -> c2)"]
    assert cfg.fixed_changes(parse_slurm_conf(conf.replace("CPUs=4", "CPUs=8"))) == ["NodeName (changed)"]
    with pytest.raises(ConfigError, match="NodeSet=x: unknown key Weight"):
        parse_slurm_conf("NodeSet=x Weight=1\n")


def test_prolog_lists_and_globs_run_in_order_and_stop_at_the_first_failure(tmp_path):
    d = tmp_path / "prolog.d"
    d.mkdir()
    for name, body in [("20-b", "echo b"), ("10-a", "echo a"), ("30-c", "exit 4"), ("40-d", "echo d")]:
        (d / name).write_text(f"#!/bin/sh\n{body}\n")
        (d / name).chmod(0o755)
    one = tmp_path / "one.sh"
    one.write_text("#!/bin/sh\necho one\n")
    one.chmod(0o755)
    spec = f"{one}, {d}/*"
    assert script_paths(spec) == [str(one)] + [str(d / n) for n in ("10-a", "20-b", "30-c", "40-d")]
    code, out = asyncio.run(run_scripts(spec, {"PATH": "/bin:/usr/bin"}))
    assert code == 4 and out.startswith(f"{d}/30-c")
    assert script_paths(f"{tmp_path}/none.d/*") == []


def test_epilog_exit_code_variables():
    assert exit_code_env(0, 0) == {"SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_EXIT_CODE2": "0:0"}
    assert exit_code_env(1, 0) == {"SLURM_JOB_EXIT_CODE": "256", "SLURM_JOB_EXIT_CODE2": "1:0"}
    assert exit_code_env(0, 15) == {"SLURM_JOB_EXIT_CODE": "15", "SLURM_JOB_EXIT_CODE2": "0:15"}
