#include "fidelity/minimize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fidelity/compare.h"
#include "fidelity/executor.h"
#include "harness/attr.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"

namespace perftest::fidelity {
namespace {

MockProfile Profile(uint32_t max_sample_rate) {
  Result<MockProfile> p = LoadProfile("software-only");
  EXPECT_TRUE(p.ok()) << p.ToString();
  p->max_sample_rate = max_sample_rate;
  return *p;
}

// A "kernel" with a lower perf_event_max_sample_rate than the mock: freq
// events between the two rates disagree. The minimizer must strip everything
// else from the attr and drop the unrelated earlier calls.
TEST(Minimize, ShrinksToTheFieldsThatMatter) {
  std::unique_ptr<Backend> kernel = MakeMockBackend(Profile(1000));
  auto make_mock = [] { return MakeMockBackend(Profile(100000)); };
  GeneratorParams params;

  OpenCall noise;
  noise.attr = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  OpenCall c;
  c.attr = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  c.attr.freq = 1;
  c.attr.sample_freq = 5000;
  c.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
  c.attr.read_format = PERF_FORMAT_ID;
  c.attr.exclude_hv = 1;
  c.attr.sig_data = 42;
  c.flags = PERF_FLAG_FD_CLOEXEC;
  Sequence seq{1, {noise, ReadCall{0, ReadLen::kLarge}, c}};

  std::unique_ptr<Backend> m = make_mock();
  const SequenceOutcome out = RunSequence(seq, *kernel, *m, params);
  const std::string kind = DisagreementKind(out.calls[2]);
  ASSERT_EQ(kind, "perf_event_open [software]: kernel EINVAL, mock ok");

  const Minimized min = Minimize(seq, 2, kind, *kernel, make_mock, params);
  ASSERT_TRUE(min.reproduced);
  ASSERT_EQ(min.calls.size(), 1u);
  const OpenCall& got = std::get<OpenCall>(min.calls[0]);
  EXPECT_EQ(got.attr.freq, 1u);
  EXPECT_EQ(got.attr.sample_freq, 5000u);
  EXPECT_EQ(got.attr.sample_type, 0u);
  EXPECT_EQ(got.attr.read_format, 0u);
  EXPECT_EQ(got.attr.sig_data, 0u);
  EXPECT_EQ(got.attr.config, 0u);   // any software event will do
  EXPECT_EQ(got.flags, 0u);
  EXPECT_LT(min.tries, 600u);
}

TEST(Minimize, SaysWhenItDoesNotReproduce) {
  std::unique_ptr<Backend> kernel = MakeMockBackend(Profile(100000));
  auto make_mock = [] { return MakeMockBackend(Profile(100000)); };
  OpenCall c;
  c.attr = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  const Minimized min = Minimize(Sequence{1, {c}}, 0, "perf_event_open [software]: kernel EINVAL, mock ok", *kernel,
                                 make_mock, GeneratorParams{});
  EXPECT_FALSE(min.reproduced);
  EXPECT_EQ(min.calls.size(), 1u);
}

}  // namespace
}  // namespace perftest::fidelity
