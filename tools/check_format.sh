#!/usr/bin/env bash
# Fails if any tracked C++ file differs from what clang-format (.clang-format, Google
# style) would write, or any Starlark file differs from buildifier's formatting. Fix
# with: git ls-files '*.h' '*.cc' | xargs clang-format -i; tools/buildifier.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is missing: run tools/setup.sh" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.h' '*.cc')
if [ ${#files[@]} -eq 0 ]; then echo "format: no C++ files"; exit 0; fi
if ! clang-format --dry-run --Werror "${files[@]}"; then
  echo "format: the files above are not clang-formatted; run:" >&2
  echo "  git ls-files '*.h' '*.cc' | xargs clang-format -i" >&2
  exit 1
fi
echo "format: ${#files[@]} files clean"
# BUILD, WORKSPACE and .bzl files: buildifier.
tools/buildifier.sh --check
