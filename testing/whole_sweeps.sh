#!/usr/bin/env bash
# The long sweeps whole: every rank count from 1 to 64 of every algorithm's symbolic
# runs and of the selection agreement, the pipelined Rabenseifner segments at 33 and 64
# ranks, the largest rank counts and topologies of the algorithms and the model, the
# 2^20-element kernels. `bazel test //...` (and
# .ci/run) run a sample of each (testing/sampled_sweeps.h); run this after changing an
# algorithm, the selection table, the simulator or a kernel.
#
# Usage: testing/whole_sweeps.sh [BAZEL FLAGS...]   (e.g. --config=asan; 3 min plain on
# 2 cores, 350 CPU-seconds against the sample's 74)
set -euo pipefail
cd "$(dirname "$0")/.."
bazel test "$@" --test_env=ZCOLL_WHOLE_SWEEPS=1 \
  //collectives:algorithms_test //collectives:selection_agreement_test \
  //sim:collective_model_test //ops:reduce_test
