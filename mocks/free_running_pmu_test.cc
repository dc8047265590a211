// The msr and power (RAPL) PMUs of the sw-only profile (mocks/free_running_pmu.h):
// the errno of each rule, as the kernel here answers (perftest fidelity).
#include "mocks/free_running_pmu.h"

#include <gtest/gtest.h>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

class FreeRunningPmu : public MockTest {
 protected:
  const Pmu& Find(const std::string& name) {
    for (const Pmu& p : profile_.pmus) {
      if (p.name == name) return p;
    }
    ADD_FAILURE() << "sw-only lists no " << name;
    static const Pmu none;
    return none;
  }
  perf_event_attr Attr(const std::string& pmu, uint64_t config) {
    perf_event_attr a = MakeAttr(Find(pmu).type, config);
    a.disabled = 1;
    return a;
  }
};

TEST_F(FreeRunningPmu, ListedConfigs) {
  EXPECT_EQ(mock::ListedEventConfigs(Find("msr")), (std::set<uint64_t>{0, 4})) << "tsc, smi";
  EXPECT_EQ(mock::ListedEventConfigs(Find("power")), (std::set<uint64_t>{5})) << "energy-psys (.scale/.unit skipped)";
}

TEST_F(FreeRunningPmu, MsrRules) {
  EXPECT_OK(Open(Attr("msr", 0)));                  // tsc, for this task
  EXPECT_OK(Open(Attr("msr", 4), -1, 0));           // smi, CPU-wide
  EXPECT_EQ(Open(Attr("msr", 1)).error(), EINVAL);  // APERF: not on this machine
  EXPECT_EQ(Open(Attr("msr", 9)).error(), EINVAL);  // past PERF_MSR_EVENT_MAX
  perf_event_attr s = Attr("msr", 0);
  s.sample_period = 100;
  EXPECT_EQ(Open(s).error(), EINVAL) << "no sampling";
  perf_event_attr x = Attr("msr", 0);
  x.exclude_kernel = 1;
  EXPECT_EQ(Open(x).error(), EINVAL) << "PERF_PMU_CAP_NO_EXCLUDE";
  // perf_try_init_event(): the PERF_PMU_CAP_EXTENDED_REGS check comes before
  // the PERF_PMU_CAP_NO_EXCLUDE one (the VM, perftest fidelity --seed=2).
  x.exclude_kernel = 0;
  x.exclude_idle = 1;
  x.sample_regs_user = uint64_t{1} << 63;
  EXPECT_EQ(Open(x).error(), EOPNOTSUPP) << "an XMM register before exclude_idle";
}

TEST_F(FreeRunningPmu, RaplRules) {
  EXPECT_OK(Open(Attr("power", 5), -1, 0));             // energy-psys on CPU 0
  EXPECT_EQ(Open(Attr("power", 5)).error(), EINVAL);    // per task (cpu -1)
  EXPECT_EQ(Open(Attr("power", 5), 0, 0).error(), EINVAL) << "no task events on an uncore PMU";
  EXPECT_EQ(Open(Attr("power", 2), -1, 0).error(), EINVAL) << "pkg: not on this machine";
  EXPECT_EQ(Open(Attr("power", 0x105), -1, 0).error(), EINVAL) << "bits outside RAPL_EVENT_MASK";
  perf_event_attr s = Attr("power", 5);
  s.sample_period = 1;
  EXPECT_EQ(Open(s, -1, 0).error(), EINVAL);
}

}  // namespace
}  // namespace perftest
