#include "mocks/pt_sim/config.h"

#include <fmt/format.h>

namespace perftest::pt_sim {
namespace {

bool Bit(uint64_t config, int bit) { return ((config >> bit) & 1) != 0; }
uint8_t Field(uint64_t config, int lo, int width) {
  return static_cast<uint8_t>((config >> lo) & ((uint64_t{1} << width) - 1));
}

}  // namespace

PtConfig PtConfig::FromAttrConfig(uint64_t config) {
  PtConfig c;
  c.pt = Bit(config, 0);
  c.cyc = Bit(config, 1);
  c.pwr_evt = Bit(config, 4);
  c.fup_on_ptw = Bit(config, 5);
  c.mtc = Bit(config, 9);
  c.tsc = Bit(config, 10);
  c.noretcomp = Bit(config, 11);
  c.ptw = Bit(config, 12);
  c.branch = Bit(config, 13);
  c.mtc_period = Field(config, 14, 4);
  c.cyc_thresh = Field(config, 19, 4);
  c.psb_period = Field(config, 24, 4);
  c.event = Bit(config, 31);
  return c;
}

uint64_t PtConfig::ToAttrConfig() const {
  return uint64_t{pt} << 0 | uint64_t{cyc} << 1 | uint64_t{pwr_evt} << 4 | uint64_t{fup_on_ptw} << 5 |
         uint64_t{mtc} << 9 | uint64_t{tsc} << 10 | uint64_t{noretcomp} << 11 | uint64_t{ptw} << 12 |
         uint64_t{branch} << 13 | uint64_t{mtc_period & 0xfu} << 14 | uint64_t{cyc_thresh & 0xfu} << 19 |
         uint64_t{psb_period & 0xfu} << 24 | uint64_t{event} << 31;
}

std::string PtConfig::ToString() const {
  // (event only when set: the spelling of configs without it is unchanged.)
  return fmt::format(
      "pt={},cyc={},pwr_evt={},fup_on_ptw={},mtc={},tsc={},noretcomp={},ptw={},branch={},mtc_period={},"
      "cyc_thresh={},psb_period={}",
      int{pt}, int{cyc}, int{pwr_evt}, int{fup_on_ptw}, int{mtc}, int{tsc}, int{noretcomp}, int{ptw}, int{branch},
      mtc_period, cyc_thresh, psb_period) + (event ? ",event=1" : "");
}

}  // namespace perftest::pt_sim
