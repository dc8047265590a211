// Unit tests of harness/event.h (Event, Group) over a GMockBackend: the calls
// each method makes (perf_event_open(2), ioctl(2) PERF_EVENT_IOC_*, read(2),
// close(2)), read_format decoding, fault injection (short read, EINTR, EAGAIN),
// and move-only ownership (each fd closed exactly once; a group's members
// before its leader).
#include "harness/event.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "harness/attr.h"
#include "harness/syscall_matchers.h"
#include "harness/testing/gmock_backend.h"

namespace perftest {
namespace {

using ::testing::_;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::InSequence;
using ::testing::NiceMock;
using ::testing::Pointee;
using ::testing::Return;
using ::testing::StrictMock;

std::vector<std::byte> Words(const std::vector<uint64_t>& words) {
  std::vector<std::byte> out(words.size() * 8);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

Result<int> Fd(int fd) { return Result<int>::Ok(fd, "perf_event_open"); }
Result<int> IoctlOk() { return Result<int>::Ok(0, "ioctl"); }

class EventTest : public ::testing::Test {
 protected:
  EventTest() { backend_.WithDefaults(); }

  // Opens an event on fd `fd`, expecting exactly one close of it.
  Event OpenOk(int fd, perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK)) {
    EXPECT_CALL(backend_, PerfEventOpen(_, 0, -1, -1, PERF_FLAG_FD_CLOEXEC)).WillOnce(Return(Fd(fd)));
    EXPECT_CALL(backend_, Close(fd)).Times(1);
    Result<Event> ev = Event::Open(backend_, attr);
    EXPECT_TRUE(ev.ok()) << ev.ToString();
    return std::move(ev).value();
  }

  NiceMock<GMockBackend> backend_;
};

TEST_F(EventTest, OpenPassesAttrAndDefaults) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  attr.sample_period = 3;
  EXPECT_CALL(backend_,
              PerfEventOpen(Pointee(AllOf(Field(&perf_event_attr::type, uint32_t{PERF_TYPE_SOFTWARE}),
                                          Field(&perf_event_attr::config, uint64_t{PERF_COUNT_SW_PAGE_FAULTS}),
                                          Field(&perf_event_attr::sample_period, uint64_t{3}))),
                            0, -1, -1, PERF_FLAG_FD_CLOEXEC))
      .WillOnce(Return(Fd(5)));
  EXPECT_CALL(backend_, Close(5)).Times(1);
  Result<Event> ev = Event::Open(backend_, attr);
  ASSERT_OK(ev);
  EXPECT_EQ(ev->fd(), 5);
  EXPECT_EQ(ev->attr().sample_period, 3u);
  EXPECT_EQ(&ev->backend(), &backend_);
}

TEST_F(EventTest, OpenPassesPidCpuFlags) {
  EXPECT_CALL(backend_, PerfEventOpen(_, 1234, 2, -1, 0ul)).WillOnce(Return(Fd(8)));
  EXPECT_CALL(backend_, Close(8)).Times(1);
  Result<Event> ev = Event::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), 1234, 2, nullptr, 0);
  ASSERT_OK(ev);
}

TEST_F(EventTest, OpenFailurePropagatesErrnoAndCall) {
  EXPECT_CALL(backend_, PerfEventOpen(_, _, _, _, _))
      .WillOnce(Return(Result<int>::Failure(EACCES, "perf_event_open(type=1, config=0x0)")));
  EXPECT_CALL(backend_, Close(_)).Times(0);
  Result<Event> ev = Event::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_THAT(ev, FailsWithErrno(EACCES));
  EXPECT_EQ(ev.call(), "perf_event_open(type=1, config=0x0)");
}

TEST_F(EventTest, ReadDecodesPerReadFormat) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
  Event ev = OpenOk(5, attr);
  EXPECT_CALL(backend_, Read(5, _, 32)).WillOnce(GMockBackend::ReturnBytes(Words({1000, 500, 400, 42})));
  Result<ReadValues> v = ev.Read();
  ASSERT_OK(v);
  EXPECT_EQ(v->time_enabled, 500u);
  EXPECT_EQ(v->time_running, 400u);
  ASSERT_EQ(v->counters.size(), 1u);
  EXPECT_EQ(v->counters[0].value, 1000u);
  EXPECT_EQ(v->counters[0].id, 42u);
}

TEST_F(EventTest, ReadGroupSizesTheBufferForNrCounters) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
  Event ev = OpenOk(5, attr);
  EXPECT_CALL(backend_, Read(5, _, 8 + 3 * 16))
      .WillOnce(GMockBackend::ReturnBytes(Words({3, 10, 100, 20, 101, 30, 102})));
  Result<ReadValues> v = ev.Read(3);
  ASSERT_OK(v);
  ASSERT_EQ(v->counters.size(), 3u);
  EXPECT_EQ(v->counters[2], (CounterValue{30, 102, std::nullopt}));
}

TEST_F(EventTest, ReadValue) {
  Event ev = OpenOk(5);
  EXPECT_CALL(backend_, Read(5, _, 8)).WillOnce(GMockBackend::ReturnBytes(Words({777})));
  EXPECT_THAT(ev.ReadValue(), SucceedsWith(777u));
}

TEST_F(EventTest, ShortReadIsEmsgsize) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID;
  Event ev = OpenOk(5, attr);
  // 16 of the 24 bytes asked for.
  EXPECT_CALL(backend_, Read(5, _, 24)).WillOnce(GMockBackend::ReturnBytes(Words({1, 2})));
  Result<ReadValues> v = ev.Read();
  EXPECT_THAT(v, FailsWithErrno(EMSGSIZE));
  EXPECT_THAT(v.call(), HasSubstr("read(fd=5, len=24) = 16"));
}

TEST_F(EventTest, GroupReadWithFewerMembersThanNrIsEmsgsize) {
  perf_event_attr attr = SoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  attr.read_format = PERF_FORMAT_GROUP;
  Event ev = OpenOk(5, attr);
  // nr says 3 but only two values arrived.
  EXPECT_CALL(backend_, Read(5, _, 32)).WillOnce(GMockBackend::ReturnBytes(Words({3, 1, 2})));
  EXPECT_THAT(ev.Read(3), FailsWithErrno(EMSGSIZE));
}

TEST_F(EventTest, ZeroByteReadIsEmsgsize) {
  Event ev = OpenOk(5);
  EXPECT_CALL(backend_, Read(5, _, 8)).WillOnce(GMockBackend::ReturnBytes({}));
  EXPECT_THAT(ev.ReadValue(), FailsWithErrno(EMSGSIZE));
}

TEST_F(EventTest, ReadErrnoPassesThroughUnchanged) {
  Event ev = OpenOk(5);
  for (int err : {EINTR, EAGAIN, ENOSPC, EBADF}) {
    EXPECT_CALL(backend_, Read(5, _, 8)).WillOnce(Return(Result<size_t>::Failure(err, "read(fd=5, len=8)")));
    Result<ReadValues> v = ev.Read();
    EXPECT_THAT(v, FailsWithErrno(err));
    EXPECT_EQ(v.call(), "read(fd=5, len=8)");
  }
}

TEST_F(EventTest, EnableDisableResetIoctls) {
  Event ev = OpenOk(5);
  {
    InSequence s;
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_ENABLE, 0u)).WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_DISABLE, 0u)).WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_RESET, 0u)).WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_ENABLE, uintptr_t{PERF_IOC_FLAG_GROUP})).WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_DISABLE, uintptr_t{PERF_IOC_FLAG_GROUP})).WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_RESET, uintptr_t{PERF_IOC_FLAG_GROUP})).WillOnce(Return(IoctlOk()));
  }
  EXPECT_OK(ev.Enable());
  EXPECT_OK(ev.Disable());
  EXPECT_OK(ev.Reset());
  EXPECT_OK(ev.Enable(true));
  EXPECT_OK(ev.Disable(true));
  EXPECT_OK(ev.Reset(true));
}

TEST_F(EventTest, IoctlFailurePropagates) {
  Event ev = OpenOk(5);
  EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_ENABLE, _))
      .WillOnce(Return(Result<int>::Failure(EINVAL, "ioctl(fd=5, PERF_EVENT_IOC_ENABLE, 0x0)")));
  Result<void> r = ev.Enable();
  EXPECT_THAT(r, FailsWithErrno(EINVAL));
  EXPECT_EQ(r.call(), "ioctl(fd=5, PERF_EVENT_IOC_ENABLE, 0x0)");
}

TEST_F(EventTest, IdWritesThroughThePointer) {
  Event ev = OpenOk(5);
  EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_ID, _)).WillOnce([](int, unsigned long, uintptr_t arg) {
    *reinterpret_cast<uint64_t*>(arg) = 0xabcdef;
    return IoctlOk();
  });
  EXPECT_THAT(ev.Id(), SucceedsWith(0xabcdefu));
  EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_ID, _)).WillOnce(Return(Result<int>::Failure(ENOTTY, "ioctl")));
  EXPECT_THAT(ev.Id(), FailsWithErrno(ENOTTY));
}

TEST_F(EventTest, SetOutputAndPause) {
  Event a = OpenOk(5);
  Event b = OpenOk(6);
  {
    InSequence s;
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_SET_OUTPUT, uintptr_t{6})).WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(5, PERF_EVENT_IOC_SET_OUTPUT, static_cast<uintptr_t>(-1)))
        .WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(6, PERF_EVENT_IOC_PAUSE_OUTPUT, uintptr_t{1})).WillOnce(Return(IoctlOk()));
    EXPECT_CALL(backend_, Ioctl(6, PERF_EVENT_IOC_PAUSE_OUTPUT, uintptr_t{0})).WillOnce(Return(IoctlOk()));
  }
  EXPECT_OK(a.SetOutput(&b));
  EXPECT_OK(a.SetOutput(nullptr));
  EXPECT_OK(b.PauseOutput(true));
  EXPECT_OK(b.PauseOutput(false));
}

TEST_F(EventTest, CloseIsIdempotent) {
  Event ev = OpenOk(5);  // exactly one close(5)
  EXPECT_OK(ev.Close());
  EXPECT_EQ(ev.fd(), -1);
  EXPECT_OK(ev.Close());
  EXPECT_OK(ev.Close());
}

TEST_F(EventTest, CloseFailureIsReportedOnce) {
  EXPECT_CALL(backend_, PerfEventOpen(_, _, _, _, _)).WillOnce(Return(Fd(5)));
  EXPECT_CALL(backend_, Close(5)).WillOnce(Return(Result<void>::Failure(EIO, "close(fd=5)")));
  Result<Event> ev = Event::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK));
  ASSERT_OK(ev);
  EXPECT_THAT(ev->Close(), FailsWithErrno(EIO));
  EXPECT_OK(ev->Close());  // the fd is gone either way (close(2) never retries)
}

TEST_F(EventTest, DestructorCloses) {
  ::testing::MockFunction<void(const char*)> check;
  {
    InSequence s;
    EXPECT_CALL(backend_, PerfEventOpen(_, _, _, _, _)).WillOnce(Return(Fd(5)));
    EXPECT_CALL(check, Call("in scope"));
    EXPECT_CALL(backend_, Close(5)).Times(1);
    EXPECT_CALL(check, Call("out of scope"));
  }
  {
    Result<Event> ev = Event::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK));
    ASSERT_OK(ev);
    check.Call("in scope");
  }
  check.Call("out of scope");
}

TEST_F(EventTest, MoveConstructionClosesOnce) {
  Event a = OpenOk(5);
  Event b(std::move(a));
  EXPECT_EQ(a.fd(), -1);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.fd(), 5);
  EXPECT_OK(a.Close());   // NOLINT(bugprone-use-after-move): nothing to close
}

TEST_F(EventTest, MoveAssignmentClosesTheTargetFirst) {
  ::testing::MockFunction<void(const char*)> check;
  {
    InSequence s;
    EXPECT_CALL(backend_, PerfEventOpen(_, _, _, _, _)).WillOnce(Return(Fd(5))).WillOnce(Return(Fd(6)));
    EXPECT_CALL(check, Call("before"));
    EXPECT_CALL(backend_, Close(5)).Times(1);
    EXPECT_CALL(check, Call("after"));
    EXPECT_CALL(backend_, Close(6)).Times(1);
  }
  Result<Event> ra = Event::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK));
  Result<Event> rb = Event::Open(backend_, SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS));
  ASSERT_OK(ra);
  ASSERT_OK(rb);
  Event a = std::move(ra).value();
  Event b = std::move(rb).value();
  check.Call("before");
  a = std::move(b);
  check.Call("after");
  EXPECT_EQ(a.fd(), 6);
  EXPECT_EQ(a.attr().config, uint64_t{PERF_COUNT_SW_PAGE_FAULTS});
  EXPECT_EQ(b.fd(), -1);  // NOLINT(bugprone-use-after-move)
}

// --- Group ---

class GroupTest : public EventTest {
 protected:
  GroupTest() {
    ON_CALL(backend_, Close(_)).WillByDefault([this](int fd) {
      closed_.push_back(fd);
      return Result<void>::Ok({}, "close");
    });
  }
  std::vector<int> closed_;
};

TEST_F(GroupTest, MembersOpenWithTheLeaderAsGroupFd) {
  {
    InSequence s;
    EXPECT_CALL(backend_, PerfEventOpen(Pointee(Field(&perf_event_attr::config, uint64_t{PERF_COUNT_SW_CPU_CLOCK})),
                                        0, -1, -1, PERF_FLAG_FD_CLOEXEC))
        .WillOnce(Return(Fd(10)));
    EXPECT_CALL(backend_, PerfEventOpen(Pointee(Field(&perf_event_attr::config, uint64_t{PERF_COUNT_SW_PAGE_FAULTS})),
                                        0, -1, 10, PERF_FLAG_FD_CLOEXEC))
        .WillOnce(Return(Fd(11)));
    EXPECT_CALL(backend_, PerfEventOpen(Pointee(Field(&perf_event_attr::config, uint64_t{PERF_COUNT_SW_CONTEXT_SWITCHES})),
                                        0, -1, 10, PERF_FLAG_FD_CLOEXEC))
        .WillOnce(Return(Fd(12)));
  }
  {
    Result<Group> g = Group::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK),
                                  {SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS), SoftwareAttr(PERF_COUNT_SW_CONTEXT_SWITCHES)});
    ASSERT_OK(g);
    EXPECT_EQ(g->size(), 3u);
    EXPECT_EQ(g->leader().fd(), 10);
    EXPECT_EQ(g->member(0).fd(), 11);
    EXPECT_EQ(g->member(1).fd(), 12);
    EXPECT_TRUE(closed_.empty());
  }
  // Members first, the leader last; each exactly once.
  ASSERT_EQ(closed_.size(), 3u);
  EXPECT_EQ(closed_.back(), 10);
  EXPECT_THAT(closed_, ::testing::UnorderedElementsAre(10, 11, 12));
}

TEST_F(GroupTest, PidAndCpuApplyToEveryEvent) {
  EXPECT_CALL(backend_, PerfEventOpen(_, 77, 3, -1, _)).WillOnce(Return(Fd(20)));
  EXPECT_CALL(backend_, PerfEventOpen(_, 77, 3, 20, _)).WillOnce(Return(Fd(21)));
  {
    Result<Group> g = Group::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK),
                                  {SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS)}, 77, 3);
    ASSERT_OK(g);
  }
  EXPECT_THAT(closed_, ElementsAre(21, 20));
}

TEST_F(GroupTest, MemberFailureClosesWhatWasOpened) {
  EXPECT_CALL(backend_, PerfEventOpen(_, _, _, -1, _)).WillOnce(Return(Fd(10)));
  EXPECT_CALL(backend_, PerfEventOpen(_, _, _, 10, _))
      .WillOnce(Return(Fd(11)))
      .WillOnce(Return(Result<int>::Failure(EINVAL, "perf_event_open(member 2)")));
  Result<Group> g = Group::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK),
                                {SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS), SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS),
                                 SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS)});
  EXPECT_THAT(g, FailsWithErrno(EINVAL));
  EXPECT_EQ(g.call(), "perf_event_open(member 2)");
  EXPECT_THAT(closed_, ElementsAre(11, 10));
}

TEST_F(GroupTest, LeaderFailureOpensNothingElse) {
  EXPECT_CALL(backend_, PerfEventOpen(_, _, _, _, _))
      .WillOnce(Return(Result<int>::Failure(ENOENT, "perf_event_open(leader)")));
  Result<Group> g =
      Group::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), {SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS)});
  EXPECT_THAT(g, FailsWithErrno(ENOENT));
  EXPECT_TRUE(closed_.empty());
}

TEST_F(GroupTest, MoveAssignmentClosesTheTargetMembersFirst) {
  EXPECT_CALL(backend_, PerfEventOpen(_, _, _, _, _))
      .WillOnce(Return(Fd(10)))
      .WillOnce(Return(Fd(11)))
      .WillOnce(Return(Fd(20)))
      .WillOnce(Return(Fd(21)));
  {
    Result<Group> ra = Group::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), {SoftwareAttr(0)});
    Result<Group> rb = Group::Open(backend_, SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK), {SoftwareAttr(0)});
    ASSERT_OK(ra);
    ASSERT_OK(rb);
    Group a = std::move(ra).value();
    Group b = std::move(rb).value();
    a = std::move(b);
    EXPECT_THAT(closed_, ElementsAre(11, 10));
    EXPECT_EQ(a.leader().fd(), 20);
    Group c = std::move(a);  // move construction: nothing closed
    EXPECT_THAT(closed_, ElementsAre(11, 10));
  }
  EXPECT_THAT(closed_, ElementsAre(11, 10, 21, 20));
}

}  // namespace
}  // namespace perftest
