"""`slurmlet translate --to sbatch`: an AI Runtime workload YAML as a Slurm batch script, validated
by the controller's own workload schema (controller/workload.py). The other direction, a script's
`#SBATCH` lines read with sbatch's grammar, is the CLI's (cli/translate.py); cli/main.py joins them."""

from __future__ import annotations

import re
import shlex
import textwrap

from ..errors import InvalidRequest
from ..workload import accelerator_model, gpus_per_node, parse

#: AI Runtime spelling -> Slurm spelling, in the command
_TO_SLURM = [
    ('"$MASTER_ADDR"', '"$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"'),
    ('"$NUM_NODES"', '"$SLURM_NNODES"'),
    ('"$NODE_RANK"', '"$SLURM_NODEID"'),
    ('"$MASTER_PORT"', "29500"),
]


def workload_to_sbatch(doc: dict) -> tuple[str, list[str]]:
    """A workload document (validated as `air run` validates it: ValueError with the field's
    error) as a batch script, and warnings for what has no Slurm counterpart."""
    try:
        w = parse(doc)
    except InvalidRequest as e:
        raise ValueError(e.error) from None
    warnings: list[str] = []
    per_node = gpus_per_node(w)
    lines = ["#!/bin/bash", f"#SBATCH --job-name={shlex.quote(w.experiment_name)}",
             f"#SBATCH --nodes={w.compute.num_accelerators // per_node}", "#SBATCH --ntasks-per-node=1",
             f"#SBATCH --gpus-per-node={per_node}"]
    if w.timeout_minutes:
        h, m = divmod(w.timeout_minutes, 60)
        lines.append(f"#SBATCH --time={h:02d}:{m:02d}:00")
    if w.max_retries:
        lines.append("#SBATCH --requeue")
        warnings.append("max_retries becomes --requeue (Slurm requeues after node failures and preemption, "
                        "not after a failed exit)")
    warnings.append(f"accelerator model {accelerator_model(w)}: "
                    "ask your site for the matching --gres type or partition")
    if w.environment and (w.environment.dependencies or w.environment.version):
        warnings.append("environment: install its dependencies on the nodes (module load, a virtual environment) "
                        "before srun")
    lines.append("")
    for k, v in w.env_variables.items():
        lines.append(f"export {k}={shlex.quote(str(v))}")
    command = re.sub(r'^cd "\$CODE_SOURCE_PATH"\n', "", w.command)
    command = command.replace('"${LOCAL_WORLD_SIZE:-', '"${SLURM_GPUS_ON_NODE:-')
    for air, slurm in _TO_SLURM:
        command = command.replace(air, slurm)
    # inside bash -c '...': each ' of the command as '\'' (close, an escaped quote, reopen)
    body = textwrap.indent(command.rstrip("\n"), "  ").replace("'", "'\\''")
    lines += ["srun bash -c '", body, "'"]
    return "\n".join(lines) + "\n", warnings
