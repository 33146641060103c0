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

# A rank that never joins: the others' PMIx fence ends at ZCOLL_TIMEOUT, not later.
start=$SECONDS
out=$(ZCOLL_TIMEOUT=3 ZCOLL_PROBE_ABSENT_RANK=1 ZCOLL_PROBE_ABSENT_SECONDS=20 \
      timeout 120 "$mpirun" --allow-run-as-root --oversubscribe -np 2 \
        --mca btl self --mca pml ^ucx \
        -x ZCOLL_TIMEOUT -x ZCOLL_PROBE_ABSENT_RANK -x ZCOLL_PROBE_ABSENT_SECONDS "$probe" 2>&1)
code=$?
echo "$out"
elapsed=$((SECONDS - start))
[ "$code" -ne 0 ] || { echo "FAILED: a job with an absent rank succeeded"; failures=1; }
grep -q "Create failed after [0-9]* s: DEADLINE_EXCEEDED: rank 0: not every rank reached the PMIx fence" <<<"$out" \
  || { echo "FAILED: rank 0 did not report the fence's deadline"; failures=1; }
grep -q "(Create's limit: 3s, from ZCOLL_TIMEOUT)" <<<"$out" \
  || { echo "FAILED: the deadline's error does not say which limit ran out"; failures=1; }
[ "$elapsed" -lt 18 ] || { echo "FAILED: the fence took ${elapsed}s, past its 3 s deadline"; failures=1; }
[ $failures -eq 0 ] && echo "ok: an absent rank ends the others' Create at the deadline (${elapsed}s)"
exit $failures
