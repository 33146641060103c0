#!/usr/bin/env bash
# A project that does not build with Bazel, using zcoll's MPI C interface: installs it
# (bazel run -c opt //mpi:install; ZCOLL_BAZEL_FLAGS replaces -c opt, as in
# tools/compare_peers.sh), builds testing/mpi_consumer/results.c with
# zcoll-mpicc and with `pkg-config --cflags --libs zcoll-mpi`, runs the first under
# zcoll_run and the second under Open MPI's mpirun (zcoll bootstraps through PMIx), and
# compares what they print with the same source built against Open MPI and MPICH and
# run by their own launchers: every line must be the same.
#
# Usage: testing/mpi_consumer/run.sh [RANKS...]   (default: 3 4)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(3 4)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
source=$root/testing/mpi_consumer/results.c

read -r -a bazel_flags <<< "${ZCOLL_BAZEL_FLAGS:--c opt}"
bazel run "${bazel_flags[@]}" --color=no --curses=no //mpi:install -- "$prefix"
cd "$work"
"$prefix/bin/zcoll-mpicc" --showme -c x.c
"$prefix/bin/zcoll-mpicc" -std=c11 -O2 -Wall -Wextra -Werror -o results_mpicc "$source"
cc -std=c11 -O2 -Wall -Wextra -Werror -o results_pkgconfig "$source" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs zcoll-mpi)
# The C++ wrapper compiles C++ against the same header.
printf '#include <mpi.h>\nint main(int c, char** v) { MPI_Init(&c, &v); return MPI_Finalize(); }\n' \
  > init.cc
"$prefix/bin/zcoll-mpicxx" -O2 -Wall -Werror -o init_cxx init.cc
"$prefix/bin/zcoll_run" -n 2 -- ./init_cxx

have_openmpi=0
have_mpich=0
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
  have_openmpi=1
  mpicc.openmpi -std=c11 -O2 -o results_openmpi "$source"
else
  echo "SKIPPED: Open MPI is not installed (tools/setup.sh installs it): no mpirun run, no comparison"
fi
if command -v mpicc.mpich >/dev/null && command -v mpirun.mpich >/dev/null; then
  have_mpich=1
  mpicc.mpich -std=c11 -O2 -o results_mpich "$source"
else
  echo "SKIPPED: MPICH is not installed (tools/setup.sh installs it): no comparison with it"
fi

openmpi_run() { timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe "$@"; }
failures=0
for n in "${ranks[@]}"; do
  rm -f out.*
  timeout 120 "$prefix/bin/zcoll_run" -n "$n" -- ./results_mpicc out.zcoll_run
  cat out.zcoll_run.* | sort > "zcoll_run.$n"
  lines=$(wc -l < "zcoll_run.$n")
  echo "zcoll-mpicc build under zcoll_run -n $n: $lines lines"
  [ "$lines" -gt $((15 * n)) ] || { echo "FAILED: too few lines"; failures=$((failures + 1)); }
  compare() {  # compare NAME: its sorted lines against zcoll_run's
    cat "out.$1".* | sort > "$1.$n"
    if diff -u "zcoll_run.$n" "$1.$n"; then
      echo "ok: $1 -n $n prints the same $lines lines"
    else
      echo "FAILED: $1 -n $n differs from zcoll under zcoll_run"
      failures=$((failures + 1))
    fi
  }
  if [ "$have_openmpi" = 1 ]; then
    # zcoll started by Open MPI's launcher (PMIx).
    openmpi_run -np "$n" ./results_pkgconfig out.zcoll_mpirun
    compare zcoll_mpirun
    # Open MPI's own (op/avx saturates MPI_SUM on small integer types: off).
    openmpi_run --mca op ^avx -np "$n" ./results_openmpi out.openmpi
    compare openmpi
  fi
  if [ "$have_mpich" = 1 ]; then
    timeout 120 mpirun.mpich -np "$n" ./results_mpich out.mpich
    compare mpich
  fi
done
# zcoll's own point-to-point test, built against Open MPI: its expectations are the
# standard's, not zcoll's.
if [ "$have_openmpi" = 1 ]; then
  mpicc.openmpi -std=c11 -O2 -I"$root" -o messages_openmpi "$root/mpi/tests/messages.c"
  out=$(openmpi_run -np 3 ./messages_openmpi 2>&1) || true
  if [ "$(grep -cE "messages.c: [0-9]+ checks passed" <<<"$out")" -eq 3 ]; then
    echo "ok: mpi/tests/messages.c passes under Open MPI"
  else
    echo "$out"
    echo "FAILED: mpi/tests/messages.c under Open MPI"
    failures=$((failures + 1))
  fi
fi
[ "$failures" -eq 0 ] || { echo "$failures comparison(s) failed"; exit 1; }
echo "mpi_consumer: all builds agree"
