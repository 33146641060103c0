#!/usr/bin/env bash
# Communicator::Create under Open MPI's mpirun: rank, size and addresses come from
# PMIx (the program is not an MPI program).
set -uo pipefail
# Called by name: given an absolute path, Open MPI takes its directory's parent as
# --prefix, which for /usr/bin is refused.
mpirun=mpirun.openmpi
if ! command -v "$mpirun" >/dev/null; then
  echo "SKIPPED: mpirun.openmpi is not installed (tools/setup.sh installs it)"
  exit 0
fi
probe=$PWD/tools/communicator_probe
# Open MPI keeps its session directory under TMPDIR; Bazel's sandbox gives us one.
export TMPDIR=${TEST_TMPDIR:-/tmp}
out=$(timeout 120 "$mpirun" --allow-run-as-root --oversubscribe -np 4 \
        --mca btl self --mca pml ^ucx "$probe" 2>&1); code=$?
echo "$out"
failures=0
[ "$code" -eq 0 ] || { echo "FAILED: mpirun exited with $code"; failures=1; }
rings=$(grep -c "ring ok" <<<"$out")
[ "$rings" -eq 4 ] || { echo "FAILED: $rings of 4 ranks passed the ring"; failures=1; }
split=$(grep -c "node 0 has 4 ranks" <<<"$out")
[ "$split" -eq 4 ] || { echo "FAILED: $split of 4 ranks split off their node"; failures=1; }
# The node is named as PMIx names the host (PMIX_HOSTNAME), here the machine's name.
grep -q "rank 3 of 4, node 0: 1 node: $(hostname) {0-3}" <<<"$out" || { echo "FAILED: rank 3 of 4 on one node not reported"; failures=1; }
[ $failures -eq 0 ] && echo "ok: 4 ranks under mpirun met through PMIx and passed the ring"
exit $failures
