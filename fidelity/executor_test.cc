#include "fidelity/executor.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "fidelity/compare.h"
#include "fidelity/report.h"
#include "fidelity/rng.h"
#include "harness/attr.h"
#include "harness/testing/gmock_backend.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"

namespace perftest::fidelity {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::NiceMock;
using ::testing::Return;

MockProfile Profile() {
  Result<MockProfile> p = LoadProfile("software-only");
  EXPECT_TRUE(p.ok()) << p.ToString();
  return *p;
}

GeneratorParams SoftwareOnlyParams() {
  GeneratorParams p;
  p.generate_hardware_types = true;  // like the profile's machine: they all fail with ENOENT
  return p;
}

OpenCall Open(uint64_t config, uint64_t read_format = 0, FdChoice group = {}) {
  OpenCall c;
  c.attr = SoftwareAttr(config);
  c.attr.read_format = read_format;
  c.group = group;
  c.flags = PERF_FLAG_FD_CLOEXEC;
  return c;
}

// The pipeline itself: the mock against a second, identical mock agrees on every call.
TEST(Executor, MockAgainstAnIdenticalMockAgreesOnEveryCall) {
  const GeneratorParams params = SoftwareOnlyParams();
  FidelityReport report;
  for (uint64_t i = 0; i < 300; ++i) {
    const Sequence seq = GenerateSequence(SequenceSeed(11, i), params);
    std::unique_ptr<Backend> a = MakeMockBackend(Profile());
    std::unique_ptr<Backend> b = MakeMockBackend(Profile());
    report.Add(i, seq, RunSequence(seq, *a, *b, params));
  }
  EXPECT_GT(report.calls_compared(), 1000u);
  EXPECT_EQ(report.calls_agreeing(), report.calls_compared())
      << (report.Classes().empty() ? "" : report.Classes()[0].kind);
  EXPECT_EQ(report.calls_dependent(), 0u);
}

// The mock side is a function of the seed: the same sequence gives the same mock outcomes.
TEST(Executor, MockSideIsDeterministic) {
  const GeneratorParams params = SoftwareOnlyParams();
  for (uint64_t i = 0; i < 100; ++i) {
    const Sequence seq = GenerateSequence(SequenceSeed(12, i), params);
    std::unique_ptr<Backend> k1 = MakeMockBackend(Profile()), m1 = MakeMockBackend(Profile());
    std::unique_ptr<Backend> k2 = MakeMockBackend(Profile()), m2 = MakeMockBackend(Profile());
    const SequenceOutcome a = RunSequence(seq, *k1, *m1, params);
    const SequenceOutcome b = RunSequence(seq, *k2, *m2, params);
    ASSERT_EQ(a.calls.size(), b.calls.size());
    for (size_t j = 0; j < a.calls.size(); ++j) {
      EXPECT_EQ(OutcomeText(a.calls[j].mock), OutcomeText(b.calls[j].mock)) << a.calls[j].description;
      EXPECT_EQ(a.calls[j].description, b.calls[j].description);
    }
  }
}

// An event that opened on the mock only: calls on it run on the mock alone and are not compared.
TEST(Executor, CallsOnAnEventTheKernelLacksAreDependent) {
  NiceMock<GMockBackend> kernel;
  kernel.WithDefaults();
  ON_CALL(kernel, PerfEventOpen(_, _, _, _, _)).WillByDefault(Return(Result<int>::Failure(EINVAL, "perf_event_open")));
  std::unique_ptr<Backend> mock = MakeMockBackend(Profile());
  Sequence seq{1, {Open(PERF_COUNT_SW_DUMMY), ReadCall{0, ReadLen::kLarge}}};
  const SequenceOutcome out = RunSequence(seq, kernel, *mock, SoftwareOnlyParams());
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].status, CallStatus::kCompared);
  EXPECT_EQ(DisagreementKind(out.calls[0]), "perf_event_open [software]: kernel EINVAL, mock ok");
  EXPECT_EQ(out.calls[1].status, CallStatus::kDependent);
  EXPECT_FALSE(out.calls[1].kernel.ran);
  EXPECT_TRUE(out.calls[1].mock.ok);
}

// A member that joined the group on the mock only makes reads of the group incomparable.
TEST(Executor, CallsOnAGroupThatDiffersAreDependent) {
  NiceMock<GMockBackend> kernel;
  kernel.WithDefaults();
  int calls = 0;
  ON_CALL(kernel, PerfEventOpen(_, _, _, _, _)).WillByDefault([&](perf_event_attr*, pid_t, int, int, unsigned long) {
    return ++calls == 1 ? Result<int>::Ok(100, "open") : Result<int>::Failure(EOPNOTSUPP, "open");
  });
  std::unique_ptr<Backend> mock = MakeMockBackend(Profile());
  Sequence seq{1,
               {Open(PERF_COUNT_SW_DUMMY, PERF_FORMAT_GROUP),
                Open(PERF_COUNT_SW_DUMMY, PERF_FORMAT_GROUP, {FdArg::kEvent, 0}), ReadCall{0, ReadLen::kLarge}}};
  const SequenceOutcome out = RunSequence(seq, kernel, *mock, SoftwareOnlyParams());
  ASSERT_EQ(out.calls.size(), 3u);
  EXPECT_EQ(out.calls[1].status, CallStatus::kCompared);  // the disagreement itself
  EXPECT_EQ(out.calls[2].status, CallStatus::kDependent);
  EXPECT_THAT(out.calls[2].description, HasSubstr("its group differs"));
}

TEST(Executor, OperationsWithNoEventOpenAreSkipped) {
  std::unique_ptr<Backend> a = MakeMockBackend(Profile()), b = MakeMockBackend(Profile());
  OpenCall bad = Open(PERF_COUNT_SW_MAX + 1);  // ENOENT on both
  Sequence seq{1, {bad, CloseCall{3}, MunmapCall{0, true}}};
  const SequenceOutcome out = RunSequence(seq, *a, *b, SoftwareOnlyParams());
  EXPECT_EQ(out.calls[1].status, CallStatus::kNoTarget);
  EXPECT_EQ(out.calls[2].status, CallStatus::kNoTarget);
}

// perf_copy_attr() writes its size back on E2BIG; the executor compares it.
TEST(Executor, ComparesTheSizeWrittenBackOnE2big) {
  NiceMock<GMockBackend> kernel;
  kernel.WithDefaults();
  ON_CALL(kernel, PerfEventOpen(_, _, _, _, _)).WillByDefault([](perf_event_attr* attr, pid_t, int, int, unsigned long) {
    attr->size = 200;
    return Result<int>::Failure(E2BIG, "perf_event_open");
  });
  std::unique_ptr<Backend> mock = MakeMockBackend(Profile());
  OpenCall c = Open(PERF_COUNT_SW_DUMMY);
  c.attr.size = 256;
  c.tail.assign(256 - sizeof(perf_event_attr), 0);
  c.tail.back() = 1;  // non-zero past every kernel's struct
  const SequenceOutcome out = RunSequence(Sequence{1, {c}}, kernel, *mock, SoftwareOnlyParams());
  EXPECT_EQ(out.calls[0].kernel.value, "attr.size=200");
  EXPECT_EQ(out.calls[0].mock.value, fmt::format("attr.size={}", Profile().attr_size));
  EXPECT_FALSE(Agree(out.calls[0]));
}

// A read's compared shape is its size and, with PERF_FORMAT_GROUP, nr; "exact" follows the group.
TEST(Executor, ReadShapeIsSizeAndNr) {
  NiceMock<GMockBackend> kernel;
  kernel.WithDefaults();
  int next_fd = 100;
  ON_CALL(kernel, PerfEventOpen(_, _, _, _, _)).WillByDefault([&](perf_event_attr*, pid_t, int, int, unsigned long) {
    return Result<int>::Ok(next_fd++, "perf_event_open");
  });
  ON_CALL(kernel, Read(_, _, _)).WillByDefault([](int, void* buf, size_t len) {
    const uint64_t words[3] = {5, 0, 0};  // nr=5
    std::memcpy(buf, words, std::min(len, sizeof words));
    return Result<size_t>::Ok(std::min(len, sizeof words), "read");
  });
  std::unique_ptr<Backend> mock = MakeMockBackend(Profile());
  Sequence seq{1,
               {Open(PERF_COUNT_SW_DUMMY, PERF_FORMAT_GROUP),
                Open(PERF_COUNT_SW_DUMMY, PERF_FORMAT_GROUP, {FdArg::kEvent, 0}), ReadCall{0, ReadLen::kExact}}};
  const SequenceOutcome out = RunSequence(seq, kernel, *mock, SoftwareOnlyParams());
  ASSERT_EQ(out.calls.size(), 3u);
  EXPECT_THAT(out.calls[2].description, HasSubstr("[len=24]"));  // nr, then 2 values
  EXPECT_EQ(out.calls[2].mock.value, "24 bytes, nr=2");
  EXPECT_EQ(out.calls[2].kernel.value, "24 bytes, nr=5");
  EXPECT_EQ(DisagreementKind(out.calls[2]), "read [software]: kernel ok (nr=5), mock ok (nr=2)");
}

// Everything opened on the kernel is closed at the end, including events the mock refused.
TEST(Executor, ClosesEveryKernelFdItOpened) {
  NiceMock<GMockBackend> kernel;
  kernel.WithDefaults();
  ON_CALL(kernel, PerfEventOpen(_, _, _, _, _)).WillByDefault(Return(Result<int>::Ok(100, "perf_event_open")));
  EXPECT_CALL(kernel, Close(100)).Times(1);
  std::unique_ptr<Backend> mock = MakeMockBackend(Profile());
  OpenCall c = Open(0);
  c.attr.type = 0x7fff;  // no such PMU: the mock says ENOENT
  (void)RunSequence(Sequence{1, {c}}, kernel, *mock, SoftwareOnlyParams());
}

// "self-tid" is each backend's own task.
TEST(Executor, PidSelfTidIsEachBackendsTask) {
  NiceMock<GMockBackend> kernel;
  kernel.WithDefaults();
  ON_CALL(kernel, CurrentTask()).WillByDefault(Return(TaskId{77, 78}));
  EXPECT_CALL(kernel, PerfEventOpen(_, 78, -1, -1, _)).WillOnce(Return(Result<int>::Failure(ESRCH, "open")));
  std::unique_ptr<Backend> mock = MakeMockBackend(Profile());
  OpenCall c = Open(PERF_COUNT_SW_DUMMY);
  c.pid = PidArg::kSelfTid;
  const SequenceOutcome out = RunSequence(Sequence{1, {c}}, kernel, *mock, SoftwareOnlyParams());
  EXPECT_TRUE(out.calls[0].mock.ok) << out.calls[0].mock.call;  // the mock's own tid
}

TEST(Executor, SigtrapHandlerInstalls) { EXPECT_EQ(InstallSigtrapHandler(), 0); }

}  // namespace
}  // namespace perftest::fidelity
