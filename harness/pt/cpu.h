// The CPU a trace was recorded on, and the Intel PT errata that CPU has —
// the workarounds a decoder applies per CPU, as libipt's pt_cpu_errata()
// (libipt/src/pt_config.c) enables them from family/model/stepping.
//
//   std::string error;
//   std::optional<pt::Cpu> cpu = pt::ParseCpu("6/142/10", &error);  // Kaby Lake
//   pt::Errata e = pt::ErrataFor(*cpu);                              // e.skd007 ...
//   PacketDecoder::Options o;  o.skd007 = e.skd007;  o.skz84 = e.skz84;
//
// Each erratum is named as Intel's specification updates name it (the
// comments give the title; libipt's intel-pt.h documents the same list):
//   BDM70  PSB+ packets may contain unexpected packets (FUP, MODE.Exec
//          in a PSB+ that precedes a TIP.PGE).
//   BDM64  an incorrect LBR or PT packet may be recorded following a
//          transactional abort.
//   SKD007 PT buffer overflow may result in incorrect packets: an OVF
//          issued after the first byte of a multi-byte CYC.
//   SKD022 VM entry that clears TraceEn may generate a FUP before TIP.PGD.
//   SKD010 PT FUP may be dropped after OVF.
//   SKL014 PT TIP.PGD may not have a target IP payload (direct branch
//          clearing FilterEn).
//   APL12  PT OVF may be followed by an unexpected FUP (outside PGE/PGD).
//   APL11  PT OVF may be followed by a TIP.PGD.
//   SKL168 CYC packets can be dropped when immediately preceding PSB.
//   SKZ84  VMX TSC scaling or offsetting corrupts TMA packets (reserved
//          bits set, then a bogus data byte).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perftest::pt {

// CPUID.01H:EAX display family/model (extended fields folded in, as
// perf's HEADER_CPUID "GenuineIntel,FAMILY,MODEL,STEPPING" gives them).
struct Cpu {
  uint32_t family = 0;
  uint32_t model = 0;
  uint32_t stepping = 0;

  bool operator==(const Cpu&) const = default;
};

// "FAMILY/MODEL/STEPPING" (or "FAMILY/MODEL"; stepping 0): each number
// decimal or 0x-hex, as libipt's tools take --cpu. Returns nullopt with
// *error (when given) saying what was wrong.
std::optional<Cpu> ParseCpu(std::string_view text, std::string* error = nullptr);

// perf's HEADER_CPUID string ("GenuineIntel,6,142,10"; arch/x86/util/header.c
// get_cpuid()). nullopt for another vendor or a malformed string.
std::optional<Cpu> CpuFromPerfCpuid(std::string_view cpuid);

struct Errata {
  bool bdm70 = false;
  bool bdm64 = false;
  bool skd007 = false;
  bool skd022 = false;
  bool skd010 = false;
  bool skl014 = false;
  bool apl12 = false;
  bool apl11 = false;
  bool skl168 = false;
  bool skz84 = false;

  bool operator==(const Errata&) const = default;
};

// The errata of an Intel CPU (all false for one no workaround is known for;
// *known, when given, says whether the CPU is in the table — libipt's
// -pte_bad_cpu otherwise). The table is the one of libipt's current
// pt_cpu_errata(); libipt 2.0.5 knows a subset of its models.
Errata ErrataFor(const Cpu& cpu, bool* known = nullptr);

// "bdm70,skd007,..." (empty when none).
std::string ErrataNames(const Errata& errata);

}  // namespace perftest::pt
