#!/usr/bin/env bash
# The short fault campaign of .ci/run: 16 faults, every kind on every provider
# configuration (testing/fault_campaign.sh runs 500).
set -euo pipefail
runfiles="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-zcoll}"
export ZCOLL_FAULT_CAMPAIGN="$runfiles/testing/fault_campaign"
export ZCOLL_FAULT_RANK="$runfiles/testing/fault_rank"
export ZCOLL_RUN="$runfiles/tools/zcoll_run"
exec "$runfiles/testing/fault_campaign.sh" --faults=16 --seed=16
