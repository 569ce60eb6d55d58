#!/bin/sh
# A wheelhouse: slurmlet and every package it needs as wheels in one directory, for hosts and image
# builds that cannot reach a package index. Made where pip can reach one (or has the wheels on disk):
#   docker/offline/wheelhouse.sh [DIR]        # DIR defaults to docker/wheelhouse, what the Dockerfile uses
#   pip install --no-index --find-links DIR slurmlet          # then, on the offline host
# torch (the CPU build, for the examples) and numpy are included unless SLURMLET_WHEELHOUSE_TORCH is empty.
set -eu
cd "$(dirname "$0")/../.."
out=${1:-docker/wheelhouse}
torch=${SLURMLET_WHEELHOUSE_TORCH-torch==2.13.0 numpy}
mkdir -p "$out"
python3 -m pip wheel -q --disable-pip-version-check --wheel-dir "$out" . setuptools wheel mypy==2.4.1 $torch
echo "$(ls "$out"/*.whl | wc -l) wheels in $out" >&2
