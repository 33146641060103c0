#!/usr/bin/env bash
# Measures ReduceLocal against MPI_Reduce_local of Open MPI and MPICH in one run and
# prints the throughput ratios the ops issue asks for (README, "Performance").
#
#   ops/compare_reduce_local.sh [--repeat N] [--max BYTES]
#
# Every figure uses the OSU method: each call timed alone,
# 1000 timed calls after 100 warm-up ones up to 8 KiB, 100 after 10 above.
#   - zcoll:   //ops:reduce_local_osu
#   - peers:   ops/peers/mpi_reduce_local.c built with mpicc.openmpi and mpicc.mpich
#              (float/double/int32 x sum/max), and tools/peers/run_peers.sh for the
#              reference float sum rows
# For each (dtype, op, bytes) the three programs run back to back, N times (default
# 3), and the fastest of each is kept, so that a burst of noise on this shared
# machine does not decide a ratio. Ratios are peer time / zcoll time: above 1 means
# zcoll is faster.
# The element-rate and STREAM comparisons come from //ops:reduce_local_benchmark.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
repeat=3 max=67108864
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    *) echo "usage: $0 [--repeat N] [--max BYTES]" >&2; exit 2 ;;
  esac
done
for tool in mpicc.openmpi mpirun.openmpi mpicc.mpich mpiexec.mpich; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run tools/setup.sh" >&2; exit 1; }
done

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
(cd "$root" && bazel build -c opt --color=no --curses=no //ops:reduce_local_osu \
   //ops:reduce_local_benchmark >"$work/build.log" 2>&1) || { cat "$work/build.log"; exit 1; }
bin=$(cd "$root" && bazel info -c opt bazel-bin 2>/dev/null)/ops
mpicc.openmpi -O2 -o "$work/ompi" "$here/peers/mpi_reduce_local.c"
mpicc.mpich -O2 -o "$work/mpich" "$here/peers/mpi_reduce_local.c"
root_flag=(); [ "$(id -u)" -eq 0 ] && root_flag=(--allow-run-as-root)

sizes=(); for ((b = 8; b <= max; b *= 4)); do sizes+=("$b"); done
[ "${sizes[-1]}" -lt "$max" ] && sizes+=("$max")

# One row "usec" from each program for one size; prints "zcoll ompi mpich".
measure() {
  local dtype=$1 op=$2 bytes=$3
  local z o m
  z=$("$bin/reduce_local_osu" --dtype="$dtype" --op="$op" --min="$bytes" --max="$bytes" | cut -d, -f6)
  o=$(mpirun.openmpi "${root_flag[@]}" -np 1 "$work/ompi" "$dtype" "$op" "$bytes" "$bytes" | cut -d, -f5)
  m=$(mpiexec.mpich -n 1 "$work/mpich" "$dtype" "$op" "$bytes" "$bytes" | cut -d, -f5)
  echo "$z $o $m"
}

min() { printf '%s\n' "$@" | sort -g | head -1; }

echo "# ReduceLocal vs MPI_Reduce_local, OSU method, best of $repeat, $(date -u +%FT%TZ), target $("$bin/reduce_local_benchmark" --benchmark_filter='BM_ReduceLocal/float/sum/8$' --benchmark_min_time=0.01 2>/dev/null | awk '/BM_/ {print $NF}')"
echo "dtype,op,bytes,zcoll_us,openmpi_us,mpich_us,vs_openmpi,vs_mpich"
for pair in float:sum float:max double:sum double:max int32:sum int32:max; do
  dtype=${pair%:*} op=${pair#*:}
  for bytes in "${sizes[@]}"; do
    zs=() os=() ms=()
    for ((r = 0; r < repeat; ++r)); do
      read -r z o m < <(measure "$dtype" "$op" "$bytes")
      zs+=("$z") os+=("$o") ms+=("$m")
    done
    z=$(min "${zs[@]}") o=$(min "${os[@]}") m=$(min "${ms[@]}")
    awk -v d="$dtype" -v p="$op" -v b="$bytes" -v z="$z" -v o="$o" -v m="$m" \
      'BEGIN { printf "%s,%s,%s,%.3f,%.3f,%.3f,%.2f,%.2f\n", d, p, b, z, o, m, o / z, m / z }'
  done
done

echo
echo "# reference rows from tools/peers/run_peers.sh -n 1 reduce_local (float sum)"
"$root/tools/peers/run_peers.sh" -n 1 --min 8 --max "$max" reduce_local

echo
echo "# element rates (Google Benchmark, same binary): bytes/s and elements/s"
"$bin/reduce_local_benchmark" --benchmark_min_time=0.2 --benchmark_format=csv \
  --benchmark_filter='BM_(StreamAdd|ReduceLocal/(float|float16|bfloat16)/sum)/(2048|8192|32768|131072|524288|2097152|8388608|33554432|67108864)$' \
  2>/dev/null | awk -F, '
    /^"BM_/ { gsub(/"/, "", $1); split($1, p, "/"); bytes = p[length(p)];
              kind = (p[1] == "BM_StreamAdd") ? "stream" : p[2];
              rate[kind, bytes] = $6; seen[bytes] = 1 }
    END { for (b in seen) {
            f = rate["float", b]; s = rate["stream", b];
            printf "%s,%.1f,%.1f,%.2f,%.2f,%.2f\n", b, f / 1e9, s / 1e9, f / s,
                   (rate["float16", b] / 2) / (f / 4), (rate["bfloat16", b] / 2) / (f / 4) } }' |
  sort -t, -k1,1n | sed '1i bytes,float_GBps,stream_GBps,float_vs_stream,float16_vs_float_elements,bfloat16_vs_float_elements'
