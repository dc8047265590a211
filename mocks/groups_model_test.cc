// Unit tests of the model's group scheduling rules that Linux 6.18 showed and
// its documentation does not say, beyond the groups suite's cases
// (groups.member_enable_other_pmu, groups.leader_close_*): which enables
// reschedule which PMU, and the install path of an enabled member.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "mocks/internal/mock_test_fixture.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kTimes = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

perf_event_attr Sw(uint64_t config, bool disabled = true) {
  perf_event_attr a = SoftwareAttr(config);
  a.disabled = disabled;
  a.read_format = kTimes;
  return a;
}

class GroupsModel : public MockTest {};

// __perf_event_enable() -> ctx_resched(event->pmu_ctx->pmu).
TEST_F(GroupsModel, MemberOfAnotherPmuWaitsForASchedIn) {
  const int leader = MustOpen(Sw(PERF_COUNT_SW_TASK_CLOCK));
  const int member = MustOpen(Sw(PERF_COUNT_SW_PAGE_FAULTS_MIN), 0, -1, leader);
  Enable(leader);
  Enable(member);
  Run(Workload::TouchPages(5, 10us));
  EXPECT_EQ(Words(member), (std::vector<uint64_t>{0, 50000, 0})) << "enabled, not scheduled";
  // Enabling another page-faults (swevent) event reschedules swevent groups only.
  const int other = MustOpen(Sw(PERF_COUNT_SW_PAGE_FAULTS));
  Enable(other);
  Run(Workload::TouchPages(1, 10us));
  EXPECT_EQ(Words(member)[0], 0u);
  // Enabling a task-clock event reschedules the leader's PMU: the group goes in.
  const int clock = MustOpen(Sw(PERF_COUNT_SW_TASK_CLOCK));
  Enable(clock);
  Run(Workload::TouchPages(3, 10us));
  EXPECT_EQ(Words(member)[0], 3u);
}

TEST_F(GroupsModel, OpeningAnEnabledMemberOfAnotherPmuAlsoWaits) {
  const int leader = MustOpen(Sw(PERF_COUNT_SW_TASK_CLOCK));
  Enable(leader);
  const int member = MustOpen(Sw(PERF_COUNT_SW_PAGE_FAULTS_MIN, /*disabled=*/false), 0, -1, leader);
  Run(Workload::TouchPages(4));
  EXPECT_EQ(Words(member)[0], 0u) << "perf_install_in_context() -> ctx_resched() of the member's PMU";
  Run(Workload::Sleep(1, 100us));
  Run(Workload::TouchPages(4));
  EXPECT_EQ(Words(member)[0], 4u) << "the task's sched-in puts the whole group on";
}

}  // namespace
}  // namespace perftest
