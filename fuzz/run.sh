#!/usr/bin/env bash
# Runs each fuzz target (fuzz/BUILD.bazel) under libFuzzer: clang 14 with ASan,
# built in an output base of its own (so that it does not rebuild the default one),
# each for --execs executions (default 10^7), from its seeds and the corpus it kept
# from earlier runs, and shuts its Bazel server down. Prints a line per target and
# exits non-zero on any crash, whose input libFuzzer saves as crash-* in the working
# directory (replay it with the default build: bazel run //fuzz:TARGET -- crash-...).
#   fuzz/run.sh [--execs N] [--corpus DIR] [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
execs=10000000 corpus=${ZCOLL_FUZZ_CORPUS:-$HOME/.cache/zcoll-fuzz-corpus}
while [ $# -gt 0 ]; do
  case "$1" in
    --execs) execs=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    -*) echo "fuzz/run.sh: unknown option $1" >&2; exit 64 ;;
    *) break ;;
  esac
done
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(store_frames_fuzz envelope_fuzz bootstrap_records_fuzz)
output_base=${ZCOLL_FUZZ_OUTPUT_BASE:-$HOME/.cache/zcoll-fuzz-build}
cd "$here"
bazel --output_base="$output_base" build --config=fuzz --color=no --curses=no --symlink_prefix=/ \
  $(printf '//fuzz:%s ' "${targets[@]}")
bin=$(bazel --output_base="$output_base" info --config=fuzz bazel-bin 2>/dev/null)
failed=0
printf '%-24s %12s %10s %12s %10s %8s\n' target executions seconds "per second" "new units" result
for target in "${targets[@]}"; do
  mkdir -p "$corpus/$target"
  log=$(mktemp)
  started=$(date +%s.%N)
  if ZCOLL_FUZZ_SEEDS="$corpus/$target" "$bin/fuzz/$target" "$corpus/$target" \
       -runs="$execs" -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result=CRASH failed=1
    tail -40 "$log"
  fi
  seconds=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  executions=$(stat number_of_executed_units)
  # libFuzzer's own rate divides by whole seconds (0 for a run under one).
  printf '%-24s %12s %10.1f %12.0f %10s %8s\n' "$target" "$executions" "$seconds" \
    "$(awk -v n="${executions:-0}" -v s="$seconds" 'BEGIN { print n / s }')" "$(stat new_units_added)" "$result"
  rm -f "$log"
done
# A second Bazel server would otherwise stay up beside the default one.
bazel --output_base="$output_base" shutdown
exit $failed
