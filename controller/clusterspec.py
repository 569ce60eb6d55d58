"""A cloud-style JSON cluster spec (`slurmlet controller --spec cluster.json`) as a ClusterConfig.

The spec says what a cloud console says about a Slurm cluster: partitions made of node pools, the
login pool, the shared home directory, accounting enforcement, scheduling weights and preemption,
and prolog/epilog scripts. `load_spec` validates it (unknown fields and wrong types are refused,
each error naming its field path), writes the scripts under the controller's state directory and
translates the rest into the slurm.conf keys the controller already knows, so a spec cluster and a
slurm.conf cluster run the same code:

    scheduling.priority_type / priority_weight_* / preempt_*  ->  PriorityType, PriorityWeight*, Preempt*
    accounting.accounting_storage_enforce                     ->  AccountingStorageEnforce
    prolog_bash_scripts / epilog_bash_scripts                 ->  Prolog= / Epilog= (comma-separated, in order)
    partitions[].node_pool_ids                                ->  the partition's nodes: the agents of those pools

Parameters set when the cluster is created (`fixed`: the login pool, the home directory storage,
the accounting enforcement and the partitions with their pools) cannot change through
`scontrol reconfigure`.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from slurmlet.controller.config import (
    ClusterConfig,
    ConfigError,
    PartitionConf,
    _preempt_mode,
    parse_time_seconds,
    read_config_file,
)
from slurmlet.controller.workload import field_errors

_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PoolId = Annotated[str, Field(pattern=_ID)]
Weight = Annotated[int, Field(ge=0, le=2**32 - 1)]
_ENFORCE = {"associations", "limits", "qos", "safe", "wckeys", "nojobs", "nosteps", "all", ""}


def _unkeyed(check, value: str) -> None:  # noqa: ANN001
    """Run a slurm.conf value check; its error without the slurm.conf key (the field path names it)."""
    try:
        check(value, "")
    except ConfigError as e:
        raise ValueError(str(e).removeprefix(": ")) from None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SpecPartition(_Strict):
    id: str = Field(pattern=_ID)
    node_pool_ids: list[PoolId] = Field(min_length=1)


class Accounting(_Strict):
    accounting_storage_enforce: str = ""

    @field_validator("accounting_storage_enforce")
    @classmethod
    def _enforce(cls, v: str) -> str:
        bad = [w for w in v.lower().split(",") if w.strip() not in _ENFORCE]
        if bad:
            raise ValueError(f"unknown enforcement {bad[0]!r} (expected associations, limits, qos, safe, wckeys, "
                             f"nojobs, nosteps or all)")
        return v


class Scheduling(_Strict):
    priority_type: Literal["priority/basic", "priority/multifactor"] = "priority/basic"
    priority_weight_age: Weight = 0
    priority_weight_assoc: Weight = 0
    priority_weight_fairshare: Weight = 0
    priority_weight_job_size: Weight = 0
    priority_weight_partition: Weight = 0
    priority_weight_qos: Weight = 0
    priority_weight_tres: str = ""
    preempt_type: Literal["preempt/none", "preempt/partition_prio"] = "preempt/none"
    preempt_mode: str = "OFF"
    preempt_exempt_time: str | None = None

    @field_validator("priority_weight_tres")
    @classmethod
    def _tres(cls, v: str) -> str:
        for item in filter(None, (x.strip() for x in v.split(","))):
            name, _, weight = item.partition("=")
            try:
                ok = bool(name) and float(weight) >= 0
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"expected TRES=weight pairs such as cpu=100,mem=150, got {item!r}")
        return v

    @field_validator("preempt_mode")
    @classmethod
    def _mode(cls, v: str) -> str:
        _unkeyed(_preempt_mode, v)
        return v

    @field_validator("preempt_exempt_time")
    @classmethod
    def _exempt(cls, v: str | None) -> str | None:
        if v is not None:
            _unkeyed(parse_time_seconds, v)
        return v


class SlurmSpec(_Strict):
    partitions: list[SpecPartition] = Field(min_length=1)
    login_node_pool_id: str | None = Field(None, pattern=_ID)
    home_directory_storage: str | None = None
    accounting: Accounting = Field(default_factory=Accounting)
    scheduling: Scheduling = Field(default_factory=Scheduling)
    prolog_bash_scripts: list[str] = Field(default_factory=list)
    epilog_bash_scripts: list[str] = Field(default_factory=list)

    @field_validator("home_directory_storage")
    @classmethod
    def _home(cls, v: str | None) -> str | None:
        if v is not None and not os.path.isabs(v):
            raise ValueError(f"expected an absolute path, got {v!r}")
        return v


class ClusterSpec(_Strict):
    slurmSpec: SlurmSpec  # the spec's own spelling


def parse_spec(doc: object) -> ClusterSpec:
    """The validated spec, or ConfigError naming each bad field by its path."""
    if not isinstance(doc, dict):
        raise ConfigError("invalid cluster spec: expected a JSON object with slurmSpec")
    try:
        spec = ClusterSpec.model_validate(doc)
    except ValidationError as e:
        raise ConfigError("invalid cluster spec: " + "; ".join(field_errors(e, "slurmSpec"))) from None
    s = spec.slurmSpec
    seen: set[str] = set()
    for i, p in enumerate(s.partitions):
        if p.id in seen:
            raise ConfigError(f"invalid cluster spec: slurmSpec.partitions.{i}.id: {p.id!r} is defined twice")
        seen.add(p.id)
        if s.login_node_pool_id in p.node_pool_ids:
            raise ConfigError(f"invalid cluster spec: slurmSpec.partitions.{i}.node_pool_ids: the login pool "
                              f"{s.login_node_pool_id!r} runs no jobs and cannot be in a partition")
    return spec


def script_files(spec: ClusterSpec, script_dir: str) -> dict[str, list[tuple[str, str]]]:
    """The prolog and epilog scripts as (path, text), named by position and content: a reconfigure
    that changes a script writes a new file and never touches one a running job may be using."""
    out: dict[str, list[tuple[str, str]]] = {}
    for kind, texts in (("prolog", spec.slurmSpec.prolog_bash_scripts),
                        ("epilog", spec.slurmSpec.epilog_bash_scripts)):
        out[kind] = [(os.path.join(script_dir, f"{kind}-{i:02d}-{hashlib.sha256(t.encode()).hexdigest()[:12]}.sh"),
                      t) for i, t in enumerate(texts, 1)]
    return out


def spec_config(spec: ClusterSpec, script_dir: str) -> ClusterConfig:
    """The ClusterConfig a spec stands for (pure: the scripts' paths are named, not written)."""
    s = spec.slurmSpec
    sch = s.scheduling
    raw = {"PriorityType": sch.priority_type, "PriorityWeightAge": str(sch.priority_weight_age),
           "PriorityWeightAssoc": str(sch.priority_weight_assoc),
           "PriorityWeightFairshare": str(sch.priority_weight_fairshare),
           "PriorityWeightJobSize": str(sch.priority_weight_job_size),
           "PriorityWeightPartition": str(sch.priority_weight_partition),
           "PriorityWeightQOS": str(sch.priority_weight_qos), "PreemptType": sch.preempt_type,
           "PreemptMode": sch.preempt_mode.upper()}
    if sch.priority_weight_tres:
        raw["PriorityWeightTRES"] = sch.priority_weight_tres
    if sch.preempt_exempt_time is not None:
        raw["PreemptExemptTime"] = sch.preempt_exempt_time
    if s.accounting.accounting_storage_enforce:
        raw["AccountingStorageEnforce"] = s.accounting.accounting_storage_enforce
    for kind, files in script_files(spec, script_dir).items():
        if files:
            raw[kind.capitalize()] = ",".join(path for path, _ in files)
    parts = tuple(PartitionConf(name=p.id, nodes=(), features=tuple(p.node_pool_ids), default=i == 0)
                  for i, p in enumerate(s.partitions))
    fixed = {"slurmSpec.login_node_pool_id": s.login_node_pool_id or "(null)",
             "slurmSpec.home_directory_storage": s.home_directory_storage or "(null)",
             "slurmSpec.accounting.accounting_storage_enforce": s.accounting.accounting_storage_enforce or "(null)"}
    fixed.update({f"slurmSpec.partitions[{p.id}].node_pool_ids": ",".join(p.node_pool_ids) for p in s.partitions})
    cfg = ClusterConfig(partitions=parts, raw=raw, preempt_mode=sch.preempt_mode.upper(),
                        login_pool=s.login_node_pool_id, home_storage=s.home_directory_storage, source="spec",
                        fixed=fixed)
    cfg.sched_config()
    cfg.priority_weights()
    return cfg


def load_spec(path: str, state_dir: str) -> ClusterConfig:
    """Read, validate and translate a spec file; its scripts are written under `state_dir`/scripts."""
    try:
        doc = json.loads(read_config_file(path))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON: {e}") from None
    spec = parse_spec(doc)
    script_dir = os.path.join(os.path.abspath(state_dir), "scripts")
    os.makedirs(script_dir, exist_ok=True)
    for files in script_files(spec, script_dir).values():
        for file, body in files:
            if not os.path.exists(file):
                tmp = f"{file}.tmp{os.getpid()}"
                with open(tmp, "w") as f:
                    f.write(body)
                os.chmod(tmp, 0o755)
                os.replace(tmp, file)
    return spec_config(spec, script_dir)


def load(config: str | None, spec: str | None, state_dir: str) -> ClusterConfig:
    """The controller's configuration: a spec (`--spec`, or a config path ending in .json) or slurm.conf."""
    from slurmlet.controller.config import load_config
    if spec is None and config is not None and config.endswith(".json"):
        spec = config
    return load_spec(spec, state_dir) if spec is not None else load_config(config)
