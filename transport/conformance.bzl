"""One macro expands the transport conformance suite over providers (STYLE.md, habit 7)."""

load("//tools/bazel:copts.bzl", "ZCOLL_TEST_COPTS")

def transport_conformance_tests(providers, deps = []):
    """A cc_test `conformance_<provider>_test` per provider, all from conformance_test.cc.

    Args:
      providers: provider names as transport_factory.h spells them ("loopback", "shm",
        "ofi:tcp", ...).
      deps: what the providers need linked in addition to the harness.
    """
    for provider in providers:
        suffix = (provider.replace(":", "_").replace(";", "_").replace(",", "_")
            .replace("+", "_and_").replace("/", "_on_") + ("_nodes" if "/" in provider else ""))
        native.cc_test(
            name = "conformance_%s_test" % suffix,
            size = "medium",
            srcs = ["conformance_test.cc"],
            args = ["--provider=" + provider],
            copts = ZCOLL_TEST_COPTS,
            linkstatic = True,
            deps = deps + [
                ":transport",
                "//testing:transport_harness",
                "@zcoll_system_libs//:absl",
                "@zcoll_system_libs//:gmock",
            ],
        )
