#!/usr/bin/env bash
# The fault-injection campaign (testing/fault_campaign.cc): by default 500 faults,
# killed, stopped, exiting and leaving ranks, over shm, ofi:tcp, ucx:tcp and the
# 2-node mix; prints a table and exits non-zero if any job failed.
#   testing/fault_campaign.sh [--faults=N] [--seed=S] [--configs=...] [--kinds=...]
#                             [--ranks=R] [--timeout-s=T] [--verbose]
# Builds the programs with -c opt unless ZCOLL_FAULT_CAMPAIGN, ZCOLL_FAULT_RANK and
# ZCOLL_RUN name them (as fault_campaign_test does).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${ZCOLL_FAULT_CAMPAIGN:-}" ]; then
  (cd "$here" && bazel build -c opt //testing:fault_campaign //testing:fault_rank //tools:zcoll_run)
  bin=$(cd "$here" && bazel info -c opt bazel-bin 2>/dev/null)
  ZCOLL_FAULT_CAMPAIGN=$bin/testing/fault_campaign
  ZCOLL_FAULT_RANK=$bin/testing/fault_rank
  ZCOLL_RUN=$bin/tools/zcoll_run
fi
exec "$ZCOLL_FAULT_CAMPAIGN" --zcoll-run="$ZCOLL_RUN" --rank="$ZCOLL_FAULT_RANK" --faults=500 "$@"
