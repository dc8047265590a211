// The translation unit that builds perftest_test_pch's precompiled header
// (cmake/test_pch.cmake); it has no code of its own.
