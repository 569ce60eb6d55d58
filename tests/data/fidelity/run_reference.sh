#!/usr/bin/env bash
# Reruns the fidelity measurement's reference side (root, on a machine where
# ../shared/reference/slurm-cluster/setup.sh can run): the real Slurm 22.05
# with 4 nodes x 25 CPUs (100 CPUs, the KTH SP2's size) and Slurm's default
# SchedulerParameters, then a slice of the KTH SP2 trace submitted 60 times
# faster, then the sacct dump and the slurm.conf the replay reads. About 25 min.
#
#   bash tests/data/fidelity/run_reference.sh [OUTDIR]   # default: tests/data/fidelity
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-$HERE}"
SHARED="${SHARED:-$(cd "$HERE/../../../.." && pwd)/shared}"   # the work trees' ../shared
REF_DIR="${SLURM_REF_DIR:-/tmp/slurm-reference}"

CPUS=25 bash "$SHARED/reference/slurm-cluster/setup.sh"
since="$(date +%Y-%m-%dT%H:%M:%S)"
python3 "$HERE/submit_slice.py" "$SHARED/traces/KTH-SP2-1996-2.1-cln.swf.gz" \
  --first 18893 --minutes 12 --scale 60 --max-run 540 --log "$OUT/kth-slice.log"
sleep 2   # (slurmctld sends the last ends to slurmdbd asynchronously)
/usr/bin/sacct -P -X -D -a -S "$since" -E now \
  -o JobID,JobIDRaw,JobName,Partition,Account,User,QOS,State,ExitCode,Submit,Eligible,Start,End,Elapsed,Timelimit,NCPUS,NNodes,ReqCPUS,ReqNodes,ReqTRES,AllocTRES,NodeList \
  > "$OUT/kth-slice-sacct.txt"
grep -v '^#' "$REF_DIR/etc/slurm.conf" > "$OUT/slurm.conf"
# which of Slurm's two schedulers started each job: "sched: Allocate" (the main one, on submit,
# on a job's end and every sched_interval) or "backfill ... Started" (every bf_interval)
awk -v since="[$since" '$1 >= since && /sched: Allocate JobId=|_start_job: Started JobId=/' \
  "$REF_DIR/var/log/slurmctld.log" > "$OUT/kth-slice-starts.log"
echo "dump: $OUT/kth-slice-sacct.txt ($(($(wc -l < "$OUT/kth-slice-sacct.txt") - 1)) records), conf: $OUT/slurm.conf"
