// Conformance suite: the side-band records of the ring buffer — MMAP, MMAP2,
// COMM, FORK, EXIT, SWITCH, SWITCH_CPU_WIDE, NAMESPACES, LOST, THROTTLE — their
// layouts, header.misc bits and sizes, and the sample_id_all trailer on each.
//
// Every record is produced by a workload (mmap, prctl(PR_SET_NAME), fork,
// sleep) on a software event, usually the dummy event, so the kernel here
// checks it for real; records are parsed with harness/records.h, which rejects
// a record whose size does not match its layout. References:
// <linux/perf_event.h> enum perf_event_type; kernel/events/core.c
// perf_event_mmap_output(), perf_event_comm_output(), perf_event_task_output(),
// perf_event_switch_output(), perf_event_namespaces_output(),
// perf_log_throttle(), perf_log_lost_samples(), __perf_event_header__init_id().
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "harness/attr.h"
#include "harness/event.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "harness/syscall_matchers.h"
#include "suites/common/attrs.h"
#include "suites/common/kernel_version.h"
#include "suites/common/records_util.h"
#include "suites/common/suite.h"

namespace perftest {
namespace {

using namespace std::chrono_literals;

// The sample_id_all trailer fields, all of them: 48 bytes.
constexpr uint64_t kIdAll = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                            PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;

// A dummy event of this task that only collects side-band records.
perf_event_attr SideBand() { return SoftwareCounterAttr(PERF_COUNT_SW_DUMMY); }

// Bytes a NUL-terminated string takes in a record: ALIGN(strlen + 1, 8).
size_t Padded(const std::string& s) { return (s.size() + 1 + 7) & ~size_t{7}; }

class Records : public SuiteTest {
 protected:
  size_t page() { return backend().Machine().page_size; }

  // Opens `attr` on (pid, cpu), maps a buffer, runs each workload between
  // enable and disable; the records and the event's id go to `recs`/`id`.
  void Collect(const perf_event_attr& attr, const std::vector<Workload>& work, std::vector<ParsedRecord>* recs,
               std::vector<WorkloadResult>* results = nullptr, uint64_t* id = nullptr, pid_t pid = 0,
               int cpu = -1, size_t pages = 16) {
    ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr, pid, cpu));
    if (id != nullptr) {
      ASSERT_OK_AND_ASSIGN(*id, ev.Id());
    }
    ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), pages));
    ASSERT_OK(ev.Enable());
    for (const Workload& w : work) {
      ASSERT_OK_AND_ASSIGN(WorkloadResult r, backend().RunWorkload(w));
      if (results != nullptr) results->push_back(std::move(r));
    }
    ASSERT_OK(ev.Disable());
    ASSERT_OK_AND_ASSIGN(*recs, DrainRecords(rb, SampleLayout::FromAttr(attr), /*consume=*/true));
  }

  // Collect() for a CPU-wide event on CPU 0 while this thread (and any child
  // it forks: the mask is inherited) runs on CPU 0 only, so CPU 0 switches
  // even on an idle machine; the old affinity comes back after.
  void CollectOnCpu0(const perf_event_attr& attr, const std::vector<Workload>& work, std::vector<ParsedRecord>* recs,
                     std::vector<WorkloadResult>* results = nullptr) {
    cpu_set_t old_mask, cpu0;
    ASSERT_EQ(::sched_getaffinity(0, sizeof old_mask, &old_mask), 0);
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    ASSERT_EQ(::sched_setaffinity(0, sizeof cpu0, &cpu0), 0);
    Collect(attr, work, recs, results, nullptr, -1, 0, 64);
    ASSERT_EQ(::sched_setaffinity(0, sizeof old_mask, &old_mask), 0);
  }

  // Inherited events cannot be mapped per task (perf_mmap(): "Don't allow
  // mmap() of inherited per-task counters", EINVAL): opens `attr` for this
  // task once per CPU, each with its own buffer, runs the workloads and
  // merges the records in time order of their buffers (CPU by CPU).
  void CollectPerCpu(const perf_event_attr& attr, const std::vector<Workload>& work, std::vector<ParsedRecord>* recs,
                     std::vector<WorkloadResult>* results, std::vector<uint64_t>* ids = nullptr) {
    std::vector<Event> events;
    std::vector<perftest::RingBuffer> buffers;
    for (int cpu = 0; cpu < backend().Machine().ncpus; ++cpu) {
      ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), attr, 0, cpu));
      if (ids != nullptr) {
        ASSERT_OK_AND_ASSIGN(uint64_t id, ev.Id());
        ids->push_back(id);
      }
      ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 16));
      events.push_back(std::move(ev));
      buffers.push_back(std::move(rb));
    }
    for (Event& ev : events) ASSERT_OK(ev.Enable());
    for (const Workload& w : work) {
      ASSERT_OK_AND_ASSIGN(WorkloadResult r, backend().RunWorkload(w));
      results->push_back(std::move(r));
    }
    for (Event& ev : events) ASSERT_OK(ev.Disable());
    for (perftest::RingBuffer& rb : buffers) {
      ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> part, DrainRecords(rb, SampleLayout::FromAttr(attr), true));
      recs->insert(recs->end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
  }

  // The last MMAP or MMAP2 record whose range covers [begin, end), if any.
  // The kernel reports the VMA: a new anonymous mapping may have been merged
  // with a neighbour (vma_merge()), so the record can be larger than the mmap.
  static const ParsedRecord* MappingOf(const std::vector<ParsedRecord>& recs, const WorkloadResult& w,
                                       bool first = false) {
    const ParsedRecord* found = nullptr;
    auto covers = [&](uint64_t addr, uint64_t len) { return addr <= w.region_begin && addr + len >= w.region_end; };
    for (const ParsedRecord& r : recs) {
      if (const auto* m = std::get_if<MmapRecord>(&r.record.body); m != nullptr && covers(m->addr, m->len)) found = &r;
      if (const auto* m = std::get_if<Mmap2Record>(&r.record.body); m != nullptr && covers(m->addr, m->len)) found = &r;
      if (first && found != nullptr) break;
    }
    return found;
  }
};

PERFTEST_CASE(Records, MmapOfExecutableMapping, "records.mmap",
              "<linux/perf_event.h> PERF_RECORD_MMAP {pid, tid, addr, len, pgoff, filename}; "
              "core.c perf_event_mmap_event(): anonymous memory is \"//anon\"") {
  perf_event_attr a = SideBand();
  a.mmap = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::MmapExec(2)}, &recs, &w));
  const ParsedRecord* r = MappingOf(recs, w[0]);
  ASSERT_NE(r, nullptr) << "no PERF_RECORD_MMAP for the PROT_EXEC mapping";
  EXPECT_EQ(r->record.header.type, PERF_RECORD_MMAP);
  EXPECT_EQ(r->record.header.misc, PERF_RECORD_MISC_USER) << "an executable mapping: no MMAP_DATA";
  const auto& m = std::get<MmapRecord>(r->record.body);
  const TaskId self = backend().CurrentTask();
  EXPECT_EQ(m.pid, static_cast<uint32_t>(self.pid));
  EXPECT_EQ(m.tid, static_cast<uint32_t>(self.tid));
  EXPECT_GE(m.len, 2 * page());
  EXPECT_EQ(m.pgoff, m.addr) << "anonymous: vm_pgoff is the address in pages, shifted back";
  EXPECT_EQ(m.filename, "//anon");
  EXPECT_EQ(r->record.header.size, 8u + 8 + 24 + Padded("//anon"));
  EXPECT_FALSE(r->record.sample_id.has_value());
}

PERFTEST_CASE(Records, MmapDataNeedsMmapData, "records.mmap_data",
              "<linux/perf_event.h> attr.mmap_data, PERF_RECORD_MISC_MMAP_DATA; core.c perf_event_mmap_match()") {
  for (int with_data = 0; with_data < 2; ++with_data) {
    SCOPED_TRACE(with_data ? "mmap_data=1" : "mmap=1 only");
    perf_event_attr a = SideBand();
    a.mmap = 1;
    a.mmap_data = with_data;
    std::vector<ParsedRecord> recs;
    std::vector<WorkloadResult> w;
    ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::TouchPages(3)}, &recs, &w));
    const ParsedRecord* r = MappingOf(recs, w[0]);
    if (!with_data) {
      EXPECT_EQ(r, nullptr) << "a PROT_READ|PROT_WRITE mapping is data: reported only with mmap_data";
      continue;
    }
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->record.header.type, PERF_RECORD_MMAP);
    EXPECT_EQ(r->record.header.misc, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA);
    EXPECT_GE(std::get<MmapRecord>(r->record.body).len, 3 * page());
  }
}

PERFTEST_CASE(Records, Mmap2Fields, "records.mmap2",
              "<linux/perf_event.h> PERF_RECORD_MMAP2 {..., maj, min, ino, ino_generation, prot, flags, filename}") {
  // attr.mmap with mmap2, as perf record sets them: perf_event_mmap() returns
  // early unless some event in the system has attr.mmap or mmap_data
  // (nr_mmap_events, counted in account_event(); mmap2 alone does not count).
  perf_event_attr a = SideBand();
  a.mmap = a.mmap2 = 1;
  a.mmap_data = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::MmapExec(1), Workload::TouchPages(2)}, &recs, &w));
  const ParsedRecord* exec = MappingOf(recs, w[0], /*first=*/true);
  const ParsedRecord* data = MappingOf(recs, w[1]);
  ASSERT_NE(exec, nullptr);
  ASSERT_NE(data, nullptr);
  for (const ParsedRecord* r : {exec, data}) {
    EXPECT_EQ(r->record.header.type, PERF_RECORD_MMAP2) << "attr.mmap2 replaces MMAP";
    const auto& m = std::get<Mmap2Record>(r->record.body);
    EXPECT_EQ(m.maj, 0u) << "anonymous: no device";
    EXPECT_EQ(m.min, 0u);
    EXPECT_EQ(m.ino, 0u);
    EXPECT_EQ(m.ino_generation, 0u);
    EXPECT_EQ(m.flags & MAP_TYPE, static_cast<uint32_t>(MAP_PRIVATE));
    EXPECT_EQ(m.filename, "//anon");
    EXPECT_EQ(r->record.header.size, 8u + 8 + 24 + 24 + 8 + Padded("//anon"));
  }
  EXPECT_EQ(std::get<Mmap2Record>(exec->record.body).prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
  EXPECT_EQ(std::get<Mmap2Record>(data->record.body).prot, static_cast<uint32_t>(PROT_READ | PROT_WRITE));
  EXPECT_EQ(exec->record.header.misc, PERF_RECORD_MISC_USER);
  EXPECT_EQ(data->record.header.misc, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA);
}

PERFTEST_CASE(Records, Mmap2BuildIdOfAnonymousMapping, "records.mmap2_build_id",
              "<linux/perf_event.h> attr.build_id, PERF_RECORD_MISC_MMAP_BUILD_ID; core.c perf_event_mmap_output()") {
  perf_event_attr a = SideBand();
  a.mmap = a.mmap2 = 1;
  a.build_id = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::MmapExec(1)}, &recs, &w));
  const ParsedRecord* r = MappingOf(recs, w[0]);
  ASSERT_NE(r, nullptr);
  // perf_event_mmap_output(): the build-id form ({u8 size, u8[3], u8[20]} in
  // place of maj..ino_generation) only when a build id was found; anonymous
  // memory has none, so the record keeps the maj/min/ino form.
  EXPECT_EQ(r->record.header.type, PERF_RECORD_MMAP2);
  EXPECT_EQ(r->record.header.size, 8u + 8 + 24 + 24 + 8 + Padded("//anon"));
  EXPECT_EQ(r->record.header.misc, PERF_RECORD_MISC_USER) << "no PERF_RECORD_MISC_MMAP_BUILD_ID without a build id";
  EXPECT_EQ(std::get<Mmap2Record>(r->record.body).ino, 0u);
}

PERFTEST_CASE(Records, CommOnSetName, "records.comm",
              "<linux/perf_event.h> PERF_RECORD_COMM {pid, tid, comm}; core.c perf_event_comm() from __set_task_comm()") {
  perf_event_attr a = SideBand();
  a.comm = 1;
  std::vector<ParsedRecord> recs;
  // TASK_COMM_LEN is 16: the name is cut to 15 bytes.
  ASSERT_NO_FATAL_FAILURE(
      Collect(a, {Workload::SetComm("perftest-c1"), Workload::SetComm("perftest-very-long-name")}, &recs));
  std::vector<const ParsedRecord*> comms = OfType(recs, PERF_RECORD_COMM);
  ASSERT_EQ(comms.size(), 2u);
  const TaskId self = backend().CurrentTask();
  const std::string names[] = {"perftest-c1", "perftest-very-l"};
  for (size_t i = 0; i < 2; ++i) {
    const auto& c = std::get<CommRecord>(comms[i]->record.body);
    EXPECT_EQ(c.comm, names[i]);
    EXPECT_EQ(c.pid, static_cast<uint32_t>(self.pid));
    EXPECT_EQ(c.tid, static_cast<uint32_t>(self.tid));
    EXPECT_EQ(comms[i]->record.header.misc, 0) << "not an exec: no PERF_RECORD_MISC_COMM_EXEC";
    EXPECT_EQ(comms[i]->record.header.size, 8u + 8 + Padded(names[i]));
  }
  // Without attr.comm there is none.
  std::vector<ParsedRecord> none;
  ASSERT_NO_FATAL_FAILURE(Collect(SideBand(), {Workload::SetComm("perftest-c2")}, &none));
  EXPECT_TRUE(OfType(none, PERF_RECORD_COMM).empty());
}

// The program Workload::Exec runs: exits 0 at once, on any Linux distribution.
constexpr const char* kExecProgram = "/bin/true";

PERFTEST_CASE(Records, CommExec, "records.comm_exec",
              "<linux/perf_event.h> PERF_RECORD_MISC_COMM_EXEC; fs/exec.c begin_new_exec() -> "
              "__set_task_comm(exec=true) -> core.c perf_event_comm()") {
  perf_event_attr a = SideBand();
  a.comm = a.task = a.inherit = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(CollectPerCpu(a, {Workload::Exec(kExecProgram)}, &recs, &w));
  const uint32_t child = static_cast<uint32_t>(w[0].children.at(0));
  const ParsedRecord* exec = nullptr;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_COMM)) {
    if (std::get<CommRecord>(r->record.body).pid == child) exec = r;
  }
  ASSERT_NE(exec, nullptr) << "no COMM from the child's exec";
  EXPECT_EQ(exec->record.header.misc, PERF_RECORD_MISC_COMM_EXEC);
  const auto& c = std::get<CommRecord>(exec->record.body);
  EXPECT_EQ(c.tid, child);
  EXPECT_EQ(c.comm, "true") << "the basename of the executed file";
  EXPECT_EQ(exec->record.header.size, 8u + 8 + Padded("true"));
  // FORK, COMM, EXIT of the child, in time order.
  std::optional<uint64_t> fork_time, exit_time;
  for (const ParsedRecord& r : recs) {
    const auto* t = std::get_if<TaskRecord>(&r.record.body);
    if (t == nullptr || t->pid != child) continue;
    (r.record.header.type == PERF_RECORD_FORK ? fork_time : exit_time) = t->time;
  }
  ASSERT_TRUE(fork_time && exit_time);
  EXPECT_LT(*fork_time, *exit_time);
}

PERFTEST_CASE(Records, Mmap2OfExecutedBinary, "records.mmap2_file",
              "<linux/perf_event.h> PERF_RECORD_MMAP2 of a file: maj, min, ino, prot, flags, filename; "
              "core.c perf_event_mmap_event()") {
  perf_event_attr a = SideBand();
  a.mmap = a.mmap2 = a.inherit = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(CollectPerCpu(a, {Workload::Exec(kExecProgram)}, &recs, &w));
  const uint32_t child = static_cast<uint32_t>(w[0].children.at(0));
  // The record names the mapped file (d_path()), which is the file the
  // program's path resolves to: /bin/true may be a symlink (to busybox, as in
  // the guests of other arches, vm/guest/init).
  char resolved[PATH_MAX];
  const std::string file = ::realpath(kExecProgram, resolved) != nullptr ? resolved : kExecProgram;
  const std::string tail = file.substr(file.rfind('/'));
  const ParsedRecord* text = nullptr;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_MMAP2)) {
    const auto& m = std::get<Mmap2Record>(r->record.body);
    const bool is_it = m.filename.ends_with(tail);
    if (m.pid == child && is_it && (m.prot & PROT_EXEC)) text = r;
  }
  ASSERT_NE(text, nullptr) << "no MMAP2 of the executed binary's text (" << file << ")";
  const auto& m = std::get<Mmap2Record>(text->record.body);
  EXPECT_EQ(m.tid, child);
  EXPECT_NE(m.ino, 0u) << "a file mapping names its inode";
  EXPECT_EQ(m.flags & MAP_TYPE, static_cast<uint32_t>(MAP_PRIVATE));
  EXPECT_EQ(m.pgoff % page(), 0u);
  EXPECT_EQ(text->record.header.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
  EXPECT_EQ(text->record.header.size, 8u + 8 + 24 + 24 + 8 + Padded(m.filename));
  EXPECT_TRUE(OfType(recs, PERF_RECORD_MMAP).empty()) << "mmap2 replaces MMAP";
}

PERFTEST_CASE(Records, ForkRecord, "records.fork",
              "<linux/perf_event.h> PERF_RECORD_FORK {pid, ppid, tid, ptid, time}; core.c perf_event_fork()") {
  perf_event_attr a = SideBand();
  a.task = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::Fork(2)}, &recs, &w));
  const TaskId self = backend().CurrentTask();
  std::vector<const ParsedRecord*> forks = OfType(recs, PERF_RECORD_FORK);
  ASSERT_EQ(forks.size(), 2u);
  uint64_t last_time = 0;
  for (size_t i = 0; i < 2; ++i) {
    const auto& t = std::get<TaskRecord>(forks[i]->record.body);
    EXPECT_EQ(forks[i]->record.header.size, 8u + 16 + 8);
    EXPECT_EQ(t.pid, static_cast<uint32_t>(w[0].children[i]));
    EXPECT_EQ(t.tid, static_cast<uint32_t>(w[0].children[i]));
    EXPECT_EQ(t.ppid, static_cast<uint32_t>(self.pid));
    EXPECT_EQ(t.ptid, static_cast<uint32_t>(self.tid));
    EXPECT_GT(t.time, last_time);
    last_time = t.time;
  }
}

PERFTEST_CASE(Records, ExitOfInheritedChildren, "records.exit_inherit",
              "<linux/perf_event.h> PERF_RECORD_EXIT; core.c perf_event_exit_task() -> perf_event_task(): "
              "through the child's inherited events") {
  perf_event_attr a = SideBand();
  a.task = 1;
  a.inherit = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(CollectPerCpu(a, {Workload::Fork(2)}, &recs, &w));
  const TaskId self = backend().CurrentTask();
  std::vector<const ParsedRecord*> exits = OfType(recs, PERF_RECORD_EXIT);
  ASSERT_EQ(exits.size(), 2u);
  // One EXIT per child (CPU by CPU, so not necessarily in fork order).
  std::set<uint32_t> exited;
  for (const ParsedRecord* r : exits) {
    const auto& t = std::get<TaskRecord>(r->record.body);
    exited.insert(t.pid);
    EXPECT_EQ(t.tid, t.pid);
    EXPECT_EQ(t.ppid, static_cast<uint32_t>(self.pid));
    EXPECT_EQ(r->record.header.size, 8u + 16 + 8);
  }
  EXPECT_EQ(exited, (std::set<uint32_t>{static_cast<uint32_t>(w[0].children[0]), static_cast<uint32_t>(w[0].children[1])}));
  // Each child's FORK precedes its EXIT (the two may sit in different CPUs' buffers: compare times).
  for (pid_t child : w[0].children) {
    std::optional<uint64_t> fork_time, exit_time;
    for (const ParsedRecord& r : recs) {
      const auto* t = std::get_if<TaskRecord>(&r.record.body);
      if (t == nullptr || t->pid != static_cast<uint32_t>(child)) continue;
      (r.record.header.type == PERF_RECORD_FORK ? fork_time : exit_time) = t->time;
    }
    ASSERT_TRUE(fork_time && exit_time) << "child " << child;
    EXPECT_LT(*fork_time, *exit_time);
  }
}

PERFTEST_CASE(Records, NoExitWithoutInherit, "records.exit_not_inherited",
              "core.c perf_event_exit_task(): the EXIT record goes to the exiting task's own events") {
  perf_event_attr a = SideBand();
  a.task = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::Fork(2)}, &recs, &w));
  EXPECT_EQ(OfType(recs, PERF_RECORD_FORK).size(), 2u);
  EXPECT_TRUE(OfType(recs, PERF_RECORD_EXIT).empty()) << "the children have no events to report their exit";
}

PERFTEST_CASE(Records, SwitchRecords, "records.switch",
              "<linux/perf_event.h> attr.context_switch, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT; "
              "core.c perf_event_switch()") {
  perf_event_attr a = SideBand();
  a.context_switch = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.sample_id_all = 1;
  std::vector<ParsedRecord> recs;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::Sleep(3, 1ms)}, &recs));
  std::vector<const ParsedRecord*> sw = OfType(recs, PERF_RECORD_SWITCH);
  ASSERT_GE(sw.size(), 6u) << "out and in for each sleep";
  const TaskId self = backend().CurrentTask();
  size_t outs = 0, ins = 0;
  bool expect_out = true;
  uint64_t last = 0;
  for (const ParsedRecord* r : sw) {
    const bool out = r->record.header.misc & PERF_RECORD_MISC_SWITCH_OUT;
    EXPECT_EQ(out, expect_out) << "out and in alternate";
    expect_out = !out;
    (out ? outs : ins)++;
    EXPECT_EQ(r->record.header.size, 8u + 16) << "no body; trailer {pid, tid}, time";
    EXPECT_EQ(r->record.sample_id->pid, static_cast<uint32_t>(self.pid)) << "written by the task itself";
    EXPECT_EQ(r->record.sample_id->tid, static_cast<uint32_t>(self.tid));
    EXPECT_GE(*r->record.sample_id->time, last);
    last = *r->record.sample_id->time;
  }
  EXPECT_EQ(outs, ins);
  // A task that goes to sleep is not preempted: nanosleep's switches out carry no PREEMPT bit.
  size_t preempted = 0;
  for (const ParsedRecord* r : sw) preempted += (r->record.header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
  EXPECT_LT(preempted, outs) << "the sleeps' own switches are voluntary";
}

PERFTEST_CASE(Records, SwitchAroundFork, "records.switch_around_fork",
              "<linux/perf_event.h> attr.context_switch, PERF_RECORD_MISC_SWITCH_OUT(_PREEMPT); core.c "
              "perf_event_switch(): the parent blocked in waitpid(2) while its child runs switches out voluntarily "
              "and in again once the child's exit wakes it; a non-inherited event sees none of the child's records "
              "but the FORK the parent writes (perf_event_fork() runs in the parent)") {
  perf_event_attr a = SideBand();
  a.context_switch = 1;
  a.task = 1;
  a.inherit = 0;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.sample_id_all = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  // 1024 pages (4 MiB) keep the child busy for milliseconds, so the parent
  // reaches waitpid(2) before the child exits unless it is preempted right
  // after fork(); that window is why the case is declared timing-sensitive
  // in ci/expectations/kernel-timing.txt.
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::ForkTouch(1, 1024)}, &recs, &w));
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(w[0].children.size(), 1u);
  const TaskId self = backend().CurrentTask();
  const auto child = static_cast<uint32_t>(w[0].children[0]);
  std::optional<uint64_t> fork_time;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_FORK)) {
    if (std::get<TaskRecord>(r->record.body).tid == child) fork_time = r->record.sample_id->time;
  }
  ASSERT_TRUE(fork_time.has_value()) << "PERF_RECORD_FORK of the child (attr.task), written by the parent";
  EXPECT_TRUE(OfType(recs, PERF_RECORD_EXIT).empty()) << "the child's EXIT goes to the child's events: it has none";
  std::optional<uint64_t> out_time;
  bool in_after = false;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_SWITCH)) {
    EXPECT_EQ(r->record.sample_id->pid, static_cast<uint32_t>(self.pid)) << "only the parent's own switches";
    const uint64_t t = *r->record.sample_id->time;
    const uint16_t misc = r->record.header.misc;
    const bool out = misc & PERF_RECORD_MISC_SWITCH_OUT;
    if (out && !(misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) && t >= *fork_time && !out_time) out_time = t;
    if (!out && out_time && t >= *out_time) in_after = true;
  }
  EXPECT_TRUE(out_time.has_value()) << "a voluntary switch out after the FORK: waitpid(2) blocks on the child";
  EXPECT_TRUE(in_after) << "and a switch in after it: waitpid(2) returns";
}

PERFTEST_CASE(Records, SwitchInheritedByChild, "records.switch_inherit_child",
              "<linux/perf_event.h> attr.context_switch with attr.inherit; core.c perf_event_task_sched_in() -> "
              "perf_event_switch(): the child's inherited copy records its switch in; perf_event_exit_task() "
              "(EXIT through the copy) runs in do_exit() before the final schedule(), so the copy records no "
              "switch of the child after its EXIT") {
  perf_event_attr a = SideBand();
  a.context_switch = 1;
  a.task = 1;
  a.inherit = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.sample_id_all = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(CollectPerCpu(a, {Workload::ForkTouch(1, 64)}, &recs, &w));
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(w[0].children.size(), 1u);
  const auto child = static_cast<uint32_t>(w[0].children[0]);
  std::optional<uint64_t> exit_time;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_EXIT)) {
    if (std::get<TaskRecord>(r->record.body).tid == child) exit_time = r->record.sample_id->time;
  }
  ASSERT_TRUE(exit_time.has_value()) << "the child's EXIT, through its inherited copy";
  EXPECT_TRUE(OfType(recs, PERF_RECORD_SWITCH_CPU_WIDE).empty()) << "per-task events: the PERF_RECORD_SWITCH form";
  size_t child_ins = 0;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_SWITCH)) {
    if (*r->record.sample_id->tid != child) continue;
    child_ins += !(r->record.header.misc & PERF_RECORD_MISC_SWITCH_OUT);
    EXPECT_LT(*r->record.sample_id->time, *exit_time) << "no switch of the child after its EXIT";
  }
  EXPECT_GE(child_ins, 1u) << "the child's first switch in, through its inherited copy";
}

PERFTEST_CASE(Records, SwitchCpuWide, "records.switch_cpu_wide",
              "<linux/perf_event.h> PERF_RECORD_SWITCH_CPU_WIDE {next_prev_pid, next_prev_tid}; "
              "core.c perf_event_switch_output()") {
  perf_event_attr a = SideBand();
  a.context_switch = 1;
  a.exclude_kernel = 0;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_CPU;
  a.sample_id_all = 1;
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), a, -1, 0), "a CPU-wide event");
  ASSERT_OK(probe.Close());
  std::vector<ParsedRecord> recs;
  // This thread sleeps on CPU 0 (elsewhere CPU 0 could stay idle throughout).
  ASSERT_NO_FATAL_FAILURE(CollectOnCpu0(a, {Workload::Sleep(4, 2ms)}, &recs));
  std::vector<const ParsedRecord*> sw = OfType(recs, PERF_RECORD_SWITCH_CPU_WIDE);
  ASSERT_GE(sw.size(), 2u) << "CPU 0 switched tasks while this task slept";
  EXPECT_TRUE(OfType(recs, PERF_RECORD_SWITCH).empty()) << "a CPU-wide event gets the CPU_WIDE form only";
  size_t outs = 0;
  for (const ParsedRecord* r : sw) {
    EXPECT_EQ(r->record.header.size, 8u + 8 + 16) << "next_prev_pid/tid + trailer {pid, tid}, {cpu, res}";
    EXPECT_EQ(r->record.sample_id->cpu, 0u);
    const auto& s = std::get<SwitchRecord>(r->record.body);
    ASSERT_TRUE(s.next_prev_pid.has_value());
    if (r->record.header.misc & PERF_RECORD_MISC_SWITCH_OUT) {
      ++outs;
      // Switching out of a task to itself is no switch.
      EXPECT_NE(s.next_prev_tid, r->record.sample_id->tid);
    }
  }
  EXPECT_GE(outs, 1u);
}

PERFTEST_CASE(Records, SwitchCpuWideAtFork, "records.switch_cpu_wide_fork",
              "<linux/perf_event.h> PERF_RECORD_SWITCH_CPU_WIDE {next_prev_pid, next_prev_tid}; core.c "
              "perf_event_task_sched_out(prev, next) -> perf_event_switch(prev, next, false) and "
              "perf_event_task_sched_in(prev, next) -> perf_event_switch(next, prev, true)") {
  perf_event_attr a = SideBand();
  a.context_switch = 1;
  a.task = 1;
  a.exclude_kernel = 0;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_CPU | PERF_SAMPLE_TIME;
  a.sample_id_all = 1;
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), a, -1, 0), "a CPU-wide event");
  ASSERT_OK(probe.Close());
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(CollectOnCpu0(a, {Workload::ForkTouch(1, 64)}, &recs, &w));  // parent and child on CPU 0
  ASSERT_EQ(w.size(), 1u);
  ASSERT_EQ(w[0].children.size(), 1u);
  const auto child = static_cast<uint32_t>(w[0].children[0]);
  std::vector<const ParsedRecord*> sw = OfType(recs, PERF_RECORD_SWITCH_CPU_WIDE);
  const ParsedRecord* child_in = nullptr;
  const ParsedRecord* child_out = nullptr;
  for (size_t i = 0; i < sw.size(); ++i) {
    const ParsedRecord& r = *sw[i];
    const auto& s = std::get<SwitchRecord>(r.record.body);
    ASSERT_TRUE(s.next_prev_tid.has_value());
    const bool out = r.record.header.misc & PERF_RECORD_MISC_SWITCH_OUT;
    if (*r.record.sample_id->tid == child) (out ? child_out : child_in) = &r;
    // One context switch writes OUT in the task leaving (naming the next)
    // and then IN in the task arriving (naming the previous), on this CPU.
    if (out && i + 1 < sw.size()) {
      const ParsedRecord& in = *sw[i + 1];
      EXPECT_FALSE(in.record.header.misc & PERF_RECORD_MISC_SWITCH_OUT) << "record " << i + 1;
      EXPECT_EQ(*in.record.sample_id->tid, *s.next_prev_tid) << "IN is written by the task OUT named";
      EXPECT_EQ(*std::get<SwitchRecord>(in.record.body).next_prev_tid, *r.record.sample_id->tid)
          << "and names the task that left";
    }
  }
  // The child inherits the CPU 0 affinity: it runs there between the parent's FORK and its EXIT.
  ASSERT_NE(child_in, nullptr) << "the child switched in on CPU 0";
  ASSERT_NE(child_out, nullptr) << "the child switched out for the last time on CPU 0";
  // From fork until the child's last switch a task (the child, then the
  // woken parent) is runnable on CPU 0, so neither side is the idle task.
  EXPECT_NE(*std::get<SwitchRecord>(child_in->record.body).next_prev_pid, 0u) << "the child comes from a task, not idle";
  EXPECT_NE(*std::get<SwitchRecord>(child_out->record.body).next_prev_pid, 0u) << "and hands over to a task";
  EXPECT_FALSE(child_out->record.header.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) << "an exiting task is not runnable";
  // attr.task: the EXIT of every task leaving CPU 0, the child's among them.
  std::optional<uint64_t> exit_time;
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_EXIT)) {
    if (std::get<TaskRecord>(r->record.body).tid == child) exit_time = r->record.sample_id->time;
  }
  ASSERT_TRUE(exit_time.has_value()) << "the child's EXIT, written on CPU 0";
  EXPECT_LT(*exit_time, *child_out->record.sample_id->time) << "perf_event_exit_task() runs before the final schedule()";
}

PERFTEST_CASE(Records, NamespacesOnFork, "records.namespaces",
              "<linux/perf_event.h> attr.namespaces, PERF_RECORD_NAMESPACES; core.c perf_event_namespaces()") {
  perf_event_attr a = SideBand();
  a.namespaces = 1;
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), a), "attr.namespaces");
  ASSERT_OK(probe.Close());
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::Fork(1)}, &recs, &w));
  std::vector<const ParsedRecord*> ns = OfType(recs, PERF_RECORD_NAMESPACES);
  ASSERT_EQ(ns.size(), 1u) << "one for the new task";
  const auto& n = std::get<NamespacesRecord>(ns[0]->record.body);
  EXPECT_EQ(n.pid, static_cast<uint32_t>(w[0].children[0]));
  EXPECT_EQ(n.tid, static_cast<uint32_t>(w[0].children[0]));
  // NET_NS_INDEX .. CGROUP_NS_INDEX: NR_NAMESPACES = 7.
  ASSERT_EQ(n.namespaces.size(), 7u);
  std::set<uint64_t> inodes;
  for (const auto& e : n.namespaces) {
    EXPECT_NE(e.ino, 0u);
    EXPECT_EQ(e.dev, n.namespaces[0].dev) << "all on the nsfs device";
    inodes.insert(e.ino);
  }
  EXPECT_EQ(inodes.size(), 7u) << "seven different namespaces";
  EXPECT_EQ(ns[0]->record.header.size, 8u + 8 + 8 + 7 * 16);
  EXPECT_TRUE(OfType(recs, PERF_RECORD_FORK).empty()) << "attr.namespaces alone asks for no FORK record";
}

PERFTEST_CASE(Records, LostRecordWithTrailer, "records.lost",
              "<linux/perf_event.h> PERF_RECORD_LOST {id, lost} + sample_id; ring_buffer.c perf_output_begin()") {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.exclude_kernel = a.exclude_hv = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID;
  a.sample_id_all = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK_AND_ASSIGN(const uint64_t id, ev.Id());
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 1));
  const size_t capacity = rb.data_size() / 32;
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(capacity + 50)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(const uint64_t before, ev.ReadValue());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> full, DrainRecords(rb, SampleLayout::FromAttr(a), true));
  const size_t kept = SamplesOf(full).size();
  ASSERT_LT(kept, before);
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(1)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> after, DrainRecords(rb, SampleLayout::FromAttr(a), true));
  ASSERT_FALSE(after.empty());
  const ParsedRecord& lost = after.front();
  ASSERT_EQ(lost.record.header.type, PERF_RECORD_LOST);
  EXPECT_EQ(lost.record.header.size, 8u + 16 + 24) << "{id, lost} + trailer {pid, tid}, time, id";
  EXPECT_EQ(std::get<LostRecord>(lost.record.body).id, id);
  EXPECT_EQ(std::get<LostRecord>(lost.record.body).lost, before - kept);
  ASSERT_TRUE(lost.record.sample_id.has_value());
  EXPECT_EQ(lost.record.sample_id->id, id);
  EXPECT_EQ(lost.record.sample_id->pid, static_cast<uint32_t>(backend().CurrentTask().pid));
}

PERFTEST_CASE(Records, ThrottleRecordWithTrailer, "records.throttle",
              "<linux/perf_event.h> PERF_RECORD_THROTTLE/UNTHROTTLE {time, id, stream_id} + sample_id; "
              "core.c perf_log_throttle(); the tripping sample's time (6.3+, bb447c27a467)") {
  // sched:sched_stat_runtime counts runtime ns: a small period throttles it
  // every tick (see the sampling suite, sampling.throttle).
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t tp, backend().TracepointId("sched", "sched_stat_runtime"),
                          "no sched:sched_stat_runtime tracepoint");
  perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, tp);
  a.sample_period = 1000;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  a.sample_id_all = 1;
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), a), "a tracepoint with kernel regs (exclude_kernel=0)");
  ASSERT_OK(probe.Close());
  std::vector<ParsedRecord> recs;
  uint64_t id = 0;
  ASSERT_NO_FATAL_FAILURE(Collect(a, {Workload::Spin(20ms)}, &recs, nullptr, &id, 0, -1, 256));
  std::vector<const ParsedRecord*> th = OfType(recs, PERF_RECORD_THROTTLE);
  std::vector<const ParsedRecord*> un = OfType(recs, PERF_RECORD_UNTHROTTLE);
  ASSERT_FALSE(th.empty()) << "no THROTTLE record";
  ASSERT_FALSE(un.empty()) << "no UNTHROTTLE record";
  std::vector<const ParsedRecord*> both = th;
  both.insert(both.end(), un.begin(), un.end());
  const TaskId self = backend().CurrentTask();
  for (const ParsedRecord* r : both) {
    SCOPED_TRACE(RecordTypeName(r->record.header.type));
    EXPECT_EQ(r->record.header.size, 8u + 24 + 32) << "{time, id, stream_id} + trailer {pid, tid}, time, {cpu, res}, identifier";
    const auto& t = std::get<ThrottleRecord>(r->record.body);
    EXPECT_EQ(t.id, id);
    EXPECT_EQ(t.stream_id, id);
    // perf_log_throttle() reads perf_event_clock() for the body, then
    // __perf_event_header__init_id() again for the trailer.
    EXPECT_GE(*r->record.sample_id->time, t.time) << "the trailer's time is read after the body's";
    EXPECT_EQ(r->record.sample_id->identifier, id);
    EXPECT_EQ(r->record.sample_id->pid, static_cast<uint32_t>(self.pid)) << "logged in the task's context";
  }
  // The sample that tripped the limit follows its THROTTLE. Since Linux 6.3
  // its time was taken before: perf_prepare_sample() fills data->time once
  // per firing and every overflow of the firing shares it (bb447c27a467
  // "perf/core: Set data->sample_flags in perf_prepare_sample()": fields
  // already in data->sample_flags are not computed again). Before, every
  // overflow's perf_prepare_sample() -> __perf_event_header__init_id() read
  // perf_event_clock() anew, after perf_log_throttle() had read it.
  const bool time_per_overflow = KernelBefore(backend(), 6, 3);
  for (size_t i = 0; i + 1 < recs.size(); ++i) {
    if (recs[i].record.header.type != PERF_RECORD_THROTTLE) continue;
    ASSERT_EQ(recs[i + 1].record.header.type, PERF_RECORD_SAMPLE);
    const uint64_t sample_time = *std::get<SampleRecord>(recs[i + 1].record.body).time;
    const uint64_t throttle_time = std::get<ThrottleRecord>(recs[i].record.body).time;
    if (time_per_overflow) {
      EXPECT_GE(sample_time, throttle_time)
          << "Linux " << RunningKernelVersionString(backend()) << " (before 6.3): the sample's time is read after";
    } else {
      EXPECT_LE(sample_time, throttle_time) << "the firing's time, read before the THROTTLE";
    }
  }
}

PERFTEST_CASE(Records, SampleIdAllOnEveryType, "records.sample_id_all_each_type",
              "<linux/perf_event.h> attr.sample_id_all, struct sample_id; core.c __perf_event_header__init_id() "
              "on MMAP, MMAP2, COMM, FORK, EXIT, SWITCH, NAMESPACES") {
  perf_event_attr a = SideBand();
  a.sample_type = kIdAll;
  a.sample_id_all = 1;
  a.mmap2 = a.mmap_data = a.comm = a.task = a.context_switch = a.inherit = 1;
  a.namespaces = 1;
  PERFTEST_ASSIGN_OR_SKIP(Event probe, Event::Open(backend(), a), "attr.namespaces");
  ASSERT_OK(probe.Close());
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(CollectPerCpu(a,
                                        {Workload::SetComm("perftest-sid"), Workload::MmapExec(1),
                                         Workload::TouchPages(1), Workload::Fork(1), Workload::Sleep(1, 1ms)},
                                        &recs, &w, &ids));
  const TaskId self = backend().CurrentTask();
  std::set<uint32_t> types;
  for (const ParsedRecord& r : recs) {
    SCOPED_TRACE(RecordTypeName(r.record.header.type));
    types.insert(r.record.header.type);
    ASSERT_TRUE(r.record.sample_id.has_value());
    const SampleId& s = *r.record.sample_id;
    ASSERT_TRUE(s.identifier.has_value());
    const auto it = std::find(ids.begin(), ids.end(), *s.identifier);
    ASSERT_NE(it, ids.end()) << "the last u64 of every record is the id of the event (of that CPU)";
    EXPECT_EQ(s.id, *s.identifier);
    EXPECT_EQ(*s.cpu, static_cast<uint32_t>(it - ids.begin())) << "the CPU of the event that wrote it";
    EXPECT_EQ(s.res, 0u);
    const uint32_t t = r.record.header.type;
    if (t != PERF_RECORD_EXIT && t != PERF_RECORD_SWITCH) {
      EXPECT_EQ(s.pid, static_cast<uint32_t>(self.pid)) << "the task the record was written from";
    }
    EXPECT_NE(s.stream_id, 0u);
    if (s.pid != static_cast<uint32_t>(self.pid)) {
      // The child's own records (its SWITCHes, its EXIT) go through its
      // inherited events: current is the child.
      EXPECT_EQ(s.pid, static_cast<uint32_t>(w[3].children.at(0)));
    }
  }
  for (uint32_t t : {PERF_RECORD_MMAP2, PERF_RECORD_COMM, PERF_RECORD_FORK, PERF_RECORD_EXIT, PERF_RECORD_SWITCH,
                     PERF_RECORD_NAMESPACES}) {
    EXPECT_TRUE(types.count(t)) << RecordTypeName(t);
  }
}

PERFTEST_CASE(Records, ExitTrailerNamesTheChild, "records.exit_sample_id",
              "core.c perf_event_task_output(): the EXIT record is written in the exiting child's context") {
  perf_event_attr a = SideBand();
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID;
  a.sample_id_all = 1;
  a.task = a.inherit = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(CollectPerCpu(a, {Workload::Fork(1)}, &recs, &w, &ids));
  std::vector<const ParsedRecord*> exits = OfType(recs, PERF_RECORD_EXIT);
  ASSERT_EQ(exits.size(), 1u);
  const SampleId& s = *exits[0]->record.sample_id;
  EXPECT_EQ(s.pid, static_cast<uint32_t>(w[0].children[0])) << "current is the exiting child";
  EXPECT_THAT(ids, ::testing::Contains(*s.id)) << "id: primary_event_id(), the parent's";
  // stream_id is event->id of the event that wrote it: on Linux 6.18 usually
  // the parent's own (same as id), sometimes the inherited child event's;
  // either way it is not 0.
  EXPECT_NE(s.stream_id, 0u);
  std::vector<const ParsedRecord*> forks = OfType(recs, PERF_RECORD_FORK);
  ASSERT_EQ(forks.size(), 1u);
  EXPECT_EQ(forks[0]->record.sample_id->pid, static_cast<uint32_t>(backend().CurrentTask().pid))
      << "FORK is written by the parent";
}

PERFTEST_CASE(Records, NoTrailerWithoutSampleIdAll, "records.no_sample_id_all",
              "<linux/perf_event.h> attr.sample_id_all = 0: records end after their own fields") {
  perf_event_attr a = SideBand();
  a.sample_type = kIdAll;  // only affects samples when sample_id_all is off
  a.comm = a.task = a.mmap = 1;
  std::vector<ParsedRecord> recs;
  std::vector<WorkloadResult> w;
  ASSERT_NO_FATAL_FAILURE(
      Collect(a, {Workload::SetComm("perftest-nt"), Workload::MmapExec(1), Workload::Fork(1)}, &recs, &w));
  ASSERT_GE(recs.size(), 3u);
  for (const ParsedRecord& r : recs) {
    SCOPED_TRACE(RecordTypeName(r.record.header.type));
    EXPECT_FALSE(r.record.sample_id.has_value());
    if (r.record.header.type == PERF_RECORD_COMM) {
      EXPECT_EQ(r.record.header.size, 8u + 8 + Padded("perftest-nt"));
    } else if (r.record.header.type == PERF_RECORD_FORK) {
      EXPECT_EQ(r.record.header.size, 32u);
    }
  }
}

}  // namespace
}  // namespace perftest
