"""The fuzz targets: one binary per target, two engines (fuzz/README in fuzz_target.h).

Built as is (gcc or clang), a target links standalone_main.cc: it replays its seeds and
mutations of them, and `<name>_test` runs it that way in `bazel test` (with ASan under
--config=asan). Under --config=fuzz (clang, -fsanitize=fuzzer) it is a libFuzzer
binary instead (fuzz/run.sh).
"""

load("//tools/bazel:zcoll.bzl", "zcoll_cc_binary")

def zcoll_fuzz_target(name, srcs, deps, test_runs = 100000):
    zcoll_cc_binary(
        name = name,
        srcs = srcs + ["fuzz_target.h"],
        linkstatic = True,
        deps = deps + select({
            ":libfuzzer": [":libfuzzer_seeds"],
            "//conditions:default": [":standalone_main"],
        }),
    )
    native.sh_test(
        name = name + "_test",
        size = "small",
        srcs = ["run_standalone.sh"],
        args = ["$(location :%s)" % name, "--runs", str(test_runs)],
        data = [":" + name],
    )
