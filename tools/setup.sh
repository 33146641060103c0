#!/usr/bin/env bash
# Installs every Debian package zcoll needs to build, test and benchmark.
# Idempotent: packages already installed are skipped; `apt-get update` runs at most once
# per invocation and only when something is missing. Prints what it did.
# Usage: tools/setup.sh [--slurm]   (as root, or with sudo available)
# --slurm: also Slurm's daemons and client (testing/slurm/srun_job.sh runs a one-node
#   Slurm to start a job with srun --mpi=pmix; CI does).
set -euo pipefail

packages=(
  # Build: Bazel 4.2.3 from Debian (offline) and the rule repositories it needs.
  bazel-bootstrap bazel-platforms bazel-rules-java
  g++ pkg-config git clang-format
  # Libraries found through pkg-config by tools/bazel/system_libs.bzl.
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev libhwy-dev
  libfabric-dev libucx-dev libhwloc-dev libpmix-dev
  # Provider tools for comparisons (fi_info, fi_pingpong, ucx_info, ucx_perftest).
  libfabric-bin ucx-utils
  # Peers measured side by side (tools/peers/run_peers.sh) and the PMIx launcher.
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  # Plots of benchmark results (zcoll_bench --plot, compare_peers.sh --plot).
  gnuplot-nox
  # Extra test hosts in network namespaces.
  iproute2
  # Fuzzing (fuzz/run.sh, .ci/run): clang 14 with libFuzzer and ASan's runtimes.
  clang-14 libclang-rt-14-dev
)
if [ "${1:-}" = "--slurm" ]; then
  packages+=(slurmd slurmctld slurm-client)
elif [ $# -gt 0 ]; then
  echo "usage: tools/setup.sh [--slurm]" >&2
  exit 2
fi

missing=()
for pkg in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    continue
  fi
  missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed; nothing to do."
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
if ! "${sudo_cmd[@]}" apt-get update -qq; then
  echo "setup: 'apt-get update' failed; check the machine's Debian package sources." >&2
  exit 1
fi
if ! DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"; then
  echo "setup: 'apt-get install' failed for: ${missing[*]}" >&2
  exit 1
fi
echo "setup: installed ${missing[*]}."
