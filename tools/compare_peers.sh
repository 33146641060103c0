#!/usr/bin/env bash
# Measures zcoll (tools/zcoll_bench) and the peers (tools/peers/run_peers.sh:
# Open MPI and MPICH) back to back in one run and prints the ratio zcoll/peer for
# every collective and size (docs/benchmarks.md: a claim is a ratio from one run).
# Usage: tools/compare_peers.sh [-n RANKS] [--nodes K] [--tcp] [--provider P]
#                               [--peers openmpi,mpich] [--min B] [--max B] [--repeat N]
#                               [--alloc malloc|zcoll] [--plot FILE.png] [--bench PATH]
#                               [--same-program] [--baseline 'VAR=VALUE ...'] COLL...
# --tcp: zcoll over TCP between K=RANKS emulated nodes, against Open MPI over TCP;
#   --provider picks zcoll's TCP path: ucx:tcp (the default, as ZCOLL_PROVIDER=auto
#   picks here) or ofi:tcp.
# --repeat N: zcoll and the peers run alternately N times and every time shown is the
#   median of its N (this machine puts a whole run in a fast or a slow mode, and a
#   median of alternating runs is less at the mercy of one mode than a single run).
# --alloc zcoll: zcoll's buffers come from Communicator::AllocateBuffer (zcoll_bench
#   --alloc=zcoll; the peers' stay malloc's, as most MPI programs' are), and each
#   allreduce size gains a sum_loop row: one core's c[i] = a[i] + b[i] over it.
# --plot FILE.png: also draws the medians (log-log usec against bytes, one line per
#   library, one panel per collective; gnuplot, installed by tools/setup.sh).
# --same-program: zcoll runs the peers' own program too (tools/peers/mpi_coll_bench.c
#   built unmodified on zcoll's MPI C interface, //mpi:mpi_coll_bench, under zcoll_run),
#   so the comparison is one source three times (README, "MPI C interface", says how
#   its figures compare with zcoll_bench's). Not with --alloc zcoll.
# --baseline 'VAR=VALUE ...': each run also times zcoll_bench with those environment
#   variables (e.g. 'ZCOLL_ALGO_ALLGATHER=node', the table before a change of it), in
#   turn with the others, and the table gains its medians and zcoll's time over them;
#   every other run takes zcoll, the baseline and the peers in the reverse order.
# The bench is built here with -c opt (timing a fastbuild would compare an unoptimised
# zcoll), or with the Bazel flags in ZCOLL_BAZEL_FLAGS instead: .ci/run, which checks
# only that this script works, sets --config=ci so that it reuses the objects of the
# test step before it rather than compile zcoll again. --bench PATH (or ZCOLL_BENCH)
# times another build. The peers' benchmark (tools/peers/mpi_coll_bench.c) is
# compiled by run_peers.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
peers_dir=${ZCOLL_PEERS_DIR:-$here/tools/peers}
np=2 nodes=1 tcp=0 provider=ucx:tcp min=8 max=8388608 peers=openmpi,mpich repeat=1 alloc=malloc
plot="" bench=${ZCOLL_BENCH:-} same_program=0 baseline=""
read -r -a bazel_flags <<< "${ZCOLL_BAZEL_FLAGS:--c opt}"
while [ $# -gt 0 ]; do
  case "$1" in
    -n) np=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --tcp) tcp=1; shift ;;
    --provider) provider=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --alloc) alloc=$2; shift 2 ;;
    --plot) plot=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --same-program) same_program=1; shift ;;
    --baseline) baseline=$2; shift 2 ;;
    -*) echo "compare_peers.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
colls=("$@"); [ ${#colls[@]} -gt 0 ] || colls=(reduce allreduce reduce_scatter_block reduce_scatter scatter scatterv)
baseline_env=()
if [ -n "$baseline" ]; then
  [ "$same_program" = 0 ] || { echo "--baseline times zcoll_bench, not --same-program" >&2; exit 2; }
  read -r -a baseline_env <<< "$baseline"
  for setting in "${baseline_env[@]}"; do
    [[ "$setting" =~ ^[A-Z_][A-Z0-9_]*=.*$ ]] || { echo "--baseline takes VAR=VALUE words, not '$setting'" >&2; exit 2; }
  done
fi
if [ "$same_program" = 1 ]; then
  [ "$alloc" = malloc ] || { echo "--same-program times malloc'd buffers only" >&2; exit 2; }
  (cd "$here" && bazel build "${bazel_flags[@]}" //mpi:mpi_coll_bench //tools:zcoll_run) >&2 \
    || { echo "compare_peers.sh: building mpi_coll_bench on zcoll (${bazel_flags[*]}) failed" >&2; exit 2; }
  zcoll_bin="$(cd "$here" && bazel info "${bazel_flags[@]}" bazel-bin 2>/dev/null)"
  mpi_bench=$zcoll_bin/mpi/mpi_coll_bench zcoll_run=$zcoll_bin/tools/zcoll_run
elif [ -z "$bench" ]; then
  (cd "$here" && bazel build "${bazel_flags[@]}" //tools:zcoll_bench) >&2 \
    || { echo "compare_peers.sh: building zcoll_bench (${bazel_flags[*]}) failed" >&2; exit 2; }
  bench="$(cd "$here" && bazel info "${bazel_flags[@]}" bazel-bin 2>/dev/null)/tools/zcoll_bench"
fi
[ "$same_program" = 1 ] || [ -x "$bench" ] || { echo "compare_peers.sh: no zcoll_bench at $bench" >&2; exit 2; }
case "$plot" in ""|*.png) ;; *) echo "--plot needs a .png file name" >&2; exit 2 ;; esac
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
zcoll_args=(--np "$np" --nodes "$nodes" --min "$min" --max "$max" --format=csv
            "--colls=$(IFS=,; echo "${colls[*]}")")
peer_args=(-n "$np" --min "$min" --max "$max" --peers "$peers")
if [ "$tcp" = 1 ]; then
  zcoll_args=(--np "$np" --nodes "$np" "--provider=$provider" --min "$min" --max "$max" --format=csv
              "--colls=$(IFS=,; echo "${colls[*]}")")
  peer_args+=(--tcp)
fi
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "--repeat needs a positive count" >&2; exit 2; }
case "$alloc" in malloc|zcoll) zcoll_args+=("--alloc=$alloc") ;;
  *) echo "--alloc is malloc or zcoll" >&2; exit 2 ;; esac
: > "$work/rows"
# zcoll_bench's rows, labelled $1, under the environment settings that follow it.
time_bench() {
  local label=$1; shift
  env "$@" "$bench" "${zcoll_args[@]}" | tail -n +2 | sed "s/^/$label,/" >> "$work/rows"
}
time_zcoll() {
  if [ "$same_program" = 1 ]; then
    # Rank 0 prints the rows, which zcoll_run prefixes with "[0] ".
    zcoll_nodes=$nodes; [ "$tcp" = 0 ] || zcoll_nodes=$np
    ZCOLL_PROVIDER=$([ "$tcp" = 1 ] && echo "$provider" || echo "${ZCOLL_PROVIDER:-auto}") \
      "$zcoll_run" -n "$np" --nodes "$zcoll_nodes" -- "$mpi_bench" "$min" "$max" "${colls[@]}" \
      | sed -n 's/^\[0\] \([a-z_]*,[0-9]*,[0-9]*,[0-9.]*\)$/zcoll,\1/p' >> "$work/rows"
  else
    time_bench zcoll
  fi
}
time_baseline() { [ ${#baseline_env[@]} -eq 0 ] || time_bench baseline "${baseline_env[@]}"; }
time_peers() { TMPDIR=$work "$peers_dir/run_peers.sh" "${peer_args[@]}" "${colls[@]}" >> "$work/rows"; }
for ((run = 0; run < repeat; ++run)); do
  # (With a baseline, every other run in the reverse order: this machine's speed drifts
  # within a run, and a fixed order would hand one side the same moment every time.)
  if [ ${#baseline_env[@]} -gt 0 ] && [ $((run % 2)) = 1 ]; then
    time_peers; time_baseline; time_zcoll
  else
    time_zcoll; time_baseline; time_peers
  fi
done
# Rows are impl,coll,ranks,bytes,usec; the median of each (impl, coll, bytes).
awk -F, '
  function median(key,    m, i, j, t, v) {
    m = split(times[key], v, " ")
    for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
      t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
    }
    return m % 2 ? v[(m + 1) / 2] : sprintf("%.3f", (v[m / 2] + v[m / 2 + 1]) / 2)
  }
  { row = $1 "," $2 "," $4; times[row] = times[row] (times[row] == "" ? "" : " ") $5
    if (!seen[$2 "," $4]++) order[n++] = $2 "," $4; ranks = $3 }
  END {
    for (row in times) usec[row] = median(row)
    base = ("baseline" in libs)
    printf "%-22s %10s %10s %10s %10s %8s %8s", "coll", "bytes", "zcoll", "openmpi", "mpich", "z/ompi", "z/mpich"
    if (base) printf " %10s %8s", "baseline", "z/base"
    printf "\n"
    for (i = 0; i < n; i++) {
      split(order[i], k, ",")
      z = usec["zcoll," order[i]]; o = usec["openmpi," order[i]]; m = usec["mpich," order[i]]
      printf "%-22s %10s %10s %10s %10s %8s %8s", k[1], k[2], z, (o == "" ? "-" : o), (m == "" ? "-" : m),
             (o > 0 ? sprintf("%.2f", z / o) : "-"), (m > 0 ? sprintf("%.2f", z / m) : "-")
      if (base) {
        b = usec["baseline," order[i]]
        printf " %10s %8s", (b == "" ? "-" : b), (b > 0 ? sprintf("%.2f", z / b) : "-")
      }
      printf "\n"
    }
    how = runs == 1 ? "" : sprintf("; medians of %d alternating runs", runs)
    printf "(%d ranks; usec per call, OSU method, float sum%s)\n", ranks, how
    for (i = 0; i < n; i++) {
      split(order[i], k, ",")
      for (impl in libs) if (("" impl "," order[i]) in usec)
        print impl "," k[1] "," ranks "," k[2] "," usec[impl "," order[i]] > medians
    }
  }
  { libs[$1] = 1 }' runs="$repeat" medians="$work/medians" "$work/rows"
if [ -n "$plot" ]; then
  title="$np ranks on $nodes node(s), float sum, usec per call"
  [ "$repeat" = 1 ] || title="$title (medians of $repeat alternating runs)"
  # zcoll's line first, then the peers', whatever order awk kept them in.
  sort -t, -k1,1 -s "$work/medians" | awk -F, '$1 == "zcoll"' > "$work/plotted"
  awk -F, '$1 != "zcoll"' "$work/medians" | sort -t, -k1,1 -s >> "$work/plotted"
  "$bench" --plot-csv="$work/plotted" --plot="$plot" --title="$title"
  echo "plotted into $plot"
fi
