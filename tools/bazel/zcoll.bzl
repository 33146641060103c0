"""Thin wrappers that give every zcoll C++ target the shared options of copts.bzl."""

load(":copts.bzl", "ZCOLL_COPTS", "ZCOLL_TEST_COPTS")

def zcoll_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = ZCOLL_COPTS + copts, **kwargs)

def zcoll_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = ZCOLL_COPTS + copts, **kwargs)

def zcoll_cc_test(name, copts = [], deps = [], size = "small", **kwargs):
    """A gtest test linked with gtest_main; "small" unless it says otherwise.

    Linked statically: in Bazel's default dynamic test mode each cc_library becomes a
    .so linked without its dependencies' linkopts, so its references to versioned
    symbols (libfabric's fi_getinfo@FABRIC_1.3, ...) bind to the oldest ABI at run
    time and corrupt structures.
    """
    native.cc_test(
        name = name,
        size = size,
        linkstatic = True,
        copts = ZCOLL_TEST_COPTS + copts,
        deps = deps + ["@zcoll_system_libs//:gtest_main"],
        **kwargs
    )
