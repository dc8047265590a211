// Conformance suite: sampling — the layout of every PERF_RECORD_SAMPLE field
// this machine can produce (IP, TID, TIME, ADDR, ID, STREAM_ID, CPU,
// IDENTIFIER, PERIOD, READ, RAW, REGS_USER, STACK_USER, REGS_INTR, WEIGHT,
// DATA_SRC, TRANSACTION, PHYS_ADDR, *_PAGE_SIZE, CGROUP) and sample_id_all.
// References: <linux/perf_event.h> PERF_RECORD_SAMPLE; core.c
// perf_prepare_sample(), perf_output_sample().
#include "suites/common/kernel_version.h"
#include "suites/sampling/sampling_fixture.h"

namespace perftest::sampling_test {
namespace {

using namespace std::chrono_literals;

// ----------------------------------------------------------- field layouts

PERFTEST_CASE(Sampling, IpTidLayout, "sampling.field_ip_tid",
              "<linux/perf_event.h> PERF_SAMPLE_IP, PERF_SAMPLE_TID: { u64 ip; u32 pid, tid; }") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_IP | PERF_SAMPLE_TID, &c));
  const TaskId self = backend().CurrentTask();
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 8u + 8 + 8);
    EXPECT_EQ(r->record.header.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
    const auto& s = std::get<SampleRecord>(r->record.body);
    EXPECT_NE(*s.ip, 0u);
    EXPECT_LT(*s.ip, UserAddressLimit(backend().Machine().arch)) << "a user-space address";
    EXPECT_EQ(*s.pid, static_cast<uint32_t>(self.pid));
    EXPECT_EQ(*s.tid, static_cast<uint32_t>(self.tid));
  }
}

PERFTEST_CASE(Sampling, TimeAddrLayout, "sampling.field_time_addr",
              "<linux/perf_event.h> PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR; core.c perf_swevent_event() data->addr") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR, &c, 24));
  std::set<uint64_t> pages;
  uint64_t last = 0;
  for (const SampleRecord* s : c.samples) {
    EXPECT_GE(*s->time, last);
    last = *s->time;
    if (*s->addr >= c.work.region_begin && *s->addr < c.work.region_end) pages.insert(*s->addr / page());
  }
  EXPECT_EQ(pages.size(), 24u) << "PERF_SAMPLE_ADDR is the faulting address of each touched page";
}

PERFTEST_CASE(Sampling, IdStreamIdCpuLayout, "sampling.field_id_stream_cpu",
              "<linux/perf_event.h> PERF_SAMPLE_ID, STREAM_ID, CPU: { u64 id; u64 stream_id; u32 cpu, res; }") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU, &c));
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 8u + 3 * 8);
    const auto& s = std::get<SampleRecord>(r->record.body);
    EXPECT_EQ(*s.id, c.id);
    EXPECT_EQ(*s.stream_id, c.id) << "not inherited: stream_id is the event's own id";
    EXPECT_LT(*s.cpu, static_cast<uint32_t>(backend().Machine().ncpus));
    EXPECT_EQ(*s.res, 0u);
  }
}

PERFTEST_CASE(Sampling, IdentifierIsFirst, "sampling.field_identifier",
              "<linux/perf_event.h> PERF_SAMPLE_IDENTIFIER: the id at a fixed position, first in a sample") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_ID, &c));
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    const auto& s = std::get<SampleRecord>(r->record.body);
    EXPECT_EQ(*s.identifier, c.id);
    EXPECT_EQ(*s.id, c.id);
  }
  // The position does not depend on the rest of sample_type: the first u64 of the body.
  Capture d;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME, &d));
  for (const SampleRecord* s : d.samples) EXPECT_EQ(*s->identifier, d.id);
}

PERFTEST_CASE(Sampling, PeriodLayout, "sampling.field_period",
              "<linux/perf_event.h> PERF_SAMPLE_PERIOD; core.c perf_swevent_event() data->period") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_PERIOD, &c));
  for (const SampleRecord* s : c.samples) EXPECT_EQ(*s->period, 1u);
  EXPECT_EQ(c.samples.size(), c.count);
}

PERFTEST_CASE(Sampling, ReadEachFormat, "sampling.field_read",
              "<linux/perf_event.h> PERF_SAMPLE_READ with read_format; core.c perf_output_read_one()") {
  const uint64_t all = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID | PERF_FORMAT_LOST;
  for (uint64_t rf = 0; rf <= all; ++rf) {
    if (rf & ~all) continue;
    SCOPED_TRACE(DescribeReadFormat(rf));
    perf_event_attr a = Faults(PERF_SAMPLE_READ);
    a.read_format = rf;
    Capture c;
    ASSERT_NO_FATAL_FAILURE(Run(a, Workload::TouchPages(4), &c, 8));
    ASSERT_FALSE(c.samples.empty());
    uint64_t last = 0;
    for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
      EXPECT_EQ(r->record.header.size, 8 + ReadFormatSize(rf));
      const ReadValues& v = *std::get<SampleRecord>(r->record.body).read;
      ASSERT_EQ(v.counters.size(), 1u);
      EXPECT_GT(v.counters[0].value, last) << "the count at each sample grows";
      last = v.counters[0].value;
      EXPECT_EQ(v.time_enabled.has_value(), (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) != 0);
      EXPECT_EQ(v.time_running.has_value(), (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) != 0);
      if (rf & PERF_FORMAT_ID) {
        EXPECT_EQ(v.counters[0].id, c.id);
      }
      if (rf & PERF_FORMAT_LOST) {
        EXPECT_EQ(v.counters[0].lost, 0u);
      }
    }
  }
}

PERFTEST_CASE(Sampling, ReadGroup, "sampling.field_read_group",
              "<linux/perf_event.h> PERF_SAMPLE_READ + PERF_FORMAT_GROUP; core.c perf_output_read_group()") {
  perf_event_attr leader = Faults(PERF_SAMPLE_READ | PERF_SAMPLE_ID);
  leader.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED;
  perf_event_attr member = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS_MIN);
  member.exclude_kernel = member.exclude_hv = 1;
  member.disabled = 0;
  member.read_format = leader.read_format;
  ASSERT_OK_AND_ASSIGN(Group g, Group::Open(backend(), leader, {member}));
  ASSERT_OK_AND_ASSIGN(const uint64_t leader_id, g.leader().Id());
  ASSERT_OK_AND_ASSIGN(const uint64_t member_id, g.member(0).Id());
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), g.leader().fd(), 16));
  ASSERT_OK(g.leader().Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(8)));
  ASSERT_OK(g.leader().Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(leader), true));
  ASSERT_GE(SamplesOf(recs).size(), 8u);
  for (const ParsedRecord* r : OfType(recs, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 8 + 8 + ReadFormatSize(leader.read_format, 2));
    const auto& s = std::get<SampleRecord>(r->record.body);
    EXPECT_EQ(*s.id, leader_id);
    ASSERT_EQ(s.read->counters.size(), 2u) << "nr = leader + 1 member";
    EXPECT_EQ(s.read->counters[0].id, leader_id);
    EXPECT_EQ(s.read->counters[1].id, member_id);
    EXPECT_GT(s.read->counters[0].value, 0u);
    EXPECT_TRUE(s.read->time_enabled.has_value());
  }
}

PERFTEST_CASE(Sampling, RawTracepoint, "sampling.field_raw_tracepoint",
              "<linux/perf_event.h> PERF_SAMPLE_RAW: { u32 size; char data[size]; } ending on 8 bytes; "
              "kernel/trace/trace_event_perf.c perf_trace_buf_alloc()") {
  PERFTEST_ASSIGN_OR_SKIP(const uint64_t tp, backend().TracepointId("syscalls", "sys_enter_getpid"),
                          "no syscalls:sys_enter_getpid tracepoint");
  const std::optional<int64_t> getpid_nr = GetpidSyscallNr(backend().Machine().arch);
  if (!getpid_nr) {
    PERFTEST_SKIP(SkipClass::kUnsupported, "getpid's system call number on " + backend().Machine().arch +
                                               " is not known to suites/common/arch.h");
  }
  perf_event_attr a = MakeAttr(PERF_TYPE_TRACEPOINT, tp);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
  Capture c;
  ASSERT_NO_FATAL_FAILURE(Run(a, Workload::Syscalls(8), &c));
  ASSERT_EQ(c.samples.size(), c.count);
  ASSERT_GE(c.samples.size(), 8u);
  const TaskId self = backend().CurrentTask();
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    const auto& s = std::get<SampleRecord>(r->record.body);
    const std::vector<std::byte>& raw = *s.raw;
    EXPECT_EQ((4 + raw.size()) % 8, 0u) << "u32 size + data end on a u64 boundary";
    EXPECT_EQ(r->record.header.size, 8u + 8 + 4 + raw.size());
    ASSERT_GE(raw.size(), 16u);
    uint16_t common_type;
    int32_t common_pid;
    int64_t nr;
    std::memcpy(&common_type, raw.data(), 2);
    std::memcpy(&common_pid, raw.data() + 4, 4);
    std::memcpy(&nr, raw.data() + 8, 8);
    EXPECT_EQ(common_type, tp) << "the entry's common_type is the tracepoint id";
    EXPECT_EQ(common_pid, self.tid);
    EXPECT_EQ(nr & 0xffffffff, *getpid_nr) << "__syscall_nr of getpid on " << backend().Machine().arch;
  }
}

PERFTEST_CASE(Sampling, RawSoftwareEvent, "sampling.field_raw_software",
              "core.c perf_output_sample(): no raw data gives { u32 size = 4; u32 0; }") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_RAW, &c, 4));
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 16u);
    const auto& raw = *std::get<SampleRecord>(r->record.body).raw;
    ASSERT_EQ(raw.size(), 4u);
    EXPECT_EQ(std::count(raw.begin(), raw.end(), std::byte{0}), 4);
  }
}

PERFTEST_CASE(Sampling, RegsUserLayout, "sampling.field_regs_user",
              "<linux/perf_event.h> PERF_SAMPLE_REGS_USER: { u64 abi; u64 regs[hweight64(mask)]; }; "
              "arch/x86/include/uapi/asm/perf_regs.h") {
  if (!X86()) PERFTEST_SKIP(SkipClass::kUnsupported, "the register mask checked here is x86_64's");
  perf_event_attr a = Faults(PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER);
  a.sample_regs_user = kRegsMask;
  Capture c;
  ASSERT_NO_FATAL_FAILURE(Run(a, Workload::TouchPages(8), &c));
  ASSERT_FALSE(c.samples.empty());
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 8u + 8 + 8 + 8 * std::popcount(kRegsMask));
    const auto& s = std::get<SampleRecord>(r->record.body);
    EXPECT_EQ(s.regs_user->abi, uint64_t{PERF_SAMPLE_REGS_ABI_64});
    ASSERT_EQ(s.regs_user->regs.size(), 9u);
    EXPECT_EQ(s.regs_user->regs[kRegIp], *s.ip) << "PERF_REG_X86_IP of a user fault is the sampled ip";
    EXPECT_LT(s.regs_user->regs[kRegSp], UserAddressLimit(backend().Machine().arch));
    EXPECT_NE(s.regs_user->regs[kRegSp], 0u);
  }
  a.sample_regs_user = uint64_t{1} << 12;  // PERF_REG_X86_DS: not sampled on x86_64
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL)) << "perf_reg_validate()";
}

PERFTEST_CASE(Sampling, StackUserLayout, "sampling.field_stack_user",
              "<linux/perf_event.h> PERF_SAMPLE_STACK_USER: { u64 size; char data[size]; u64 dyn_size; }; "
              "core.c perf_output_sample_ustack()") {
  perf_event_attr a = Faults(PERF_SAMPLE_STACK_USER);
  a.sample_stack_user = 512;
  Capture c;
  ASSERT_NO_FATAL_FAILURE(Run(a, Workload::TouchPages(4), &c));
  ASSERT_FALSE(c.samples.empty());
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 8u + 8 + 512 + 8);
    const auto& su = *std::get<SampleRecord>(r->record.body).stack_user;
    EXPECT_EQ(su.data.size(), 512u);
    EXPECT_GT(su.dyn_size, 0u);
    EXPECT_LE(su.dyn_size, 512u);
  }
  a.sample_stack_user = 500;
  EXPECT_THAT(Event::Open(backend(), a), FailsWithErrno(EINVAL)) << "perf_copy_attr(): size must be u64 aligned";
}

PERFTEST_CASE(Sampling, RegsIntrLayout, "sampling.field_regs_intr",
              "<linux/perf_event.h> PERF_SAMPLE_REGS_INTR; core.c perf_sample_regs_intr()") {
  if (!X86()) PERFTEST_SKIP(SkipClass::kUnsupported, "the register mask checked here is x86_64's");
  perf_event_attr a = Faults(PERF_SAMPLE_IP | PERF_SAMPLE_REGS_INTR);
  a.sample_regs_intr = kRegsMask;
  Capture c;
  ASSERT_NO_FATAL_FAILURE(Run(a, Workload::TouchPages(4), &c));
  ASSERT_FALSE(c.samples.empty());
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 8u + 8 + 8 + 8 * 9);
    const auto& s = std::get<SampleRecord>(r->record.body);
    EXPECT_EQ(s.regs_intr->abi, uint64_t{PERF_SAMPLE_REGS_ABI_64});
    EXPECT_EQ(s.regs_intr->regs[kRegIp], *s.ip) << "the regs the event fired with";
  }
}

PERFTEST_CASE(Sampling, MemoryFieldsOfSoftwareEvent, "sampling.field_weight_data_src_txn",
              "<linux/perf_event.h> PERF_SAMPLE_WEIGHT, WEIGHT_STRUCT, DATA_SRC, TRANSACTION; "
              "core.c perf_prepare_sample() defaults (0, PERF_MEM_NA, 0); include/linux/perf_event.h PERF_MEM_NA "
              "(with PERF_MEM_LVLNUM_NA since 6.6, 5c6e623f1b8e)") {
  uint64_t mem_na = (uint64_t{PERF_MEM_OP_NA} << PERF_MEM_OP_SHIFT) |
                    (uint64_t{PERF_MEM_LVL_NA} << PERF_MEM_LVL_SHIFT) |
                    (uint64_t{PERF_MEM_SNOOP_NA} << PERF_MEM_SNOOP_SHIFT) |
                    (uint64_t{PERF_MEM_LOCK_NA} << PERF_MEM_LOCK_SHIFT) |
                    (uint64_t{PERF_MEM_TLB_NA} << PERF_MEM_TLB_SHIFT);
  // 5c6e623f1b8e ("perf/mem: Add PERF_MEM_LVLNUM_NA to PERF_MEM_NA", Linux
  // 6.6) added the level number to the default; before, mem_lvl_num was 0.
  if (!KernelBefore(backend(), 6, 6)) mem_na |= uint64_t{PERF_MEM_LVLNUM_NA} << PERF_MEM_LVLNUM_SHIFT;
  for (uint64_t weight : {uint64_t{PERF_SAMPLE_WEIGHT}, uint64_t{PERF_SAMPLE_WEIGHT_STRUCT}}) {
    Capture c;
    ASSERT_NO_FATAL_FAILURE(
        RunFaults(weight | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION, &c, 4));
    for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
      EXPECT_EQ(r->record.header.size, 8u + 3 * 8);
      const auto& s = std::get<SampleRecord>(r->record.body);
      EXPECT_EQ(*s.weight, 0u);
      EXPECT_EQ(*s.data_src, mem_na);
      EXPECT_EQ(*s.transaction, 0u);
    }
  }
  perf_event_attr both = Faults(PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT);
  EXPECT_THAT(Event::Open(backend(), both), FailsWithErrno(EINVAL)) << "WEIGHT and WEIGHT_STRUCT are exclusive";
}

PERFTEST_CASE(Sampling, AddressFieldsOfPageFault, "sampling.field_phys_addr_page_size",
              "<linux/perf_event.h> PERF_SAMPLE_PHYS_ADDR, DATA_PAGE_SIZE, CODE_PAGE_SIZE; "
              "core.c perf_virt_to_phys(), perf_get_page_size()") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_DATA_PAGE_SIZE |
                                        PERF_SAMPLE_CODE_PAGE_SIZE,
                                    &c, 8));
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 8u + 4 * 8);
    const auto& s = std::get<SampleRecord>(r->record.body);
    if (*s.addr < c.work.region_begin || *s.addr >= c.work.region_end) continue;
    // The event fires before the fault is handled: the page is not mapped yet.
    EXPECT_EQ(*s.phys_addr, 0u) << "no physical page behind the faulting address yet";
    EXPECT_EQ(*s.data_page_size, 0u) << "no page table entry yet";
    EXPECT_EQ(*s.code_page_size, page()) << "the code runs from an ordinary page";
  }
}

PERFTEST_CASE(Sampling, CgroupField, "sampling.field_cgroup",
              "<linux/perf_event.h> PERF_SAMPLE_CGROUP: the cgroup id (kernfs node id) of the task") {
  Capture c;
  ASSERT_NO_FATAL_FAILURE(RunFaults(PERF_SAMPLE_CGROUP, &c, 4));
  std::set<uint64_t> ids;
  for (const ParsedRecord* r : OfType(c.records, PERF_RECORD_SAMPLE)) {
    EXPECT_EQ(r->record.header.size, 16u);
    ids.insert(*std::get<SampleRecord>(r->record.body).cgroup);
  }
  ASSERT_EQ(ids.size(), 1u) << "one task, one cgroup";
  EXPECT_NE(*ids.begin(), 0u);
}

PERFTEST_CASE(Sampling, AllSoftwareFieldsTogether, "sampling.field_all_software",
              "<linux/perf_event.h> PERF_RECORD_SAMPLE field order; core.c perf_output_sample()") {
  uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ |
                PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT |
                PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP |
                PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE;
  perf_event_attr a = Faults(st);
  if (X86()) {
    a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_REGS_INTR;
    a.sample_regs_user = a.sample_regs_intr = kRegsMask;
  }
  a.sample_stack_user = 64;
  a.read_format = PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED;
  Capture c;
  ASSERT_NO_FATAL_FAILURE(Run(a, Workload::TouchPages(8), &c));
  ASSERT_GE(c.samples.size(), 8u) << "every record parsed with no byte left over";
  for (const SampleRecord* s : c.samples) {
    EXPECT_EQ(*s->identifier, c.id);
    EXPECT_EQ(*s->id, c.id);
    EXPECT_EQ(s->read->counters.at(0).id, c.id);
    EXPECT_EQ(s->stack_user->data.size(), 64u);
    EXPECT_EQ(s->callchain->front(), static_cast<uint64_t>(PERF_CONTEXT_USER));
    if (X86()) {
      EXPECT_EQ(s->regs_user->regs.at(kRegIp), *s->ip);
    }
  }
}

// ----------------------------------------------------------- sample_id_all

PERFTEST_CASE(Sampling, SampleIdAllDoesNotChangeSamples, "sampling.sample_id_all_samples",
              "<linux/perf_event.h> attr.sample_id_all: a trailer for non-sample records only") {
  const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER;
  perf_event_attr a = Faults(st);
  a.sample_id_all = 1;
  a.comm = 1;
  ASSERT_OK_AND_ASSIGN(Event ev, Event::Open(backend(), a));
  ASSERT_OK_AND_ASSIGN(const uint64_t id, ev.Id());
  ASSERT_OK_AND_ASSIGN(perftest::RingBuffer rb, perftest::RingBuffer::Map(backend(), ev.fd(), 16));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(backend().RunWorkload(Workload::TouchPages(4)));
  ASSERT_OK(backend().RunWorkload(Workload::SetComm("perftest-sid")));
  ASSERT_OK(ev.Disable());
  ASSERT_OK_AND_ASSIGN(std::vector<ParsedRecord> recs, DrainRecords(rb, SampleLayout::FromAttr(a), true));
  bool comm = false;
  for (const ParsedRecord& r : recs) {
    if (r.record.header.type == PERF_RECORD_SAMPLE) {
      EXPECT_EQ(r.record.header.size, 8u + 4 * 8) << "no trailer on samples";
    } else if (r.record.header.type == PERF_RECORD_COMM) {
      comm = true;
      // The IDENTIFIER is the last u64 of the trailer: a reader finds it from the end.
      ASSERT_TRUE(r.record.sample_id.has_value());
      EXPECT_EQ(r.record.sample_id->identifier, id);
      const size_t body = 8 + 8 + 16;  // header, pid/tid, "perftest-sid\0" padded to 16
      EXPECT_EQ(r.record.header.size, body + 3 * 8) << "trailer {pid, tid}, time, identifier";
    }
  }
  EXPECT_TRUE(comm);
  (void)st;
}

}  // namespace
}  // namespace perftest::sampling_test
