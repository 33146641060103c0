#!/usr/bin/env bash
# Builds tools/peers/mpi_coll_bench.c against Open MPI and MPICH (Debian packages,
# installed by tools/setup.sh) and runs it, printing rows peer,coll,ranks,bytes,usec.
# Usage: tools/peers/run_peers.sh [-n RANKS] [--peers openmpi,mpich] [--min B] [--max B]
#                                 [--tcp] COLL...
# --tcp: Open MPI over its TCP transport alone (btl tcp,self); MPICH has no such mode
# here and is skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
np=2 peers=openmpi,mpich min=8 max=8388608 tcp=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n) np=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --min) min=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --tcp) tcp=1; shift ;;
    -*) echo "run_peers.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "run_peers.sh: name the collectives to time" >&2; exit 2; }
build=$(mktemp -d); trap 'rm -rf "$build"' EXIT
oversubscribe=(); [ "$np" -le "$(nproc)" ] || oversubscribe=(--oversubscribe)
for peer in ${peers//,/ }; do
  case "$peer" in
    openmpi)
      mpicc.openmpi -O2 -o "$build/openmpi" "$here/mpi_coll_bench.c"
      transport=(); [ "$tcp" = 0 ] || transport=(--mca btl tcp,self)
      mpirun.openmpi --allow-run-as-root "${oversubscribe[@]}" "${transport[@]}" -np "$np" \
        "$build/openmpi" "$min" "$max" "$@" | sed 's/^/openmpi,/' ;;
    mpich)
      if [ "$tcp" = 1 ]; then echo "run_peers.sh: MPICH has no TCP-only mode here; skipped" >&2; continue; fi
      mpicc.mpich -O2 -o "$build/mpich" "$here/mpi_coll_bench.c"
      mpiexec.mpich -n "$np" "$build/mpich" "$min" "$max" "$@" | sed 's/^/mpich,/' ;;
    *) echo "run_peers.sh: unknown peer $peer (openmpi, mpich)" >&2; exit 2 ;;
  esac
done
