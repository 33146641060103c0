#!/usr/bin/env bash
# zcoll_run: output prefixes, emulated nodes, and the first failure ending the job.
set -uo pipefail
run=tools/zcoll_run
probe=tools/bootstrap_probe
failures=0
check() {  # check DESCRIPTION CONDITION...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}

out=$("$run" -n 4 --nodes 2 -- "$probe" 2>&1); code=$?
echo "$out"
check "a healthy job exits 0" test "$code" -eq 0
for rank in 0 1 2 3; do
  check "rank $rank's line is prefixed and saw every rank" \
    grep -qx "\[$rank\] rank $rank of 4 on 2 emulated nodes: gathered rank0,rank1,rank2,rank3" <<<"$out"
done

start=$SECONDS
out=$("$run" -n 3 -- "$probe" --exit-rank=2 --exit-code=7 2>&1); code=$?
echo "$out"
check "the failing rank's exit code is zcoll_run's" test "$code" -eq 7
check "the failure is named" grep -q "zcoll_run: rank 2 exited with code 7; stopping the other ranks" <<<"$out"
check "the other ranks are stopped at once, not at their deadline" test $((SECONDS - start)) -lt 20

out=$("$run" -n 3 -- "$probe" --kill-rank=1 2>&1); code=$?
echo "$out"
check "a rank killed by SIGKILL gives 128+9" test "$code" -eq 137
check "the signal is named" grep -q "rank 1 was killed by signal 9" <<<"$out"

out=$("$run" -n 2 --timeout 1 -- sleep 30 2>&1); code=$?
echo "$out"
check "--timeout ends the job with 124" test "$code" -eq 124

# Issue 16: zcoll_run killed with SIGKILL left its ranks running. They die with it
# now (PR_SET_PDEATHSIG), and run in a process group of their own.
"$run" -n 4 -- sleep 300 >/dev/null 2>&1 &
launcher=$!
ranks=""
for _ in $(seq 100); do
  ranks=$(pgrep -P "$launcher" -x sleep | tr '\n' ' ')
  [ "$(wc -w <<<"$ranks")" -eq 4 ] && break
  sleep 0.05
done
check "zcoll_run started 4 ranks" test "$(wc -w <<<"$ranks")" -eq 4
group=$(ps -o pgid= -p "${ranks%% *}" | tr -d ' ')
check "the ranks have a process group of their own" test "$group" != "$(ps -o pgid= -p $$ | tr -d ' ')"
kill -9 "$launcher"
wait "$launcher" 2>/dev/null
left=4
for _ in $(seq 60); do
  left=0
  for pid in $ranks; do kill -0 "$pid" 2>/dev/null && left=$((left + 1)); done
  [ "$left" -eq 0 ] && break
  sleep 0.05
done
check "every rank died within 3 s of zcoll_run's SIGKILL" test "$left" -eq 0
for pid in $ranks; do kill -9 "$pid" 2>/dev/null; done

out=$("$run" --nodes 2 -- "$probe" 2>&1); code=$?
check "a missing -n is a usage error" test "$code" -eq 2
check "the usage error says what is missing" grep -q "zcoll_run: -n RANKS is required" <<<"$out"
out=$("$run" -n 2 --nodes 3 -- "$probe" 2>&1); code=$?
check "more nodes than ranks is refused" test "$code" -eq 2
out=$("$run" -n 4 --nodes 3,2 -- "$probe" 2>&1); code=$?
check "node sizes that do not add up to the ranks are refused" test "$code" -eq 2
check "  with the sum named" grep -q "add up to 5" <<<"$out"
out=$("$run" --help); code=$?
check "--help explains the options" grep -q -- "--nodes NODES" <<<"$out"
out=$("$run" -n 1 -- /nonexistent/program 2>&1); code=$?
check "a program that cannot run gives 127" test "$code" -eq 127

# Communicator::Create under zcoll_run: shm within an emulated node, the network
# provider between them; a token ring checks both paths.
for layout in "4 2" "3 1" "3 3" "1 1"; do
  set -- $layout
  out=$("$run" -n "$1" --nodes "$2" -- tools/communicator_probe 2>&1); code=$?
  echo "$out"
  check "Communicator::Create with $1 ranks on $2 emulated nodes" test "$code" -eq 0
  check "  every rank of $1 on $2 nodes passed the ring" \
    test "$(grep -c 'ring ok' <<<"$out")" -eq $(($1 > 1 ? $1 : 0))
  check "  rank 0 sees $2 nodes" grep -q "^\[0\] rank 0 of $1, node 0: $2 node" <<<"$out"
  check "  every rank split off its node and met its ranks" \
    test "$(grep -c 'node [0-9]* has [0-9]* ranks' <<<"$out")" -eq $(($1 > 1 ? $1 : 0))
done
out=$("$run" -n 4 --nodes 2 -- tools/communicator_probe 2>&1)
check "two emulated nodes of 4 ranks split into communicators of 2" \
  test "$(grep -c 'node [01] has 2 ranks' <<<"$out")" -eq 4
out=$("$run" -n 4 --nodes 3,1 -- tools/communicator_probe 2>&1)
check "node sizes 3,1 put ranks 0-2 on node 0 and rank 3 on node 1" \
  grep -q "^\[0\] rank 0 of 4, node 0: 2 nodes: emulated0 {0-2} emulated1 {3}" <<<"$out"
check "  and node 0's ranks split off together" test "$(grep -c 'node 0 has 3 ranks' <<<"$out")" -eq 3

# Without a launcher, as a service starts its ranks: a shared directory as the store.
store_dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/file-store.XXXXXX")
pids=()
for rank in 0 1 2; do
  ZCOLL_RANK=$rank ZCOLL_SIZE=3 ZCOLL_STORE="file://$store_dir" ZCOLL_EMULATE_NODES=2 \
    tools/communicator_probe >"$store_dir.out$rank" 2>&1 &
  pids+=($!)
done
file_failures=0
for pid in "${pids[@]}"; do wait "$pid" || file_failures=$((file_failures + 1)); done
cat "$store_dir".out*
check "3 ranks started by hand meet through a file store" test "$file_failures" -eq 0
check "  and pass the ring" test "$(cat "$store_dir".out* | grep -c 'ring ok')" -eq 3

out=$("$run" -n 2 --nodes 2 -- tools/communicator_probe 2>&1 | grep "rank 1 of 2")
check "ranks are placed on emulated nodes in blocks" grep -q "node 1:" <<<"$out"
set --
start=$SECONDS
out=$(ZCOLL_PROVIDER=ofi:no_such_provider "$run" -n 2 --nodes 2 -- tools/communicator_probe 2>&1); code=$?
echo "$out"
check "a network provider that cannot work fails Create" test "$code" -ne 0
check "  and the error names it and what is available" grep -q "no_such_provider.*available" <<<"$out"
check "  at once, not at the timeout" test $((SECONDS - start)) -lt 20

check "  naming the rank once" bash -c '! grep -q "rank 1: .*rank 1: " <<<"$1"' _ "$out"

# A program that cannot run: one error naming the path and why, before any rank starts.
out=$("$run" -n 2 -- tools/no_such_program 2>&1); code=$?
echo "$out"
check "a missing program exits 127" test "$code" -eq 127
check "  naming the path, the directory and the reason" \
  grep -q "zcoll_run: cannot execute 'tools/no_such_program' (relative to the working directory $PWD): No such file or directory" <<<"$out"
check "  once, not per rank" test "$(grep -c "cannot execute" <<<"$out")" -eq 1
out=$("$run" -n 1 -- ./tools 2>&1); code=$?
check "a directory is refused as one" grep -q "cannot execute './tools'.*: Is a directory" <<<"$out"
out=$("$run" -n 1 -- no_such_program_in_path 2>&1); code=$?
check "a bare name is looked up in PATH" grep -q "cannot execute 'no_such_program_in_path': no such program in PATH" <<<"$out"
# Under `bazel run` the tool runs in its runfiles tree; a relative path is the user's.
elsewhere=$(mktemp -d)
mkdir -p "$elsewhere/bin" && cp "$probe" "$elsewhere/bin/probe"
out=$(BUILD_WORKING_DIRECTORY="$elsewhere" "$run" -n 2 -- bin/probe 2>&1); code=$?
echo "$out"
check "a relative path is resolved against BUILD_WORKING_DIRECTORY" test "$code" -eq 0
out=$(BUILD_WORKING_DIRECTORY="$elsewhere" "$run" -n 2 -- bin/missing 2>&1)
check "  and its failure says so" \
  grep -q "cannot execute 'bin/missing' (relative to BUILD_WORKING_DIRECTORY=$elsewhere, where bazel run was started): No such file or directory" <<<"$out"
rm -rf "$elsewhere"
check "--version prints the version" grep -qx "zcoll_run [0-9]*\.[0-9]*\.[0-9]*" <<<"$("$run" --version)"

leftovers=$(ls /dev/shm 2>/dev/null | grep -c '^zcoll' || true)
echo "zcoll objects left in /dev/shm: $leftovers"
exit $((failures > 0))
