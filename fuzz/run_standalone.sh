#!/usr/bin/env bash
# A fuzz target's short run in `bazel test`: its seeds and mutations of them
# (standalone_main.cc); the arguments are the binary and its own.
set -euo pipefail
exec "$@"
