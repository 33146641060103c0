#!/usr/bin/env bash
# zcoll_store: a service-mode job of 3 ranks started by hand meets through it; a rank
# with the wrong key is refused; bad options are refused; it stops on SIGTERM.
set -uo pipefail
store=tools/zcoll_store
probe=tools/communicator_probe
failures=0
check() {  # check DESCRIPTION CONDITION...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}
work=${TEST_TMPDIR:-$(mktemp -d)}

echo "0123456789abcdef0123456789abcdef" > "$work/key"
"$store" --job-key-file "$work/key" --url-file "$work/url" --exit-after 120 > "$work/store.out" 2>&1 &
store_pid=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(cat "$work/url")
check "the store prints its URL once it listens" grep -qx "ZCOLL_STORE=$url" "$work/store.out"
check "  and not a key it was given" bash -c "! grep -q ZCOLL_JOB_KEY '$work/store.out'"
pids=()
for rank in 0 1 2; do
  ZCOLL_RANK=$rank ZCOLL_SIZE=3 ZCOLL_STORE="$url" ZCOLL_JOB_KEY=$(cat "$work/key") \
    ZCOLL_BOOTSTRAP=store "$probe" > "$work/rank$rank" 2>&1 &
  pids+=($!)
done
bad=0
for pid in "${pids[@]}"; do wait "$pid" || bad=$((bad + 1)); done
cat "$work"/rank*
check "3 ranks started by hand meet through it" test "$bad" -eq 0
check "  and pass the ring" test "$(cat "$work"/rank* | grep -c 'ring ok')" -eq 3
out=$(ZCOLL_RANK=0 ZCOLL_SIZE=1 ZCOLL_STORE="$url" ZCOLL_JOB_KEY=wrongwrongwrongwrong \
      ZCOLL_BOOTSTRAP=store ZCOLL_TIMEOUT=10 "$probe" 2>&1); code=$?
echo "$out"
check "a rank with another job's key is refused" test "$code" -ne 0
kill -TERM "$store_pid"; wait "$store_pid"; code=$?
check "SIGTERM stops it cleanly" test "$code" -eq 0

# Without a key it makes one and prints it, ready to export.
out=$(timeout 20 "$store" --exit-after 0.2 2>/dev/null)
check "a store without a key makes one" grep -qE '^ZCOLL_JOB_KEY=[0-9a-f]{32}$' <<<"$out"
out=$("$store" --port 70000 2>&1); code=$?
check "a bad port is refused" test "$code" -eq 2
check "  naming it" grep -q "port '70000' is not a port" <<<"$out"
out=$("$store" --job-key-file "$work/none" 2>&1); code=$?
check "a missing key file is refused naming it" grep -q "cannot read --job-key-file $work/none" <<<"$out"
check "--version" grep -qE '^zcoll_store [0-9]+\.[0-9]+\.[0-9]+$' <<<"$("$store" --version)"
exit $((failures > 0))
