#!/usr/bin/env bash
# The MPI C interface over real processes: the C test programs under zcoll_run (and one
# alone, a job of one rank), errors returned and fatal, and the peers' benchmark
# program built unmodified on zcoll.
set -uo pipefail
run=tools/zcoll_run
failures=0
check() {  # check DESCRIPTION CONDITION...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}

for n in 4 3; do
  out=$("$run" -n "$n" -- mpi/collectives_c 2>&1); code=$?
  echo "$out"
  check "collectives.c on $n ranks exits 0" test "$code" -eq 0
  check "collectives.c on $n ranks passed" grep -q "checks passed on $n ranks" <<<"$out"
done
out=$("$run" -n 4 --nodes 2 -- mpi/collectives_c 2>&1); code=$?
echo "$out"
check "collectives.c on 2 emulated nodes passed" grep -q "checks passed on 4 ranks" <<<"$out"

out=$(env -u ZCOLL_RANK -u ZCOLL_SIZE -u ZCOLL_STORE mpi/collectives_c 2>&1); code=$?
echo "$out"
check "collectives.c alone is a job of one rank" grep -q "checks passed on 1 ranks" <<<"$out"

# Nonblocking and persistent collectives; a wait that failed to advance the other
# requests would hang until the 30 s timeout.
for args in "4" "3" "4 --nodes 2"; do
  out=$(ZCOLL_TIMEOUT=30s "$run" -n $args -- mpi/requests_c 2>&1); code=$?
  echo "$out"
  check "requests.c (-n $args) passed on every rank" \
    test "$(grep -cE "requests.c: [0-9]+ checks passed" <<<"$out")" -eq "${args%% *}"
done
out=$("$run" -n 3 -- mpi/objects_c 1 2>&1); code=$?
echo "$out"
check "objects.c on one node passed" grep -q "checks passed on 3 ranks" <<<"$out"
out=$("$run" -n 4 --nodes 2 -- mpi/objects_c 2 2>&1); code=$?
echo "$out"
check "objects.c on 2 emulated nodes passed" grep -q "checks passed on 4 ranks" <<<"$out"

# Groups and intercommunicators: halves of 2 and 3 ranks, and across 2 emulated nodes.
for args in "5" "2" "4 --nodes 2"; do
  out=$("$run" -n $args -- mpi/intercomm_c 2>&1); code=$?
  echo "$out"
  check "intercomm.c (-n $args) passed on every rank" \
    test "$(grep -cE "intercomm.c: [0-9]+ checks passed" <<<"$out")" -eq "${args%% *}"
done

# Point-to-point messages: 2, 3 and 5 ranks, 2 emulated nodes, and the other local
# transports.
for args in "2" "3" "5" "4 --nodes 2"; do
  out=$(ZCOLL_TIMEOUT=30s "$run" -n $args -- mpi/messages_c 2>&1); code=$?
  echo "$out"
  check "messages.c (-n $args) passed on every rank" \
    test "$(grep -cE "messages.c: [0-9]+ checks passed" <<<"$out")" -eq "${args%% *}"
done
for provider in "ucx" "ofi:tcp;ofi_rxm"; do
  out=$(ZCOLL_LOCAL_PROVIDER=$provider ZCOLL_TIMEOUT=30s "$run" -n 3 -- mpi/messages_c 2>&1)
  echo "$out"
  check "messages.c over $provider passed on every rank" \
    test "$(grep -cE "messages.c: [0-9]+ checks passed" <<<"$out")" -eq 3
done
# A receive nothing matches ends the job at the timeout, on every rank, naming it.
for how in recv waitall; do
  start=$SECONDS
  out=$(ZCOLL_TIMEOUT=3s "$run" -n 3 -- mpi/messages_c unmatched "$how" 2>&1)
  echo "$out"
  check "an unmatched receive ($how) fails every rank" \
    test "$(grep -c "unmatched passed" <<<"$out")" -eq 3
  check "an unmatched receive ($how) ends by its timeout" test $((SECONDS - start)) -lt 15
done

out=$("$run" -n 3 -- mpi/errors_c 2>&1); code=$?
echo "$out"
check "errors.c exits 0" test "$code" -eq 0
check "errors.c passed on every rank" test "$(grep -c "errors.c passed" <<<"$out")" -eq 3

# One refused collective per job: the refusing rank gets the class and the reason, the
# others the reason at once.
for case in block_mismatch negative_displ null_counts bad_type bad_op null_comm bad_info \
  null_request uncommitted_type inter_scan inter_in_place; do
  out=$("$run" -n 3 -- mpi/refusal_c "$case" 2>&1); code=$?
  echo "$out"
  check "refusal $case passed on every rank" test "$(grep -c "refusal $case passed" <<<"$out")" -eq 3
done

start=$SECONDS
out=$("$run" -n 3 -- mpi/fatal_c 2>&1); code=$?
echo "$out"
check "a fatal error fails the job" test "$code" -ne 0
check "the fatal error is printed with its reason" \
  grep -q "zcoll MPI: MPI_Allreduce: rank 1: count -1 is negative" <<<"$out"
check "no rank returns from a fatal error" test "$(grep -c "returned from a fatal error" <<<"$out")" -eq 0
check "the job ends at once, not at its deadline" test $((SECONDS - start)) -lt 20

out=$("$run" -n 3 -- mpi/mpi_coll_bench 8 128 reduce allreduce reduce_scatter_block \
  reduce_scatter scatter scatterv bcast gather allgather alltoall reduce_local barrier 2>&1)
code=$?
echo "$out"
check "mpi_coll_bench on zcoll exits 0" test "$code" -eq 0
for coll in reduce allreduce reduce_scatter_block reduce_scatter scatter scatterv bcast gather \
  allgather alltoall reduce_local; do
  check "mpi_coll_bench timed $coll at 8 and 128 bytes" \
    test "$(grep -cE "^\[0\] $coll,3,(8|32|128),[0-9.]+$" <<<"$out")" -eq 3
done
check "mpi_coll_bench timed barrier" grep -qE "^\[0\] barrier,3,0,[0-9.]+$" <<<"$out"

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
