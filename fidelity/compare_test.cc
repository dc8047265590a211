#include "fidelity/compare.h"

#include <gtest/gtest.h>

namespace perftest::fidelity {
namespace {

Outcome Ok(std::string value = "") { return {true, true, 0, std::move(value), "call"}; }
Outcome Err(int err, std::string value = "") { return {true, false, err, std::move(value), "call"}; }

CallRecord Record(std::string op, Outcome k, Outcome m, CallStatus status = CallStatus::kCompared) {
  CallRecord r;
  r.op = std::move(op);
  r.pmu = "software";
  r.kernel = std::move(k);
  r.mock = std::move(m);
  r.status = status;
  return r;
}

TEST(Compare, SameSuccessAgrees) {
  EXPECT_TRUE(Agree(Ok(), Ok()));
  EXPECT_TRUE(Agree(Ok("24 bytes"), Ok("24 bytes")));
}

TEST(Compare, SameErrnoAgrees) { EXPECT_TRUE(Agree(Err(EINVAL), Err(EINVAL))); }

TEST(Compare, SuccessAgainstFailureDisagrees) {
  EXPECT_FALSE(Agree(Ok(), Err(EINVAL)));
  EXPECT_FALSE(Agree(Err(ENOENT), Ok()));
}

TEST(Compare, DifferentErrnoDisagrees) { EXPECT_FALSE(Agree(Err(EINVAL), Err(ENOENT))); }

TEST(Compare, DifferentComparedValueDisagrees) {
  EXPECT_FALSE(Agree(Ok("24 bytes, nr=2"), Ok("16 bytes, nr=1")));
  // The size perf_copy_attr() writes back on E2BIG is compared.
  EXPECT_FALSE(Agree(Err(E2BIG, "attr.size=136"), Err(E2BIG, "attr.size=128")));
  EXPECT_TRUE(Agree(Err(E2BIG, "attr.size=136"), Err(E2BIG, "attr.size=136")));
}

TEST(Compare, NotRunNeverAgrees) {
  Outcome not_run;
  EXPECT_FALSE(Agree(not_run, Ok()));
  EXPECT_FALSE(Agree(Ok(), not_run));
}

TEST(Compare, CallsNotComparedCountAsAgreeing) {
  Outcome not_run;
  EXPECT_TRUE(Agree(Record("read", not_run, Ok(), CallStatus::kDependent)));
  EXPECT_TRUE(Agree(Record("read", not_run, not_run, CallStatus::kNoTarget)));
  EXPECT_FALSE(Agree(Record("read", Ok("8 bytes"), Ok("16 bytes"))));
}

TEST(Compare, OutcomeTextNamesTheErrno) {
  EXPECT_EQ(OutcomeText(Ok()), "ok");
  EXPECT_EQ(OutcomeText(Ok("24 bytes")), "ok (24 bytes)");
  EXPECT_EQ(OutcomeText(Err(EINVAL)), "EINVAL");
  EXPECT_EQ(OutcomeText(Err(E2BIG, "attr.size=136")), "E2BIG (attr.size=136)");
  EXPECT_EQ(OutcomeText(Outcome{}), "not run");
}

TEST(Compare, KindNamesOpPmuAndBothOutcomes) {
  EXPECT_EQ(DisagreementKind(Record("perf_event_open", Err(EINVAL), Err(ENOENT))),
            "perf_event_open [software]: kernel EINVAL, mock ENOENT");
  EXPECT_EQ(DisagreementKind(Record("ioctl(PERF_EVENT_IOC_PERIOD)", Err(EINVAL), Ok("0"))),
            "ioctl(PERF_EVENT_IOC_PERIOD) [software]: kernel EINVAL, mock ok (0)");
}

// Same result with different details: the class names only the details that differ.
TEST(Compare, KindOfValueMismatchShowsOnlyTheDifferingItems) {
  const CallRecord r = Record("mmap", Ok("version=0, compat_version=0, capabilities=0x2, data_size=4096"),
                              Ok("version=0, compat_version=0, capabilities=0x6, data_size=4096"));
  EXPECT_EQ(DisagreementKind(r), "mmap [software]: kernel ok (capabilities=0x2), mock ok (capabilities=0x6)");
}

}  // namespace
}  // namespace perftest::fidelity
