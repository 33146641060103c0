#!/usr/bin/env bash
# The simulator against this machine (issue 21): calibrates a profile here
# (zcoll_bench --calibrate), then for each configuration (ranks on emulated nodes),
# collective, schedule algorithm and size, puts zcoll_sim's prediction beside
# zcoll_bench's measurement (that algorithm forced; the median of --repeat runs taken in
# rounds over the algorithms, so each algorithm's runs alternate with the others').
# Prints the rows as CSV and, on stderr, per configuration: the share of rows within
# 1.3x (either way), the share of (collective, size) points where the predicted
# fastest algorithm is the measured fastest, and where it is measured within 10% of the
# fastest (algorithms the model ties, bcast's on 2 ranks, differ by noise alone). A
# benchmark, not a test; about 5 minutes with --repeat 5.
#
# A run that calibrates calibrates again after measuring and keeps both profiles
# ($TMPDIR/validate_sim.before.profile and .after.profile), saying so when the machine
# changed speed in between.
#
# --measured ROWS takes the measurements from rows this script printed before (its
# stdout) instead of running zcoll_bench, so a change to the model is judged against
# the same measured medians in seconds; give the profile of that run with --profile.
#
#
# --against EARLIER with --measured ROWS puts another run's measured medians (EARLIER,
# rows this script printed) where the predictions go: how well this machine repeats
# its own measurements, the most any model can score against one run (README,
# "Calibration and validation"). EARLIER may name several runs, comma-separated: their
# medians are pooled (the geometric mean of each row's, rows that all of them have), the
# best estimate of the machine's times that they give, for a ceiling that is not one
# run's noise against another's.
#
# Usage: tools/validate_sim.sh [--repeat R] [--configs "RANKS:NODES ..."] [--colls a,b,...]
#                              [--min BYTES] [--max BYTES] [--profile FILE] [--measured ROWS]
#                              [--against EARLIER]
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C  # sort and join agree on the order
repeat=3
configs="2:2 3:3 4:2"
colls="reduce,allreduce,reduce_scatter_block,reduce_scatter,scatter,bcast,gather,allgather,alltoall,scan,exscan"
min=65536
max=4194304
profile=""
measured_rows=""
against_rows=()  # the earlier runs' files (--against)
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --colls) colls=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --measured) measured_rows=$(realpath "$2"); shift 2 ;;
    --against)
      IFS=, read -r -a named <<< "$2"
      against_rows=()
      for earlier in "${named[@]}"; do
        [ -f "$earlier" ] || { echo "validate_sim.sh: --against: no file $earlier" >&2; exit 2; }
        against_rows+=("$(realpath "$earlier")")
      done
      shift 2 ;;
    *) echo "validate_sim.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ ${#against_rows[@]} -gt 0 ] && [ -z "$measured_rows" ]; then
  echo "validate_sim.sh: --against compares two runs' rows: give the other with --measured" >&2
  exit 2
fi
# Rounds of measurement: none when they come from --measured.
rounds=$repeat
[ -z "$measured_rows" ] || rounds=0
bazel build -c opt --color=no --curses=no //tools:zcoll_bench //tools:zcoll_sim >&2
bench=bazel-bin/tools/zcoll_bench
sim=bazel-bin/tools/zcoll_sim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ ${#against_rows[@]} -gt 0 ]; then
  profile=/dev/null  # (no model)
elif [ -z "$profile" ]; then
  profile=$work/this_machine.profile
  "$bench" --calibrate="$profile" > /dev/null
fi
{ grep '^#' "$profile" || true; } | sed 's/^/profile /' >&2
echo "ranks,nodes,coll,bytes,algorithm,predicted_usec,measured_usec,measured_over_predicted"
for config in $configs; do
  ranks=${config%:*}
  nodes=${config#*:}
  predicted=$work/predicted.$ranks.$nodes
  if [ ${#against_rows[@]} -gt 0 ]; then
    # The earlier runs' medians as coll,bytes,algorithm,usec: the geometric mean of the
    # runs' medians of each row that every one of them has.
    awk -F, -v r="$ranks" -v k="$nodes" -v runs="${#against_rows[@]}" '
      $1 == r && $2 == k && $7 > 0 {
        key = $3 "," $4 "," $5; logs[key] += log($7); seen[key]++
      }
      END { for (key in seen) if (seen[key] == runs) printf "%s,%.2f\n", key, exp(logs[key] / runs) }' \
      "${against_rows[@]}" | sort > "$predicted"
  else
    "$sim" --profile="$profile" --coll="$colls" --ranks="$ranks" --nodes="$nodes" \
      --min="$min" --max="$max" --format=csv --simulate-all 2>/dev/null | grep -v '^#' \
      | tail -n +2 | awk -F, '{ print $1 "," $3 "," $4 "," $5 }' > "$predicted"
  fi
  measured=$work/measured.$ranks.$nodes
  : > "$measured"
  if [ -n "$measured_rows" ]; then
    # Rows of this configuration: coll,bytes,algorithm,measured_usec (one median each).
    awk -F, -v r="$ranks" -v k="$nodes" '$1 == r && $2 == k { print $3 "," $4 "," $5 "," $7 }' \
      "$measured_rows" > "$measured"
    if [ ! -s "$measured" ]; then
      echo "validate_sim.sh: no rows of $ranks ranks on $nodes nodes in $measured_rows" >&2
      exit 1
    fi
  fi
  for ((round = 0; round < rounds; round++)); do
    for pair in $(cut -d, -f1,3 "$predicted" | sort -u); do
      coll=${pair%,*}
      algo=${pair#*,}
      "$bench" --np "$ranks" --nodes "$nodes" --colls="$coll" --algo="$algo" --min "$min" \
        --max "$max" --format=csv 2>/dev/null | tail -n +2 \
        | awk -F, -v a="$algo" '{ print $1 "," $3 "," a "," $4 }' >> "$measured" \
        || echo "validate_sim.sh: $coll $algo on $ranks ranks, $nodes nodes failed" >&2
    done
  done
  # Medians of the rounds, joined to the predictions.
  sort -t, -k1,1 -k2,2n -k3,3 -k4,4g "$measured" | awk -F, '
    { key = $1 "," $2 "," $3; values[key] = values[key] " " $4; n[key]++ }
    END {
      for (key in n) {
        split(substr(values[key], 2), v, " ")
        print key "," v[int((n[key] + 1) / 2)]
      }
    }' | sort > "$measured.median"
  join -t, -j1 \
    <(awk -F, '{ print $1 ";" $2 ";" $3 "," $4 }' "$predicted" | sort) \
    <(awk -F, '{ print $1 ";" $2 ";" $3 "," $4 }' "$measured.median" | sort) \
    | awk -F'[,;]' -v r="$ranks" -v k="$nodes" \
      '{ printf "%s,%s,%s,%s,%s,%.2f,%.2f,%.2f\n", r, k, $1, $2, $3, $4, $5, $5 / $4 }'
done | tee "$work/rows.csv"
if [ -z "$measured_rows" ] && [ "$profile" = "$work/this_machine.profile" ]; then
  echo "validate_sim.sh: scored on the calibration before measuring:" >&2
fi
awk -F, '
  { config = $1 " ranks on " $2 " nodes"; rows[config]++
    ratio = $8 >= 1 ? $8 : 1 / $8
    if (ratio <= 1.3) near[config]++
    point = config SUBSEP $3 SUBSEP $4
    if (!(point in best_p) || $6 < best_p[point]) { best_p[point] = $6; algo_p[point] = $5 }
    if (!(point in best_m) || $7 < best_m[point]) {
      if (point in best_m) second_m[point] = best_m[point]
      best_m[point] = $7; algo_m[point] = $5
    } else if (!(point in second_m) || $7 < second_m[point]) {
      second_m[point] = $7
    }
    measured[point SUBSEP $5] = $7
  }
  END {
    for (point in best_p) {
      split(point, part, SUBSEP); points[part[1]]++
      if (algo_p[point] == algo_m[point]) same[part[1]]++
      if (measured[point SUBSEP algo_p[point]] <= 1.1 * best_m[point]) tied[part[1]]++
      # (Points whose two fastest algorithms were measured within 10% of each other:
      # which one is the fastest there is as much the noise of the run as the code.)
      if ((point in second_m) && second_m[point] <= 1.1 * best_m[point]) near_tie[part[1]]++
    }
    for (config in rows) {
      printf "%s: %d of %d rows within 1.3x; the same fastest algorithm at %d of %d points " \
             "(the predicted fastest measured within 10%% of the fastest at %d; " \
             "the two fastest measured within 10%% of each other at %d)\n",
             config, near[config], rows[config], same[config], points[config],
             tied[config], near_tie[config] > "/dev/stderr"
    }
  }' "$work/rows.csv"
# This machine moves between a fast and a slow mode (every figure about 2x) within
# minutes: a calibration taken in the other mode than the measurements misjudges every
# row. So a run that calibrated calibrates again after measuring, keeps both profiles,
# and when they differ by more than 1.5x scores the same measurements on the second too.
if [ -z "$measured_rows" ] && [ "$profile" = "$work/this_machine.profile" ]; then
  keep=${TMPDIR:-/tmp}/validate_sim
  cp "$profile" "$keep.before.profile"
  "$bench" --calibrate="$keep.after.profile" > /dev/null
  four_mib() { sed -n 's/^# node: one way .*, \([0-9.]*\) us at 4194304 B;.*/\1/p' "$1"; }
  before=$(four_mib "$keep.before.profile")
  after=$(four_mib "$keep.after.profile")
  echo "validate_sim.sh: calibrated before measuring ($keep.before.profile) and after" \
    "($keep.after.profile): 4 MiB one way within a node $before us, then $after us" >&2
  if awk -v a="$before" -v b="$after" 'BEGIN { exit !(a > 1.5 * b || b > 1.5 * a) }'; then
    echo "validate_sim.sh: the machine changed speed during the run; scored on the" \
      "calibration after:" >&2
    "$0" --configs "$configs" --colls "$colls" --min "$min" --max "$max" \
      --profile "$keep.after.profile" --measured "$work/rows.csv" > /dev/null
  fi
fi
