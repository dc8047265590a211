// MockTest: the GoogleTest fixture the model's unit tests share — a
// MockBackend for a profile (with the models Models() gives), its mock-only
// controls (control(), mocks/mock_control.h), and short forms of the calls
// they make. Internal to mocks/ (tests only).
//
//   class MyRule : public MockTest {};
//   TEST_F(MyRule, Something) {
//     const int fd = MustOpen(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS));
//     Enable(fd); Run(Workload::TouchPages(3)); EXPECT_EQ(Count(fd), 3u);
//   }
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "mocks/mock_backend.h"
#include "mocks/mock_control.h"
#include "mocks/profile.h"

namespace perftest {

class MockTest : public ::testing::Test {
 protected:
  // The profile every test starts with; Remake() switches.
  virtual std::string ProfileName() const { return "sw-only"; }
  // The models beside the core (mocks/mock_backend.h); the core's own by default.
  virtual MockModels Models() const { return {}; }

  void SetUp() override {
    Result<MockProfile> p = LoadProfile(ProfileName());
    ASSERT_OK(p);
    Remake(*p);
  }
  void Remake(const MockProfile& p) {
    profile_ = p;
    MockWithControl m = MakeMockBackendWithControl(p, Models());
    backend_ = std::move(m.backend);
    control_ = m.control;
  }
  Backend& b() { return *backend_; }
  MockControl& control() { return *control_; }

  Result<int> Open(perf_event_attr a, pid_t pid = 0, int cpu = -1, int group_fd = -1,
                   unsigned long flags = PERF_FLAG_FD_CLOEXEC) {
    return b().PerfEventOpen(&a, pid, cpu, group_fd, flags);
  }
  int MustOpen(perf_event_attr a, pid_t pid = 0, int cpu = -1, int group_fd = -1) {
    Result<int> fd = Open(a, pid, cpu, group_fd);
    EXPECT_OK(fd);
    return fd.ok() ? *fd : -1;
  }
  void Enable(int fd, uintptr_t arg = 0) { EXPECT_OK(b().Ioctl(fd, PERF_EVENT_IOC_ENABLE, arg)); }
  void Disable(int fd, uintptr_t arg = 0) { EXPECT_OK(b().Ioctl(fd, PERF_EVENT_IOC_DISABLE, arg)); }
  void Run(const Workload& w) { EXPECT_OK(b().RunWorkload(w)); }
  // The first u64 of read(2) (the value for a non-group read_format).
  uint64_t Count(int fd) {
    uint64_t v[64] = {};
    EXPECT_OK(b().Read(fd, v, sizeof v));
    return v[0];
  }
  // read(2) as u64 words.
  std::vector<uint64_t> Words(int fd) {
    uint64_t v[512] = {};
    Result<size_t> n = b().Read(fd, v, sizeof v);
    EXPECT_OK(n);
    return n.ok() ? std::vector<uint64_t>(v, v + *n / 8) : std::vector<uint64_t>{};
  }
  uint64_t Id(int fd) {
    uint64_t id = 0;
    EXPECT_OK(b().Ioctl(fd, PERF_EVENT_IOC_ID, reinterpret_cast<uintptr_t>(&id)));
    return id;
  }
  std::optional<RingBuffer> Map(int fd, size_t data_pages) {
    Result<RingBuffer> rb = RingBuffer::Map(b(), fd, data_pages);
    EXPECT_OK(rb);
    if (!rb.ok()) return std::nullopt;
    return std::move(*rb);
  }
  // Every record in [tail, head), parsed with `attr`'s layout.
  std::vector<Record> Records(RingBuffer& rb, const perf_event_attr& attr, bool consume = true) {
    std::vector<Record> out;
    rb.Begin();
    while (std::optional<RawRecord> raw = rb.Next()) {
      Result<Record> r = ParseRecord(SampleLayout::FromAttr(attr), raw->bytes);
      EXPECT_OK(r);
      if (r.ok()) out.push_back(std::move(*r));
    }
    if (consume) rb.Consume();
    return out;
  }
  static size_t CountType(const std::vector<Record>& recs, uint32_t type) {
    size_t n = 0;
    for (const Record& r : recs) n += r.header.type == type;
    return n;
  }

  MockProfile profile_;
  std::unique_ptr<Backend> backend_;
  MockControl* control_ = nullptr;  // backend_'s
};

}  // namespace perftest
