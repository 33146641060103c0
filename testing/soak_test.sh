#!/usr/bin/env bash
# The short soak of .ci/run: 1500 calls of up to 2^16 elements on each provider
# (testing/soak.sh runs 10^5 of up to 2^20).
set -euo pipefail
runfiles="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-zcoll}"
export ZCOLL_SOAK="$runfiles/testing/soak"
export ZCOLL_RUN="$runfiles/tools/zcoll_run"
exec "$runfiles/testing/soak.sh" --ops 1500 --max-elements 65536 --seed 16
