#include "mocks/intel_pt_pmu.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

#include "harness/pt/packet_encoder.h"

namespace perftest::mock {
namespace {

constexpr uint64_t kPtConfigMask = kRtitPassthrough | kRtitTsc | kRtitNoRetComp | kRtitBranch | kRtitCyc |
                                   kRtitCycThresh | kRtitPsbFreq | kRtitMtc | kRtitMtcRange | kRtitPwrEvt |
                                   kRtitEvent | kRtitNoTnt | kRtitFupOnPtw | kRtitPtw;

int Invalid(std::string* why, std::string text) {
  *why = std::move(text) + " (pt_event_valid())";
  return EINVAL;
}

}  // namespace

uint32_t PtCap(const Pmu& pmu, const std::string& name) {
  auto it = pmu.caps.find(name);
  if (it == pmu.caps.end()) return 0;
  char* end = nullptr;
  const unsigned long v = std::strtoul(it->second.c_str(), &end, 16);
  return end == it->second.c_str() ? 0 : static_cast<uint32_t>(v);
}

int PtEventValid(uint64_t config, const Pmu& pmu, std::string* why) {
  if ((config & kPtConfigMask) != config) {
    return Invalid(why, fmt::format("config bits {:#x} are outside PT_CONFIG_MASK", config & ~kPtConfigMask));
  }
  if (config & (kRtitCyc | kRtitCycThresh | kRtitPsbFreq)) {
    if (!PtCap(pmu, "psb_cyc")) return Invalid(why, "cyc, cyc_thresh and psb_period need caps/psb_cyc");
    const uint64_t psb = (config & kRtitPsbFreq) >> 24;
    if (psb && !(PtCap(pmu, "psb_periods") & (1u << psb))) {
      return Invalid(why, fmt::format("psb_period {} is not in caps/psb_periods", psb));
    }
    const uint64_t thresh = (config & kRtitCycThresh) >> 19;
    if (thresh && !(PtCap(pmu, "cycle_thresholds") & (1u << thresh))) {
      return Invalid(why, fmt::format("cyc_thresh {} is not in caps/cycle_thresholds", thresh));
    }
  }
  if (config & (kRtitMtc | kRtitMtcRange)) {
    if (!PtCap(pmu, "mtc")) return Invalid(why, "mtc and mtc_period need caps/mtc");
    const uint32_t allowed = PtCap(pmu, "mtc_periods");
    if (!allowed) return Invalid(why, "caps/mtc_periods is 0");
    const uint64_t period = (config & kRtitMtcRange) >> 14;
    if (!(allowed & (1u << period))) return Invalid(why, fmt::format("mtc_period {} is not in caps/mtc_periods", period));
  }
  if ((config & kRtitPwrEvt) && !PtCap(pmu, "power_event_trace")) {
    return Invalid(why, "pwr_evt needs caps/power_event_trace");
  }
  if ((config & kRtitEvent) && !PtCap(pmu, "event_trace")) return Invalid(why, "event needs caps/event_trace");
  if ((config & kRtitNoTnt) && !PtCap(pmu, "tnt_disable")) return Invalid(why, "notnt needs caps/tnt_disable");
  if (config & (kRtitPtw | kRtitFupOnPtw)) {
    if (!PtCap(pmu, "ptwrite")) return Invalid(why, "ptw and fup_on_ptw need caps/ptwrite");
    if ((config & kRtitFupOnPtw) && !(config & kRtitPtw)) return Invalid(why, "fup_on_ptw without ptw");
  }
  // Without the pass-through bit (pt), BRANCH_EN may not be set: it is always on.
  if (!(config & kRtitPassthrough) && (config & kRtitBranch)) return Invalid(why, "branch without pt");
  return 0;
}

PtTraceFiller::PtTraceFiller(uint64_t config) {
  pt::PacketEncoder enc;
  (void)enc.Next(pt::make::Psb());
  if (config & kRtitTsc) (void)enc.Next(pt::make::Tsc(0));
  (void)enc.Next(pt::make::PsbEnd());
  psb_plus_ = enc.Release();
  period_ = uint64_t{1} << (((config & kRtitPsbFreq) >> 24) + 11);
}

std::vector<uint8_t> PtTraceFiller::Generate(uint64_t n) {
  std::vector<uint8_t> out(n, 0);  // PAD is 0x00
  for (uint64_t i = 0; i < n; ++i) {
    if (pos_ < psb_plus_.size()) out[i] = psb_plus_[pos_];
    pos_ = (pos_ + 1) % period_;
  }
  return out;
}

}  // namespace perftest::mock
