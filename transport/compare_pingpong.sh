#!/usr/bin/env bash
# Compares zcoll's transports with libfabric's fi_pingpong and UCX's ucx_perftest,
# measured back to back in one run, and prints the ratios the transport issue asks
# for (README, "Performance").
#
#   transport/compare_pingpong.sh [--repeat N] [--sizes "8 65536 4194304"]
#
# For every (configuration, size) the zcoll benchmark and the tool run alternately N
# times (default 3) and the median of each is kept: this machine is shared and one
# run alone says little. The tools run as many iterations as pingpong_benchmark does
# (1 GiB / max(bytes, 4 KiB), between 20 and 200000), so both average over as
# long. Configurations:
#   ofi:shm  vs fi_pingpong -p shm           ofi:tcp  vs fi_pingpong -p tcp
#   ucx      vs ucx_perftest (UCX's default)  ucx:tcp  vs ucx_perftest UCX_TLS=tcp
#   shm (zcoll's native path) vs the best of fi_pingpong shm and ucx_perftest
#       with UCX_TLS=posix,cma,self
# Metrics, each as "advantage" = how many times better zcoll is (above 1: faster):
#   latency    one-way microseconds: zcoll latency_us; fi_pingpong usec/xfer;
#              ucx_perftest tag_lat average
#   bandwidth  a stream of transfers: zcoll bandwidth_MBps vs ucx_perftest tag_bw;
#              against fi_pingpong, whose MB/sec comes from the ping-pong, zcoll's
#              ping-pong bandwidth (bytes / latency) is used instead
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
repeat=3 sizes="8 65536 4194304"
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) echo "usage: $0 [--repeat N] [--sizes \"8 65536 4194304\"]" >&2; exit 2 ;;
  esac
done
for tool in fi_pingpong ucx_perftest; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run tools/setup.sh" >&2; exit 1; }
done
(cd "$root" && bazel build -c opt --color=no --curses=no //transport:pingpong_benchmark >/dev/null 2>&1) ||
  { echo "building //transport:pingpong_benchmark failed" >&2; exit 1; }
bench="$(cd "$root" && bazel info -c opt bazel-bin 2>/dev/null)/transport/pingpong_benchmark"

# Same count as pingpong_benchmark's Iterations().
iterations() {
  local bytes=$1 n; [ "$bytes" -lt 4096 ] && bytes=4096
  n=$((1073741824 / bytes)); [ $n -gt 200000 ] && n=200000; [ $n -lt 20 ] && n=20
  echo $n
}

# zcoll: prints "latency_us bandwidth_MBps".
zcoll() { "$bench" --provider="$1" --min="$2" --max="$2" | awk -F, '{print $3, $4}'; }

# fi_pingpong: prints "usec_per_xfer MB_per_sec".
fi_pp() {
  local provider=$1 bytes=$2 n; n=$(iterations "$bytes")
  timeout 120 fi_pingpong -p "$provider" -e rdm -S "$bytes" -I "$n" >/dev/null 2>&1 &
  local server=$!
  sleep 0.3
  timeout 120 fi_pingpong -p "$provider" -e rdm -S "$bytes" -I "$n" localhost 2>/dev/null |
    awk '$1 ~ /^[0-9]/ {print $7, $6}'
  wait "$server" 2>/dev/null || true
}

# ucx_perftest: prints the average latency (us) of tag_lat or MB/s (from MiB/s) of tag_bw.
ucx_pt() {
  local tls=$1 test=$2 bytes=$3 n port; n=$(iterations "$bytes"); port=$((20000 + RANDOM % 20000))
  (if [ -n "$tls" ]; then export UCX_TLS=$tls; fi; timeout 120 ucx_perftest -p "$port" >/dev/null 2>&1) &
  local server=$!
  sleep 0.4
  (if [ -n "$tls" ]; then export UCX_TLS=$tls; fi
   timeout 120 ucx_perftest -p "$port" localhost -t "$test" -s "$bytes" -n "$n" 2>/dev/null) |
    awk -v test="$test" '/Final/ {print (test == "tag_lat") ? $4 : $6 * 1.048576}'
  wait "$server" 2>/dev/null || true
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

echo "# zcoll transports vs fi_pingpong and ucx_perftest, median of $repeat, $(date -u +%FT%TZ)"
echo "config,bytes,metric,zcoll,tool,tool_value,advantage"
for bytes in $sizes; do
  for config in ofi:shm ofi:tcp ucx ucx:tcp shm; do
    zl=() zb=() tl=() tb=() ul=() ub=()
    for ((r = 0; r < repeat; ++r)); do
      read -r l b < <(zcoll "$config" "$bytes"); zl+=("$l"); zb+=("$b")
      case "$config" in
        ofi:shm|shm) read -r l b < <(fi_pp shm "$bytes"); tl+=("$l"); tb+=("$b") ;;
        ofi:tcp) read -r l b < <(fi_pp tcp "$bytes"); tl+=("$l"); tb+=("$b") ;;
      esac
      case "$config" in
        ucx) ul+=("$(ucx_pt "" tag_lat "$bytes")"); ub+=("$(ucx_pt "" tag_bw "$bytes")") ;;
        ucx:tcp) ul+=("$(ucx_pt tcp tag_lat "$bytes")"); ub+=("$(ucx_pt tcp tag_bw "$bytes")") ;;
        shm) ul+=("$(ucx_pt posix,cma,self tag_lat "$bytes")")
             ub+=("$(ucx_pt posix,cma,self tag_bw "$bytes")") ;;
      esac
    done
    lat=$(median "${zl[@]}") bw=$(median "${zb[@]}")
    pingpong_bw=$(awk -v b="$bytes" -v l="$lat" 'BEGIN { printf "%.1f", b / l }')
    if [ ${#tl[@]} -gt 0 ]; then
      t=$(median "${tl[@]}"); echo "$config,$bytes,latency_us,$lat,fi_pingpong,$t,$(ratio "$t" "$lat")"
      t=$(median "${tb[@]}"); echo "$config,$bytes,pingpong_MBps,$pingpong_bw,fi_pingpong,$t,$(ratio "$pingpong_bw" "$t")"
    fi
    if [ ${#ul[@]} -gt 0 ]; then
      t=$(median "${ul[@]}"); echo "$config,$bytes,latency_us,$lat,ucx_perftest,$t,$(ratio "$t" "$lat")"
      t=$(median "${ub[@]}"); echo "$config,$bytes,stream_MBps,$bw,ucx_perftest,$t,$(ratio "$bw" "$t")"
    fi
  done
done
