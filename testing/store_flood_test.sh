#!/usr/bin/env bash
# A short store flood: small limits, so that every attack reaches them quickly; the
# program fails if the server's peak memory exceeds its documented bound.
set -euo pipefail
flood="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-zcoll}/testing/store_flood"
[ -x "$flood" ] || flood="$(dirname "$0")/store_flood"
"$flood" --stored-mb=8 --buffered-mb=8 --connections=64 --slack-mb=24
