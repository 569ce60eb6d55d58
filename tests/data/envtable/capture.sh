#!/usr/bin/env bash
# Capture the SLURM_* environment of batch scripts and of steps for each option set of cases.txt on a
# Slurm cluster (the reference: ../shared/reference/slurm-cluster/setup.sh), as JSON on stdout:
# {"NAME": {"batch": {VAR: VALUE}, "step": {RANK: {VAR: VALUE}}}}. Run as root, in a directory the
# nodes share (the reference's nodes share the host's file system).
#   capture.sh                 every case
#   capture.sh NAME...         only these, merged into slurm-2205-env.json's other cases
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d /tmp/envtable.XXXXXX)"
chmod 777 "$out"
only=" $* "
while IFS='|' read -r name opts step; do
  [[ "$name" =~ ^[[:space:]]*(#|$) ]] && continue
  name="$(echo "$name" | xargs)"
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
  opts="$(echo "$opts" | xargs)"; step="$(echo "$step" | xargs)"
  stepcmd="bash -c 'env | grep ^SLURM_ | sort > $out/$name.step.\$SLURM_PROCID'"
  body="env | grep '^SLURM_' | sort > $out/$name.batch"
  if [ "$step" != "-" ]; then
    body="$body; srun $step $stepcmd"
  fi
  # one at a time, on idle nodes: the layouts are those of an empty cluster
  case "$opts" in
    "srun "*|srun)  # srun outside an allocation: its tasks are the step, there is no batch script
      # shellcheck disable=SC2086
      eval "env -u SLURM_JOB_ID ${opts} $stepcmd" </dev/null ;;
    "salloc "*|salloc)  # salloc's command stands for the batch script
      # shellcheck disable=SC2086
      env -u SLURM_JOB_ID ${opts} bash -c "$body" </dev/null ;;
    *)
      # shellcheck disable=SC2086
      id="$(sbatch --parsable -o /dev/null $opts --wrap "$body")"
      while squeue -h -j "$id" 2>/dev/null | grep -q .; do sleep 0.5; done ;;
  esac
done < "$here/cases.txt"
python3 - "$out" "$here/slurm-2205-env.json" "$*" <<'PY'
import json, os, sys
out, old, only = sys.argv[1], sys.argv[2], sys.argv[3].split()
doc = {k: v for k, v in json.load(open(old)).items() if k not in only} if only else {}
for name in only:
    doc[name] = {"batch": {}, "step": {}}
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
