#!/usr/bin/env bash
# cache_line_ping runs its two processes to the end and prints a positive time per
# exchange; a bad argument gets the usage and exit status 2.
set -euo pipefail
ping=tools/cache_line_ping
out=$("$ping" --rounds 2000)
echo "$out"
us=$(echo "$out" | sed -n 's/^cache_line_ping: \([0-9.]*\) us per exchange (2 processes, 1800 rounds timed)$/\1/p')
[ -n "$us" ] || { echo "FAIL: unexpected output"; exit 1; }
awk -v us="$us" 'BEGIN { exit !(us > 0 && us < 1000) }' || { echo "FAIL: $us us per exchange"; exit 1; }
status=0
"$ping" --rounds 3 2> /tmp/cache_line_ping_usage.$$ || status=$?
[ "$status" = 2 ] || { echo "FAIL: --rounds 3 exited $status, not 2"; exit 1; }
grep -q "^usage: cache_line_ping" /tmp/cache_line_ping_usage.$$ || { echo "FAIL: no usage"; exit 1; }
rm -f /tmp/cache_line_ping_usage.$$
echo "PASS"
