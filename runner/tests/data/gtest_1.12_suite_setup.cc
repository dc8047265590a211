#include <gtest/gtest.h>
class F : public ::testing::Test { public: static void SetUpTestSuite() { GTEST_SKIP() << "suite-level skip"; } };
TEST_F(F, A) { RecordProperty("feature", "f.a"); }
class G : public ::testing::Test { public: static void SetUpTestSuite() { ADD_FAILURE() << "suite-level fail"; } };
TEST_F(G, B) { RecordProperty("feature", "g.b"); }
class H : public ::testing::Test { protected: void SetUp() override { RecordProperty("skip_class","unsupported"); GTEST_SKIP() << "fixture skip"; } };
TEST_F(H, C) { }
