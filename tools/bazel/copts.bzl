"""Compiler options shared by every zcoll target (one place: docs/design.md, "Build")."""

# Bazel's default compilation mode (fastbuild) compiles without optimisation, which
# makes zcoll's collectives 3-10x slower (a 4 MiB allreduce 28-99 ms against 8.7-20 ms).
# A project that depends on zcoll and builds in that mode gets zcoll at -O2 anyway:
# its own code stays as fast to compile as it asked, and a benchmark or service that
# forgot -c opt does not mistake an unoptimised zcoll for zcoll. `-c dbg` (asking for
# a debugger's view) and `-c opt` (-O2 already) are left alone, and so are zcoll's own
# builds (its .bazelrc sets --define=zcoll_developer=1 and its own -O2, which the
# sanitizer configs lower to -O1: a rule's -O2 would come after theirs and win).
_OPTIMISED_IN_FASTBUILD = select({
    "//tools/bazel:developer_fastbuild": [],
    "//tools/bazel:fastbuild": ["-O2"],
    "//conditions:default": [],
})

ZCOLL_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    # Designated initializers name only the fields that differ from their defaults.
    "-Wno-missing-field-initializers",
    "-Wnon-virtual-dtor",
    "-Wvla",
] + _OPTIMISED_IN_FASTBUILD

ZCOLL_TEST_COPTS = ZCOLL_COPTS
