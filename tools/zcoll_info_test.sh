#!/usr/bin/env bash
# zcoll_info runs on this machine and reports what the README promises: the version,
# the node's hardware, libfabric's shm provider and UCX's posix transport (both open
# on every Debian 12 machine with the packages of tools/setup.sh), the environment
# variables, the transports a job would use; and it refuses unknown arguments.
set -euo pipefail
info=tools/zcoll_info
output=$("$info")
echo "$output"
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q '^zcoll [0-9]\+\.[0-9]\+\.[0-9]\+$' <<<"$output" || fail "no version line"
[[ "$("$info" --version)" =~ ^zcoll_info\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no --version"
marked=$(ZCOLL_TIMEOUT=abc ZCOLL_ALGO_BCAST=nope "$info")
grep -A1 '^  ZCOLL_TIMEOUT=abc ' <<<"$marked" | grep -q "INVALID.*ZCOLL_TIMEOUT='abc' is not accepted" \
  || fail "an invalid ZCOLL_TIMEOUT is not marked"
grep -A1 '^  ZCOLL_ALGO_BCAST=nope ' <<<"$marked" | grep -q "INVALID.*no algorithm 'nope'" \
  || fail "an unknown algorithm name is not marked"
grep -A1 '^  ZCOLL_CHECK=' <<<"$marked" | grep -q INVALID && fail "a valid value is marked"
grep -Eq '^Reduction kernels: (AVX3|AVX2|SSE4|SSSE3|SCALAR) ' <<<"$output" || fail "no kernel target"
grep -Eq 'packages [1-9][0-9]*, NUMA domains [1-9][0-9]*, L3 caches [0-9]+, cores [1-9][0-9]*' <<<"$output" \
  || fail "no hardware counts"
grep -Eq '^  shm +[^ ]+ +yes +yes .* yes$' <<<"$output" || fail "libfabric shm does not open"
grep -Eq '^  posix +memory ' <<<"$output" || fail "UCX posix transport missing"
grep -q '^zcoll transports that open here: shm, ofi, ' <<<"$output" || fail "no provider list"
grep -q 'a job uses shm within a node and ucx:tcp between nodes' <<<"$output" \
  || fail "no provider choice"
# Whole outputs are captured before grep reads them: grep -q stops reading at the
# first match, and a writer still writing would die of SIGPIPE.
with_ofi=$(ZCOLL_PROVIDER=ofi:tcp "$info")
grep -q 'shm within a node and ofi:tcp between nodes' <<<"$with_ofi" \
  || fail "ZCOLL_PROVIDER is not shown in effect"
with_link=$(ZCOLL_LINK_LATENCY_US=2 ZCOLL_LINK_GBITS=100 "$info")
grep -q 'between nodes goes through a modelled link: latency 2us, 100 Gbit/s' <<<"$with_link" \
  || fail "the link model is not shown"
grep -Eq '^  segment for 2 ranks [0-9.]+ KiB, 4 ranks' <<<"$output" || fail "no node segment sizes"
grep -q 'else they copy through shared memory): yes$' <<<"$output" \
  || fail "single copy not probed (or forbidden here)"
grep -q 'shared memory): yes; not used: ZCOLL_CROSS_MEMORY_ATTACH=0$' \
  <<<"$(ZCOLL_CROSS_MEMORY_ATTACH=0 "$info")" || fail "ZCOLL_CROSS_MEMORY_ATTACH=0 not shown"
grep -q 'ZCOLL_LOG_LEVEL=' <<<"$output" || fail "environment variables missing"
if "$info" --bogus 2>/dev/null; then fail "an unknown argument was accepted"; fi
algorithms=$("$info" --algorithms)
grep -Eq '^  bcast +node, binomial, chain, linear, scatter_allgather, two_level, two_level_binary, node_levels$' <<<"$algorithms" \
  || fail "--algorithms does not list bcast's algorithms"
grep -Eq '^  bcast +two_level +nodes >= 2$' <<<"$algorithms" \
  || fail "--algorithms does not print the selection table"
help=$("$info" --help)
grep -q '^usage: zcoll_info' <<<"$help" || fail "--help prints no usage"
echo PASS
