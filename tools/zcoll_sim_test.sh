#!/usr/bin/env bash
# zcoll_sim on small jobs: the CSV the README promises, the chosen algorithm marked
# (the node engine's on one node),
# the same figures run after run, a profile printed and read back giving the same
# figures, a lower bound no simulated time beats for a bandwidth-bound size, algorithms
# that cannot be the fastest skipped with their bound (and simulated on request), and
# bad arguments refused with a sentence.
set -euo pipefail
sim=tools/zcoll_sim
fail() { echo "FAIL: $*" >&2; exit 1; }
csv=$("$sim" --coll=allreduce,bcast,reduce,reduce_scatter_block --ranks=16,128 --min=8 \
  --max=2097152 --factor=64 --format=csv 2>/dev/null)
echo "$csv"
[ "$(head -1 <<<"$csv")" = \
  "coll,ranks,bytes,algorithm,predicted_usec,lower_bound_usec,chosen,steps,seconds" ] \
  || fail "no CSV header"
grep -q '^allreduce,128,2097152,rabenseifner,[0-9.]*,[0-9.]*,1,' <<<"$csv" \
  || fail "the chosen allreduce is not marked"
# Every simulated collective and rank count has its rows.
for coll in allreduce bcast reduce reduce_scatter_block; do
  for ranks in 16 128; do
    grep -q "^$coll,$ranks,2097152,[a-z_]*,[0-9]" <<<"$csv" || fail "no $coll row on $ranks ranks"
  done
done
grep -q '^allreduce,128,8,node_levels,[0-9.]*,[0-9.]*,1,' <<<"$csv" \
  || fail "node_levels (the chosen small allreduce on 128 ranks) not simulated"
# On one node the node engine's algorithm is simulated (from its data flow) and chosen.
node=$("$sim" --coll=allreduce,alltoall --ranks=16 --min=8 --max=4194304 --factor=512 \
  --format=csv 2>/dev/null)
for coll in allreduce alltoall; do
  for bytes in 8 4096 2097152; do
    grep -q "^$coll,16,$bytes,node,[0-9.]*,[0-9.]*,1," <<<"$node" \
      || fail "$coll node on 16 ranks at $bytes bytes not simulated and chosen"
  done
done
grep -q '^# reduce_scatter_block on 128 ranks: 8 bytes are less than one 4-byte element a rank' \
  <<<"$csv" || fail "an empty block is not said"
# At 2 MiB the links' time dominates: no algorithm beats the lower bound.
awk -F, '!/^#/ && $3 == 2097152 && $5 < $6 { print; bad = 1 } END { exit bad }' <<<"$csv" \
  || fail "a predicted time under the lower bound"
# Deterministic: the same figures (all but the seconds column) every run.
again=$("$sim" --coll=allreduce,bcast,reduce,reduce_scatter_block --ranks=16,128 --min=8 \
  --max=2097152 --factor=64 --format=csv 2>/dev/null)
[ "$(cut -d, -f1-8 <<<"$csv")" = "$(cut -d, -f1-8 <<<"$again")" ] || fail "not deterministic"
# A printed profile read back from a file gives the same figures.
profile=$(mktemp)
"$sim" --print-profile=infiniband > "$profile"
grep -q '^network.bytes_per_usec = 24000' "$profile" || fail "the profile's text"
from_file=$("$sim" --coll=allreduce,bcast,reduce,reduce_scatter_block --ranks=16,128 --min=8 \
  --max=2097152 --factor=64 --format=csv --profile="$profile" 2>/dev/null)
[ "$(cut -d, -f1-8 <<<"$csv")" = "$(cut -d, -f1-8 <<<"$from_file")" ] \
  || fail "a profile file gives other figures"
# A faster network makes the network-bound size faster.
sed -i 's/^network.bytes_per_usec = .*/network.bytes_per_usec = 96000/' "$profile"
fast=$("$sim" --coll=allreduce --ranks=128 --min=2097152 --max=2097152 --algo=rabenseifner \
  --format=csv --profile="$profile" 2>/dev/null | awk -F, 'NR == 2 { print $5 }')
slow=$(grep '^allreduce,128,2097152,rabenseifner,' <<<"$csv" | cut -d, -f5)
awk -v f="$fast" -v s="$slow" 'BEGIN { exit !(f < s) }' || fail "4x the bandwidth: $fast vs $slow"
json=$("$sim" --coll=barrier --ranks=64 --format=json 2>/dev/null)
grep -q '"coll": "barrier", "ranks": 64, "bytes": 0, "algorithm": "dissemination"' <<<"$json" \
  || fail "no JSON row"
# An algorithm that cannot take a non-commutative op, asked for by name, says so.
noncommutative=$("$sim" --coll=reduce_scatter_block --algo=recursive_halving --noncommutative \
  --ranks=16 --min=4096 --max=4096 --format=csv 2>/dev/null)
grep -q '^# reduce_scatter_block,16,4096,recursive_halving: not simulated: it combines' \
  <<<"$noncommutative" || fail "a commutative-only algorithm with a non-commutative op"
table=$("$sim" --coll=bcast --ranks=256 --min=1048576 --max=1048576 2>/dev/null)
grep -q '<- chosen' <<<"$table" || fail "the table marks no choice"
# --table: rules for the points' winners, which ZCOLL_TUNING then makes the choice.
tuning=$(mktemp)
trap 'rm -f "$profile" "$tuning"' EXIT
"$sim" --table --coll=bcast --ranks=64,128 --min=4096 --max=2097152 --factor=8 \
  > "$tuning" 2>/dev/null
cat "$tuning"
grep -q '^# bcast on 64 ranks: one node; left to the built-in table' "$tuning" \
  || fail "--table does not leave one node to the built-in table"
# The built-in choice there, node_levels, is simulated too: the point has a winner,
# node_levels among the times.
grep -q '^# bcast 128 ranks 4096 bytes: [a-z_]*, [0-9.]*x the bound .*node_levels [0-9.]*\*' \
  "$tuning" || fail "--table leaves a node_levels point without a winner"
winner=$(grep '^# bcast 128 ranks 2097152 bytes: ' "$tuning" | sed 's/.*bytes: \([a-z_]*\),.*/\1/')
[ -n "$winner" ] || fail "--table has no 2 MiB point"
grep -q "^bcast $winner min_bytes=[0-9]* min_ranks=128 min_nodes=2\$" "$tuning" \
  || fail "no rule for the 2 MiB winner $winner"
builtin=$("$sim" --coll=bcast --ranks=128 --min=2097152 --max=2097152 --format=csv 2>/dev/null \
  | awk -F, '$7 == 1 { print $4 }')
tuned=$(ZCOLL_TUNING="$tuning" "$sim" --coll=bcast --ranks=128 --min=2097152 --max=2097152 \
  --format=csv 2>/dev/null | awk -F, '$7 == 1 { print $4 }')
echo "2 MiB bcast on 128 ranks: built-in table $builtin, tuned $tuned"
[ "$tuned" = "$winner" ] || fail "ZCOLL_TUNING's table chose $tuned, not $winner"
# --nodes: an 8 B bcast of 4 ranks on 4 nodes pays the network's latency (1.1 us a hop
# in the profile), on the profile's one node the NUMA domain's (0.25 us).
one_node=$("$sim" --coll=bcast --algo=binomial --ranks=4 --min=8 --max=8 \
  --format=csv 2>/dev/null | awk -F, 'NR == 2 { print $5 }')
four_nodes=$("$sim" --coll=bcast --algo=binomial --ranks=4 --nodes=4 --min=8 \
  --max=8 --format=csv 2>/dev/null | awk -F, 'NR == 2 { print $5 }')
awk -v a="$one_node" -v b="$four_nodes" 'BEGIN { exit !(b > a) }' \
  || fail "--nodes=4: $four_nodes us, not above one node's $one_node"
# --buffers=zcoll: the node engine reduces the peers' AllocateBuffer memory where it
# lies, so a 16-rank node's 16 MiB allreduce takes less than with ordinary buffers.
ordinary=$("$sim" --coll=allreduce --algo=node --ranks=16 --min=16777216 --max=16777216 \
  --format=csv 2>/dev/null | awk -F, 'NR == 2 { print $5 }')
mapped=$("$sim" --coll=allreduce --algo=node --ranks=16 --min=16777216 --max=16777216 \
  --buffers=zcoll --format=csv 2>/dev/null | awk -F, 'NR == 2 { print $5 }')
awk -v m="$mapped" -v o="$ordinary" 'BEGIN { exit !(m != "" && m < o) }' \
  || fail "--buffers=zcoll: $mapped us, not below ordinary buffers' $ordinary"
# The step budget, estimated before generating everything.
budget=$("$sim" --coll=allreduce --ranks=128 --min=2097152 --max=2097152 --max-steps=1000 \
  --format=csv 2>/dev/null)
grep -q 'would hold about [0-9]* steps .*past the budget of 1000' <<<"$budget" \
  || fail "the step budget's estimate"
# An algorithm that cannot be the fastest is listed with the bound that shows it, and
# --simulate-all simulates it: at or above that bound.
skipping=$("$sim" --coll=bcast --ranks=256 --min=1048576 --max=1048576 --format=csv 2>/dev/null)
echo "$skipping"
at_least=$(sed -n 's/^# bcast,256,1048576,linear: not simulated: rank [0-9]*.s own steps take at least \([0-9.]*\) us, more than [a-z_]*.s [0-9.]* us, so it cannot be the fastest$/\1/p' \
  <<<"$skipping")
[ -n "$at_least" ] || fail "the slow linear bcast is not skipped with its bound"
all=$("$sim" --coll=bcast --ranks=256 --min=1048576 --max=1048576 --format=csv --simulate-all \
  2>/dev/null)
linear=$(grep '^bcast,256,1048576,linear,' <<<"$all" | cut -d, -f5)
awk -v t="$linear" -v b="$at_least" 'BEGIN { exit !(t != "" && t >= b) }' \
  || fail "--simulate-all: linear at '$linear' us, its bound $at_least"
[ "$(grep -c '^bcast,' <<<"$all")" -gt "$(grep -c '^bcast,' <<<"$skipping")" ] \
  || fail "--simulate-all simulates no more than the default"
grep -q '"algorithm": "linear", "predicted_usec": null, .*"at_least_usec": [0-9.]*, "skipped"' \
  <<<"$("$sim" --coll=bcast --ranks=256 --min=1048576 --max=1048576 --format=json 2>/dev/null)" \
  || fail "the JSON row of a skipped algorithm has no at_least_usec"
# Refusals.
expect_error() {  # expect_error TEXT ARGS...: exits 2 and says TEXT
  local text=$1 output status=0
  shift
  output=$("$sim" "$@" 2>&1) || status=$?
  [ "$status" -eq 2 ] || fail "$* exited $status"
  grep -qF -- "$text" <<<"$output" || fail "$* said: $output"
}
expect_error "--coll: " --coll=allreduc
expect_error "--buffers is malloc or zcoll, not 'shm'" --buffers=shm
expect_error "--ranks: '1' is not a rank count" --ranks=1
expect_error "--min (64) is above --max (8)" --min=64 --max=8
expect_error "--min needs a whole number, got 'lots'" --min=lots
expect_error "--factor needs a whole number of at least 2, got '1'" --factor 1
expect_error "is neither a shipped profile" --profile=/no/such/file
expect_error "--format is table, csv or json" --format=xml
expect_error "unknown option --bogus" --bogus
printf 'ranks_per_node = 4\nnuma.latency_usec = 1\n' > "$profile"
expect_error "missing numa.bytes_per_usec" --profile="$profile"
expect_error "no algorithm" --coll=bcast --algo=nope --ranks=4
expect_error "--table chooses among every algorithm" --table --algo=binomial
expect_error "--nodes (5) is more than --ranks 4" --ranks=4 --nodes=5
echo "bcast fastest" > "$tuning"
ZCOLL_TUNING="$tuning" expect_error "ZCOLL_TUNING file $tuning line 1 ('bcast fastest')" \
  --coll=bcast --ranks=4
echo "zcoll_sim: all checks passed"
