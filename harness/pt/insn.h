// Instruction classification for Intel PT flow reconstruction: the length of
// one x86 instruction, how it changes the flow of control (the "COFI" classes
// of Intel SDM Vol. 3C §33.4.1 "Change of Flow Instruction (COFI) Tracing",
// table "COFI Type for Branch Instructions") and, for direct branches, the
// target. Decoding is done by libzydis (Debian libzydis-dev, Zydis 4.0).
//
//   pt::InsnClassifier classifier;                // reusable, cheap to copy
//   pt::Insn insn;
//   const uint8_t code[] = {0xe8, 0x10, 0x00, 0x00, 0x00};   // call +0x10
//   if (classifier.Classify(code, 0x401000, pt::ExecMode::k64Bit, &insn) == 0) {
//     // insn.length == 5, insn.branch == BranchClass::kDirectCall,
//     // insn.target == 0x401015, insn.next_ip() == 0x401005
//   }
//
// What each class means for a PT decoder (SDM §33.4.1, table "COFI Type"):
//   kNone           no change of flow; execution continues at next_ip(). No packet.
//   kCondJump       Jcc, JCXZ/JECXZ/JRCXZ, LOOP/LOOPE/LOOPNE: one TNT bit
//                   (taken -> target, not taken -> next_ip()).
//   kDirectJump     JMP rel8/rel16/rel32: no packet, goes to target.
//   kDirectCall     CALL rel16/rel32: no packet, goes to target, pushes next_ip().
//   kIndirectJump   JMP r/m (FF /4): a TIP gives the target.
//   kIndirectCall   CALL r/m (FF /2): a TIP gives the target, pushes next_ip().
//   kReturn         near RET / RET imm16 (C3, C2): a TNT bit when return
//                   compression applies (the target is the pushed address),
//                   else a TIP.
//   kFarTransfer    SYSCALL, SYSRET, SYSENTER, SYSEXIT, INT n, INT3, INTO,
//                   INT1, IRET*, far CALL/JMP/RET, VMCALL, VMLAUNCH,
//                   VMRESUME, UIRET: a TIP gives the target. `far` says which.
//   kPtwrite        PTWRITE (F3 [REX] 0F AE /4): a PTW packet carries the
//                   operand (SDM §33.4.2.21); flow continues at next_ip().
//
// The classes and the set of far transfers follow libipt's pt_insn classes
// (ptic_cond_jump, ptic_jump, ptic_call, ptic_return, ptic_far_call,
// ptic_far_jump, ptic_far_return, ptic_ptwrite), so that a flow decoder built
// on this one walks code exactly as libipt's does; direct and indirect near
// branches are split here (libipt tells them apart in pt_insn_ext).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <Zydis/Decoder.h>

#include "harness/pt/packet.h"  // ExecMode

namespace perftest::pt {

enum class BranchClass : uint8_t {
  kNone,
  kCondJump,
  kDirectJump,
  kDirectCall,
  kIndirectJump,
  kIndirectCall,
  kReturn,
  kFarTransfer,
  kPtwrite,
};
// "none", "cond-jump", "direct-jump", "direct-call", "indirect-jump",
// "indirect-call", "return", "far-transfer", "ptwrite".
std::string_view BranchClassName(BranchClass branch);

// Which far transfer (BranchClass::kFarTransfer only; kNone otherwise).
enum class FarKind : uint8_t {
  kNone,
  kSyscall,    // SYSCALL (0F 05)
  kSysret,     // SYSRET (0F 07)
  kSysenter,   // SYSENTER (0F 34)
  kSysexit,    // SYSEXIT (0F 35)
  kInterrupt,  // INT n (CD ib), INT3 (CC), INTO (CE, not in 64-bit mode), INT1 (F1)
  kIret,       // IRET/IRETD/IRETQ (CF)
  kFarCall,    // CALL ptr16:16/32 (9A, not in 64-bit mode), CALL m16:xx (FF /3)
  kFarJump,    // JMP ptr16:16/32 (EA, not in 64-bit mode), JMP m16:xx (FF /5)
  kFarReturn,  // RET far / RET far imm16 (CB, CA)
  kVmCall,     // VMCALL (0F 01 C1)
  kVmEntry,    // VMLAUNCH (0F 01 C2), VMRESUME (0F 01 C3)
  kUiret,      // UIRET (F3 0F 01 EC)
};
// "syscall", "sysret", "sysenter", "sysexit", "interrupt", "iret",
// "far-call", "far-jump", "far-return", "vmcall", "vmentry", "uiret", "none".
std::string_view FarKindName(FarKind far);
// libipt's grouping: ptic_far_call (syscall, sysenter, interrupt, far call,
// vmcall), ptic_far_return (sysret, sysexit, iret, far return, vmentry,
// uiret), ptic_far_jump (far jump). For perf's branch flags: a far "call"
// enters (flags c/s/i), a far "return" leaves (flags r/y).
bool IsFarCall(FarKind far);
bool IsFarReturn(FarKind far);

// One classified instruction. Plain data; 24 bytes.
struct Insn {
  uint64_t ip = 0;       // linear address of the first byte
  uint64_t target = 0;   // kCondJump/kDirectJump/kDirectCall: the branch target
                         // (taken): next_ip() + displacement, not wrapped to
                         // the operand size (as libipt; insn.cc RelativeTarget);
                         // 0 for every other class
  uint8_t length = 0;    // 1..15 bytes
  BranchClass branch = BranchClass::kNone;
  FarKind far = FarKind::kNone;
  ExecMode mode = ExecMode::k64Bit;

  uint64_t next_ip() const { return ip + length; }
  // True for kCondJump, kDirectJump and kDirectCall (the classes with a target).
  bool has_target() const {
    return branch == BranchClass::kCondJump || branch == BranchClass::kDirectJump ||
           branch == BranchClass::kDirectCall;
  }
  // True when the instruction may leave the straight line (every class but
  // kNone and kPtwrite): the end of a basic block.
  bool ends_block() const { return branch != BranchClass::kNone && branch != BranchClass::kPtwrite; }
};

// A libzydis decoder per execution mode (16-bit, 32-bit, 64-bit), in Zydis's
// minimal mode (length, mnemonic, prefixes, ModR/M, immediates; no operands).
// Thread-compatible: Classify() is const and may run concurrently.
class InsnClassifier {
 public:
  InsnClassifier();

  // Classifies the instruction that starts at bytes[0], at linear address
  // `ip`, executed in `mode`. `bytes` may be longer than the instruction (at
  // most 15 bytes are read). Fills `*out` and returns 0, or:
  //   EINVAL   mode is ExecMode::kInvalid (MODE.Exec CS.L=1 CS.D=1).
  //   ENODATA  bytes is empty, or ends before the instruction does (the
  //            instruction continues past the end of the given bytes).
  //   EILSEQ   the bytes are not a valid instruction in `mode` (libzydis
  //            rejects the encoding, e.g. 0F 0B is fine but 06 in 64-bit
  //            mode is not; also an instruction longer than 15 bytes).
  // On error `*out` is left unchanged.
  int Classify(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out) const;
  // As Classify, but sizes some undefined encodings as libipt's instruction
  // length decoder does (a straight-line instruction, or a far or indirect
  // branch by its opcode: 1F in 64-bit mode, FF /7, VEX with an undefined
  // prefix, EA ptr16:32 in 64-bit mode, ...; insn.cc ClassifyUndefined), so
  // that the flow decoder walks code as pt_insn_next does. EILSEQ only for
  // what libipt cannot size either.
  int ClassifyLenient(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out) const;

 private:
  static int ClassifyUndefined(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out);
  ZydisDecoder decoder_[3];  // indexed by ExecMode (k16Bit, k32Bit, k64Bit)
};

// The x86 legacy prefixes at the start of `bytes` (Intel SDM Vol. 2A
// 2.1.1: F0, F2, F3, 2E, 36, 3E, 26, 64, 65, 66, 67; at most 14, the
// longest an instruction allows): how many, and whether 66h (operand size),
// 67h (address size) and F3h are among them. A REX prefix is not counted.
struct LegacyPrefixes {
  size_t count = 0;
  bool opsize = false;    // 66h
  bool addrsize = false;  // 67h
  bool rep = false;       // F3h
};
LegacyPrefixes ScanLegacyPrefixes(std::span<const uint8_t> bytes);

// Classify() with a process-wide classifier.
int ClassifyInsn(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out);

}  // namespace perftest::pt
