// The mock's intel_pt event end to end (mocks/pt_sim_source.h): opened through
// the harness (Event, RingBuffer, AuxBuffer) on the x86_64-intel profile, the
// simulated task runs instructions, the AUX bytes are read out as perf would,
// and libipt (tests only) decodes them without errors into exactly the
// instructions of the ground truth (MockControl::PtGroundTruth()).
//
// The AUX area here is large enough for the whole trace (the test checks
// aux_head == truth.trace_size): the ground truth describes everything the
// generator wrote, so in full-trace mode a TRUNCATED buffer would hold only a
// prefix of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <intel-pt.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/aux_buffer.h"
#include "harness/event.h"
#include "harness/pmu.h"
#include "harness/ring_buffer.h"
#include "harness/workload.h"
#include "mocks/internal/mock_test_fixture.h"
#include "mocks/pt_sim/config.h"
#include "mocks/pt_sim/generator.h"
#include "mocks/pt_sim/libipt_flow.h"
#include "mocks/pt_sim_source.h"

namespace perftest {
namespace {

using ::testing::IsEmpty;

struct Case {
  const char* name;
  pt_sim::PtConfig config;
};

constexpr size_t kSyscalls = 5;

pt_sim::PtConfig Base() {
  pt_sim::PtConfig c;
  c.pt = c.branch = c.tsc = true;
  return c;
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  out.push_back({"tsc", Base()});
  pt_sim::PtConfig c = Base();
  c.tsc = false;
  out.push_back({"notsc", c});
  c = Base();
  c.mtc = true;
  c.mtc_period = 3;
  out.push_back({"mtc", c});
  c = Base();
  c.mtc = c.cyc = true;
  c.cyc_thresh = 2;
  out.push_back({"cyc", c});
  c = Base();
  c.noretcomp = true;
  out.push_back({"noretcomp", c});
  c = Base();
  c.psb_period = 0;
  out.push_back({"psb_period0", c});
  c = Base();
  c.psb_period = 3;
  out.push_back({"psb_period3", c});
  c = Base();
  c.branch = false;
  c.mtc = true;
  out.push_back({"branch0", c});
  c = Base();
  c.ptw = true;
  out.push_back({"ptw", c});
  c = Base();
  c.ptw = c.fup_on_ptw = true;
  out.push_back({"ptw_fup", c});
  c = Base();
  c.pwr_evt = true;
  out.push_back({"pwr_evt", c});
  c = Base();
  c.pwr_evt = c.mtc = c.cyc = c.ptw = c.fup_on_ptw = true;
  out.push_back({"pwr_evt_cyc_ptw", c});
  c = Base();
  c.pwr_evt = true;
  c.branch = false;
  out.push_back({"pwr_evt_branch0", c});
  return out;
}

class MockPtIntel : public MockTest {
 protected:
  std::string ProfileName() const override { return "x86_64-intel"; }
  MockModels Models() const override { return {.pt_trace = mock::PtSimTraceModel()}; }
};
class MockPtTrace : public MockPtIntel, public ::testing::WithParamInterface<Case> {};

// An intel_pt event (user mode, disabled) of the simulated task with a data
// buffer and a full-trace AUX area of `aux_pages` pages, mapped as perf does.
struct PtOnMock {
  Event ev;
  RingBuffer rb;
  AuxBuffer aux;

  static Result<PtOnMock> Open(Backend& b, const pt_sim::PtConfig& config, size_t aux_pages) {
    const Pmu* pt = FindPmu(b.Machine().pmus, "intel_pt");
    if (pt == nullptr) return Result<PtOnMock>::Failure(ENOENT, "no intel_pt PMU in the profile");
    perf_event_attr a = MakeAttr(pt->type, config.ToAttrConfig());
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.disabled = 1;
    Result<Event> ev = Event::Open(b, a, 0, -1);
    if (!ev.ok()) return Result<PtOnMock>::FailureFrom(ev);
    Result<RingBuffer> rb = RingBuffer::Map(b, ev->fd(), 8);
    if (!rb.ok()) return Result<PtOnMock>::FailureFrom(rb);
    Result<AuxBuffer> aux = AuxBuffer::Map(b, ev->fd(), *rb, aux_pages, AuxMode::kFullTrace);
    if (!aux.ok()) return Result<PtOnMock>::FailureFrom(aux);
    return Result<PtOnMock>::Ok(PtOnMock{std::move(*ev), std::move(*rb), std::move(*aux)}, "pt on mock");
  }

  // `len` AUX bytes from free-running position `pos`.
  std::vector<uint8_t> Bytes(uint64_t pos, size_t len) const {
    const std::vector<std::byte> raw = aux.CopyOut(pos, len);
    const auto* p = reinterpret_cast<const uint8_t*>(raw.data());
    return std::vector<uint8_t>(p, p + raw.size());
  }
};

using MockPtTraceTruncation = MockPtIntel;

TEST_P(MockPtTrace, LibiptReproducesTheGroundTruth) {
  ASSERT_OK_AND_ASSIGN(PtOnMock s, PtOnMock::Open(b(), GetParam().config, 512));
  Event& ev = s.ev;
  // Two enabled stretches: the trace has PSB+ ... TIP.PGD twice; system
  // calls in the first (TIP.PGD/TIP.PGE mid-run), interrupts throughout.
  ASSERT_OK(ev.Enable());
  ASSERT_OK(b().RunWorkload(Workload::Instructions(100000)));
  ASSERT_OK(b().RunWorkload(Workload::Syscalls(kSyscalls)));
  ASSERT_OK(b().RunWorkload(Workload::Instructions(50000)));
  ASSERT_OK(ev.Disable());
  ASSERT_OK(b().RunWorkload(Workload::Instructions(1000)));
  ASSERT_OK(ev.Enable());
  ASSERT_OK(b().RunWorkload(Workload::Instructions(50000)));
  ASSERT_OK(ev.Disable());

  const pt_sim::GroundTruth* truth = control().PtGroundTruth(ev.fd());
  ASSERT_NE(truth, nullptr);
  const uint64_t head = s.aux.ReadHead();
  ASSERT_EQ(head, truth->trace_size) << "the whole trace is in the AUX area (nothing truncated)";
  ASSERT_LE(head, s.aux.size());
  const std::vector<uint8_t> bytes = s.Bytes(0, head);
  // One PSB+ at the enable (PtGenerator::Enable() before its first Run()
  // does not repeat it): the next PSB is a psb_period later, or at the second
  // enable when the first stretch wrote less than that.
  const std::vector<uint8_t> psb = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                    0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};
  ASSERT_TRUE(std::equal(psb.begin(), psb.end(), bytes.begin())) << "the trace starts with a PSB";
  const auto next_psb = std::search(bytes.begin() + 16, bytes.end(), psb.begin(), psb.end());
  // Each PSB+ is a psb_period after the last, or the first after a re-enable.
  bool after_disable = false;
  uint64_t last_psb = 0;
  size_t psbs = 0;
  for (const pt_sim::EventRecord& e : truth->events) {
    if (e.kind == pt_sim::EventKind::kDisable) after_disable = true;
    if (e.kind != pt_sim::EventKind::kPsb) continue;
    if (psbs == 1) {
      EXPECT_EQ(static_cast<uint64_t>(next_psb - bytes.begin()), e.trace_offset);
    }
    if (psbs > 0 && !after_disable) {
      EXPECT_GE(e.trace_offset - last_psb, GetParam().config.psb_period_bytes()) << "PSB " << psbs;
    }
    after_disable = false;
    last_psb = e.trace_offset;
    ++psbs;
  }
  EXPECT_GE(psbs, 2u) << "a PSB+ at each enable";

  // The syscalls run the program up to its gate and through sys_stub: a few
  // hundred instructions more than the workloads retired.
  EXPECT_GE(truth->insns.size(), 200000u);
  EXPECT_LT(truth->insns.size(), 200000u + kSyscalls * 64) << "the disabled stretch runs no simulated instructions";
  EXPECT_EQ(truth->CountEvents(pt_sim::EventKind::kSyscall), kSyscalls);
  const std::vector<uint64_t> expected = truth->TracedIps();
  if (GetParam().config.branch_en()) {
    EXPECT_EQ(expected.size(), truth->insns.size());
  } else {
    EXPECT_THAT(expected, IsEmpty());
  }
  const pt_sim::LibiptFlow flow = pt_sim::DecodeFlowWithLibipt(bytes, *truth);
  EXPECT_THAT(flow.errors, IsEmpty());
  EXPECT_GE(flow.syncs, 1u);
  EXPECT_EQ(flow.ips.size(), expected.size());
  if (flow.ips != expected) {
    size_t i = 0;
    while (i < flow.ips.size() && i < expected.size() && flow.ips[i] == expected[i]) ++i;
    ADD_FAILURE() << "first difference at traced instruction " << i;
  }
  std::vector<uint64_t> ptw;
  for (const pt_sim::PtwriteRecord& r : truth->ptwrites) {
    if (r.traced) ptw.push_back(r.payload);
  }
  EXPECT_EQ(flow.PtwritePayloads(), ptw);
  if (GetParam().config.ptw) {
    EXPECT_THAT(ptw, ::testing::Not(IsEmpty())) << "the task program has a PTWRITE";
  }
  const size_t interrupts = truth->CountTracedEvents(pt_sim::EventKind::kInterrupt);
  const size_t syscalls = truth->CountTracedEvents(pt_sim::EventKind::kSyscall);
  if (GetParam().config.branch_en()) {
    // TIP.PGE: the two enables and each return from an interrupt or a syscall.
    EXPECT_EQ(flow.CountEvents(ptev_enabled), truth->CountTracedEvents(pt_sim::EventKind::kEnable));
    EXPECT_EQ(flow.CountEvents(ptev_enabled), 2u + interrupts + syscalls);
    EXPECT_EQ(syscalls, kSyscalls);
    EXPECT_GE(interrupts, 3u) << "about one interrupt per " << mock::kMockPtInterruptEvery << " instructions";
    // SYSCALL: TIP.PGD alone; interrupts and the disables: FUP + TIP.PGD.
    EXPECT_EQ(flow.CountEvents(ptev_disabled), syscalls);
    EXPECT_EQ(flow.CountEvents(ptev_async_disabled), interrupts + 2u);
  }
  const size_t power = truth->CountEvents(pt_sim::EventKind::kPower);
  if (GetParam().config.pwr_evt) {
    EXPECT_GE(power, 2u) << "about one C-state entry per " << mock::kMockPtPowerEvery << " instructions";
    EXPECT_EQ(flow.CountEvents(ptev_mwait), power);
    EXPECT_EQ(flow.CountEvents(ptev_pwre), power);
    EXPECT_EQ(flow.CountEvents(ptev_exstop), power);
    EXPECT_EQ(flow.CountEvents(ptev_pwrx), power);
  } else {
    EXPECT_EQ(power, 0u);
    EXPECT_EQ(flow.CountEvents(ptev_mwait) + flow.CountEvents(ptev_pwre), 0u);
  }
  std::printf("[mock_pt] %s: %zu bytes, %zu instructions run, %zu traced and matched, %zu interrupts, "
              "%zu syscalls, %zu power events\n",
              GetParam().name, bytes.size(), truth->insns.size(), flow.ips.size(), interrupts, syscalls, power);
}

// Full-trace mode with a small AUX area and no reader: the buffer fills, the
// transaction ends TRUNCATED and the event is disabled. The ground truth
// describes every instruction the task ran while tracing was on (it is the
// simulated hardware's, not the buffer's): the AUX data is only a prefix of
// it, and libipt decodes that prefix into a prefix of the traced
// instructions. Re-enabled with free space, the trace starts again at a PSB.
TEST_F(MockPtTraceTruncation, AuxHoldsAPrefixOfTheTruth) {
  ASSERT_OK_AND_ASSIGN(PtOnMock s, PtOnMock::Open(b(), Base(), 2));
  Event& ev = s.ev;
  AuxBuffer& aux = s.aux;
  ASSERT_OK(ev.Enable());
  ASSERT_OK(b().RunWorkload(Workload::Instructions(100000)));
  const pt_sim::GroundTruth* truth = control().PtGroundTruth(ev.fd());
  ASSERT_NE(truth, nullptr);
  const uint64_t head = aux.ReadHead();
  EXPECT_GT(head, aux.size() - 64) << "the buffer is full";
  EXPECT_GT(truth->trace_size, head) << "the generator wrote more than the AUX area took";
  const uint64_t stopped_at = truth->insns.size();
  EXPECT_LT(stopped_at, 100000u) << "the truncation disabled the event: the rest is not traced";
  EXPECT_LT(truth->trace_size - head, 1024u) << "the hardware stops within a slice of the truncation";
  const std::vector<uint8_t> bytes = s.Bytes(0, head);
  const pt_sim::LibiptFlow flow = pt_sim::DecodeFlowWithLibipt(bytes, *truth);
  const std::vector<uint64_t> expected = truth->TracedIps();
  ASSERT_LT(flow.ips.size(), expected.size());
  EXPECT_GT(flow.ips.size(), 0u);
  EXPECT_TRUE(std::equal(flow.ips.begin(), flow.ips.end(), expected.begin())) << "a prefix of the truth";

  // Free the space and re-enable: new trace from a PSB (02 82 02 82 ...).
  aux.WriteTail(head);
  ASSERT_OK(ev.Enable());
  ASSERT_OK(b().RunWorkload(Workload::Instructions(1000)));
  ASSERT_OK(ev.Disable());
  EXPECT_GT(truth->insns.size(), stopped_at);
  ASSERT_GT(aux.ReadHead(), head + 16);
  const std::vector<uint8_t> next = s.Bytes(head, 16);
  for (size_t i = 0; i < 16; i += 2) {
    EXPECT_EQ(next[i], 0x02) << i;
    EXPECT_EQ(next[i + 1], 0x82) << i;
  }
}

// VMX operation (intel_pt_handle_vmx()) cuts a gap into the trace: the
// record carries PERF_AUX_FLAG_PARTIAL, the trace has TIP.PGD ... PSB+,
// TIP.PGE around the gap, and libipt still reproduces the truth (the
// instructions run in the gap are untraced in it).
TEST_F(MockPtIntel, PartialTraceDecodesToTheGroundTruth) {
  ASSERT_OK_AND_ASSIGN(PtOnMock s, PtOnMock::Open(b(), Base(), 64));
  ASSERT_OK(s.ev.Enable());
  ASSERT_OK(b().RunWorkload(Workload::Instructions(20000)));
  control().SetVmxOperation(true);
  ASSERT_OK(b().RunWorkload(Workload::Instructions(20000)));
  control().SetVmxOperation(false);
  ASSERT_OK(b().RunWorkload(Workload::Instructions(20000)));
  ASSERT_OK(s.ev.Disable());
  const pt_sim::GroundTruth* truth = control().PtGroundTruth(s.ev.fd());
  ASSERT_NE(truth, nullptr);
  ASSERT_EQ(s.aux.ReadHead(), truth->trace_size);
  const size_t traced = truth->CountTraced();
  EXPECT_GE(truth->insns.size() - traced, 20000u) << "the gap's instructions are untraced";
  const pt_sim::LibiptFlow flow = pt_sim::DecodeFlowWithLibipt(s.Bytes(0, s.aux.ReadHead()), *truth);
  EXPECT_THAT(flow.errors, IsEmpty());
  EXPECT_EQ(flow.ips, truth->TracedIps());
  uint64_t flags = 0;
  s.rb.Begin();
  while (std::optional<RawRecord> raw = s.rb.Next()) {
    ASSERT_OK_AND_ASSIGN(Record r, ParseRecord(SampleLayout::FromAttr(s.ev.attr()), raw->bytes));
    if (r.header.type != PERF_RECORD_AUX) continue;
    ASSERT_OK_AND_ASSIGN(AuxRecord a, ParseAuxRecord(r));
    flags |= a.flags;
  }
  EXPECT_EQ(flags, static_cast<uint64_t>(PERF_AUX_FLAG_PARTIAL)) << DescribeAuxFlags(flags);
}

INSTANTIATE_TEST_SUITE_P(Configs, MockPtTrace, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace perftest
