// Unit tests of perftest profile's parts, and its exact profile on the mock.
#include <gtest/gtest.h>

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "harness/workload.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"
#include "mocks/simulated_symbols.h"
#include "tools/profile/dwarf_unwinder.h"
#include "tools/profile/flamegraph.h"
#include "tools/profile/output.h"
#include "tools/profile/perf_data_output.h"
#include "harness/perf_data/features.h"
#include "harness/perf_data/writer.h"
#include "tools/profile/ring_sampler.h"
#include "tools/profile/stack_counts.h"
#include "tools/profile/symbolizer.h"

namespace perftest::profile {
namespace {

constexpr uint64_t kKernelMarker = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
constexpr uint64_t kUserMarker = static_cast<uint64_t>(PERF_CONTEXT_USER);

TEST(SplitCallchain, SplitsAtContextMarkers) {
  std::vector<uint64_t> chain{kKernelMarker, 0xffffffff81000010, 0xffffffff81000020, kUserMarker, 0x401000, 0x402000};
  SplitStack s = SplitCallchain(chain);
  EXPECT_TRUE(s.has_kernel);
  EXPECT_TRUE(s.has_user);
  EXPECT_EQ(s.kernel, (std::vector<uint64_t>{0xffffffff81000010, 0xffffffff81000020}));
  EXPECT_EQ(s.user, (std::vector<uint64_t>{0x401000, 0x402000}));
}

TEST(SplitCallchain, DropsGuestAndHypervisorParts) {
  std::vector<uint64_t> chain{static_cast<uint64_t>(PERF_CONTEXT_HV), 0x1234, kUserMarker, 0x401000};
  SplitStack s = SplitCallchain(chain);
  EXPECT_EQ(s.other_contexts, 1u);
  EXPECT_TRUE(s.kernel.empty());
  EXPECT_EQ(s.user, std::vector<uint64_t>{0x401000});
}

TEST(StackCounts, CountsPerStackAndSortsAscending) {
  StackCounts c;
  c.Add(7, "a", {0x1, 0x2}, {}, true, true, 3);
  c.Add(7, "a", {0x1, 0x2}, {}, true, true, 2);
  c.Add(8, "b", {0x3}, {0xffffffff81000000}, true, true, 1);
  auto v = c.SortedAscending();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].first.comm, "b");
  EXPECT_EQ(v[1].second, 5u);
  EXPECT_EQ(c.total(), 6u);
  EXPECT_EQ(c.missing(), 0u);
  EXPECT_EQ(MissingStacksWarning(c), "");
}

TEST(StackCounts, StackStorageSizeLimitsDistinctStacksLikeProfilePy) {
  StackCounts c(/*stack_storage_size=*/1);
  c.Add(7, "a", {0x1}, {}, true, true);
  c.Add(7, "a", {0x2}, {}, true, true);  // a second distinct user stack: does not fit
  EXPECT_EQ(c.missing(), 1u);
  EXPECT_TRUE(c.storage_full());
  EXPECT_EQ(MissingStacksWarning(c),
            "WARNING: 1 stack traces could not be displayed. Consider increasing --stack-storage-size.\n");
}

Symbolizer TableSymbolizer() {
  return Symbolizer([](uint64_t ip) -> std::optional<Frame> {
    const mock::SimulatedSymbol* s = mock::FindSimulatedSymbol(ip);
    if (!s) return std::nullopt;
    return Frame{std::string(s->name), ip - s->start, std::string(s->module), "", false};
  });
}

TEST(Output, FoldedAndTextLayoutsOfProfilePy) {
  Symbolizer sym = TableSymbolizer();
  StackCounts c;
  c.Add(4242, "perftest", {0x0000555555555b48, 0x0000555555555c64, 0x0000555555555e02},
        {0xffffffff81f3c1a2, 0xffffffff81f3c8d7}, true, true, 2);
  c.Add(4242, "perftest", {0x1}, {}, true, true, 1);  // an address no symbol covers
  OutputOptions d{.delimited = true};
  EXPECT_EQ(FormatFolded(Fold(c, sym, d)),
            "perftest;[unknown] 1\n"
            "perftest;main;run_workload;spin;-;schedule;__schedule 2\n");
  EXPECT_EQ(FormatFolded(Fold(c, sym, {})), "perftest;[unknown] 1\nperftest;main;run_workload;spin;schedule;__schedule 2\n");
  EXPECT_EQ(FormatFolded(Fold(c, sym, OutputOptions{.kernel_stacks_only = true})),
            "perftest 1\nperftest;schedule;__schedule 2\n");
  EXPECT_EQ(FormatText(c, sym, d),
            "    [unknown]\n"
            "    -                perftest (4242)\n"
            "        1\n\n"
            "    __schedule+0xa2\n"
            "    schedule+0x17\n"
            "    --\n"
            "    spin+0x48\n"
            "    run_workload+0x64\n"
            "    main+0x2\n"
            "    -                perftest (4242)\n"
            "        2\n\n");
}

TEST(FlameGraph, OneRectPerFrameWidthsProportional) {
  std::vector<FoldedStack> stacks{{{"hog", "main", "hot"}, 3}, {{"hog", "main", "cold"}, 1}};
  std::string svg = FlameGraphSvg(stacks, "t", FlameGraphOptions{.width = 420});
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // Root "hog" at the bottom (y 76 = height 96 - 16 - 4), callees above it.
  EXPECT_NE(svg.find("<title>hog (4 samples, 100.00%)</title><rect x=\"10.00\" y=\"76\" width=\"400.00\""),
            std::string::npos) << svg;
  // 400 px for 4 samples: cold (alphabetically first) 100 px, hot 300 px after it.
  EXPECT_NE(svg.find("<title>cold (1 samples, 25.00%)</title><rect x=\"10.00\" y=\"44\" width=\"100.00\""),
            std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>hot (3 samples, 75.00%)</title><rect x=\"110.00\" y=\"44\" width=\"300.00\""),
            std::string::npos) << svg;
}

// The whole ring-mode profiler on the mock: exact counts and stacks.
class MockProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<perftest::MockProfile> p = LoadProfile("software-only");
    ASSERT_TRUE(p.ok()) << p.ToString();
    backend_ = MakeMockBackend(std::move(*p));
  }
  RingSampler Sampler(SamplerOptions o) {
    return RingSampler(
        *backend_, o,
        [](pid_t pid, pid_t tid, uint32_t cpu) { return tid == 0 ? fmt::format("swapper/{}", cpu) : fmt::format("t{}", pid); },
        [](pid_t pid) { return pid == 0; });
  }
  std::unique_ptr<Backend> backend_;
};

TEST_F(MockProfile, SpinOneSecondAt49HzGivesExactProfile) {
  SamplerOptions o;
  RingSampler s = Sampler(o);
  ASSERT_TRUE(s.Open().ok());
  EXPECT_EQ(s.nr_events(), static_cast<size_t>(backend_->Machine().ncpus));
  ASSERT_TRUE(s.Enable().ok());
  ASSERT_TRUE(backend_->RunWorkload(Workload::Spin(std::chrono::seconds(1))).ok());
  ASSERT_TRUE(s.Disable().ok());
  s.Drain();
  Symbolizer sym = TableSymbolizer();
  EXPECT_EQ(FormatFolded(Fold(s.counts(), sym, OutputOptions{.delimited = true})),
            fmt::format("swapper/1;start_secondary;cpu_startup_entry;do_idle;default_idle_call;default_idle 49\n"
                        "t{};__libc_start_call_main;main;run_workload;spin 49\n",
                        kMockPid));
  EXPECT_EQ(s.lost(), 0u);
  EXPECT_EQ(s.malformed(), 0u);
}

TEST_F(MockProfile, UserThreadsOnlyDropsTheIdleTask) {
  SamplerOptions o;
  o.user_threads_only = true;
  RingSampler s = Sampler(o);
  ASSERT_TRUE(s.Open().ok());
  ASSERT_TRUE(s.Enable().ok());
  ASSERT_TRUE(backend_->RunWorkload(Workload::Spin(std::chrono::seconds(1))).ok());
  s.Drain();
  Symbolizer sym = TableSymbolizer();
  EXPECT_EQ(FormatFolded(Fold(s.counts(), sym, {})),
            fmt::format("t{};__libc_start_call_main;main;run_workload;spin 49\n", kMockPid));
}

// Every ip the mock puts in a callchain has a name in its simulated symbol
// table: spinning, touching pages, sleeping (kernel part through __schedule)
// and idle CPUs.
TEST_F(MockProfile, SimulatedSymbolTableNamesEveryCallchainIp) {
  SamplerOptions o;
  o.frequency = 1000;
  RingSampler s = Sampler(o);
  ASSERT_TRUE(s.Open().ok());
  ASSERT_TRUE(s.Enable().ok());
  ASSERT_TRUE(backend_->RunWorkload(Workload::Spin(std::chrono::milliseconds(50))).ok());
  ASSERT_TRUE(backend_->RunWorkload(Workload::TouchPages(64, std::chrono::milliseconds(1))).ok());
  ASSERT_TRUE(backend_->RunWorkload(Workload::Sleep(5, std::chrono::milliseconds(10))).ok());
  s.Drain();
  size_t kernel = 0, user = 0;
  for (const auto& [key, n] : s.counts().SortedAscending()) {
    for (uint64_t ip : key.kernel) {
      ++kernel;
      EXPECT_NE(mock::FindSimulatedSymbol(ip), nullptr) << fmt::format("kernel ip {:#x}", ip);
    }
    for (size_t i = 0; i < key.user.size(); ++i) {
      ++user;
      uint64_t ip = i ? key.user[i] - 1 : key.user[i];  // callers are looked up at the return address - 1
      EXPECT_NE(mock::FindSimulatedSymbol(ip), nullptr) << fmt::format("user ip {:#x}", key.user[i]);
    }
  }
  EXPECT_GT(kernel, 0u);
  EXPECT_GT(user, 0u);
}

// --- DwarfUnwinder on a stack copy taken here (no kernel needed) ---

TEST(DwarfUnwinder, NoUserRegistersGiveNoStack) {
  DwarfUnwinder u;
  SampleView::Regs regs;  // abi PERF_SAMPLE_REGS_ABI_NONE: a kernel thread's sample
  EXPECT_TRUE(u.Unwind(getpid(), getpid(), regs, SampleView::StackUser{}).empty());
}

TEST(DwarfUnwinder, RegistersOfAnotherMaskAreRefused) {
  if (DwarfUnwinder::SampleRegsUser() == 0) GTEST_SKIP() << "no DWARF unwinding for " << DwarfUnwinder::Arch();
  DwarfUnwinder u;
  const uint64_t three[3] = {1, 2, 3};
  SampleView::Regs regs;
  regs.abi = PERF_SAMPLE_REGS_ABI_64;
  regs.regs = U64Array(std::as_bytes(std::span<const uint64_t>(three)));
  EXPECT_TRUE(u.Unwind(getpid(), getpid(), regs, SampleView::StackUser{}).empty());
  EXPECT_NE(u.error().find("3 user registers in the sample"), std::string::npos) << u.error();
}

#if defined(__x86_64__)
// What PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER would hold for a
// sample taken in CaptureHere(): the registers (as the PERF_REG_X86_* in
// SampleRegsUser()'s mask) and 16 KiB of stack from the stack pointer.
struct Capture {
  std::vector<uint64_t> regs;
  std::vector<std::byte> stack;
};

__attribute__((noinline)) Capture CaptureHere() {
  uint64_t r[17];  // PERF_REG_X86 AX, BX, CX, DX, SI, DI, BP, SP, IP, R8..R15 (mask order)
  asm volatile(
      "mov %%rax, 0(%0)\n\tmov %%rbx, 8(%0)\n\tmov %%rcx, 16(%0)\n\tmov %%rdx, 24(%0)\n\t"
      "mov %%rsi, 32(%0)\n\tmov %%rdi, 40(%0)\n\tmov %%rbp, 48(%0)\n\tmov %%rsp, 56(%0)\n\t"
      "lea 0(%%rip), %%rax\n\tmov %%rax, 64(%0)\n\t"
      "mov %%r8, 72(%0)\n\tmov %%r9, 80(%0)\n\tmov %%r10, 88(%0)\n\tmov %%r11, 96(%0)\n\t"
      "mov %%r12, 104(%0)\n\tmov %%r13, 112(%0)\n\tmov %%r14, 120(%0)\n\tmov %%r15, 128(%0)\n\t"
      :
      : "r"(r)
      : "rax", "memory");
  Capture c;
  c.regs.assign(r, r + 17);
  // Up to 16 KiB, not past the end of the stack's mapping (the kernel's
  // perf_output_sample_ustack() stops there too).
  uint64_t end = r[7];
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  unsigned long lo = 0, hi = 0;
  char line[512];
  while (maps && std::fgets(line, sizeof line, maps)) {
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= r[7] && r[7] < hi) end = hi;
  }
  if (maps) std::fclose(maps);
  c.stack.resize(std::min<uint64_t>(16384, end - r[7]));
  std::memcpy(c.stack.data(), reinterpret_cast<const void*>(r[7]), c.stack.size());
  return c;
}

__attribute__((noinline)) Capture CallerOfCapture() {
  Capture c = CaptureHere();
  asm volatile("" ::: "memory");  // not a tail call
  return c;
}

TEST(DwarfUnwinder, UnwindsACopiedStackThroughItsCallers) {
  ASSERT_EQ(DwarfUnwinder::SampleRegsUser(), 0xff01ffull) << "the mask CaptureHere() lays its registers out for";
  const Capture c = CallerOfCapture();
  SampleView::Regs regs;
  regs.abi = PERF_SAMPLE_REGS_ABI_64;
  regs.regs = U64Array(std::as_bytes(std::span<const uint64_t>(c.regs)));
  SampleView::StackUser stack{c.stack, c.stack.size()};
  DwarfUnwinder u;
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  std::vector<uint64_t> ips = u.Unwind(getpid(), tid, regs, stack);
  ASSERT_GE(ips.size(), 3u) << u.error();
  EXPECT_EQ(ips[0], c.regs[8]) << "the first frame is the sampled ip";
  Symbolizer sym;
  std::vector<std::string> names;
  for (size_t i = 0; i < ips.size(); ++i) names.push_back(sym.User(getpid(), ips[i], i > 0).back().name);
  std::string all;
  for (const std::string& n : names) all += n + ";";
  ASSERT_GE(names.size(), 3u);
  EXPECT_NE(names[0].find("CaptureHere"), std::string::npos) << all;
  EXPECT_NE(names[1].find("CallerOfCapture"), std::string::npos) << all;
  EXPECT_NE(names[2].find("UnwindsACopiedStackThroughItsCallers"), std::string::npos) << all;
  EXPECT_NE(all.find(";main;"), std::string::npos) << "unwinds on through gtest to main: " << all;
  // A copy that ends inside CaptureHere's frame stops the unwinding there.
  SampleView::StackUser short_stack{stack.data, 8};
  EXPECT_LT(u.Unwind(getpid(), tid, regs, short_stack).size(), 3u);
}
#endif

// --- --format=perf.data: what the file holds, read back with harness/perf_data ---

TEST(PerfDataOutput, RecordsAndSynthesizedSideBandReadBack) {
  SamplerOptions o;
  o.sideband = true;
  const perf_event_attr attr = RingSampler::Attr(o);
  ASSERT_TRUE(attr.sample_type & PERF_SAMPLE_TIME) << "perf orders records by time";
  ASSERT_TRUE(attr.mmap2 && attr.task && attr.sample_id_all);
  PerfDataOutput out(attr, "cpu-clock");
  out.SynthesizeProcess(getpid());
  const SampleLayout layout = SampleLayout::FromAttr(attr);
  SampleRecord s{.ip = 0x401000, .pid = 7, .tid = 8, .time = 5000, .cpu = 1, .res = 0,
                 .callchain = std::vector<uint64_t>{kUserMarker, 0x401000, 0x402000}};
  std::vector<std::byte> bytes;
  EncodeSample(layout, PERF_RECORD_MISC_USER, s, &bytes);
  out.Add(bytes);
  EXPECT_EQ(out.samples(), 1u);

  const std::vector<std::byte> file = perf_data::WritePerfData(out.Build({42, 43}, {"perftest_profile", "-F", "99"}));
  Result<perf_data::PerfData> d = perf_data::ReadPerfData(file);
  ASSERT_TRUE(d.ok()) << d.ToString();
  ASSERT_EQ(d->attrs.size(), 1u);
  EXPECT_EQ(d->attrs[0].ids, (std::vector<uint64_t>{42, 43}));
  EXPECT_EQ(d->attrs[0].attr.sample_type, attr.sample_type);
  perf_data::RecordParser parser(*d);
  bool comm = false, exe = false, sample = false;
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  for (const perf_data::DataRecord& r : d->records) {
    Result<perf_data::ParsedRecord> p = parser.Parse(r);
    ASSERT_TRUE(p.ok()) << p.ToString();
    const Record& k = std::get<Record>(*p);
    if (const auto* c = std::get_if<CommRecord>(&k.body)) {
      comm |= c->pid == static_cast<uint32_t>(getpid());
      ASSERT_TRUE(k.sample_id.has_value());
      EXPECT_EQ(k.sample_id->time, 0u) << "synthesized records sort before every sample";
    }
    if (const auto* m = std::get_if<Mmap2Record>(&k.body)) exe |= m->filename == self && (m->prot & PROT_EXEC);
    if (const auto* x = std::get_if<SampleRecord>(&k.body)) sample = *x->callchain == *s.callchain && *x->tid == 8;
  }
  EXPECT_TRUE(comm) << "PERF_RECORD_COMM of this process";
  EXPECT_TRUE(exe) << "PERF_RECORD_MMAP2 of " << self;
  EXPECT_TRUE(sample);
  Result<std::vector<perf_data::EventDesc>> desc = perf_data::ParseEventDesc(d->features.at(perf_data::HEADER_EVENT_DESC));
  ASSERT_TRUE(desc.ok()) << desc.ToString();
  EXPECT_EQ(desc->at(0).name, "cpu-clock");
  Result<std::vector<std::string>> cmd = perf_data::ParseStringListFeature(d->features.at(perf_data::HEADER_CMDLINE));
  ASSERT_TRUE(cmd.ok());
  EXPECT_EQ(cmd->size(), 3u);
}

TEST(SimulatedSymbols, SortedAndDisjoint) {
  auto syms = mock::SimulatedSymbols();
  for (size_t i = 1; i < syms.size(); ++i) EXPECT_GE(syms[i].start, syms[i - 1].start + syms[i - 1].size) << syms[i].name;
}

}  // namespace
}  // namespace perftest::profile
