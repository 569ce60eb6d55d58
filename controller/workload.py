"""AI Runtime workloads (`air run --file train.yaml`): validation and their job.

A workload runs its `command` once on each of `num_accelerators / n` whole nodes (`GPU_<n>x<model>`),
with the rendezvous variables every slurmlet job gets (`NUM_NODES`, `NODE_RANK`, `LOCAL_WORLD_SIZE`,
`MASTER_ADDR`, `MASTER_PORT`), `CODE_SOURCE_PATH` and its `env_variables`. It becomes an ordinary batch
job whose script runs the command as a one-task-per-node step, each node's output in its own log
(`.air/<id>-node-<N>-a<attempt>.log` under the submit directory, attempts counted from 1), so it
shows in squeue and sacct too.
"""

from __future__ import annotations

import os
import re
import shlex

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from slurmlet.controller.errors import InvalidRequest

#: GPU_<n>x<model>: n from 1 (GPU_0x... would run on no node), the model as long as a job's gpu_type
_ACCEL = re.compile(r"^GPU_([1-9][0-9]*)x([A-Za-z0-9_.-]{1,64})$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Environment(_Strict):
    version: str | None = None
    dependencies: list[str] = Field(default_factory=list)


class Compute(_Strict):
    num_accelerators: int = Field(ge=1, le=100000)
    accelerator_type: str = Field(pattern=_ACCEL.pattern)


class CodeSource(_Strict):
    root_path: str = "."


class Workload(_Strict):
    #: a job name: one line of printable text (squeue, sacct -P and the scripts it goes into need that)
    experiment_name: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")
    compute: Compute
    command: str = Field(min_length=1)
    environment: Environment | None = None
    code_source: CodeSource | None = None
    #: values may be written as YAML numbers or booleans; the command sees them as strings
    env_variables: dict[str, str | int | float | bool] = Field(default_factory=dict)
    secrets: dict[str, str] = Field(default_factory=dict)
    timeout_minutes: int | None = Field(None, ge=1)
    max_retries: int = Field(0, ge=0, le=100)


def field_errors(e: ValidationError, top: str) -> list[str]:
    """Each validation error as `field.path: message` (`top` when the document itself is wrong)."""
    lines = []
    for err in e.errors():
        path = ".".join(str(p) for p in err["loc"]) or top
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        lines.append(f"{path}: {msg}")
    return lines


def parse(doc: object) -> Workload:
    """The workload, or InvalidRequest naming each bad field by its path (`compute.num_accelerators`)."""
    if not isinstance(doc, dict):
        raise InvalidRequest("workload: expected a mapping of fields at the top level")
    try:
        w = Workload.model_validate(doc)
    except ValidationError as e:
        raise InvalidRequest("invalid workload: " + "; ".join(field_errors(e, "workload"))) from None
    per_node = gpus_per_node(w)
    if w.compute.num_accelerators % per_node:
        raise InvalidRequest(f"invalid workload: compute.num_accelerators: {w.compute.num_accelerators} is not a "
                             f"multiple of the {per_node} accelerators per node of {w.compute.accelerator_type}")
    for key in w.env_variables:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise InvalidRequest(f"invalid workload: env_variables.{key}: not a valid variable name")
    for name, ref in w.secrets.items():
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise InvalidRequest(f"invalid workload: secrets.{name}: not a valid variable name")
        if not re.match(r"^[^/\s]+/[^/\s]+$", ref):
            raise InvalidRequest(f"invalid workload: secrets.{name}: expected scope/key, got {ref!r}")
    return w


def gpus_per_node(w: Workload) -> int:
    m = _ACCEL.match(w.compute.accelerator_type)
    assert m is not None
    return int(m.group(1))


def accelerator_model(w: Workload) -> str:
    m = _ACCEL.match(w.compute.accelerator_type)
    assert m is not None
    return m.group(2)


def job_body(w: Workload, *, cwd: str, user: str, uid: int, gid: int, group: str, host: str,
             code: str | None = None) -> dict:
    """The batch job that runs the workload (a JobSubmit body). `code`: the sha256 of the packed
    code_source; each node unpacks it and points CODE_SOURCE_PATH there."""
    per_node = gpus_per_node(w)
    nodes = w.compute.num_accelerators // per_node
    root = os.path.normpath(os.path.join(cwd, w.code_source.root_path)) if w.code_source else cwd
    script = ("#!/bin/bash\n"
              "# an air run: the workload's command once on each node, each node's log in .air/\n"
              'attempt=$(( ${SLURM_RESTART_COUNT:-0} + 1 ))\n'
              "wrap=()\n"
              'if [ -n "$MLFLOW_TRACKING_URI" ]; then  # optional MLflow tracking (slurmlet mlflow)\n'
              '  export MLFLOW_RUN_ID="$(slurmlet mlflow start)"\n'
              '  [ -n "$MLFLOW_RUN_ID" ] && wrap=(slurmlet mlflow node --air-log --)\n'
              "fi\n"
              'srun --ntasks-per-node=1 -o ".air/%j-node-%n-a$attempt.log" "${wrap[@]}" bash -c "$AIR_COMMAND"\n'
              "rc=$?\n"
              '[ -n "$MLFLOW_RUN_ID" ] && slurmlet mlflow end $rc\n'
              "exit $rc\n")
    env = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in w.env_variables.items()}
    env.update({"AIR_COMMAND": w.command, "CODE_SOURCE_PATH": root, "AIR_EXPERIMENT": w.experiment_name,
                "AIR_ACCELERATOR_TYPE": w.compute.accelerator_type})
    return {
        "script": script, "name": w.experiment_name, "nodes_min": nodes, "nodes_max": nodes,
        "ntasks_per_node": 1, "gpus_per_node": per_node, "time_limit": w.timeout_minutes,
        "requeue": w.max_retries > 0, "environment": env, "workdir": cwd, "submit_dir": cwd,
        "stdout": ".air/%j-batch.log", "max_retries": w.max_retries, "secrets": dict(w.secrets), "code": code,
        "py_deps": list(w.environment.dependencies) if w.environment and w.environment.dependencies else None,
        "gpu_type": accelerator_model(w), "user": user, "uid": uid, "gid": gid, "group": group,
        "submit_host": host, "comment": f"air: {w.compute.num_accelerators}x{accelerator_model(w)}"
                                        f" max_retries={w.max_retries}",
        "argv": [],
    }


def sbatch_preview(body: dict) -> str:
    """What `air run --dry-run` shows: the job as an sbatch script."""
    lines = ["#!/bin/bash", f"#SBATCH --job-name={shlex.quote(body['name'])}", f"#SBATCH --nodes={body['nodes_min']}",
             "#SBATCH --ntasks-per-node=1", f"#SBATCH --gpus-per-node={body['gpus_per_node']}"]
    if body.get("time_limit"):
        lines.append(f"#SBATCH --time={body['time_limit']}")
    if body.get("requeue"):
        lines.append("#SBATCH --requeue")
    for k, v in body["environment"].items():
        if k != "AIR_COMMAND":
            lines.append(f"export {k}={shlex.quote(v)}")
    lines.append(f"export AIR_COMMAND={shlex.quote(body['environment']['AIR_COMMAND'])}")
    lines += body["script"].splitlines()[1:]
    return "\n".join(lines) + "\n"
