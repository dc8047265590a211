// GMockBackend: a GoogleMock Backend for unit tests of code on the Backend
// seam (the harness's own, fidelity's executor) — fault injection the kernel
// and MockBackend (mocks/) do not produce on demand (EINTR, short
// reads, EAGAIN, ENOMEM, a ring buffer torn mid-record). DESIGN.md "Backend: the seam".
//
//   testing::StrictMock<GMockBackend> backend;
//   EXPECT_CALL(backend, Read(5, _, 24))
//       .WillOnce(GMockBackend::ReturnBytes(bytes))        // copies `bytes`, returns their size
//       .WillOnce(Return(Result<size_t>::Failure(EINTR, "read(fd=5, len=24)")));
//   EXPECT_CALL(backend, Mmap(_, _, _, 5, 0)).WillOnce(Return(Result<void*>::Ok(mem)));
//   ON_CALL(backend, Machine()).WillByDefault(ReturnRef(machine));
//
// Every virtual of harness/backend.h is a MOCK_METHOD; nothing has a default
// action beyond GoogleMock's (a default-constructed return, which for Result<T>
// does not exist — so set an action for every call a test expects, or use
// GMockBackend::WithDefaults(), which makes Machine() a 4 KiB-page x86_64 machine,
// kind() "gmock", Close/Munmap succeed and everything else fail with ENOSYS).
#pragma once

#include <gmock/gmock.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backend.h"
#include "harness/result.h"

namespace perftest {

class GMockBackend : public Backend {
 public:
  MOCK_METHOD(std::string_view, kind, (), (const, override));
  MOCK_METHOD(Result<int>, PerfEventOpen,
              (perf_event_attr * attr, pid_t pid, int cpu, int group_fd, unsigned long flags), (override));
  MOCK_METHOD(Result<size_t>, Read, (int fd, void* buf, size_t len), (override));
  MOCK_METHOD(Result<int>, Ioctl, (int fd, unsigned long request, uintptr_t arg), (override));
  MOCK_METHOD(Result<void*>, Mmap, (size_t length, int prot, int flags, int fd, off_t offset), (override));
  MOCK_METHOD(Result<void>, Munmap, (void* addr, size_t length), (override));
  MOCK_METHOD(Result<void>, Close, (int fd), (override));
  MOCK_METHOD(Result<int>, Prctl, (int option), (override));
  MOCK_METHOD(Result<int>, Poll, (std::span<pollfd> fds, int timeout_ms), (override));
  MOCK_METHOD(Result<int>, Fcntl, (int fd, int cmd, long arg), (override));
  MOCK_METHOD(const MachineInfo&, Machine, (), (override));
  MOCK_METHOD(TaskId, CurrentTask, (), (override));
  MOCK_METHOD(Result<WorkloadResult>, RunWorkload, (const Workload& w), (override));
  MOCK_METHOD(Result<uint64_t>, TracepointId, (std::string_view system, std::string_view name), (override));

  // The machine WithDefaults() reports: x86_64, 1 CPU, 4096-byte pages, no PMUs.
  MachineInfo& machine() { return machine_; }

  // Installs ON_CALL defaults (overridable by later ON_CALL/EXPECT_CALL):
  // kind() = "gmock", Machine() = machine(), CurrentTask() = {1, 1},
  // Close/Munmap succeed, every other call fails with ENOSYS.
  GMockBackend& WithDefaults() {
    using ::testing::_;
    using ::testing::Return;
    using ::testing::ReturnRef;
    machine_.arch = "x86_64";
    machine_.description = "gmock";
    machine_.page_size = 4096;
    ON_CALL(*this, kind()).WillByDefault(Return(std::string_view("gmock")));
    ON_CALL(*this, Machine()).WillByDefault(ReturnRef(machine_));
    ON_CALL(*this, CurrentTask()).WillByDefault(Return(TaskId{1, 1}));
    ON_CALL(*this, Close(_)).WillByDefault([](int fd) {
      return Result<void>::Ok({}, "close(fd=" + std::to_string(fd) + ")");
    });
    ON_CALL(*this, Munmap(_, _)).WillByDefault([](void*, size_t) { return Result<void>::Ok({}, "munmap"); });
    ON_CALL(*this, PerfEventOpen(_, _, _, _, _)).WillByDefault(Return(Result<int>::Failure(ENOSYS, "perf_event_open")));
    ON_CALL(*this, Read(_, _, _)).WillByDefault(Return(Result<size_t>::Failure(ENOSYS, "read")));
    ON_CALL(*this, Ioctl(_, _, _)).WillByDefault(Return(Result<int>::Failure(ENOSYS, "ioctl")));
    ON_CALL(*this, Mmap(_, _, _, _, _)).WillByDefault(Return(Result<void*>::Failure(ENOSYS, "mmap")));
    ON_CALL(*this, Prctl(_)).WillByDefault(Return(Result<int>::Failure(ENOSYS, "prctl")));
    ON_CALL(*this, Poll(_, _)).WillByDefault(Return(Result<int>::Failure(ENOSYS, "poll")));
    ON_CALL(*this, Fcntl(_, _, _)).WillByDefault(Return(Result<int>::Failure(ENOSYS, "fcntl")));
    ON_CALL(*this, RunWorkload(_)).WillByDefault(Return(Result<WorkloadResult>::Failure(ENOSYS, "run_workload")));
    ON_CALL(*this, TracepointId(_, _)).WillByDefault(Return(Result<uint64_t>::Failure(ENOSYS, "tracepoint_id")));
    return *this;
  }

  // An action for Read(fd, buf, len): copies min(len, bytes.size()) bytes of
  // `bytes` into buf and returns that count — a short read when `bytes` is shorter
  // than the caller asked for.
  static auto ReturnBytes(std::vector<std::byte> bytes) {
    return [bytes = std::move(bytes)](int fd, void* buf, size_t len) {
      const size_t n = std::min(len, bytes.size());
      if (n != 0) std::memcpy(buf, bytes.data(), n);
      return Result<size_t>::Ok(n, "read(fd=" + std::to_string(fd) + ", len=" + std::to_string(len) + ")");
    };
  }

 private:
  MachineInfo machine_;
};

}  // namespace perftest
