#!/usr/bin/env bash
# The version is said in one place (core/version.h); CHANGELOG.md's latest heading and
# the repository's LICENSE keep up with it.
set -euo pipefail
version=$(sed -n 's/^inline constexpr absl::string_view kVersion = "\(.*\)";$/\1/p' core/version.h)
[ -n "$version" ] || { echo "no kVersion in core/version.h"; exit 1; }
parts=$(sed -n 's/^inline constexpr int kVersion\(Major\|Minor\|Patch\) = \([0-9]*\);$/\2/p' core/version.h | paste -sd.)
[ "$parts" = "$version" ] || { echo "kVersionMajor/Minor/Patch ($parts) differ from kVersion ($version)"; exit 1; }
latest=$(grep -m1 '^## ' CHANGELOG.md | sed 's/^## \([^ ]*\).*/\1/')
[ "$latest" = "$version" ] || { echo "CHANGELOG.md's latest entry is '$latest', not $version"; exit 1; }
grep -q "Apache License" LICENSE && grep -q "Version 2.0" LICENSE || { echo "LICENSE is not Apache-2.0"; exit 1; }
echo "PASS: version $version"
