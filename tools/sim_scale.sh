#!/usr/bin/env bash
# The simulator at cluster scale (issue 21): zcoll_sim's predictions for 65,536 ranks
# (1024 nodes x 64, the default InfiniBand profile) of allreduce, reduce,
# reduce_scatter_block and bcast from 1 MiB to 64 MiB, with the wall time and peak
# memory of each size's run (GNU time). Each run is zcoll_sim's default: candidates that
# one of their ranks' own steps shows slower than one already simulated are listed, not
# simulated; pass --simulate-all as FLAGS to time every candidate. A benchmark, not a
# test: a few minutes per collective on this 2-core machine. Not run by .ci/run.
#
# Usage: tools/sim_scale.sh [RANKS] [COLLS] [FLAGS]
#   (defaults: 65536 "allreduce reduce reduce_scatter_block bcast", no flags)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-65536}
colls=${2:-allreduce reduce reduce_scatter_block bcast}
read -r -a flags <<< "${3:-}"
bazel build -c opt --color=no --curses=no //tools:zcoll_sim >&2
sim=bazel-bin/tools/zcoll_sim
[ -x /usr/bin/time ] || { echo "sim_scale.sh needs GNU time (apt-get install time)" >&2; exit 1; }
echo "coll,ranks,bytes,wall_seconds,peak_mib"
for coll in $colls; do
  for ((bytes = 1048576; bytes <= 67108864; bytes *= 4)); do
    log=$(mktemp)
    /usr/bin/time -f "%e %M" -o "$log.time" "$sim" --coll="$coll" --ranks="$ranks" \
      --min="$bytes" --max="$bytes" --format=csv "${flags[@]}" > "$log" 2>/dev/null
    read -r seconds kib < "$log.time"
    sed 's/^/  /' "$log" | grep -v '^  coll,' >&2
    echo "$coll,$ranks,$bytes,$seconds,$((kib / 1024))"
    rm -f "$log" "$log.time"
  done
done
