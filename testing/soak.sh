#!/usr/bin/env bash
# The soak (testing/soak.cc): random collectives, types, ops (a non-commutative user
# op among them), roots, in place and counts 0..2^20, every result checked, on each
# provider in turn; prints each run's summary (calls, mismatches, RSS by tenth) and
# exits non-zero if any run failed.
#   testing/soak.sh [--ops N] [--ranks R] [--providers shm,ofi:tcp,ucx:tcp]
#                   [--seed S] [--max-elements E]
# shm runs the ranks on one emulated node; a network provider puts every rank on
# its own, so that all of its traffic crosses the provider. Builds the programs
# with -c opt unless ZCOLL_SOAK and ZCOLL_RUN name them (as soak_test does).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
ops=100000 ranks=4 providers=shm,ofi:tcp,ucx:tcp seed=1 max_elements=1048576
while [ $# -gt 0 ]; do
  case "$1" in
    --ops) ops=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --providers) providers=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --max-elements) max_elements=$2; shift 2 ;;
    *) echo "soak.sh: unknown argument $1" >&2; exit 64 ;;
  esac
done
if [ -z "${ZCOLL_SOAK:-}" ]; then
  (cd "$here" && bazel build -c opt //testing:soak //tools:zcoll_run)
  bin=$(cd "$here" && bazel info -c opt bazel-bin 2>/dev/null)
  ZCOLL_SOAK=$bin/testing/soak
  ZCOLL_RUN=$bin/tools/zcoll_run
fi
failed=0
for provider in ${providers//,/ }; do
  if [ "$provider" = shm ]; then
    settings=(ZCOLL_LOCAL_PROVIDER=shm) nodes=1
  else
    settings=("ZCOLL_PROVIDER=$provider") nodes=$ranks
  fi
  echo "== $provider: $ranks ranks on $nodes emulated node(s), $ops calls, seed $seed"
  if ! env "${settings[@]}" "$ZCOLL_RUN" -n "$ranks" --nodes "$nodes" -- "$ZCOLL_SOAK" \
       --ops "$ops" --seed "$seed" --max-elements "$max_elements" | grep -v "calls, "; then
    echo "soak.sh: the $provider run FAILED"
    failed=1
  fi
done
exit $failed
