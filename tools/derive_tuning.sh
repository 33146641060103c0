#!/usr/bin/env bash
# Derives the shipped tuning table of a machine profile (issue 21): zcoll_sim --table
# for each collective at 128, 1024 and 8192 ranks from 8 B to 64 MiB, one table.
# Writes sim/tuning/<profile>.tuning (ZCOLL_TUNING=that file makes communicators use
# it); //sim:collective_model_test checks that the shipped one picks what its comments
# say. Not a test: about 4 minutes on one core of this machine for the infiniband
# profile (allreduce's candidates and the 8192-rank alltoall take most of it).
#
# Usage: tools/derive_tuning.sh [PROFILE]   (default: infiniband_hdr)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-infiniband_hdr}
colls="allreduce reduce reduce_scatter_block bcast allgather gather scatter alltoall barrier"
bazel build -c opt --color=no --curses=no //tools:zcoll_sim >&2
sim=bazel-bin/tools/zcoll_sim
mkdir -p sim/tuning
out=sim/tuning/$profile.tuning
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for coll in $colls; do
  echo "derive_tuning.sh: $coll" >&2
  "$sim" --table --profile="$profile" --coll="$coll" --ranks=128,1024,8192 --min=8 \
    --max=67108864 >> "$tmp"
done
mv "$tmp" "$out"
trap - EXIT
echo "derive_tuning.sh: wrote $out" >&2
