#include "harness/pt/packet.h"

#include <fmt/format.h>

#include <array>
#include <ostream>

namespace perftest::pt {

std::string_view PacketName(PacketType type) {
  static constexpr std::array<std::string_view, kPacketTypeCount> kNames = {
      "INVALID", "PAD",  "PSB",  "PSBEND", "TNT-8", "TNT-64", "TIP",   "TIP.PGE", "TIP.PGD", "FUP",
      "PIP",     "MODE.Exec", "MODE.TSX", "TraceStop", "CBR", "TSC", "MTC", "TMA", "CYC", "VMCS",
      "OVF",     "MNT",  "PTW",  "EXSTOP", "MWAIT", "PWRE",  "PWRX",  "BBP",     "BIP",     "BEP",
      "CFE",     "EVD",  "TRIG",
  };
  const auto i = static_cast<size_t>(type);
  return i < kNames.size() ? kNames[i] : "INVALID";
}

int IpPayloadSize(uint8_t ipbytes) {
  static constexpr int kSizes[8] = {0, 2, 4, 6, 6, -1, 8, -1};
  return kSizes[ipbytes & 7];
}

std::string_view IpBytesName(uint8_t ipbytes) {
  static constexpr std::string_view kNames[8] = {"suppressed", "upd16", "upd32", "sext48",
                                                 "upd48",      "reserved", "full", "reserved"};
  return kNames[ipbytes & 7];
}

std::string_view ExecModeName(ExecMode mode) {
  switch (mode) {
    case ExecMode::k16Bit: return "16-bit";
    case ExecMode::k32Bit: return "32-bit";
    case ExecMode::k64Bit: return "64-bit";
    case ExecMode::kInvalid: break;
  }
  return "invalid";
}

std::string_view CfeTypeName(uint8_t type) {
  switch (type) {
    case 0x01: return "INTR";
    case 0x02: return "IRET";
    case 0x03: return "SMI";
    case 0x04: return "RSM";
    case 0x05: return "SIPI";
    case 0x06: return "INIT";
    case 0x07: return "VMENTRY";
    case 0x08: return "VMEXIT";
    case 0x09: return "VMEXIT_INTR";
    case 0x0a: return "SHUTDOWN";
    case 0x0c: return "UINTR";
    case 0x0d: return "UIRET";
    case 0x0e: return "SWINTR";
    case 0x0f: return "SYSCALL";
    default: return "reserved";
  }
}

std::string_view EvdTypeName(uint8_t type) {
  switch (type) {
    case 0x00: return "CR2";
    case 0x01: return "VMX exit qualification";
    case 0x02: return "VMX exit reason";
    default: return "reserved";
  }
}

std::string Describe(const Packet& p) {
  const std::string_view name = PacketName(p.type);
  switch (p.type) {
    case PacketType::kInvalid:
    case PacketType::kPad:
    case PacketType::kPsb:
    case PacketType::kPsbEnd:
    case PacketType::kTraceStop:
    case PacketType::kOvf:
      return std::string(name);
    case PacketType::kTnt8:
    case PacketType::kTnt64: {
      std::string s = fmt::format("{} ", name);
      const unsigned n = p.tnt_size();
      for (unsigned i = n; i-- > 0;) s += ((p.tnt_bits() >> i) & 1) ? 'T' : 'N';
      return s + fmt::format(" ({})", n);
    }
    case PacketType::kTip:
    case PacketType::kTipPge:
    case PacketType::kTipPgd:
    case PacketType::kFup:
      if (p.ipbytes() == 0) return fmt::format("{} suppressed", name);
      return fmt::format("{} {:#x} ({})", name, p.payload, IpBytesName(p.ipbytes()));
    case PacketType::kPip:
      return fmt::format("{} CR3 {:#x} NR={}", name, p.cr3(), p.nr() ? 1 : 0);
    case PacketType::kModeExec:
      return fmt::format("{} {} CS.L={} CS.D={} IF={}", name, ExecModeName(p.exec_mode()), p.cs_l() ? 1 : 0,
                         p.cs_d() ? 1 : 0, p.if_flag() ? 1 : 0);
    case PacketType::kModeTsx:
      return fmt::format("{} InTX={} TXAbort={}", name, p.intx() ? 1 : 0, p.txabort() ? 1 : 0);
    case PacketType::kCbr:
      return fmt::format("{} {:#x}", name, p.cbr());
    case PacketType::kTsc:
    case PacketType::kMnt:
      return fmt::format("{} {:#x}", name, p.payload);
    case PacketType::kCyc:
      return fmt::format("{} {:#x}", name, p.cyc());
    case PacketType::kMtc:
      return fmt::format("{} {:#x}", name, p.mtc_ctc());
    case PacketType::kTma:
      return fmt::format("{} CTC {:#x} FC {:#x}", name, p.tma_ctc(), p.tma_fc());
    case PacketType::kVmcs:
      return fmt::format("{} {:#x}", name, p.vmcs_base());
    case PacketType::kPtw:
      return fmt::format("{} {:#x} ({} bytes) IP:{}", name, p.ptw_payload(), p.ptw_payload_bytes(),
                         p.ptw_ip() ? 1 : 0);
    case PacketType::kExStop:
      return fmt::format("{} IP:{}", name, p.exstop_ip() ? 1 : 0);
    case PacketType::kBep:
      return fmt::format("{} IP:{}", name, p.bep_ip() ? 1 : 0);
    case PacketType::kMwait:
      return fmt::format("{} Hints {:#x} Extensions {:#x}", name, p.mwait_hints(), p.mwait_ext());
    case PacketType::kPwre:
      return fmt::format("{} HW:{} CState:{} Sub-CState:{}", name, p.pwre_hw() ? 1 : 0, p.pwre_state(),
                         p.pwre_sub_state());
    case PacketType::kPwrx:
      return fmt::format("{} Last CState:{} Deepest CState:{} Wake Reason {:#x}", name, p.pwrx_last(),
                         p.pwrx_deepest(), p.pwrx_wake_reason());
    case PacketType::kBbp:
      return fmt::format("{} SZ {}-byte Type {:#x}", name, p.bbp_item_bytes(), p.bbp_type());
    case PacketType::kBip:
      return fmt::format("{} ID {:#04x} Value {:#x}", name, p.bip_id(), p.bip_value());
    case PacketType::kCfe:
      return fmt::format("{} Type {:#x} ({}) Vector {:#x} IP:{}", name, p.cfe_type(), CfeTypeName(p.cfe_type()),
                         p.cfe_vector(), p.cfe_ip() ? 1 : 0);
    case PacketType::kEvd:
      return fmt::format("{} Type {:#x} ({}) Payload {:#x}", name, p.evd_type(), EvdTypeName(p.evd_type()),
                         p.evd_payload());
    case PacketType::kTrig: {
      std::string s = fmt::format("{} TRBV {:#04x}", name, p.trig_trbv());
      if (p.trig_icntv()) s += fmt::format(" ICNT {}", p.trig_icnt());
      if (p.trig_mult()) s += " MULT";
      return s + fmt::format(" IP:{}", p.trig_ip() ? 1 : 0);
    }
  }
  return std::string(name);
}

std::string ToString(const Packet& p) {
  return fmt::format("[{:#x}+{}] {}", p.offset, p.size, Describe(p));
}

void PrintTo(const Packet& packet, std::ostream* os) { *os << ToString(packet); }

}  // namespace perftest::pt
