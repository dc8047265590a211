// Intel PT packets: the types and fields of Intel SDM Vol. 3C §33.4.2
// "Packet Definitions" (chapter 33 "Intel Processor Trace", section 33.4
// "Trace Packets and Formats"), one value type for all of them.
//
//   pt::Packet p;                               // filled by PacketDecoder::Next()
//   if (p.type == pt::PacketType::kTip)
//     fmt::print("{} -> {:#x}\n", pt::PacketName(p.type), p.ip_payload());
//   fmt::print("{}\n", pt::Describe(p));        // "TIP 0x401000 (upd32)"
//
// A Packet keeps what the packet's bytes say, not an interpretation: the
// first byte (`opcode`), the extension byte of 02h-prefixed packets (`ext`)
// and the payload bits in `payload`, little-endian as laid out in the SDM
// table, so that encoding a decoded packet gives back its bytes exactly
// (packet_encoder.h). The accessors below name the SDM fields; each may be
// called only for the packet types it lists (checked in debug builds).
//
// Payload layout per type (`payload`): the bytes after the opcode, as they are
// in the trace (little-endian), except where noted.
//   TNT-8           0 (the branches and the stop bit are opcode[7:1])
//   TNT-64          bytes 2..7: the TNT field including its stop bit
//   TIP, TIP.PGE, TIP.PGD, FUP   the IP bytes as stored (0, 2, 4, 6 or 8 bytes)
//   PIP             bytes 2..7 (NR in bit 0, CR3[51:5] in bits 47:1)
//   MODE.Exec, MODE.TSX   byte 1 (leaf in bits 7:5, the mode bits below)
//   CBR             bytes 2..3 (ratio, reserved)
//   TSC             TSC[55:0];  MTC  CTC[7:0]
//   CYC             the extension bytes 1..size-1 (Cycle Counter[4:0] is opcode[7:3])
//   TMA             CTC[15:0] in bits 15:0, FastCounter[8:0] in bits 24:16
//   VMCS            bytes 2..6 (VMCS pointer [51:12]);  MNT  bytes 3..10
//   PTW             the 4- or 8-byte PTWRITE operand
//   MWAIT           bytes 2..9 (hints EAX in bits 31:0, extensions ECX in 63:32)
//   PWRE            bytes 2..3;  PWRX  bytes 2..6;  BBP  byte 2;  BIP  the 4- or 8-byte value
//   CFE             bytes 2..3 (IP in bit 7, Type in bits 4:0, Vector in bits 15:8)
//   EVD             bytes 3..10 (the 64-bit event data); its Type (byte 2) is in
//                   `opcode`, the one packet whose opcode is not its byte 0 (02h,
//                   as for every packet with an `ext`): byte 2 has no other room
//   TRIG            bytes 1..2 (IP bit 7, ICNTV bit 6, MULT bit 5, TRBV in bits
//                   15:8), and with ICNTV bytes 3..4 (ICNT in bits 31:16)
//   others          0
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace perftest::pt {

// Every packet of SDM §33.4.2, plus kInvalid for a default-constructed Packet.
enum class PacketType : uint8_t {
  kInvalid = 0,
  kPad,        // §33.4.2.20 PAD: 00h
  kPsb,        // §33.4.2.17 PSB: 02h 82h, x8
  kPsbEnd,     // §33.4.2.18 PSBEND: 02h 23h
  kTnt8,       // §33.4.2.1  Short TNT: 1 byte, bit 0 clear, 1..6 branches
  kTnt64,      // §33.4.2.1  Long TNT: 02h A3h + 6 bytes, 1..47 branches
  kTip,        // §33.4.2.2  TIP: IPBytes:01101b
  kTipPge,     // §33.4.2.4  TIP.PGE: IPBytes:10001b
  kTipPgd,     // §33.4.2.5  TIP.PGD: IPBytes:00001b
  kFup,        // §33.4.2.6  FUP: IPBytes:11101b
  kPip,        // §33.4.2.7  PIP: 02h 43h + 6 bytes
  kModeExec,   // §33.4.2.8  MODE.Exec: 99h, leaf 000b
  kModeTsx,    // §33.4.2.8  MODE.TSX: 99h, leaf 001b
  kTraceStop,  // §33.4.2.9  TraceStop: 02h 83h
  kCbr,        // §33.4.2.10 CBR: 02h 03h + 2 bytes
  kTsc,        // §33.4.2.11 TSC: 19h + 7 bytes
  kMtc,        // §33.4.2.12 MTC: 59h + 1 byte
  kTma,        // §33.4.2.13 TMA: 02h 73h + 5 bytes
  kCyc,        // §33.4.2.14 CYC: xxxxxE11b + extension bytes while E is set
  kVmcs,       // §33.4.2.15 VMCS: 02h C8h + 5 bytes
  kOvf,        // §33.4.2.16 OVF: 02h F3h
  kMnt,        // §33.4.2.19 MNT: 02h C3h 88h + 8 bytes
  kPtw,        // §33.4.2.21 PTW: 02h IP:PayloadBytes:10010b + 4 or 8 bytes
  kExStop,     // §33.4.2.22 EXSTOP: 02h 62h (IP=0) / E2h (IP=1)
  kMwait,      // §33.4.2.23 MWAIT: 02h C2h + 8 bytes
  kPwre,       // §33.4.2.24 PWRE: 02h 22h + 2 bytes
  kPwrx,       // §33.4.2.25 PWRX: 02h A2h + 5 bytes
  kBbp,        // §33.4.2.26 BBP: 02h 63h + 1 byte (SZ, Type)
  kBip,        // §33.4.2.27 BIP: ID:100b + 4 or 8 bytes, only inside a block (after BBP)
  kBep,        // §33.4.2.28 BEP: 02h 33h (IP=0) / B3h (IP=1)
  // Event Trace (IA32_RTIT_CTL.EventEn, bit 31) and Trigger Tracing packets of
  // later SDMs (libipt 2.0.5 predates them; libipt 2.1 decodes CFE and EVD,
  // 2.2 TRIG, with the same layouts):
  kCfe,        // §33.4.2.29 CFE (Control Flow Event): 02h 13h + 2 bytes
  kEvd,        // §33.4.2.30 EVD (Event Data): 02h 53h + Type byte + 8 bytes
  kTrig,       // §33.4.2 TRIG (Trigger): D9h + 2 bytes, + 2 more (ICNT) with ICNTV
};
inline constexpr int kPacketTypeCount = static_cast<int>(PacketType::kTrig) + 1;

// The SDM's name: "PSB", "TNT-8", "TIP.PGE", "MODE.Exec", "TraceStop", ... Never null.
std::string_view PacketName(PacketType type);

// The IPBytes field of TIP, TIP.PGE, TIP.PGD and FUP (SDM §33.4.2.2, table
// "Compressed IP Payload Format"). 101b and 111b are reserved: the decoder
// reports them as EBADMSG, so a decoded packet never holds them.
enum class IpBytes : uint8_t {
  kSuppressed = 0b000,  // no payload: the IP is suppressed
  kUpdate16 = 0b001,    // IP[15:0]; IP[63:16] from the last IP
  kUpdate32 = 0b010,    // IP[31:0]; IP[63:32] from the last IP
  kSext48 = 0b011,      // IP[47:0], sign-extended from bit 47
  kUpdate48 = 0b100,    // IP[47:0]; IP[63:48] from the last IP
  kFull = 0b110,        // IP[63:0]
};
// Payload bytes for an IPBytes value: 0, 2, 4, 6, 6, -1 (reserved), 8, -1 (reserved).
int IpPayloadSize(uint8_t ipbytes);
// "suppressed", "upd16", "upd32", "sext48", "upd48", "full", or "reserved".
std::string_view IpBytesName(uint8_t ipbytes);

// The SDM's names of the CFE Type field (§33.4.2.29: "INTR", "IRET", "SMI",
// "RSM", "SIPI", "INIT", "VMENTRY", "VMEXIT", "VMEXIT_INTR", "SHUTDOWN",
// "UINTR", "UIRET", "SWINTR", "SYSCALL"; "reserved" for others) and of the
// EVD Type field (§33.4.2.30: "CR2", "VMX exit qualification", "VMX exit
// reason"; "reserved").
std::string_view CfeTypeName(uint8_t type);
std::string_view EvdTypeName(uint8_t type);

// MODE.Exec CS.L/CS.D (SDM §33.4.2.8, table "MODE.Exec Packet"). kInvalid is
// CS.L=1 with CS.D=1, which the SDM reserves; the packet still decodes.
enum class ExecMode : uint8_t { k16Bit, k32Bit, k64Bit, kInvalid };
std::string_view ExecModeName(ExecMode mode);  // "16-bit", "32-bit", "64-bit", "invalid"

struct Packet {
  uint64_t offset = 0;   // of the first byte, from the start of the trace buffer
  uint64_t payload = 0;  // see the table at the top of this file
  PacketType type = PacketType::kInvalid;
  uint8_t size = 0;      // bytes, opcode included (1..16)
  uint8_t opcode = 0;    // byte 0
  uint8_t ext = 0;       // byte 1 of 02h-prefixed packets (the extended opcode), else 0

  bool operator==(const Packet&) const = default;

  // TNT-8, TNT-64: the number of branches (1..6 or 1..47; 0 for a field
  // without a stop bit, which the decoder never returns).
  unsigned tnt_size() const {
    const uint64_t field = tnt_field();
    return field == 0 ? 0 : static_cast<unsigned>(std::bit_width(field)) - 1;
  }
  // TNT-8, TNT-64: the branch bits without the stop bit. The oldest branch is
  // bit tnt_size()-1, the newest bit 0; 1 = taken. (libipt's pt_packet_tnt.payload.)
  uint64_t tnt_bits() const { return tnt_field() & ~(uint64_t{1} << tnt_size()); }
  // TNT-8, TNT-64: the TNT field with its stop bit (opcode[7:1], or the 48-bit payload).
  uint64_t tnt_field() const {
    assert(type == PacketType::kTnt8 || type == PacketType::kTnt64);
    return type == PacketType::kTnt8 ? uint64_t{opcode} >> 1 : payload;
  }

  // TIP, TIP.PGE, TIP.PGD, FUP: IPBytes (opcode[7:5]) and the raw IP payload,
  // zero-extended; last_ip.h turns the two into an IP.
  uint8_t ipbytes() const { assert(is_ip()); return opcode >> 5; }
  uint64_t ip_payload() const { assert(is_ip()); return payload; }
  bool is_ip() const {
    return type == PacketType::kTip || type == PacketType::kTipPge || type == PacketType::kTipPgd ||
           type == PacketType::kFup;
  }

  // PIP: CR3 (bits 51:5, low 5 bits zero) and the non-root bit NR.
  uint64_t cr3() const { assert(type == PacketType::kPip); return (payload >> 1) << 5; }
  bool nr() const { assert(type == PacketType::kPip); return (payload & 1) != 0; }

  // MODE.Exec: CS.L (bit 0), CS.D (bit 1), IF (bit 2; SDMs with Event Trace).
  bool cs_l() const { assert(type == PacketType::kModeExec); return (payload & 1) != 0; }
  bool cs_d() const { assert(type == PacketType::kModeExec); return (payload & 2) != 0; }
  bool if_flag() const { assert(type == PacketType::kModeExec); return (payload & 4) != 0; }
  ExecMode exec_mode() const {
    if (cs_l()) return cs_d() ? ExecMode::kInvalid : ExecMode::k64Bit;
    return cs_d() ? ExecMode::k32Bit : ExecMode::k16Bit;
  }
  // MODE.TSX: InTX (bit 0), TXAbort (bit 1).
  bool intx() const { assert(type == PacketType::kModeTsx); return (payload & 1) != 0; }
  bool txabort() const { assert(type == PacketType::kModeTsx); return (payload & 2) != 0; }

  // CBR: the core:bus ratio (byte 2).
  uint8_t cbr() const { assert(type == PacketType::kCbr); return static_cast<uint8_t>(payload); }
  // TSC: TSC[55:0].
  uint64_t tsc() const { assert(type == PacketType::kTsc); return payload; }
  // MTC: CTC[7:0] (bits CTC[N+7:N] of the crystal clock, N = mtc_period).
  uint8_t mtc_ctc() const { assert(type == PacketType::kMtc); return static_cast<uint8_t>(payload); }
  // TMA: CTC[15:0] and FastCounter[8:0].
  uint16_t tma_ctc() const { assert(type == PacketType::kTma); return static_cast<uint16_t>(payload); }
  uint16_t tma_fc() const { assert(type == PacketType::kTma); return static_cast<uint16_t>(payload >> 16); }
  // CYC: cycles since the previous CYC (up to 61 bits: 5 + 8 x 7): opcode[7:3],
  // then bits 7:1 of each extension byte.
  uint64_t cyc() const {
    assert(type == PacketType::kCyc);
    uint64_t x = (payload >> 1) & 0x7f7f7f7f7f7f7f7full;  // 7 bits per byte, packed below
    x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
    x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
    x = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
    return uint64_t{static_cast<uint8_t>(opcode >> 3)} | (x << 5);
  }
  // VMCS: the VMCS pointer (bits 51:12).
  uint64_t vmcs_base() const { assert(type == PacketType::kVmcs); return payload << 12; }
  // MNT: the model-specific payload.
  uint64_t mnt_payload() const { assert(type == PacketType::kMnt); return payload; }

  // PTW: the PTWRITE operand, its size (4 or 8 bytes: PayloadBytes ext[6:5] = 0 or 1)
  // and the IP bit (ext[7]: a FUP with the PTWRITE's IP follows).
  uint64_t ptw_payload() const { assert(type == PacketType::kPtw); return payload; }
  unsigned ptw_payload_bytes() const { assert(type == PacketType::kPtw); return ((ext >> 5) & 3) == 0 ? 4 : 8; }
  bool ptw_ip() const { assert(type == PacketType::kPtw); return (ext & 0x80) != 0; }

  // EXSTOP, BEP: the IP bit (ext[7]: a FUP follows).
  bool exstop_ip() const { assert(type == PacketType::kExStop); return (ext & 0x80) != 0; }
  bool bep_ip() const { assert(type == PacketType::kBep); return (ext & 0x80) != 0; }

  // MWAIT: the hints (EAX) and extensions (ECX) of the MWAIT; the SDM defines
  // only hints[7:0] and extensions[1:0], the rest is reserved.
  uint32_t mwait_hints() const { assert(type == PacketType::kMwait); return static_cast<uint32_t>(payload); }
  uint32_t mwait_ext() const { assert(type == PacketType::kMwait); return static_cast<uint32_t>(payload >> 32); }

  // PWRE: HW (byte 2 bit 7: entry initiated by hardware), resolved thread
  // C-state (byte 3 bits 7:4) and sub C-state (byte 3 bits 3:0).
  bool pwre_hw() const { assert(type == PacketType::kPwre); return (payload & 0x80) != 0; }
  uint8_t pwre_state() const { assert(type == PacketType::kPwre); return (payload >> 12) & 0xf; }
  uint8_t pwre_sub_state() const { assert(type == PacketType::kPwre); return (payload >> 8) & 0xf; }

  // PWRX: last core C-state (byte 2 bits 7:4), deepest core C-state (byte 2
  // bits 3:0) and the one-hot wake reason (byte 3 bits 3:0: bit 0 interrupt,
  // bit 2 store to a monitored address, bit 3 hardware autonomous).
  uint8_t pwrx_last() const { assert(type == PacketType::kPwrx); return (payload >> 4) & 0xf; }
  uint8_t pwrx_deepest() const { assert(type == PacketType::kPwrx); return payload & 0xf; }
  uint8_t pwrx_wake_reason() const { assert(type == PacketType::kPwrx); return (payload >> 8) & 0xf; }

  // BBP: SZ (byte 2 bit 7: 1 = the block's BIPs carry 4-byte items, 0 = 8-byte)
  // and the block type (byte 2 bits 4:0: 01h GP registers, 04h PEBS basic,
  // 05h PEBS memory, 08h..0Ah LBR, 10h XMM).
  unsigned bbp_item_bytes() const { assert(type == PacketType::kBbp); return (payload & 0x80) ? 4 : 8; }
  uint8_t bbp_type() const { assert(type == PacketType::kBbp); return payload & 0x1f; }
  // BIP: the item ID (opcode[7:3]) and the item value (4 or 8 bytes, per the BBP).
  uint8_t bip_id() const { assert(type == PacketType::kBip); return opcode >> 3; }
  uint64_t bip_value() const { assert(type == PacketType::kBip); return payload; }

  // CFE: the IP bit (byte 2 bit 7: a FUP with the event's IP follows), the
  // event Type (byte 2 bits 4:0: 1 INTR, 2 IRET, 3 SMI, 4 RSM, 5 SIPI, 6 INIT,
  // 7 VMENTRY, 8 VMEXIT, 9 VMEXIT_INTR, 0Ah SHUTDOWN, 0Ch UINTR, 0Dh UIRET,
  // 0Eh SWINTR, 0Fh SYSCALL) and the Vector (byte 3: the interrupt/SIPI vector).
  bool cfe_ip() const { assert(type == PacketType::kCfe); return (payload & 0x80) != 0; }
  uint8_t cfe_type() const { assert(type == PacketType::kCfe); return payload & 0x1f; }
  uint8_t cfe_vector() const { assert(type == PacketType::kCfe); return static_cast<uint8_t>(payload >> 8); }
  // EVD: the Type (byte 2 bits 5:0: 0 page-fault linear address (CR2), 1 VMX
  // exit qualification, 2 VMX exit reason) and the 64-bit event data.
  uint8_t evd_type() const { assert(type == PacketType::kEvd); return opcode & 0x3f; }
  uint64_t evd_payload() const { assert(type == PacketType::kEvd); return payload; }
  // TRIG: IP (byte 1 bit 7: a FUP follows), ICNTV (bit 6: ICNT is valid),
  // MULT (bit 5: more triggers fired than TRBV reports), TRBV (byte 2: the
  // trigger bit vector) and ICNT (bytes 3..4, with ICNTV: instructions
  // retired since the last IP packet, TNT or TIP).
  bool trig_ip() const { assert(type == PacketType::kTrig); return (payload & 0x80) != 0; }
  bool trig_icntv() const { assert(type == PacketType::kTrig); return (payload & 0x40) != 0; }
  bool trig_mult() const { assert(type == PacketType::kTrig); return (payload & 0x20) != 0; }
  uint8_t trig_trbv() const { assert(type == PacketType::kTrig); return static_cast<uint8_t>(payload >> 8); }
  uint16_t trig_icnt() const { assert(type == PacketType::kTrig); return static_cast<uint16_t>(payload >> 16); }
};

// The decoder writes type, size, opcode and ext as one 4-byte word.
static_assert(offsetof(Packet, size) == offsetof(Packet, type) + 1 && offsetof(Packet, opcode) == offsetof(Packet, type) + 2 &&
              offsetof(Packet, ext) == offsetof(Packet, type) + 3);

// A one-line description of the packet's fields, as `perf script -D` prints
// them: "PSB", "TNT-8 TTN (3)", "TIP 0x401000 (upd32)", "FUP suppressed",
// "PIP CR3 0x1234000 NR=0", "MODE.Exec 64-bit CS.L=1 CS.D=0 IF=0", "CYC 0x1f", ...
std::string Describe(const Packet& packet);

// GoogleTest printer, with offset and size: "[0x10+5] TIP 0x401000 (upd32)".
std::string ToString(const Packet& packet);
void PrintTo(const Packet& packet, std::ostream* os);

}  // namespace perftest::pt
