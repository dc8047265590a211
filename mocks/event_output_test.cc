// EncodeReadOne(), read(2)'s allocation-free fast path, against the general
// encoder: the same bytes for every non-group read_format.
#include "mocks/event_output.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "harness/read_format.h"
#include "mocks/internal/mock_event.h"

namespace perftest::mock {
namespace {

TEST(EventOutput, ReadOneMatchesTheGeneralEncoder) {
  MockEvent parent;
  parent.id = 3;
  MockEvent ev;
  ev.id = 7;
  ev.parent = &parent;  // primary_id() is the parent's
  ev.count = 1000;
  ev.child_count = 24;
  ev.time_enabled = 5000;
  ev.time_running = 4000;
  ev.lost_samples = 2;
  const uint64_t bits[] = {PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING, PERF_FORMAT_ID,
                           PERF_FORMAT_LOST};
  for (uint64_t mask = 0; mask < 16; ++mask) {
    ev.attr.read_format = 0;
    for (int i = 0; i < 4; ++i) {
      if (mask & (1u << i)) ev.attr.read_format |= bits[i];
    }
    std::vector<std::byte> want;
    EncodeReadFormat(ev.attr.read_format, ReadEventValues(ev), &want);
    std::vector<std::byte> got(ReadSize(ev));
    ASSERT_EQ(EncodeReadOne(ev, got.data()), want.size()) << "read_format " << ev.attr.read_format;
    EXPECT_EQ(got, want) << "read_format " << ev.attr.read_format;
  }
}

}  // namespace
}  // namespace perftest::mock
