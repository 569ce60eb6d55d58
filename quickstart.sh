#!/usr/bin/env bash
# Quickstart: install slurmlet into .venv, start a 2-node local cluster, run the multi-node
# example to completion, show its output and the accounting, then stop the cluster and remove its
# state (only .venv stays).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv >/dev/null
.venv/bin/pip install -q --disable-pip-version-check . >.venv/pip.log 2>&1 || { cat .venv/pip.log; exit 1; }
export PATH="$PWD/.venv/bin:$PATH"
state=$(mktemp -d /tmp/slurmlet-quickstart.XXXXXX)
# whatever happens, the cluster stops and its state directory goes: the run leaves nothing behind
trap 'slurmlet down --state-dir "$state" >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
eval "$(slurmlet up --nodes 2 --state-dir "$state" --port 0)"
sinfo
cd examples/hello
echo "+ sbatch --parsable --wait hello.sbatch"
id=$(sbatch --parsable --wait hello.sbatch)
echo "job $id finished"
cat "hello-$id.out"
sacct -j "$id"
rm -f "hello-$id.out"
