// The one per-suite translation unit: the suite's name, from CMake's
// PERFTEST_SUITE_NAME. suite_main.cc (main, compiled once into
// perftest_suite_main) reads it as perftest::kSuiteName.
namespace perftest {
extern const char kSuiteName[];
const char kSuiteName[] = PERFTEST_SUITE_NAME;
}  // namespace perftest
