#!/usr/bin/env bash
# Installs zcoll's MPI C interface for projects that do not build with Bazel:
#
#   bazel run -c opt //mpi:install -- PREFIX
#
# PREFIX/lib/libzcoll-mpi.so        the library (every MPI_ function of mpi.h)
# PREFIX/include/mpi.h              the header, also as PREFIX/include/zcoll/mpi.h
# PREFIX/lib/pkgconfig/zcoll-mpi.pc for `pkg-config --cflags --libs zcoll-mpi`
# PREFIX/bin/zcoll-mpicc, zcoll-mpicxx  compiler wrappers (ZCOLL_CC / ZCOLL_CXX choose
#                                   the compiler; --showme prints the command)
# PREFIX/bin/zcoll_run              the launcher
#
# The install is relocatable except for the .pc file's prefix, which is PREFIX: the
# wrappers find the library beside themselves, and programs find it by their rpath.
set -euo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: bazel run -c opt //mpi:install -- PREFIX" >&2
  exit 2
fi
prefix=$1
# `bazel run` runs in the runfiles tree; a relative PREFIX means the caller's directory.
case "$prefix" in
  /*) ;;
  *) prefix="${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix" ;;
esac
runfiles="${RUNFILES_DIR:-$0.runfiles}/zcoll"
[ -d "$runfiles" ] || runfiles=$PWD
version=$("$runfiles/tools/zcoll_run" --version | sed -n 's/^zcoll_run //p')
if [ -z "$version" ]; then
  echo "install: cannot read the version from zcoll_run --version" >&2
  exit 1
fi

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/zcoll" "$prefix/bin"
install -m 0755 "$runfiles/mpi/libzcoll-mpi.so" "$prefix/lib/libzcoll-mpi.so"
install -m 0644 "$runfiles/mpi/include/mpi.h" "$prefix/include/mpi.h"
install -m 0644 "$runfiles/mpi/include/mpi.h" "$prefix/include/zcoll/mpi.h"
install -m 0755 "$runfiles/tools/zcoll_run" "$prefix/bin/zcoll_run"
for wrapper in zcoll-mpicc zcoll-mpicxx; do
  install -m 0755 "$runfiles/mpi/dist/$wrapper" "$prefix/bin/$wrapper"
done
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$runfiles/mpi/dist/zcoll-mpi.pc.in" \
  > "$prefix/lib/pkgconfig/zcoll-mpi.pc"
echo "installed zcoll's MPI interface $version in $prefix"
echo "  build: $prefix/bin/zcoll-mpicc program.c -o program"
echo "     or: cc program.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs zcoll-mpi)"
echo "    run: $prefix/bin/zcoll_run -n 4 -- ./program   (or mpirun / srun, through PMIx)"
