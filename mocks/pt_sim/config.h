// The intel_pt PMU's perf_event_attr.config bits, as a struct: what the PT
// packet generator (generator.h) is configured with.
//
//   pt_sim::PtConfig c = pt_sim::PtConfig::FromAttrConfig(attr.config);
//   c.mtc_period = 3;
//   uint64_t config = c.ToAttrConfig();
//
// Bit positions are those of the kernel's sysfs format attributes
// (arch/x86/events/intel/pt.c, PMU_FORMAT_ATTR: pt config:0, cyc config:1,
// pwr_evt config:4, fup_on_ptw config:5, mtc config:9, tsc config:10,
// noretcomp config:11, ptw config:12, branch config:13, mtc_period
// config:14-17, cyc_thresh config:19-22, psb_period config:24-27, event
// config:31 since Linux 5.18), which are
// the RTIT_CTL bit positions of Intel SDM Vol. 3C §33.2.7.2
// "IA32_RTIT_CTL MSR". perf-intel-pt.txt "config terms" describes each term.
#pragma once

#include <cstdint>
#include <string>

namespace perftest::pt_sim {

struct PtConfig {
  bool pt = true;           // config:0   pass-through (enables branch)
  bool cyc = false;         // config:1   CYC packets
  bool pwr_evt = false;     // config:4   power event packets (MWAIT, PWRE, PWRX, EXSTOP)
  bool fup_on_ptw = false;  // config:5   a FUP after each PTW
  bool mtc = false;         // config:9   MTC packets
  bool tsc = true;          // config:10  TSC packets
  bool noretcomp = false;   // config:11  no return compression: every RET gives a TIP
  bool ptw = false;         // config:12  PTW packets for PTWRITE
  bool branch = true;       // config:13  control-flow packets (TNT, TIP, FUP, TIP.PGE/PGD)
  uint8_t mtc_period = 0;   // config:14-17  MTC every 2^mtc_period crystal-clock (CTC) ticks
  uint8_t cyc_thresh = 0;   // config:19-22  CYC at most every 2^(cyc_thresh-1) cycles (0: any)
  uint8_t psb_period = 0;   // config:24-27  PSB+ every 2^(psb_period+11) trace bytes
  bool event = false;       // config:31  Event Trace (RTIT_CTL.EventEn): CFE and EVD packets

  bool operator==(const PtConfig&) const = default;

  static PtConfig FromAttrConfig(uint64_t config);
  uint64_t ToAttrConfig() const;

  // Whether the hardware writes control-flow packets (RTIT_CTL.BranchEn):
  // the kernel's pt_config() passes `branch` through only when `pt` (bit 0,
  // "pass-through") is set, and otherwise always sets BranchEn — the legacy
  // behaviour, so `intel_pt/config=0x400/` traces branches.
  bool branch_en() const { return pt ? branch : true; }

  // PSB+ period in bytes: 2^(psb_period+11).
  uint64_t psb_period_bytes() const { return uint64_t{1} << (psb_period + 11); }
  // Minimum cycles between CYC packets: 0 for cyc_thresh 0, else 2^(cyc_thresh-1).
  uint64_t cyc_threshold_cycles() const { return cyc_thresh == 0 ? 0 : uint64_t{1} << (cyc_thresh - 1); }

  // "tsc=1,mtc=1,mtc_period=3,..." in perf's event-term spelling.
  std::string ToString() const;
};

}  // namespace perftest::pt_sim
