"""slurmlet translate: the migration guide's sbatch script and workload YAML, both ways."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from slurmlet.cli.translate import sbatch_to_workload
from slurmlet.controller.commands.translate import workload_to_sbatch

GUIDE = Path(__file__).resolve().parents[2] / "data" / "migration-guide"  # see its PROVENANCE.md
SBATCH = (GUIDE / "guide.sbatch").read_text()
YAML = yaml.safe_load((GUIDE / "guide.yaml").read_text())


def test_the_guides_script_gives_the_guides_workload_field_for_field():
    doc, warnings = sbatch_to_workload(SBATCH)
    # environment and max_retries are not in the script: they are the YAML author's additions
    want = {k: v for k, v in YAML.items() if k not in ("environment", "max_retries")}
    assert doc == want
    assert warnings == ["the script names no GPU model: H100 assumed in accelerator_type"]


def test_the_guides_workload_gives_a_script_that_translates_back():
    script, warnings = workload_to_sbatch(YAML)
    assert script.splitlines()[:7] == ["#!/bin/bash", "#SBATCH --job-name=llama-sft", "#SBATCH --nodes=2",
                                       "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=8",
                                       "#SBATCH --time=02:00:00", "#SBATCH --requeue"]
    assert '--master_addr="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"' in script
    assert any("max_retries becomes --requeue" in w for w in warnings)
    assert any(w.startswith("environment:") for w in warnings)
    back, _ = sbatch_to_workload(script)
    assert back["command"] == YAML["command"] and back["compute"] == YAML["compute"]
    assert (back["timeout_minutes"], back["max_retries"]) == (120, 1)


def test_exports_partition_and_module_loads():
    script = ("#!/bin/bash\n#SBATCH -J x\n#SBATCH -N 1\n#SBATCH --gres=gpu:a100:4\n#SBATCH -p big\n"
              "#SBATCH --export=ALL,LR=0.1,EPOCHS=3\nmodule load cuda\nsrun python train.py --lr $LR\n")
    doc, warnings = sbatch_to_workload(script)
    assert doc["compute"] == {"num_accelerators": 4, "accelerator_type": "GPU_4xa100"}
    assert doc["env_variables"] == {"LR": "0.1", "EPOCHS": "3"}
    assert doc["command"] == 'cd "$CODE_SOURCE_PATH"\npython train.py --lr $LR\n'
    assert any("module load" in w for w in warnings) and any("--partition" in w for w in warnings)


def run(*args: str, cwd: Path):
    return subprocess.run([sys.executable, "-c", "import sys; from slurmlet.cli.main import slurmlet; sys.argv = ['slurmlet', "
                           "'translate'] + sys.argv[1:]; sys.exit(slurmlet())", *args], capture_output=True, text=True,
                          cwd=cwd, env={"PYTHONPATH": str(Path(__file__).resolve().parents[3]), "PATH": "/usr/bin:/bin"})


def test_command_line_errors(tmp_path: Path):
    r = run("missing.sbatch", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "slurmlet translate: error: cannot read missing.sbatch: No such file or directory\n")
    (tmp_path / "bad.yaml").write_text("experiment_name: x\ncompute: {num_accelerators: 3, accelerator_type: GPU_2xH100}\n"
                                      "command: 'true'\nextra: 1\n")
    r = run("bad.yaml", cwd=tmp_path)
    assert r.returncode == 1 and "extra: unknown field" in r.stderr
    (tmp_path / "job.sbatch").write_text(SBATCH)
    r = run("job.sbatch", "-o", "train.yaml", cwd=tmp_path)
    assert r.returncode == 0 and yaml.safe_load((tmp_path / "train.yaml").read_text())["experiment_name"] == "llama-sft"


def test_options_without_a_workload_counterpart_are_warnings():
    script = ("#!/bin/bash\n#SBATCH -J sweep\n#SBATCH -N 2\n#SBATCH --gpus-per-node=4\n#SBATCH --array=0-3\n"
              "#SBATCH --dependency=afterok:12\n#SBATCH --account=ml\n#SBATCH --qos=high\n#SBATCH --mem=8G\n"
              "srun -n 2 python train.py --seed $SLURM_ARRAY_TASK_ID\n")
    doc, warnings = sbatch_to_workload(script)
    assert doc["compute"] == {"num_accelerators": 8, "accelerator_type": "GPU_4xH100"}
    assert doc["command"] == 'cd "$CODE_SOURCE_PATH"\npython train.py --seed $SLURM_ARRAY_TASK_ID\n'
    for opt in ("--account", "--qos", "--mem", "--dependency", "--array"):
        assert any(w.startswith(opt) for w in warnings), opt


def test_names_and_commands_reach_the_shell_as_written(tmp_path: Path):
    """A workload's name and command with quotes, `;`, `$` and spaces: the script's #SBATCH line
    gives sbatch the name as written, bash -c gets the command as written, and it translates back."""
    from slurmlet.cli.opts import directive_args
    name = "it's; touch pwned $HOME"
    command = "echo 'single' \"double\" $HOME; echo it's done\n"
    doc = {**YAML, "experiment_name": name, "command": command}
    script, _ = workload_to_sbatch(doc)
    assert ["--job-name=" + name] == [a for a in directive_args(script) if a.startswith("--job-name")]
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    got = subprocess.run(["bash", "-c", 'srun() { printf %s "$3"; }; source "$0"', str(path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert [ln.strip() for ln in got.stdout.splitlines() if ln] == [ln.strip() for ln in command.splitlines()]
    assert not (tmp_path / "pwned").exists()
    back, _ = sbatch_to_workload(script)
    assert (back["experiment_name"], back["command"]) == (name, 'cd "$CODE_SOURCE_PATH"\n' + command)


def test_a_name_that_is_not_one_line_is_refused():
    import pytest
    with pytest.raises(ValueError, match="experiment_name"):
        workload_to_sbatch({**YAML, "experiment_name": "a\nrm -rf ~"})
