#!/usr/bin/env bash
# Runs buildifier (Bazel's BUILD/.bzl formatter) over the repository's Starlark files.
# Usage: tools/buildifier.sh [--check | --fix]     (default --check)
# buildifier is not a Debian package; it comes from the npm registry's @bazel/buildifier
# (a pinned version whose binary's SHA-256 is checked), fetched once into
# ~/.cache/zcoll (or $ZCOLL_TOOLS_CACHE). Without npm or the registry it says so and
# exits 0 unless ZCOLL_REQUIRE_BUILDIFIER=1 (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=check
case "${1:---check}" in --check) mode=check ;; --fix) mode=fix ;;
  *) echo "usage: tools/buildifier.sh [--check | --fix]" >&2; exit 2 ;; esac
version=8.2.1
sha256=6ceb7b0ab7cf66fceccc56a027d21d9cc557a7f34af37d2101edb56b92fcfa1a  # buildifier-linux_amd64
cache=${ZCOLL_TOOLS_CACHE:-$HOME/.cache/zcoll}
binary=$cache/buildifier-$version
unavailable() {
  echo "buildifier: $*" >&2
  if [ "${ZCOLL_REQUIRE_BUILDIFIER:-0}" = 1 ]; then exit 1; fi
  echo "buildifier: SKIPPED (set ZCOLL_REQUIRE_BUILDIFIER=1 to make this an error)" >&2
  exit 0
}
if [ ! -x "$binary" ]; then
  [ "$(uname -sm)" = "Linux x86_64" ] || unavailable "only the linux_amd64 binary is pinned here"
  command -v npm >/dev/null || unavailable "npm is not installed (Debian: apt-get install npm)"
  fetch=$(mktemp -d); trap 'rm -rf "$fetch"' EXIT
  (cd "$fetch" && npm pack --silent "@bazel/buildifier@$version" >/dev/null 2>&1) \
    || unavailable "cannot fetch @bazel/buildifier@$version from the npm registry"
  tar xzf "$fetch"/bazel-buildifier-$version.tgz -C "$fetch" package/buildifier-linux_amd64
  echo "$sha256  $fetch/package/buildifier-linux_amd64" | sha256sum --check --status \
    || { echo "buildifier: the fetched binary's SHA-256 is not the pinned one; not using it" >&2; exit 1; }
  mkdir -p "$cache"
  install -m 755 "$fetch/package/buildifier-linux_amd64" "$binary"
fi
mapfile -t files < <(git ls-files | grep -E '(^|/)(BUILD(\.bazel)?|WORKSPACE|[^/]*\.bzl)$')
if ! "$binary" -mode="$mode" "${files[@]}"; then
  echo "buildifier: the files above are not formatted; run tools/buildifier.sh --fix" >&2
  exit 1
fi
echo "buildifier ($version, $mode): ${#files[@]} files clean"
