#!/usr/bin/env bash
# The symbolic sweep (issue 21): every schedule algorithm of every collective run
# symbolically at 4096 ranks (testing/symbolic_run.h: each output element must hold
# exactly the contributions the standard says, in canonical order for a reduction),
# counts 0, 1 and 5 in chunks of two elements, every root kind, in place and not, each
# op kind and topology (bruck's alltoall at 2048 ranks: at 4096 it passes 24 GiB).
# Prints each algorithm's time. Not run by .ci/run, whose algorithms_test checks the
# non-quadratic algorithms at 4096 ranks and count 2; this takes about 40 minutes and
# 15 GiB at its peak on this 2-core machine.
#
# Usage: tools/symbolic_sweep.sh [extra bazel test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
# Logs this run wrote, not a shard's left from an earlier sharded run.
started=$(mktemp)
trap 'rm -f "$started"' EXIT
bazel test -c opt --color=no --curses=no --test_timeout=21600 --test_output=errors "$@" \
  //collectives:algorithms_sweep_test >&2 || status=$?
log=bazel-testlogs/collectives/algorithms_sweep_test/test.log
[ -f "$log" ] || { echo "symbolic_sweep.sh: no test log at $log" >&2; exit 1; }
echo "algorithm,seconds,result"
for shard_log in bazel-testlogs/collectives/algorithms_sweep_test/test.log \
  bazel-testlogs/collectives/algorithms_sweep_test/shard_*/test.log; do
  [ -f "$shard_log" ] && [ "$shard_log" -nt "$started" ] || continue
  sed -n 's/^\[ *\(OK\|FAILED\) *\] All\/AlgorithmTest\.SweepAt4096Ranks\/\([a-z_]*\) (\([0-9]*\) ms)$/\2,\3,\1/p' \
    "$shard_log" | awk -F, '{ printf "%s,%.1f,%s\n", $1, $2 / 1000, $3 }'
done
exit "$status"
