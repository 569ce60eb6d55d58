"""`slurmlet translate`: a Slurm batch script <-> an AI Runtime workload YAML, following the
migration guide's mapping (see ../shared/reference/workloads.md).

    slurmlet translate job.sbatch [-o train.yaml]
    slurmlet translate --to sbatch train.yaml [-o job.sbatch]

sbatch -> YAML: `--job-name` -> `experiment_name`; nodes x GPUs per node -> `num_accelerators` and
`GPU_<n>x<model>`; `--time` -> `timeout_minutes`; `--requeue` -> `max_retries: 1`; `--export` variables
-> `env_variables`; the `srun ... torchrun` block -> `command`, with `$NUM_NODES`, `$NODE_RANK`,
`$LOCAL_WORLD_SIZE`, `$MASTER_ADDR`, `$MASTER_PORT` in place of their Slurm spellings. What has no
counterpart is reported as a warning on stderr.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap

from slurmlet.common.oneline import Parser

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

PROG = "slurmlet translate"

# Slurm spelling -> AI Runtime spelling, in the command (both directions)
_TO_AIR = [
    (re.compile(r'"?\$\(scontrol show hostnames "?\$\{?SLURM_JOB_NODELIST\}?"? \| head -n ?1\)"?'), '"$MASTER_ADDR"'),
    (re.compile(r'"?\$\{?SLURM_NNODES\}?"?'), '"$NUM_NODES"'),
    (re.compile(r'"?\$\{?SLURM_JOB_NUM_NODES\}?"?'), '"$NUM_NODES"'),
    (re.compile(r'"?\$\{?SLURM_NODEID\}?"?'), '"$NODE_RANK"'),
    (re.compile(r"--master_port[= ]\d+"), '--master_port="$MASTER_PORT"'),
    (re.compile(r"\$\{SLURM_GPUS_ON_NODE:-"), "${LOCAL_WORLD_SIZE:-"),
]
#: srun's short options that take their value as the next word
_VALUED = {"-n", "-N", "-c", "-o", "-e", "-w", "-x", "-p", "-t", "-J", "-G", "-D", "-m", "-i", "-A", "-q"}
def _srun_block(script: str) -> str | None:
    """The command of the script's `srun bash -c '...'` (or `srun CMD ...`) line, dedented."""
    m = re.search(r"^\s*srun\b[^\n]*?\bbash\s+-c\s+'((?:[^']|'\\'')*)'", script, re.M)
    if m:  # a single-quoted word; '\'' in it is one quote
        return textwrap.dedent(m.group(1).replace("'\\''", "'").strip("\n")).rstrip() + "\n"
    m = re.search(r"^\s*srun\s+((?:[^\n]*\\\n)*[^\n]*)", script, re.M)
    if not m:
        return None
    words = m.group(1).replace("\\\n", " ").split()
    while words and words[0].startswith("-"):  # srun's own options, as written
        opt = words.pop(0)
        if opt in _VALUED and words:
            words.pop(0)
    return " ".join(words) + "\n" if words else None


def sbatch_to_workload(text: str, model: str = "H100") -> tuple[dict, list[str]]:
    """The workload of a batch script, and warnings for what does not carry over."""
    from slurmlet.cli.opts import parse_sbatch
    from slurmlet.common.grammar import OptError
    warnings: list[str] = []
    try:
        parsed = parse_sbatch([], env={}, cwd=os.getcwd(), stdin_text=text)
    except OptError as e:
        raise ValueError("; ".join(e.lines)) from None
    sub = parsed["submit"]
    nodes = sub["nodes_min"]
    per_node = sub.get("gpus_per_node") or 0
    if not per_node:
        per_node = 1
        warnings.append("the script asks for no GPUs per node: one accelerator per node assumed")
    gpu_type = parsed.get("gpu_type")
    if not gpu_type:
        warnings.append(f"the script names no GPU model: {model} assumed in accelerator_type")
    doc: dict = {"experiment_name": sub["name"],
                 "compute": {"num_accelerators": nodes * per_node,
                             "accelerator_type": f"GPU_{per_node}x{gpu_type or model}"},
                 "code_source": {"root_path": "."}}
    block = _srun_block(text)
    if block is None:
        warnings.append("no srun line found: the whole script body becomes the command")
        block = "\n".join(line for line in text.splitlines()[1:] if not line.startswith("#SBATCH")).strip() + "\n"
    for pattern, repl in _TO_AIR:
        block = pattern.sub(repl, block)
    block = re.sub(r"--nproc_per_node[= ](\d+)", r'--nproc_per_node="${LOCAL_WORLD_SIZE:-\1}"', block)
    doc["command"] = 'cd "$CODE_SOURCE_PATH"\n' + block
    env = {k: v for k, v in (sub.get("environment") or {}).items() if k in _exported(text)}
    if env:
        doc["env_variables"] = env
    if sub.get("time_limit"):
        doc["timeout_minutes"] = sub["time_limit"]
    if sub.get("requeue"):
        doc["max_retries"] = 1
        warnings.append("--requeue becomes max_retries: 1 (a run retries failed attempts; Slurm requeues "
                        "after node failures and preemption)")
    if re.search(r"^\s*(module\s+load|source\s+\S*activate|conda\s+activate)", text, re.M):
        warnings.append("module load / environment activation: describe it in `environment` (version, "
                        "dependencies) instead")
    for opt, what in (("partition", "--partition"), ("account", "--account"), ("qos", "--qos"),
                      ("mem_per_node", "--mem"), ("dependency", "--dependency"), ("array", "--array")):
        if sub.get(opt):
            warnings.append(f"{what} has no counterpart in a workload: left out")
    return doc, warnings


def _exported(text: str) -> set[str]:
    """Variables a `#SBATCH --export=...` line sets explicitly."""
    names: set[str] = set()
    for m in re.finditer(r"^#SBATCH\s+--export[= ](\S+)", text, re.M):
        for item in m.group(1).split(","):
            if "=" in item:
                names.add(item.split("=", 1)[0])
    return names


def main(argv: list[str], to_sbatch: Callable[[dict], tuple[str, list[str]]]) -> int:
    """`slurmlet translate`; `to_sbatch` turns a workload document into a script and warnings
    (controller/commands/translate.py: the workload's validation is the controller's)."""
    ap = Parser(prog=PROG, description="Translate a Slurm batch script to an AI Runtime workload YAML, or back.")
    ap.add_argument("file")
    ap.add_argument("--to", choices=["yaml", "sbatch"], help="the target (default: yaml for a script, "
                                                              "sbatch for a .yaml/.yml file)")
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    ap.add_argument("--model", default="H100", help="GPU model when the script names none (default H100)")
    args = ap.parse_args(argv)
    try:
        with open(args.file) as f:
            text = f.read()
    except OSError as e:
        print(f"{PROG}: error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    to = args.to or ("sbatch" if args.file.endswith((".yaml", ".yml")) else "yaml")
    import yaml
    try:
        if to == "yaml":
            doc, warnings = sbatch_to_workload(text, args.model)
            out = yaml.dump(doc, Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=100)
        else:
            try:
                doc = yaml.safe_load(text)
            except yaml.YAMLError as e:
                raise ValueError(f"{args.file}: invalid YAML: {e}") from None
            out, warnings = to_sbatch(doc)
    except ValueError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    for w in warnings:
        print(f"{PROG}: warning: {w}", file=sys.stderr)
    if args.output:
        with open(args.output, "w") as f:
            f.write(out)
    else:
        sys.stdout.write(out)
    return 0


def _dumper():  # noqa: ANN202 - a yaml Dumper class writing multi-line strings as `|` blocks
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper, data):  # noqa: ANN001, ANN202
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)
    Dumper.add_representer(str, text)
    return Dumper
