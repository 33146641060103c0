"""Thin wrappers that give every zcoll C++ target the shared options of copts.bzl."""

load(":copts.bzl", "ZCOLL_COPTS", "ZCOLL_TEST_COPTS")

def zcoll_cc_library(name, copts = [], **kwargs):
    native.cc_library(name = name, copts = ZCOLL_COPTS + copts, **kwargs)

def zcoll_cc_binary(name, copts = [], **kwargs):
    native.cc_binary(name = name, copts = ZCOLL_COPTS + copts, **kwargs)

def zcoll_cc_test(name, copts = [], deps = [], size = "small", **kwargs):
    """A gtest test linked with gtest_main; "small" unless it says otherwise."""
    native.cc_test(
        name = name,
        size = size,
        copts = ZCOLL_TEST_COPTS + copts,
        deps = deps + ["@zcoll_system_libs//:gtest_main"],
        **kwargs
    )
