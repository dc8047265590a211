// Conformance suite: attr.inherit — counters that follow the task into the
// children and threads it creates after the event is opened.
//
// Page-fault counters and samplers run for real on a kernel without a hardware
// PMU, and on the mock (simulated child tasks). References: perf_event_open(2)
// inherit, inherit_stat, inherit_thread, "Reading results"; kernel/events/core.c
// perf_event_init_task() / inherit_task_group() / inherit_event() (at fork:
// copies of the events open then, in the state of their parent),
// perf_event_exit_task() -> perf_event_exit_event() -> sync_child_event()
// (at exit: the child's count added to parent->child_count, PERF_RECORD_READ
// with inherit_stat), __perf_event_read_value() (a read adds the live
// children's counts), perf_event_for_each_child() (ioctls reach the copies).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <vector>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "harness/task.h"
#include "suites/common/attrs.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

// Pages each child touches.
constexpr uint64_t kPages = 64;
// Page faults a task may add on the kernel around its work: the copy-on-write
// faults of a forked child and of its parent after fork(2) (measured here:
// up to ~100 per child), the harness's own stack and heap.
constexpr uint64_t kTaskSlack = 128;

// An inherited page-fault counter of this task, counting from the open.
perf_event_attr Inherited(bool inherit = true) {
  perf_event_attr a = SoftwareCounterAttr(PERF_COUNT_SW_PAGE_FAULTS, {.disabled = false});
  a.inherit = inherit;
  return a;
}

class Inherit : public SuiteTest {
 protected:
  // A fresh child task (ChildTask::Spawn), or a fatal failure.
  void Spawn(std::optional<ChildTask>* out) {
    Result<ChildTask> t = ChildTask::Spawn(backend());
    ASSERT_TRUE(t.ok()) << t.ToString();
    out->emplace(std::move(*t));
  }
  // Children's page faults in a counter that also saw this task's own: at least
  // `pages`, at most kTaskSlack more per task involved (exact on the mock).
  void ExpectChildFaults(uint64_t count, uint64_t pages, uint64_t tasks, const std::string& what) {
    if (exact()) {
      EXPECT_EQ(count, pages) << what;
    } else {
      EXPECT_GE(count, pages) << what;
      EXPECT_LE(count, pages + tasks * kTaskSlack) << what;
    }
  }
  // One inherited event per CPU (mmap of a per-task inherited event needs a
  // CPU: perf_mmap()), each with a buffer.
  void OpenPerCpu(const perf_event_attr& a, std::vector<Event>* events, std::vector<RingBuffer>* rbs) {
    for (int cpu = 0; cpu < backend().Machine().ncpus; ++cpu) {
      ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a, 0, cpu));
      ASSERT_OK_AND_ASSIGN(RingBuffer rb, RingBuffer::Map(backend(), ev.fd(), 16));
      events->push_back(std::move(ev));
      rbs->push_back(std::move(rb));
    }
  }
  std::vector<ParsedRecord> DrainAll(std::vector<RingBuffer>& rbs, const perf_event_attr& a) {
    std::vector<ParsedRecord> all;
    for (RingBuffer& rb : rbs) {
      Result<std::vector<ParsedRecord>> recs = DrainRecords(rb, SampleLayout::FromAttr(a), true);
      EXPECT_TRUE(recs.ok()) << recs.ToString();
      if (recs.ok()) all.insert(all.end(), recs->begin(), recs->end());
    }
    return all;
  }
};

PERFTEST_CASE(Inherit, ChildrenCounted, "inherit.children_counted",
              "perf_event_open(2) inherit; kernel/events/core.c inherit_task_group(), sync_child_event()") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Inherited()));
  ASSERT_OK(backend().RunWorkload(Workload::ForkTouch(2, kPages)));
  ExpectChildFaults(Value(ev), 2 * kPages, 3, "two children's pages");
}

PERFTEST_CASE(Inherit, NotInheritedWithoutFlag, "inherit.not_inherited_without_flag",
              "perf-design.txt 'inherit' ('count events on descendant tasks as well'); "
              "kernel/events/core.c inherit_task_group(): only attr.inherit events are copied") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Inherited(false)));
  ASSERT_OK(backend().RunWorkload(Workload::ForkTouch(2, kPages)));
  EXPECT_LT(Value(ev), kPages) << "the children's pages are not this task's";
}

PERFTEST_CASE(Inherit, OnlyNewDescendants, "inherit.only_new_descendants",
              "perf-design.txt 'inherit' ('only applies to new descendents'); kernel/events/core.c "
              "perf_event_init_task() runs at fork, with the events open then") {
  std::optional<ChildTask> old_child;
  Spawn(&old_child);
  if (HasFatalFailure()) return;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Inherited()));
  ASSERT_OK(old_child->Run(Workload::TouchPages(kPages)));
  ASSERT_OK(old_child->Exit());
  EXPECT_LT(Value(ev), kPages) << "a child forked before the open is not followed";
}

PERFTEST_CASE(Inherit, ReadIncludesLiveChildren, "inherit.read_includes_live_children",
              "kernel/events/core.c __perf_event_read_value(): the count plus every child on "
              "event->child_list, read now") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Inherited()));
  std::optional<ChildTask> child;
  Spawn(&child);
  if (HasFatalFailure()) return;
  ASSERT_OK(child->Run(Workload::TouchPages(kPages)));
  ExpectChildFaults(Value(ev), kPages, 2, "the live child's pages, before it exits");
}

PERFTEST_CASE(Inherit, FoldedOnceAtExit, "inherit.folded_once_at_exit",
              "kernel/events/core.c perf_event_exit_task() -> sync_child_event(): child_count += the "
              "child's count, and the child leaves child_list (counted once)") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Inherited()));
  std::optional<ChildTask> child;
  Spawn(&child);
  if (HasFatalFailure()) return;
  ASSERT_OK(child->Run(Workload::TouchPages(kPages)));
  const uint64_t live = Value(ev);
  ASSERT_OK(child->Exit());
  const uint64_t exited = Value(ev);
  EXPECT_GE(exited, live);
  if (exact()) EXPECT_EQ(exited, live);
  else EXPECT_LE(exited, live + kTaskSlack) << "not counted twice";
}

PERFTEST_CASE(Inherit, ThreadsCounted, "inherit.threads_counted",
              "perf_event_open(2) inherit; kernel/events/core.c perf_event_init_task() for every clone, "
              "CLONE_THREAD included") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Inherited()));
  ASSERT_OK(backend().RunWorkload(Workload::Threads(2, kPages)));
  ExpectChildFaults(Value(ev), 2 * kPages, 3, "two threads' pages");
}

PERFTEST_CASE(Inherit, ThreadsNotCountedWithoutInherit, "inherit.threads_not_counted_without_inherit",
              "perf_event_open(2) pid/tid: an event on a thread counts that thread only") {
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), Inherited(false)));
  ASSERT_OK(backend().RunWorkload(Workload::Threads(2, kPages)));
  EXPECT_LT(Value(ev), kPages);
}

PERFTEST_CASE(Inherit, InheritThreadFollowsThreadsOnly, "inherit.inherit_thread_threads_only",
              "perf_event_open(2) inherit_thread; kernel/events/core.c inherit_task_group(): "
              "'if (event->attr.inherit_thread && !(clone_flags & CLONE_THREAD))' not inherited") {
  perf_event_attr a = Inherited();
  a.inherit_thread = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK(backend().RunWorkload(Workload::ForkTouch(2, kPages)));
  const uint64_t after_fork = Value(ev);
  EXPECT_LT(after_fork, kPages) << "processes are not followed";
  ASSERT_OK(backend().RunWorkload(Workload::Threads(2, kPages)));
  ExpectChildFaults(Value(ev) - after_fork, 2 * kPages, 3, "threads are");
}

PERFTEST_CASE(Inherit, InheritThreadNeedsInherit, "inherit.inherit_thread_needs_inherit",
              "kernel/events/core.c perf_copy_attr(): 'if (!attr->inherit && attr->inherit_thread) return -EINVAL'") {
  perf_event_attr a = Inherited(false);
  a.inherit_thread = 1;
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL));
}

PERFTEST_CASE(Inherit, DisabledCopyStaysOff, "inherit.disabled_copy_stays_off",
              "kernel/events/core.c inherit_event(): the copy is OFF when its parent is") {
  perf_event_attr a = Inherited();
  a.disabled = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK(backend().RunWorkload(Workload::ForkTouch(1, kPages)));
  EXPECT_EQ(Value(ev), 0u);
}

PERFTEST_CASE(Inherit, EnableAfterForkReachesCopy, "inherit.enable_after_fork_reaches_copy",
              "kernel/events/core.c perf_ioctl() -> perf_event_for_each_child(event, _perf_event_enable): "
              "the ioctl applies to the inherited copies too") {
  perf_event_attr a = Inherited();
  a.disabled = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  std::optional<ChildTask> child;
  Spawn(&child);
  if (HasFatalFailure()) return;
  ASSERT_OK(child->Run(Workload::TouchPages(8)));
  EXPECT_EQ(Value(ev), 0u) << "the copy is off";
  ASSERT_OK(ev.Enable());
  ASSERT_OK(child->Run(Workload::TouchPages(kPages)));
  ASSERT_OK(child->Exit());
  ASSERT_OK(ev.Disable());
  ExpectChildFaults(Value(ev), kPages, 2, "the child's pages after the enable");
}

PERFTEST_CASE(Inherit, CloseParentWhileChildRuns, "inherit.close_parent_while_child_runs",
              "kernel/events/core.c perf_event_release_kernel(): the children of a closed event are "
              "removed from their contexts; other events are untouched") {
  ASSERT_OK_AND_ASSIGN(Event closed, Event::Open(backend(), Inherited()));
  ASSERT_OK_AND_ASSIGN(Event kept, Event::Open(backend(), Inherited()));
  std::optional<ChildTask> child;
  Spawn(&child);
  if (HasFatalFailure()) return;
  ASSERT_OK(closed.Close());
  ASSERT_OK(child->Run(Workload::TouchPages(kPages)));
  ASSERT_OK(child->Exit());
  ExpectChildFaults(Value(kept), kPages, 2, "the other inherited event still counts the child");
}

PERFTEST_CASE(Inherit, PerTaskMmapRefused, "inherit.per_task_mmap_refused",
              "kernel/events/core.c perf_mmap(): 'Don't allow mmap() of inherited per-task counters' "
              "(cpu == -1 && attr.inherit: EINVAL)") {
  perf_event_attr a = Inherited();
  a.disabled = 1;
  a.sample_period = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  const size_t page = backend().Machine().page_size;
  EXPECT_THAT(backend().Mmap(2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, ev.fd(), 0), FailsWithErrno(EINVAL));
  ASSERT_OK_AND_ASSIGN(Event on_cpu, Event::Open(backend(), a, 0, 0));
  Result<void*> m = backend().Mmap(2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, on_cpu.fd(), 0);
  EXPECT_THAT(m, Succeeds()) << "per-task and per-CPU is allowed";
  if (m.ok()) ASSERT_OK(backend().Munmap(*m, 2 * page));
}

PERFTEST_CASE(Inherit, SamplesAndTaskRecordsInParentBuffer, "inherit.samples_in_parent_buffer",
              "kernel/events/ring_buffer.c __perf_output_begin(): 'For inherited events we send all the "
              "output towards the parent'; kernel/events/core.c perf_event_task() (FORK/EXIT)") {
  perf_event_attr a = Inherited();
  a.disabled = 0;
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_TID;
  a.task = 1;
  a.sample_id_all = 1;
  std::vector<Event> events;
  std::vector<RingBuffer> rbs;
  OpenPerCpu(a, &events, &rbs);
  if (HasFatalFailure()) return;
  ASSERT_OK_AND_ASSIGN(WorkloadResult w, backend().RunWorkload(Workload::ForkTouch(1, 16)));
  ASSERT_EQ(w.children.size(), 1u);
  const pid_t child = w.children[0];
  for (Event& ev : events) ASSERT_OK(ev.Disable());
  std::vector<ParsedRecord> recs = DrainAll(rbs, a);
  uint64_t child_samples = 0;
  for (const SampleRecord* s : SamplesOf(recs)) child_samples += s->pid == static_cast<uint32_t>(child) && s->tid == static_cast<uint32_t>(child);
  if (exact()) EXPECT_EQ(child_samples, 16u);
  else EXPECT_GE(child_samples, 16u);
  bool fork = false, exit = false;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_FORK)) {
    const auto& t = std::get<TaskRecord>(r->record.body);
    fork |= t.pid == static_cast<uint32_t>(child) && t.ppid == static_cast<uint32_t>(backend().CurrentTask().pid);
  }
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_EXIT)) {
    exit |= std::get<TaskRecord>(r->record.body).pid == static_cast<uint32_t>(child);
  }
  EXPECT_TRUE(fork) << "PERF_RECORD_FORK of the child";
  EXPECT_TRUE(exit) << "PERF_RECORD_EXIT of the child, written by its copy to the parent's buffer";
}

// PERF_RECORD_READ {pid, tid, value} bodies of `recs` (read_format 0).
struct ReadRecord {
  uint32_t pid, tid;
  uint64_t value;
};
std::vector<ReadRecord> ReadRecords(const std::vector<ParsedRecord>& recs) {
  std::vector<ReadRecord> out;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_READ)) {
    const auto* other = std::get_if<OtherRecord>(&r->record.body);
    if (other == nullptr || other->body.size() < 16) continue;
    ReadRecord rr;
    std::memcpy(&rr.pid, other->body.data(), 4);
    std::memcpy(&rr.tid, other->body.data() + 4, 4);
    std::memcpy(&rr.value, other->body.data() + 8, 8);
    out.push_back(rr);
  }
  return out;
}

// inherit_stat asks for a PERF_RECORD_READ of each copy's count
// (sync_child_event()). At exit the kernel mostly writes none:
// perf_event_exit_task_context() sets ctx->task = TASK_TOMBSTONE before
// perf_event_exit_event() -> sync_child_event() tests 'if (task && task !=
// TASK_TOMBSTONE)'; runs here wrote the records intermittently (clone contexts
// swapped at a context switch, perf_event_context_sched_out()). So the case
// checks what is certain: inherit_stat is accepted and the counts fold as with
// inherit alone.
PERFTEST_CASE(Inherit, InheritStatCountsFolded, "inherit.inherit_stat_counts_folded",
              "perf_event_open(2) inherit_stat; kernel/events/core.c perf_event_exit_task_context() "
              "(ctx->task = TASK_TOMBSTONE) before sync_child_event() -> perf_event_read_event()") {
  RecordDivergence("inherit.inherit_stat_exit",
                   "<linux/perf_event.h> inherit_stat 'per task counts'; perf_event_open(2) inherit_stat: "
                   "'allows saving (on context switch) counts for inherited tasks'",
                   "Linux 6.18: an inherited task's own count reaches user space only as the "
                   "PERF_RECORD_READ of sync_child_event(), which skips it for an exiting task "
                   "(ctx->task is TASK_TOMBSTONE after perf_event_exit_task_context()); runs here "
                   "saw the record only intermittently");
  perf_event_attr a = Inherited();
  a.inherit_stat = 1;
  std::vector<Event> events;
  std::vector<RingBuffer> rbs;
  OpenPerCpu(a, &events, &rbs);
  if (HasFatalFailure()) return;
  ASSERT_OK(backend().RunWorkload(Workload::ForkTouch(1, kPages)));
  uint64_t total = 0;
  for (Event& ev : events) total += Value(ev);
  ExpectChildFaults(total, kPages, 2, "the child's pages, over the per-CPU events");
}

PERFTEST_CASE(Inherit, NoReadRecordWithoutInheritStat, "inherit.no_read_record_without_inherit_stat",
              "kernel/events/core.c sync_child_event(): PERF_RECORD_READ only with inherit_stat") {
  perf_event_attr a = Inherited();
  a.remove_on_exec = 1;
  std::vector<Event> events;
  std::vector<RingBuffer> rbs;
  OpenPerCpu(a, &events, &rbs);
  if (HasFatalFailure()) return;
  ASSERT_OK(backend().RunWorkload(Workload::ForkExec(1, "/bin/true")));
  EXPECT_TRUE(ReadRecords(DrainAll(rbs, a)).empty());
}

PERFTEST_CASE(Inherit, GroupReadWithInherit, "inherit.group_read_with_inherit",
              "kernel/events/core.c perf_read_group(): the leader's and each member's count include "
              "their children (__perf_read_group_add() walks child_list)") {
  perf_event_attr leader = Inherited();
  leader.disabled = 1;
  leader.read_format = PERF_FORMAT_GROUP;
  perf_event_attr member = Inherited();
  member.disabled = 0;
  member.config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
  member.read_format = PERF_FORMAT_GROUP;
  PERFTEST_ASSIGN_OR_SKIP(Group g, Group::Open(backend(), leader, {member}), "inherit with PERF_FORMAT_GROUP");
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::ForkTouch(1, kPages)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(ReadValues v, g.leader().Read(2));
  ASSERT_EQ(v.counters.size(), 2u);
  ExpectChildFaults(v.counters[0].value, kPages, 2, "leader: the child's page faults");
  ExpectChildFaults(v.counters[1].value, kPages, 2, "member: the child's minor faults");
}

}  // namespace
}  // namespace perftest
