"""WORKSPACE macros for building zcoll, or a project that depends on it, offline.

A workspace that uses zcoll calls both, right after declaring @zcoll:

    local_repository(name = "zcoll", path = "...")   # or http_archive
    load("@zcoll//tools/bazel:repositories.bzl", "zcoll_dependencies",
         "zcoll_toolchain_repositories")
    zcoll_toolchain_repositories()
    zcoll_dependencies()

Each repository is declared with `maybe`, so a workspace that already provides one
(e.g. a real rules_cc) keeps its own.
"""

load("@bazel_tools//tools/build_defs/repo:utils.bzl", "maybe")
load(":system_libs.bzl", "system_libs")

def _in_tree_repository_impl(rctx):
    # `marker` is the WORKSPACE file of a directory inside zcoll; mirror that directory.
    root = rctx.path(rctx.attr.marker).dirname
    for entry in root.readdir():
        rctx.symlink(entry, entry.basename)

_in_tree_repository = repository_rule(
    implementation = _in_tree_repository_impl,
    attrs = {"marker": attr.label(allow_single_file = True, mandatory = True)},
    local = True,
)

def zcoll_toolchain_repositories():
    """Repositories Bazel 4.2.3 itself needs, provided without network access.

    Bazel's defaults download rules_cc, rules_java, platforms and remote_coverage_tools.
    Offline, rules_cc and remote_coverage_tools come from small shims in this tree and
    the other two from Debian's bazel-rules-java and bazel-platforms packages.
    """
    maybe(
        _in_tree_repository,
        name = "rules_cc",
        marker = Label("//tools/bazel/rules_cc:WORKSPACE"),
    )
    maybe(
        _in_tree_repository,
        name = "remote_coverage_tools",
        marker = Label("//tools/bazel/remote_coverage_tools:WORKSPACE"),
    )
    maybe(native.local_repository, name = "platforms", path = "/usr/share/bazel/platforms")
    maybe(native.local_repository, name = "rules_java", path = "/usr/share/bazel/rules/java")

def zcoll_dependencies():
    """The system libraries zcoll links, as @zcoll_system_libs//:<name> targets."""
    maybe(system_libs, name = "zcoll_system_libs")
