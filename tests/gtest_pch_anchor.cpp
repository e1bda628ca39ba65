// The one source of the precompiled gtest.h's targets (engine_add_gtest_pch): a library needs a
// source; the header is what they build.
