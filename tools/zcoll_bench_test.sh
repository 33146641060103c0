#!/usr/bin/env bash
# zcoll_bench runs its job, verifies the results and prints CSV rows that line up
# with run_peers.sh (coll,ranks,bytes,usec); bad options are refused.
# The runs of many rows take 20 timed iterations a size (--iterations): what is checked
# here is the rows and the results, not the times, and the method's 1000 made this test
# two minutes under ASan.
set -euo pipefail
bench=tools/zcoll_bench
out=$("$bench" --np 3 --nodes 2 --max 2048 --format=csv --iterations=20 \
  --colls=reduce,allreduce,reduce_scatter,scatterv,reduce_local,scan,exscan)
echo "$out"
[ "$(echo "$out" | head -1)" = "coll,ranks,bytes,usec" ] || { echo "no CSV header"; exit 1; }
rows=$(echo "$out" | tail -n +2 | grep -cE '^[a-z_]+,3,[0-9]+,[0-9]+\.[0-9]{3}$')
[ "$rows" = 35 ] || { echo "expected 35 rows (7 colls x 5 sizes), got $rows"; exit 1; }
# A barrier moves nothing: one row, bytes 0, whatever the size range.
barrier=$("$bench" --np 3 --nodes 1 --max 2048 --format=csv --colls=barrier | tail -n +2)
echo "$barrier"
[ "$(echo "$barrier" | grep -cxE 'barrier,3,0,[0-9]+\.[0-9]{3}')" = 1 ] &&
  [ "$(echo "$barrier" | wc -l)" = 1 ] || { echo "expected one barrier row"; exit 1; }
# --persistent: every collective made once (its *Init) and timed as Start + Wait,
# verified as the blocking calls are.
persistent=$("$bench" --np 3 --nodes 2 --max 512 --format=csv --persistent --iterations=20 \
  --colls=reduce,allreduce,reduce_scatter_block,reduce_scatter,scatter,scatterv,bcast,gather,allgather,alltoall,barrier,scan,exscan)
echo "$persistent"
[ "$(echo "$persistent" | tail -n +2 | grep -cE '^[a-z_]+,3,[0-9]+,[0-9]+\.[0-9]{3}$')" = 49 ] \
  || { echo "expected 49 persistent rows (12 colls x 4 sizes and a barrier)"; exit 1; }
# --alloc=zcoll: AllocateBuffer buffers, verified as malloc's are, with each allreduce row
# followed by rank 0's sum_loop and each allgather row by every rank's copy_loop.
zcoll_buffers=$("$bench" --np 2 --nodes 1 --min 1024 --max 4096 --format=csv --alloc=zcoll \
  --iterations=20 --colls=allreduce,allgather,bcast)
echo "$zcoll_buffers"
[ "$(echo "$zcoll_buffers" | tail -n +2 | cut -d, -f1,2 | paste -sd' ')" = "allreduce,2 \
sum_loop,1 allreduce,2 sum_loop,1 allgather,2 copy_loop,2 allgather,2 copy_loop,2 bcast,2 bcast,2" ] \
  || { echo "expected each allreduce row followed by a sum_loop row, each allgather row by a copy_loop row"; exit 1; }
if "$bench" --np 2 --nodes 3 2>/dev/null; then echo "--nodes above --np was accepted"; exit 1; fi
if "$bench" --colls=allgatherw 2>/dev/null; then echo "an unknown collective was accepted"; exit 1; fi
if "$bench" --iterations=0 2>"$TEST_TMPDIR/err"; then echo "--iterations=0 was accepted"; exit 1; fi
grep -q "iterations is at least 1" "$TEST_TMPDIR/err" || { cat "$TEST_TMPDIR/err"; exit 1; }
[[ "$("$bench" --version)" =~ ^zcoll_bench\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "no --version"; exit 1; }
# JSON: the run's metadata, then its rows.
json=$("$bench" --np 2 --nodes 1 --max 32 --format=json --colls=allreduce --iterations=7)
echo "$json"
for key in zcoll_version date host cpu_model cores ranks nodes local_provider network_provider \
           algorithm buffers calls iterations collectives rows; do
  grep -q "^  \"$key\": " <<<"$json" || { echo "JSON lacks $key"; exit 1; }
done
grep -q '"ranks": 2,$' <<<"$json" && grep -q '"local_provider": "shm",' <<<"$json" \
  && grep -q '"iterations": "7 a size (--iterations)",$' <<<"$json" \
  || { echo "JSON metadata wrong"; exit 1; }
[ "$(grep -c '{"coll": "allreduce", "ranks": 2, "bytes": [0-9]*, "usec": ' <<<"$json")" = 2 ] \
  || { echo "expected 2 JSON rows"; exit 1; }
[ "$(tail -1 <<<"$json")" = "}" ] || { echo "JSON not closed"; exit 1; }
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["rows"]) == 2' <<<"$json" \
    || { echo "not JSON"; exit 1; }
fi
# Plots: of a run, and of rows measured before; a missing file or bad row is refused.
if command -v gnuplot >/dev/null; then
  plot=$TEST_TMPDIR/run.png
  "$bench" --np 2 --nodes 1 --max 32 --format=csv --colls=allreduce,barrier --plot="$plot" >/dev/null
  [ "$(head -c 4 "$plot" | tail -c 3)" = PNG ] || { echo "--plot drew no PNG"; exit 1; }
  printf 'zcoll,bcast,2,8,0.3\nopenmpi,bcast,2,8,0.4\n' > "$TEST_TMPDIR/rows.csv"
  "$bench" --plot-csv="$TEST_TMPDIR/rows.csv" --plot="$TEST_TMPDIR/rows.png"
  [ "$(head -c 4 "$TEST_TMPDIR/rows.png" | tail -c 3)" = PNG ] || { echo "--plot-csv drew no PNG"; exit 1; }
  printf 'zcoll,bcast,2\n' > "$TEST_TMPDIR/bad.csv"
  if err=$("$bench" --plot-csv="$TEST_TMPDIR/bad.csv" --plot="$TEST_TMPDIR/bad.png" 2>&1); then
    echo "a bad row was plotted"; exit 1
  fi
  grep -q "line 1 ('zcoll,bcast,2') is not library,coll,ranks,bytes,usec" <<<"$err" || { echo "$err"; exit 1; }
else
  echo "SKIPPED the plots: gnuplot is not installed (tools/setup.sh installs gnuplot-nox)"
fi
if "$bench" --plot-csv=x.csv 2>/dev/null; then echo "--plot-csv without --plot was accepted"; exit 1; fi
# --calibrate: a profile of this machine that zcoll_sim reads, its raw timings in comments.
profile=$TEST_TMPDIR/this_machine.profile
"$bench" --calibrate="$profile" > /dev/null
grep -q '^# network: one way [0-9.]* us at 8 B' "$profile" || { cat "$profile"; exit 1; }
for key in node.bytes_per_usec network.bytes_per_usec network.overhead_usec \
  reduce_bytes_per_usec copy_bytes_per_usec engine.latency_usec engine.bytes_per_usec \
  engine.system_call_usec; do
  grep -q "^$key = [0-9]" "$profile" || { echo "the profile has no $key"; cat "$profile"; exit 1; }
done
# The cache sweep is in the comments; where it found a cache, its size and cached rates.
grep -q '^# Cache: memcpy.s bytes/us over working sets .* of 256 KiB [0-9]*,' "$profile" \
  || { cat "$profile"; exit 1; }
if grep -q '^cache_bytes = [1-9]' "$profile"; then
  for key in cached_reduce_bytes_per_usec cached_copy_bytes_per_usec; do
    grep -q "^$key = [0-9]" "$profile" || { echo "the profile has no $key"; cat "$profile"; exit 1; }
  done
  # And whether it is each core's own (cache_per_core) was tried and said.
  grep -qE "^# .*(so the cache is (each core's own|shared)|No second core to try)" "$profile" \
    || { cat "$profile"; exit 1; }
else
  echo "no cache seen by the sweep on this run: no cached rates to check"
fi
predicted=$(tools/zcoll_sim --profile="$profile" --coll=allreduce --ranks=2 --nodes=2 \
  --min=65536 --max=65536 --format=csv 2>&1)
grep -q '^allreduce,2,65536,[a-z_]*,[0-9.]*,' <<<"$predicted" || { echo "$predicted"; exit 1; }
# On one node the engine's measured figures time its algorithm.
predicted=$(tools/zcoll_sim --profile="$profile" --coll=bcast --ranks=2 --algo=node \
  --min=65536 --max=65536 --format=csv 2>&1)
grep -q '^bcast,2,65536,node,[0-9.]*,' <<<"$predicted" || { echo "$predicted"; exit 1; }
if "$bench" --calibrate=/no/such/dir/p.profile >/dev/null 2>"$TEST_TMPDIR/err"; then
  echo "an unwritable profile was accepted"; exit 1
fi
# Refused before measuring (a calibration takes minutes), naming the missing folder; so
# is a --plot into one, before its sweep prints a row.
grep -q "^zcoll_bench: --calibrate: cannot write '/no/such/dir/p.profile' in the folder '/no/such/dir': No such file or directory (checked before measuring)$" \
  "$TEST_TMPDIR/err" || { cat "$TEST_TMPDIR/err"; exit 1; }
if swept=$("$bench" --np 2 --max 8 --colls=allreduce --plot=/no/such/dir/p.png 2>"$TEST_TMPDIR/err"); then
  echo "a plot into a missing folder was accepted"; exit 1
fi
grep -q "^zcoll_bench: --plot: cannot write '/no/such/dir/p.png' in the folder '/no/such/dir'" \
  "$TEST_TMPDIR/err" || { cat "$TEST_TMPDIR/err"; exit 1; }
[ -z "$swept" ] || { echo "the sweep ran before the refusal: $swept"; exit 1; }
if "$bench" --calibrate 2>"$TEST_TMPDIR/err"; then echo "--calibrate without a file ran"; exit 1; fi
grep -q "calibrate needs the profile file to write" "$TEST_TMPDIR/err" || { cat "$TEST_TMPDIR/err"; exit 1; }
# The link's loop within a node is reported; its cached rate is written only with
# --cached-links (a choice of --calibrate's alone).
grep -q "^# node: .*rank 0's bcasts one after another: [0-9.]* us each at 65536 B, [0-9.]* at 262144 B, [0-9.]* at 1048576 B" \
  "$profile" || { cat "$profile"; exit 1; }
if grep -q "^node.cached_bytes_per_usec" "$profile"; then
  echo "a cached link rate without --cached-links"; cat "$profile"; exit 1
fi
if "$bench" --cached-links 2>"$TEST_TMPDIR/err"; then echo "--cached-links alone ran"; exit 1; fi
grep -q "cached-links is a choice of --calibrate's" "$TEST_TMPDIR/err" || { cat "$TEST_TMPDIR/err"; exit 1; }
# A second calibration; under ZCOLL_UNDER_SANITIZER=1 (--config=asan's, where one
# takes 11 s alone and several times that beside another test) it is left to the plain
# run: the same code, whose cached-link arithmetic calibration_test checks under ASan.
if [ "${ZCOLL_UNDER_SANITIZER:-}" = 1 ]; then
  echo "ZCOLL_UNDER_SANITIZER=1: the --cached-links calibration is left to the plain run"
else
  cached=$TEST_TMPDIR/cached_links.profile
  "$bench" --calibrate="$cached" --cached-links > /dev/null
  grep -q "(--cached-links) with a cache" "$cached" || { cat "$cached"; exit 1; }
  tools/zcoll_sim --profile="$cached" --coll=bcast --ranks=2 --min=1048576 --max=1048576 \
    --format=csv > /dev/null || { cat "$cached"; exit 1; }
fi
echo PASS
