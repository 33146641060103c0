#!/usr/bin/env bash
# A one-node Slurm on this machine (Debian's slurm-wlm: slurmctld and slurmd on
# localhost, no munge: auth/none, for a test only), and a 4-rank zcoll job started by
# `srun --mpi=pmix`: rank, size and the address exchange come from Slurm's PMIx plugin.
# Usage: testing/slurm/srun_job.sh [PROGRAM]   (default: the communicator probe, built
#        here; the probe's 4 ranks must each pass a ring of messages and report the job)
# Needs root (slurmd runs jobs as their user) and the packages slurmd, slurmctld,
# slurm-client (tools/setup.sh --slurm installs them). Prints each rank's output and
# exits 0 when every rank passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in slurmctld slurmd srun scontrol; do
  command -v "$tool" >/dev/null || { echo "srun_job: $tool is missing: run tools/setup.sh --slurm" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "srun_job: needs root (slurmd starts the job's processes)" >&2; exit 2; }
program=${1:-}
if [ -z "$program" ]; then
  bazel build //tools:communicator_probe >&2
  program=$(bazel info bazel-bin 2>/dev/null)/tools/communicator_probe
fi
work=$(mktemp -d /tmp/zcoll-slurm.XXXXXX)
host=$(hostname -s)
cores=$(nproc)
cat > "$work/slurm.conf" <<CONF
ClusterName=zcoll
SlurmctldHost=$host
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$((17000 + RANDOM % 1000))
SlurmdPort=$((18000 + RANDOM % 1000))
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$cores State=UNKNOWN
PartitionName=zcoll Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
CONF
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF=$work/slurm.conf
cleanup() {
  for pid_file in "$work/slurmd.pid" "$work/slurmctld.pid"; do
    [ -s "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null || true
  done
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
slurmctld -i
slurmd
for _ in $(seq 60); do
  state=$(scontrol show node "$host" 2>/dev/null | sed -n 's/.*State=\([A-Z+]*\).*/\1/p')
  case "$state" in IDLE*|MIXED*) break ;; esac
  sleep 0.5
done
echo "srun_job: node $host is ${state:-not up}" >&2
start=$SECONDS
# 4 ranks on this node even with fewer cores (--overcommit); PMIx gives the job.
code=0
out=$(timeout 120 srun --mpi=pmix --overcommit -N 1 -n 4 "$program" 2>&1) || code=$?
echo "$out"
echo "srun_job: srun exited $code after $((SECONDS - start)) s" >&2
[ "$code" -eq 0 ] || { tail -20 "$work/slurmd.log" >&2; exit 1; }
if [ "$(basename "$program")" = communicator_probe ]; then
  rings=$(grep -c "ring ok" <<<"$out" || true)
  [ "$rings" -eq 4 ] || { echo "srun_job: $rings of 4 ranks passed the ring" >&2; exit 1; }
  grep -q "rank 3 of 4, node 0: 1 node: " <<<"$out" \
    || { echo "srun_job: the ranks did not get rank and size from Slurm's PMIx" >&2; exit 1; }
  echo "srun_job: ok, 4 ranks under srun --mpi=pmix met through PMIx and passed the ring" >&2
fi
