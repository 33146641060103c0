#!/usr/bin/env bash
# zcoll_bench runs its job, verifies the results and prints CSV rows that line up
# with run_peers.sh (coll,ranks,bytes,usec); bad options are refused.
set -euo pipefail
bench=tools/zcoll_bench
out=$("$bench" --np 3 --nodes 2 --max 2048 --format=csv --colls=reduce,allreduce,reduce_scatter,scatterv,reduce_local)
echo "$out"
[ "$(echo "$out" | head -1)" = "coll,ranks,bytes,usec" ] || { echo "no CSV header"; exit 1; }
rows=$(echo "$out" | tail -n +2 | grep -cE '^[a-z_]+,3,[0-9]+,[0-9]+\.[0-9]{2}$')
[ "$rows" = 25 ] || { echo "expected 25 rows (5 colls x 5 sizes), got $rows"; exit 1; }
# A barrier moves nothing: one row, bytes 0, whatever the size range.
barrier=$("$bench" --np 3 --nodes 1 --max 2048 --format=csv --colls=barrier | tail -n +2)
echo "$barrier"
[ "$(echo "$barrier" | grep -cxE 'barrier,3,0,[0-9]+\.[0-9]{2}')" = 1 ] &&
  [ "$(echo "$barrier" | wc -l)" = 1 ] || { echo "expected one barrier row"; exit 1; }
if "$bench" --np 2 --nodes 3 2>/dev/null; then echo "--nodes above --np was accepted"; exit 1; fi
if "$bench" --colls=allgatherw 2>/dev/null; then echo "an unknown collective was accepted"; exit 1; fi
echo PASS
