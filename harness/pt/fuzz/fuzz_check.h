// FUZZ_CHECK(cond): the fuzz targets' contract check — a trap (libFuzzer
// reports it as a crash and keeps the input) when `cond` is false, in any
// build type (not assert(): NDEBUG would drop it).
#pragma once

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)
