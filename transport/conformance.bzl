"""One macro expands the transport conformance suite over providers (docs/design.md, "Conventions")."""

load("//tools/bazel:copts.bzl", "ZCOLL_TEST_COPTS")

def _suffix(provider):
    return (provider.replace(":", "_").replace(";", "_").replace(",", "_")
        .replace("+", "_and_").replace("/", "_on_") + ("_nodes" if "/" in provider else ""))

def transport_conformance_tests(providers, variants = {}, deps = []):
    """A cc_test `conformance_<provider>_test` per provider, all from conformance_test.cc.

    Args:
      providers: provider names as transport_factory.h spells them ("loopback", "shm",
        "ofi:tcp", ...).
      variants: more tests of a provider with zcoll environment variables set, as
        {"name_suffix": ("provider", {"ZCOLL_VARIABLE": "value"})}; the test is
        `conformance_<name_suffix>_test`.
      deps: what the providers need linked in addition to the harness.
    """

    # The suite is compiled once (it is the same for every provider: 10 s a copy
    # under ASan, eight copies) and linked into each test, which picks its provider
    # with its arguments.
    native.cc_library(
        name = "conformance_suite",
        testonly = True,
        srcs = ["conformance_test.cc"],
        copts = ZCOLL_TEST_COPTS,
        # The tests are registered by static initializers and main() is in the suite.
        alwayslink = True,
        visibility = ["//visibility:private"],
        deps = deps + [
            ":registered_buffer",
            ":transport",
            "//testing:status_assertions",
            "//testing:transport_harness",
            "@zcoll_system_libs//:absl",
            "@zcoll_system_libs//:gmock",
        ],
    )
    runs = [(_suffix(provider), provider, {}) for provider in providers]
    runs += [(suffix, spec[0], spec[1]) for suffix, spec in variants.items()]
    for suffix, provider, environment in runs:
        native.cc_test(
            name = "conformance_%s_test" % suffix,
            size = "medium",
            # The test sets these itself (before any rank starts): Bazel 4's cc_test
            # has no `env` attribute.
            args = ["--provider=" + provider] + [
                "--setenv=%s=%s" % (name, value)
                for name, value in environment.items()
            ],
            linkstatic = True,
            deps = [":conformance_suite"],
        )
