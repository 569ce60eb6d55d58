#!/usr/bin/env bash
# Capture the SLURM_* environment of batch scripts and of steps for each option set of cases.txt on a
# Slurm cluster (the reference: ../shared/reference/slurm-cluster/setup.sh), as JSON on stdout:
# {"NAME": {"batch": {VAR: VALUE}, "step": {RANK: {VAR: VALUE}}}}. Run as root, in a directory the
# nodes share (the reference's nodes share the host's file system).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d /tmp/envtable.XXXXXX)"
chmod 777 "$out"
while IFS='|' read -r name opts step; do
  name="$(echo "$name" | xargs)"; [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
  opts="$(echo "$opts" | xargs)"; step="$(echo "$step" | xargs)"
  body="env | grep '^SLURM_' | sort > $out/$name.batch"
  if [ "$step" != "-" ]; then
    body="$body; srun $step bash -c 'env | grep ^SLURM_ | sort > $out/$name.step.\$SLURM_PROCID'"
  fi
  # one at a time, on idle nodes: the layouts are those of an empty cluster
  # shellcheck disable=SC2086
  id="$(sbatch --parsable -o /dev/null $opts --wrap "$body")"
  while squeue -h -j "$id" 2>/dev/null | grep -q .; do sleep 0.5; done
done < "$here/cases.txt"
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
doc = {}
for f in sorted(os.listdir(out)):
    name, kind, *rank = f.split(".")
    env = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(out, f)) if "=" in line)
    case = doc.setdefault(name, {"batch": {}, "step": {}})
    if kind == "batch":
        case["batch"] = env
    else:
        case["step"][rank[0]] = env
json.dump(doc, sys.stdout, indent=1, sort_keys=True)
print()
PY
rm -rf "$out"
