// Hand-assembled packets, one or more per packet type, from the bit layouts
// in the Intel SDM Vol. 3C §33.4.2 "Packet Definitions" tables, with what
// Describe() must say about each. Shared by the decoder, encoder, libipt
// and fixture tests. `block` vectors are BIPs: decode them after a BBP of
// that item size (the BBP vector with SZ matching).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/pt/packet.h"

namespace perftest::pt::testing {

struct SdmVector {
  const char* spec;           // SDM section and table
  PacketType type;
  std::vector<uint8_t> bytes;
  std::string describe;       // Describe() of the decoded packet
  unsigned block = 0;         // BIP item size the vector needs (4 or 8), else 0
};

inline const std::vector<SdmVector>& SdmVectors() {
  static const std::vector<SdmVector> kVectors = {
      {"§33.4.2.20 PAD Packet Definition", PacketType::kPad, {0x00}, "PAD"},
      {"§33.4.2.17 PSB Packet Definition", PacketType::kPsb,
       {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82}, "PSB"},
      {"§33.4.2.18 PSBEND Packet Definition", PacketType::kPsbEnd, {0x02, 0x23}, "PSBEND"},
      // Short TNT: 1, B1..BN, 0 — stop bit then the branches, oldest first.
      {"§33.4.2.1 TNT Packet Definition (short)", PacketType::kTnt8, {0x04}, "TNT-8 N (1)"},
      {"§33.4.2.1 TNT Packet Definition (short)", PacketType::kTnt8, {0x0a}, "TNT-8 NT (2)"},
      {"§33.4.2.1 TNT Packet Definition (short)", PacketType::kTnt8, {0xfe}, "TNT-8 TTTTTT (6)"},
      {"§33.4.2.1 TNT Packet Definition (short)", PacketType::kTnt8, {0x6c}, "TNT-8 TNTTN (5)"},
      // Long TNT: 02 A3, then 48 bits with the stop bit after the last branch.
      {"§33.4.2.1 TNT Packet Definition (long)", PacketType::kTnt64, {0x02, 0xa3, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00},
       "TNT-64 NT (2)"},
      {"§33.4.2.1 TNT Packet Definition (long)", PacketType::kTnt64, {0x02, 0xa3, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80},
       "TNT-64 NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNT (47)"},
      // TIP: IPBytes:01101b, then 0/2/4/6/6/8 payload bytes (table "Compressed IP Payload Format").
      {"§33.4.2.2 TIP Packet Definition", PacketType::kTip, {0x0d}, "TIP suppressed"},
      {"§33.4.2.2 TIP Packet Definition", PacketType::kTip, {0x2d, 0x34, 0x12}, "TIP 0x1234 (upd16)"},
      {"§33.4.2.2 TIP Packet Definition", PacketType::kTip, {0x4d, 0x00, 0x10, 0x40, 0x00}, "TIP 0x401000 (upd32)"},
      {"§33.4.2.2 TIP Packet Definition", PacketType::kTip, {0x6d, 0x00, 0x10, 0x40, 0x00, 0x00, 0x80},
       "TIP 0x800000401000 (sext48)"},
      {"§33.4.2.2 TIP Packet Definition", PacketType::kTip, {0x8d, 0x00, 0x10, 0x40, 0x00, 0x00, 0x7f},
       "TIP 0x7f0000401000 (upd48)"},
      {"§33.4.2.2 TIP Packet Definition", PacketType::kTip,
       {0xcd, 0x00, 0x10, 0x40, 0x00, 0x00, 0x80, 0xff, 0xff}, "TIP 0xffff800000401000 (full)"},
      {"§33.4.2.4 TIP.PGE Packet Definition", PacketType::kTipPge, {0x51, 0x00, 0x10, 0x40, 0x00},
       "TIP.PGE 0x401000 (upd32)"},
      {"§33.4.2.5 TIP.PGD Packet Definition", PacketType::kTipPgd, {0x01}, "TIP.PGD suppressed"},
      {"§33.4.2.5 TIP.PGD Packet Definition", PacketType::kTipPgd, {0x21, 0xef, 0xbe}, "TIP.PGD 0xbeef (upd16)"},
      {"§33.4.2.6 FUP Packet Definition", PacketType::kFup, {0x1d}, "FUP suppressed"},
      {"§33.4.2.6 FUP Packet Definition", PacketType::kFup, {0x7d, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00},
       "FUP 0x401000 (sext48)"},
      // PIP: 02 43, then NR in bit 0 and CR3[51:5] in bits 47:1.
      {"§33.4.2.7 PIP Packet Definition", PacketType::kPip, {0x02, 0x43, 0x01, 0x45, 0x23, 0x01, 0x00, 0x00},
       "PIP CR3 0x12345000 NR=1"},
      // MODE: 99h, then leaf in bits 7:5.
      {"§33.4.2.8 MODE.Exec Packet Definition", PacketType::kModeExec, {0x99, 0x00},
       "MODE.Exec 16-bit CS.L=0 CS.D=0 IF=0"},
      {"§33.4.2.8 MODE.Exec Packet Definition", PacketType::kModeExec, {0x99, 0x01},
       "MODE.Exec 64-bit CS.L=1 CS.D=0 IF=0"},
      {"§33.4.2.8 MODE.Exec Packet Definition", PacketType::kModeExec, {0x99, 0x02},
       "MODE.Exec 32-bit CS.L=0 CS.D=1 IF=0"},
      {"§33.4.2.8 MODE.Exec Packet Definition", PacketType::kModeExec, {0x99, 0x05},
       "MODE.Exec 64-bit CS.L=1 CS.D=0 IF=1"},
      {"§33.4.2.8 MODE.Exec Packet Definition", PacketType::kModeExec, {0x99, 0x03},
       "MODE.Exec invalid CS.L=1 CS.D=1 IF=0"},
      {"§33.4.2.8 MODE.TSX Packet Definition", PacketType::kModeTsx, {0x99, 0x21}, "MODE.TSX InTX=1 TXAbort=0"},
      {"§33.4.2.8 MODE.TSX Packet Definition", PacketType::kModeTsx, {0x99, 0x22}, "MODE.TSX InTX=0 TXAbort=1"},
      {"§33.4.2.9 TraceStop Packet Definition", PacketType::kTraceStop, {0x02, 0x83}, "TraceStop"},
      {"§33.4.2.10 CBR Packet Definition", PacketType::kCbr, {0x02, 0x03, 0x2a, 0x00}, "CBR 0x2a"},
      {"§33.4.2.11 TSC Packet Definition", PacketType::kTsc, {0x19, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22},
       "TSC 0x22334455667788"},
      {"§33.4.2.12 MTC Packet Definition", PacketType::kMtc, {0x59, 0xab}, "MTC 0xab"},
      // TMA: 02 73, CTC[15:0], reserved, FastCounter[7:0], FastCounter[8].
      {"§33.4.2.13 TMA Packet Definition", PacketType::kTma, {0x02, 0x73, 0x34, 0x12, 0x00, 0xff, 0x01},
       "TMA CTC 0x1234 FC 0x1ff"},
      // CYC: Cycle Counter[4:0]:Exp:11b, then Cycle Counter[11:5]:Exp, ...
      {"§33.4.2.14 CYC Packet Definition", PacketType::kCyc, {0xab}, "CYC 0x15"},
      {"§33.4.2.14 CYC Packet Definition", PacketType::kCyc, {0x0f, 0x02}, "CYC 0x21"},
      {"§33.4.2.14 CYC Packet Definition", PacketType::kCyc, {0x07, 0x01, 0x02}, "CYC 0x1000"},
      {"§33.4.2.14 CYC Packet Definition", PacketType::kCyc,
       {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, "CYC 0x1fffffffffffffff"},
      {"§33.4.2.15 VMCS Packet Definition", PacketType::kVmcs, {0x02, 0xc8, 0x45, 0x23, 0x01, 0x00, 0x00},
       "VMCS 0x12345000"},
      {"§33.4.2.16 OVF Packet Definition", PacketType::kOvf, {0x02, 0xf3}, "OVF"},
      {"§33.4.2.19 MNT Packet Definition", PacketType::kMnt,
       {0x02, 0xc3, 0x88, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}, "MNT 0x807060504030201"},
      // PTW: 02, IP:PayloadBytes:10010b, payload.
      {"§33.4.2.21 PTW Packet Definition", PacketType::kPtw, {0x02, 0x12, 0xef, 0xbe, 0xad, 0xde},
       "PTW 0xdeadbeef (4 bytes) IP:0"},
      {"§33.4.2.21 PTW Packet Definition", PacketType::kPtw,
       {0x02, 0xb2, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}, "PTW 0x102030405060708 (8 bytes) IP:1"},
      {"§33.4.2.22 EXSTOP Packet Definition", PacketType::kExStop, {0x02, 0x62}, "EXSTOP IP:0"},
      {"§33.4.2.22 EXSTOP Packet Definition", PacketType::kExStop, {0x02, 0xe2}, "EXSTOP IP:1"},
      {"§33.4.2.23 MWAIT Packet Definition", PacketType::kMwait,
       {0x02, 0xc2, 0x20, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00}, "MWAIT Hints 0x20 Extensions 0x1"},
      // PWRE: byte 2 bit 7 HW; byte 3 C-state[7:4], sub C-state[3:0].
      {"§33.4.2.24 PWRE Packet Definition", PacketType::kPwre, {0x02, 0x22, 0x80, 0x21}, "PWRE HW:1 CState:2 Sub-CState:1"},
      {"§33.4.2.24 PWRE Packet Definition", PacketType::kPwre, {0x02, 0x22, 0x00, 0x60}, "PWRE HW:0 CState:6 Sub-CState:0"},
      // PWRX: byte 2 last[7:4] deepest[3:0]; byte 3 wake reason[3:0]; bytes 4..6 reserved.
      {"§33.4.2.25 PWRX Packet Definition", PacketType::kPwrx, {0x02, 0xa2, 0x62, 0x01, 0x00, 0x00, 0x00},
       "PWRX Last CState:6 Deepest CState:2 Wake Reason 0x1"},
      // BBP: 02 63, SZ in bit 7 (1: 4-byte items), Type[4:0].
      {"§33.4.2.26 BBP Packet Definition", PacketType::kBbp, {0x02, 0x63, 0x84}, "BBP SZ 4-byte Type 0x4"},
      {"§33.4.2.26 BBP Packet Definition", PacketType::kBbp, {0x02, 0x63, 0x01}, "BBP SZ 8-byte Type 0x1"},
      // BIP: ID[4:0]:100b, then the item.
      {"§33.4.2.27 BIP Packet Definition", PacketType::kBip, {0x14, 0x78, 0x56, 0x34, 0x12},
       "BIP ID 0x02 Value 0x12345678", 4},
      {"§33.4.2.27 BIP Packet Definition", PacketType::kBip,
       {0xfc, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}, "BIP ID 0x1f Value 0x102030405060708", 8},
      {"§33.4.2.28 BEP Packet Definition", PacketType::kBep, {0x02, 0x33}, "BEP IP:0"},
      {"§33.4.2.28 BEP Packet Definition", PacketType::kBep, {0x02, 0xb3}, "BEP IP:1"},
      // CFE: 02 13, byte 2 IP[7] Type[4:0], byte 3 Vector.
      {"§33.4.2.29 CFE Packet Definition", PacketType::kCfe, {0x02, 0x13, 0x81, 0x0e},
       "CFE Type 0x1 (INTR) Vector 0xe IP:1"},
      {"§33.4.2.29 CFE Packet Definition", PacketType::kCfe, {0x02, 0x13, 0x02, 0x00},
       "CFE Type 0x2 (IRET) Vector 0x0 IP:0"},
      // EVD: 02 53, byte 2 Type[5:0], bytes 3..10 Payload[63:0].
      {"§33.4.2.30 EVD Packet Definition", PacketType::kEvd,
       {0x02, 0x53, 0x00, 0xaa, 0xba, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00}, "EVD Type 0x0 (CR2) Payload 0xfbaaa"},
      {"§33.4.2.30 EVD Packet Definition", PacketType::kEvd,
       {0x02, 0x53, 0x02, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80}, "EVD Type 0x2 (VMX exit reason) Payload 0x800000000000000a"},
      // TRIG: D9, byte 1 IP[7] ICNTV[6] MULT[5], byte 2 TRBV, bytes 3..4 ICNT with ICNTV.
      {"§33.4.2 TRIG Packet Definition", PacketType::kTrig, {0xd9, 0x00, 0x01}, "TRIG TRBV 0x01 IP:0"},
      {"§33.4.2 TRIG Packet Definition", PacketType::kTrig, {0xd9, 0x60, 0xa1, 0x01, 0x00},
       "TRIG TRBV 0xa1 ICNT 1 MULT IP:0"},
      {"§33.4.2 TRIG Packet Definition", PacketType::kTrig, {0xd9, 0xc0, 0x1a, 0x34, 0x12},
       "TRIG TRBV 0x1a ICNT 4660 IP:1"},
  };
  return kVectors;
}

// The bytes that put a decoder in a block of `item_bytes` BIPs.
inline std::vector<uint8_t> BbpFor(unsigned item_bytes) {
  return {0x02, 0x63, static_cast<uint8_t>(item_bytes == 4 ? 0x84 : 0x04)};
}

}  // namespace perftest::pt::testing
