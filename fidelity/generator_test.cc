#include "fidelity/generator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <set>
#include <variant>

#include "fidelity/call.h"
#include "fidelity/rng.h"

namespace perftest::fidelity {
namespace {

// A host like the development VM: software, tracepoint, breakpoint, msr; no hardware PMU.
GeneratorParams VmParams() {
  GeneratorParams p;
  p.pmus = {{"tracepoint", 2}, {"breakpoint", 5}, {"msr", 9}};
  p.generate_hardware_types = true;
  p.tracepoint_ids = {300, 301};
  return p;
}

// 10,000 attrs (the "at least 10,000 seeded random attrs").
std::vector<OpenCall> TenThousandOpens(const GeneratorParams& p) {
  std::vector<OpenCall> out;
  Rng rng(7);
  for (int i = 0; i < 10000; ++i) out.push_back(GenerateOpen(rng, p, i % 3));
  return out;
}

TEST(Generator, SameSeedSameSequence) {
  const GeneratorParams p = VmParams();
  for (uint64_t i = 0; i < 200; ++i) {
    const uint64_t seed = SequenceSeed(1, i);
    const Sequence a = GenerateSequence(seed, p);
    const Sequence b = GenerateSequence(seed, p);
    ASSERT_EQ(a.calls.size(), b.calls.size());
    for (size_t j = 0; j < a.calls.size(); ++j) {
      EXPECT_EQ(DescribeCall(a.calls[j]), DescribeCall(b.calls[j]));
      if (const auto* oa = std::get_if<OpenCall>(&a.calls[j])) {
        const auto& ob = std::get<OpenCall>(b.calls[j]);
        EXPECT_EQ(std::memcmp(&oa->attr, &ob.attr, sizeof oa->attr), 0);
        EXPECT_EQ(oa->tail, ob.tail);
      }
    }
  }
}

TEST(Generator, DifferentSeedsDifferentSequences) {
  const GeneratorParams p = VmParams();
  std::set<std::string> firsts;
  for (uint64_t i = 0; i < 100; ++i) firsts.insert(DescribeCall(GenerateSequence(SequenceSeed(1, i), p).calls[0]));
  EXPECT_GT(firsts.size(), 95u);
  EXPECT_NE(SequenceSeed(1, 0), SequenceSeed(2, 0));
  EXPECT_NE(SequenceSeed(1, 0), SequenceSeed(1, 1));
}

// A fixed seed gives a fixed value on every platform: the generator's output
// is part of the report's reproducibility (--replay=SEED).
TEST(Generator, RngIsPlatformIndependent) {
  Rng r(0);
  EXPECT_EQ(r.Next(), 0xe220a8397b1dcdafull);  // SplitMix64's published first output for seed 0
  EXPECT_EQ(SequenceSeed(1, 0), SequenceSeed(1, 0));
}

TEST(Generator, EverySequenceStartsWithAnOpen) {
  const GeneratorParams p = VmParams();
  for (uint64_t i = 0; i < 500; ++i) {
    const Sequence s = GenerateSequence(SequenceSeed(3, i), p);
    ASSERT_FALSE(s.calls.empty());
    EXPECT_TRUE(std::holds_alternative<OpenCall>(s.calls[0]));
  }
}

// Every bit of every field of perf_event_attr is set, and clear, at least once in 10,000 attrs.
TEST(Generator, CoversEveryBitOfEveryAttrField) {
  std::vector<FieldCoverage> cov = NewCoverage();
  for (const OpenCall& c : TenThousandOpens(VmParams())) AddCoverage(c.attr, &cov);
  size_t bits = 0;
  for (const FieldCoverage& f : cov) {
    EXPECT_EQ(f.never_set(), 0u) << f.field << ": bits never set";
    EXPECT_EQ(f.never_clear(), 0u) << f.field << ": bits never clear";
    bits += f.bits;
  }
  EXPECT_EQ(bits, 8 * sizeof(perf_event_attr));
}

TEST(Generator, CoversEveryAttrSizeClass) {
  const GeneratorParams p = VmParams();
  bool zero = false, too_small = false, at_sizeof = false, past_page = false, zero_tail = false, nonzero_tail = false,
       kernel_136_nonzero = false, odd = false;
  std::set<uint32_t> versions;
  for (const OpenCall& c : TenThousandOpens(p)) {
    const uint32_t s = c.attr.size;
    zero |= s == 0;
    too_small |= s > 0 && s < PERF_ATTR_SIZE_VER0;
    at_sizeof |= s == sizeof(perf_event_attr);
    past_page |= s > p.page_size;
    odd |= s > PERF_ATTR_SIZE_VER0 && s % 8 != 0;
    if (s % 8 == 0 && s >= PERF_ATTR_SIZE_VER0 && s <= 136) versions.insert(s);
    if (s > sizeof(perf_event_attr) && s <= p.page_size) {
      ASSERT_EQ(c.tail.size(), s - sizeof(perf_event_attr));
      bool nz = false;
      for (size_t i = 0; i < c.tail.size(); ++i) {
        if (c.tail[i] != 0) {
          nz = true;
          if (s == 136) kernel_136_nonzero = true;
        }
      }
      (nz ? nonzero_tail : zero_tail) = true;
    } else {
      EXPECT_TRUE(c.tail.empty());
    }
  }
  EXPECT_TRUE(zero && too_small && at_sizeof && past_page && zero_tail && nonzero_tail && odd);
  EXPECT_TRUE(kernel_136_nonzero) << "config3 (bytes 128..135 on Linux 6.3+) never set through the tail";
  for (uint32_t v : {64u, 72u, 80u, 96u, 104u, 112u, 120u, 128u, 136u}) EXPECT_TRUE(versions.count(v)) << v;
}

TEST(Generator, CoversTheArgumentsOfPerfEventOpen) {
  std::set<PidArg> pids;
  std::set<CpuArg> cpus;
  std::set<FdArg> groups;
  uint64_t flags_seen = 0;
  bool unknown_flag = false, freq_over_max = false, sigtrap_ok = false, sigtrap_bad = false, clock_bad = false;
  std::set<unsigned> precise;
  const GeneratorParams p = VmParams();
  for (const OpenCall& c : TenThousandOpens(p)) {
    pids.insert(c.pid);
    cpus.insert(c.cpu);
    groups.insert(c.group.kind);
    flags_seen |= c.flags & 0xf;
    unknown_flag |= (c.flags & ~uint64_t{0xf}) != 0;
    freq_over_max |= c.attr.freq && c.attr.sample_freq > p.max_sample_rate;
    precise.insert(c.attr.precise_ip);
    sigtrap_ok |= c.attr.sigtrap && c.attr.remove_on_exec;
    sigtrap_bad |= c.attr.sigtrap && !c.attr.remove_on_exec;
    clock_bad |= c.attr.use_clockid && c.attr.clockid == CLOCK_PROCESS_CPUTIME_ID;
  }
  EXPECT_EQ(pids.size(), 5u);
  EXPECT_EQ(cpus.size(), 6u);
  EXPECT_EQ(groups.size(), 4u);
  EXPECT_EQ(flags_seen, 0xfu) << "every PERF_FLAG_*";
  EXPECT_TRUE(unknown_flag && freq_over_max && sigtrap_ok && sigtrap_bad && clock_bad);
  EXPECT_EQ(precise.size(), 4u);
}

TEST(Generator, CoversTheOperations) {
  std::set<std::string> ops;
  std::set<ReadLen> lens;
  std::set<int> prots;
  std::set<IoctlArg> ioctl_args;
  const GeneratorParams p = VmParams();
  for (uint64_t i = 0; i < 3000; ++i) {
    for (const Call& c : GenerateSequence(SequenceSeed(5, i), p).calls) {
      ops.insert(OpName(c));
      if (const auto* r = std::get_if<ReadCall>(&c)) lens.insert(r->len);
      if (const auto* m = std::get_if<MmapCall>(&c)) prots.insert(m->prot);
      if (const auto* io = std::get_if<IoctlCall>(&c)) ioctl_args.insert(io->arg);
    }
  }
  for (const char* op : {"perf_event_open", "read", "mmap", "munmap", "close", "fcntl(F_GETFD)", "fcntl(F_GETFL)", "poll",
                         "prctl(PR_TASK_PERF_EVENTS_ENABLE)", "prctl(PR_TASK_PERF_EVENTS_DISABLE)",
                         "ioctl(PERF_EVENT_IOC_ENABLE)", "ioctl(PERF_EVENT_IOC_DISABLE)", "ioctl(PERF_EVENT_IOC_RESET)",
                         "ioctl(PERF_EVENT_IOC_REFRESH)", "ioctl(PERF_EVENT_IOC_PERIOD)", "ioctl(PERF_EVENT_IOC_ID)",
                         "ioctl(PERF_EVENT_IOC_SET_OUTPUT)", "ioctl(PERF_EVENT_IOC_PAUSE_OUTPUT)",
                         "ioctl(PERF_EVENT_IOC_SET_FILTER)", "ioctl(PERF_EVENT_IOC_SET_BPF)",
                         "ioctl(PERF_EVENT_IOC_QUERY_BPF)", "ioctl(PERF_EVENT_IOC_MODIFY_ATTRIBUTES)", "ioctl(0x5401)"}) {
    EXPECT_TRUE(ops.count(op)) << op;
  }
  EXPECT_EQ(lens.size(), 5u);
  EXPECT_EQ(ioctl_args.size(), 9u);
  for (int prot : {PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_NONE, PROT_READ | PROT_EXEC}) {
    EXPECT_TRUE(prots.count(prot)) << prot;
  }
}

// Safety: never a PMU the host must not fuzz; breakpoints only on user addresses.
TEST(Generator, NeverGeneratesAvoidedTypes) {
  GeneratorParams p = VmParams();
  p.generate_hardware_types = false;
  p.avoid_types = {PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW, 8, 10};
  std::set<std::string> names;
  for (const OpenCall& c : TenThousandOpens(p)) {
    for (uint32_t t : p.avoid_types) {
      ASSERT_NE(c.attr.type, t);
    }
    if (c.attr.type == PERF_TYPE_BREAKPOINT) {
      EXPECT_LT(c.attr.bp_addr, uint64_t{1} << 47);
    }
    names.insert(PmuNameForType(c.attr.type, p));
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("software", "tracepoint", "breakpoint", "msr", "unlisted"));
}

// With a uprobe target file, some uprobe opens name it (config1) at an offset
// in or just past it; the others keep random path pointers; no other PMU's
// attr points at it.
TEST(Generator, UprobeOpensNameTheTargetFile) {
  static const char kPath[] = "/tmp/target";
  GeneratorParams p = VmParams();
  p.pmus.push_back({"uprobe", 8});
  p.uprobe_path = kPath;
  const auto target = reinterpret_cast<uintptr_t>(kPath);
  int uprobes = 0, named = 0;
  for (const OpenCall& c : TenThousandOpens(p)) {
    if (c.attr.type != 8) {
      EXPECT_NE(c.attr.config1, target);
      continue;
    }
    ++uprobes;
    if (c.attr.config1 != target) continue;
    ++named;
    EXPECT_LT(c.attr.config & 0xfffffffeu, 1u) << "config: retprobe bit 0 and ref_ctr_offset bits 32-63 only";
  }
  EXPECT_GT(uprobes, 100);
  EXPECT_GT(named, uprobes / 4);
  EXPECT_LT(named, uprobes);
}

TEST(Generator, HardwareTypesWhenTheHostHasNoHardwarePmu) {
  std::set<std::string> names;
  for (const OpenCall& c : TenThousandOpens(VmParams())) names.insert(PmuNameForType(c.attr.type, VmParams()));
  EXPECT_TRUE(names.count("hardware") && names.count("hw_cache") && names.count("raw"));
}

TEST(Generator, DescribeCallNamesWhatDescribeAttrLeavesOut) {
  OpenCall c;
  c.attr.type = PERF_TYPE_SOFTWARE;
  c.attr.size = 136;
  c.attr.bp_type = 3;
  c.attr.__reserved_2 = 1;
  c.tail = {0, 0, 0x5a, 0, 0, 0, 0, 0};
  c.pid = PidArg::kNonexistent;
  c.group = {FdArg::kEvent, 2};
  c.flags = PERF_FLAG_FD_CLOEXEC;
  const std::string d = DescribeCall(c);
  EXPECT_THAT(d, ::testing::HasSubstr("bp_type=0x3"));
  EXPECT_THAT(d, ::testing::HasSubstr("__reserved_2=0x1"));
  EXPECT_THAT(d, ::testing::HasSubstr("tail [130]=0x5a"));
  EXPECT_THAT(d, ::testing::HasSubstr("group_fd=event[2]"));
  EXPECT_THAT(d, ::testing::HasSubstr("flags=0x8"));
  EXPECT_THAT(d, ::testing::HasSubstr("(no such task)"));
}

}  // namespace
}  // namespace perftest::fidelity
