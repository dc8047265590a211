#include <gtest/gtest.h>
#include <cstdio>
TEST(S, Pass) { RecordProperty("feature", "s.pass"); RecordProperty("spec", "x y"); }
TEST(S, Fail) { RecordProperty("feature", "s.fail"); EXPECT_EQ(1, 2) << "one is not two"; ADD_FAILURE() << "second"; }
TEST(S, Skip) { RecordProperty("feature", "s.skip"); RecordProperty("skip_class", "permission"); RecordProperty("skip_reason", "needs CAP_PERFMON"); GTEST_SKIP() << "needs CAP_PERFMON or paranoid<=0"; }
TEST(S, SkipNoMsg) { GTEST_SKIP(); }
TEST(S, Num) { RecordProperty("n", 5); }
TEST(S, Disabled_x) {}
TEST(S, DISABLED_y) {}
