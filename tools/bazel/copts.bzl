"""Compiler options shared by every zcoll target (one place, STYLE.md habit 8)."""

ZCOLL_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    # Designated initializers name only the fields that differ from their defaults.
    "-Wno-missing-field-initializers",
    "-Wnon-virtual-dtor",
    "-Wvla",
]

ZCOLL_TEST_COPTS = ZCOLL_COPTS
