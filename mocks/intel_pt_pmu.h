// The intel_pt PMU of the mock (arch/x86/events/intel/pt.c): config
// validation against the sysfs caps, and the trace bytes the model writes into
// the AUX area while the task runs.
//
//   std::string why;
//   if (int err = PtEventValid(attr.config, pmu, &why)) return err;   // pt_event_init()
//   PtTraceFiller filler(attr.config);
//   std::vector<uint8_t> bytes = filler.Generate(n);                  // n bytes of valid packets
//
// Capabilities are read from the profile's caps/* exactly as sysfs shows them:
// pt_cap_show() prints "%x" (hex, no 0x). The trace an event writes comes
// from the backend's PtTraceModel (MockModels::pt_trace, mocks/mock_backend.h):
// in the binaries that link perftest_mock_pt (suite_pt, suite_aux, fidelity,
// tools/pt, the mock's PT tests), PtSimTraceModel() — the simulated task
// program run by mocks/pt_sim's generator (mocks/pt_sim_source.h: real
// control flow, the config's packets, ground truth through
// MockControl::PtGroundTruth()). Without a model, PtTraceFiller: PSB+ (PSB,
// TSC when tsc=1, PSBEND) at every 2^(psb_period+11) bytes and PAD in between
// — valid Intel PT that carries no control flow, written with the packet
// encoder alone (no flow decoder, no libzydis in such a binary).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/pmu.h"

namespace perftest::pt_sim {
struct GroundTruth;
}  // namespace perftest::pt_sim

namespace perftest::mock {

// IA32_RTIT_CTL bits that attr.config carries (pt.c PMU_FORMAT_ATTR / RTIT_CTL_*).
inline constexpr uint64_t kRtitPassthrough = 1ull << 0;  // "pt": TraceEn repurposed as BRANCH_EN pass-through
inline constexpr uint64_t kRtitCyc = 1ull << 1;
inline constexpr uint64_t kRtitPwrEvt = 1ull << 4;
inline constexpr uint64_t kRtitFupOnPtw = 1ull << 5;
inline constexpr uint64_t kRtitMtc = 1ull << 9;
inline constexpr uint64_t kRtitTsc = 1ull << 10;
inline constexpr uint64_t kRtitNoRetComp = 1ull << 11;
inline constexpr uint64_t kRtitPtw = 1ull << 12;
inline constexpr uint64_t kRtitBranch = 1ull << 13;
inline constexpr uint64_t kRtitMtcRange = 0xfull << 14;
inline constexpr uint64_t kRtitCycThresh = 0xfull << 19;
inline constexpr uint64_t kRtitPsbFreq = 0xfull << 24;
inline constexpr uint64_t kRtitEvent = 1ull << 31;
inline constexpr uint64_t kRtitNoTnt = 1ull << 55;

// A PT capability from pmu.caps (hex text), 0 when absent or unparsable.
uint32_t PtCap(const Pmu& pmu, const std::string& name);

// pt_event_valid(): 0 or EINVAL with `why` naming the rule. Checks, in the
// kernel's order: bits outside PT_CONFIG_MASK; cyc/cyc_thresh/psb_period
// without caps/psb_cyc, psb_period or cyc_thresh not in caps/psb_periods /
// caps/cycle_thresholds; mtc/mtc_period without caps/mtc or with an mtc_period
// not in caps/mtc_periods; pwr_evt without caps/power_event_trace; event
// without caps/event_trace; notnt without caps/tnt_disable; ptw/fup_on_ptw
// without caps/ptwrite, fup_on_ptw without ptw; branch without pt.
int PtEventValid(uint64_t config, const Pmu& pmu, std::string* why);

class PtTraceSource;
// Makes the trace source of each new intel_pt event from its attr (the
// config bits PtEventValid() accepted); nullptr: the event gets a
// PtTraceFiller.
using PtTraceModel = std::function<std::shared_ptr<PtTraceSource>(const perf_event_attr& attr)>;

// Where an intel_pt event of the mock gets its trace: the task it traces
// retired instructions, tracing started or stopped.
class PtTraceSource {
 public:
  virtual ~PtTraceSource() = default;
  // The trace of `n` more user-mode instructions.
  virtual std::vector<uint8_t> Instructions(uint64_t n) = 0;
  // The trace of the task making `n` system calls (SYSCALL: TIP.PGD, and
  // TIP.PGE on the return to user mode). Default: no trace.
  virtual std::vector<uint8_t> Syscalls(uint64_t n) {
    (void)n;
    return {};
  }
  // pt_event_start(): TraceEn set (the next instructions start with PSB+).
  virtual void Enable() = 0;
  // pt_event_stop(): TraceEn cleared; returns the last bytes (e.g. TIP.PGD),
  // which end the current AUX transaction.
  virtual std::vector<uint8_t> Disable() = 0;
  // What the simulated hardware did, instruction by instruction, when the
  // source keeps that record (pt_sim's does: mocks/pt_sim/ground_truth.h);
  // nullptr otherwise. Read through MockControl::PtGroundTruth().
  virtual const pt_sim::GroundTruth* ground_truth() { return nullptr; }
};

// Valid Intel PT packets for the model's trace (see the header comment): one
// byte per 8 instructions while enabled (TraceEn: from Enable() to Disable();
// nothing before the first Enable(), as in pt_sim's generator).
class PtTraceFiller : public PtTraceSource {
 public:
  explicit PtTraceFiller(uint64_t config);
  std::vector<uint8_t> Instructions(uint64_t n) override {
    if (!enabled_) return {};
    const uint64_t total = left_ + n;
    left_ = total % 8;
    return Generate(total / 8);
  }
  void Enable() override {
    enabled_ = true;
    Restart();
  }
  std::vector<uint8_t> Disable() override {
    enabled_ = false;
    return {};
  }
  // The next `n` bytes of the stream; a PSB+ is never split across calls'
  // semantics (the stream is one byte sequence, cut where asked).
  std::vector<uint8_t> Generate(uint64_t n);
  // Restarts the stream at a PSB+ (tracing enabled again).
  void Restart() { pos_ = 0; }

 private:
  std::vector<uint8_t> psb_plus_;
  uint64_t period_ = 2048;  // bytes between PSBs
  uint64_t pos_ = 0;        // position in the current period
  uint64_t left_ = 0;       // instructions not yet turned into bytes
  bool enabled_ = false;    // TraceEn
};

}  // namespace perftest::mock
