#include "harness/pt/insn.h"

#include <cerrno>

namespace perftest::pt {

std::string_view BranchClassName(BranchClass branch) {
  switch (branch) {
    case BranchClass::kNone: return "none";
    case BranchClass::kCondJump: return "cond-jump";
    case BranchClass::kDirectJump: return "direct-jump";
    case BranchClass::kDirectCall: return "direct-call";
    case BranchClass::kIndirectJump: return "indirect-jump";
    case BranchClass::kIndirectCall: return "indirect-call";
    case BranchClass::kReturn: return "return";
    case BranchClass::kFarTransfer: return "far-transfer";
    case BranchClass::kPtwrite: return "ptwrite";
  }
  return "unknown";
}

std::string_view FarKindName(FarKind far) {
  switch (far) {
    case FarKind::kNone: return "none";
    case FarKind::kSyscall: return "syscall";
    case FarKind::kSysret: return "sysret";
    case FarKind::kSysenter: return "sysenter";
    case FarKind::kSysexit: return "sysexit";
    case FarKind::kInterrupt: return "interrupt";
    case FarKind::kIret: return "iret";
    case FarKind::kFarCall: return "far-call";
    case FarKind::kFarJump: return "far-jump";
    case FarKind::kFarReturn: return "far-return";
    case FarKind::kVmCall: return "vmcall";
    case FarKind::kVmEntry: return "vmentry";
    case FarKind::kUiret: return "uiret";
  }
  return "unknown";
}

bool IsFarCall(FarKind far) {
  switch (far) {
    case FarKind::kSyscall:
    case FarKind::kSysenter:
    case FarKind::kInterrupt:
    case FarKind::kFarCall:
    case FarKind::kVmCall:
      return true;
    default:
      return false;
  }
}

bool IsFarReturn(FarKind far) {
  switch (far) {
    case FarKind::kSysret:
    case FarKind::kSysexit:
    case FarKind::kIret:
    case FarKind::kFarReturn:
    case FarKind::kVmEntry:
    case FarKind::kUiret:
      return true;
    default:
      return false;
  }
}

InsnClassifier::InsnClassifier() {
  // A 32-bit or 16-bit code segment under a 64-bit kernel runs in
  // compatibility mode (CS.L=0), which is what perf traces show.
  ZydisDecoderInit(&decoder_[0], ZYDIS_MACHINE_MODE_LONG_COMPAT_16, ZYDIS_STACK_WIDTH_16);
  ZydisDecoderInit(&decoder_[1], ZYDIS_MACHINE_MODE_LONG_COMPAT_32, ZYDIS_STACK_WIDTH_32);
  ZydisDecoderInit(&decoder_[2], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  for (ZydisDecoder& d : decoder_) ZydisDecoderEnableMode(&d, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
}

namespace {

// The taken target of a relative branch: next_ip + displacement, in every
// mode, as libipt computes it (pt_insn_next_ip, pt_insn_proceed: the
// sign-extended displacement added to the 64-bit IP). The SDM wraps the
// target to the operand size outside 64-bit mode (Vol. 2 "JMP"/"Jcc"/
// "CALL": EIP <- tempEIP AND FFFFFFFFH, or 0000FFFFH); the two differ only
// for a branch across 4 GiB (64 KiB), or at an IP above it — which only a
// corrupted trace gives (a MODE.Exec to 32- or 16-bit with 64-bit IPs), and
// there the flow must be libipt's (issue 7).
uint64_t RelativeTarget(const ZydisDecodedInstruction& z, uint64_t ip) {
  return ip + z.length + static_cast<uint64_t>(z.raw.imm[0].value.s);
}

}  // namespace

// The length of an ERETS/ERETU at bytes[0] (legacy prefixes, the last F2
// or F3 among them deciding, then 0F 01 CA; with a REX between, not
// recognized: left to Zydis), or 0.
static int EretLength(std::span<const uint8_t> bytes) {
  size_t n = 0;
  uint8_t last_f2f3 = 0;
  for (; n < bytes.size() && n < 14; ++n) {
    const uint8_t b = bytes[n];
    if (b == 0xf2 || b == 0xf3) last_f2f3 = b;
    else if (!(b == 0x66 || b == 0x67 || b == 0xf0 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 ||
               b == 0x64 || b == 0x65))
      break;
  }
  if (last_f2f3 == 0 || bytes.size() < n + 3) return 0;
  if (bytes[n] != 0x0f || bytes[n + 1] != 0x01 || bytes[n + 2] != 0xca) return 0;
  return static_cast<int>(n + 3);
}

int InsnClassifier::Classify(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode,
                             Insn* out) const {
  if (mode == ExecMode::kInvalid) return EINVAL;
  if (bytes.empty()) return ENODATA;
  if (const int len = EretLength(bytes); len > 0) {
    // FRED's ERETS (F2 0F 01 CA) and ERETU (F3 0F 01 CA), which Zydis 4
    // does not know (it takes them as CLAC): a far return that changes CPL,
    // as IRET (libipt pt_ild.c: ptic_far_return, PTI_INST_ERETS/ERETU;
    // pt_insn_changes_cpl). Like libipt, the last F2/F3 prefix decides.
    Insn insn;
    insn.ip = ip;
    insn.length = static_cast<uint8_t>(len);
    insn.mode = mode;
    insn.branch = BranchClass::kFarTransfer;
    insn.far = FarKind::kIret;
    *out = insn;
    return 0;
  }
  ZydisDecodedInstruction z;
  ZyanStatus status = ZydisDecoderDecodeInstruction(&decoder_[static_cast<int>(mode)], nullptr,
                                                    bytes.data(), bytes.size(), &z);
  if (status == ZYDIS_STATUS_NO_MORE_DATA) return bytes.size() < 15 ? ENODATA : EILSEQ;
  if (!ZYAN_SUCCESS(status)) return EILSEQ;

  Insn insn;
  insn.ip = ip;
  insn.length = z.length;
  insn.mode = mode;
  const bool map0 = z.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
  auto far = [&insn](FarKind kind) {
    insn.branch = BranchClass::kFarTransfer;
    insn.far = kind;
  };
  switch (z.mnemonic) {
    case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JL:
    case ZYDIS_MNEMONIC_JLE: case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNBE:
    case ZYDIS_MNEMONIC_JNL: case ZYDIS_MNEMONIC_JNLE: case ZYDIS_MNEMONIC_JNO:
    case ZYDIS_MNEMONIC_JNP: case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_JNZ:
    case ZYDIS_MNEMONIC_JO: case ZYDIS_MNEMONIC_JP: case ZYDIS_MNEMONIC_JS:
    case ZYDIS_MNEMONIC_JZ: case ZYDIS_MNEMONIC_JCXZ: case ZYDIS_MNEMONIC_JECXZ:
    case ZYDIS_MNEMONIC_JRCXZ: case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE:
    case ZYDIS_MNEMONIC_LOOPNE:
      if (!z.raw.imm[0].is_relative) break;  // KNC's JKZD/JKNZD are not listed
      insn.branch = BranchClass::kCondJump;
      insn.target = RelativeTarget(z, ip);
      break;
    case ZYDIS_MNEMONIC_JMP:
      if (z.raw.imm[0].is_relative) {  // EB cb, E9 cw/cd
        insn.branch = BranchClass::kDirectJump;
        insn.target = RelativeTarget(z, ip);
      } else if (map0 && z.opcode == 0xff && z.raw.modrm.reg == 4) {
        insn.branch = BranchClass::kIndirectJump;
      } else {  // EA ptr16:xx, FF /5 m16:xx
        far(FarKind::kFarJump);
      }
      break;
    case ZYDIS_MNEMONIC_CALL:
      if (z.raw.imm[0].is_relative) {  // E8 cw/cd
        insn.branch = BranchClass::kDirectCall;
        insn.target = RelativeTarget(z, ip);
      } else if (map0 && z.opcode == 0xff && z.raw.modrm.reg == 2) {
        insn.branch = BranchClass::kIndirectCall;
      } else {  // 9A ptr16:xx, FF /3 m16:xx
        far(FarKind::kFarCall);
      }
      break;
    case ZYDIS_MNEMONIC_RET:
      if (map0 && (z.opcode == 0xc3 || z.opcode == 0xc2)) {
        insn.branch = BranchClass::kReturn;
      } else {  // CB, CA
        far(FarKind::kFarReturn);
      }
      break;
    case ZYDIS_MNEMONIC_SYSCALL: far(FarKind::kSyscall); break;
    case ZYDIS_MNEMONIC_SYSRET: far(FarKind::kSysret); break;
    case ZYDIS_MNEMONIC_SYSENTER: far(FarKind::kSysenter); break;
    case ZYDIS_MNEMONIC_SYSEXIT: far(FarKind::kSysexit); break;
    case ZYDIS_MNEMONIC_INT: case ZYDIS_MNEMONIC_INT1: case ZYDIS_MNEMONIC_INT3:
    case ZYDIS_MNEMONIC_INTO:
      far(FarKind::kInterrupt);
      break;
    case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
      far(FarKind::kIret);
      break;
    case ZYDIS_MNEMONIC_VMCALL: far(FarKind::kVmCall); break;
    case ZYDIS_MNEMONIC_VMLAUNCH: case ZYDIS_MNEMONIC_VMRESUME:
      far(FarKind::kVmEntry);
      break;
    case ZYDIS_MNEMONIC_UIRET: far(FarKind::kUiret); break;
    case ZYDIS_MNEMONIC_PTWRITE: insn.branch = BranchClass::kPtwrite; break;
    default:
      break;
  }
  *out = insn;
  return 0;
}

LegacyPrefixes ScanLegacyPrefixes(std::span<const uint8_t> bytes) {
  LegacyPrefixes p;
  for (; p.count < bytes.size() && p.count < 14; ++p.count) {
    const uint8_t b = bytes[p.count];
    if (b == 0x66) p.opsize = true;
    else if (b == 0x67) p.addrsize = true;
    else if (b == 0xf3) p.rep = true;
    else if (!(b == 0xf0 || b == 0xf2 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65))
      break;
  }
  return p;
}

// ClassifyLenient's fallback: byte sequences libipt's length decoder
// (pti-ild, as pt_insn_next walks code) accepts although they are
// undefined, which Zydis rejects: libipt
// sizes them by their opcode's operand layout and steps over them, so the
// flow walks on as libipt's does (issue 7). Covered: the one-byte opcodes
// that are invalid in 64-bit mode (06 07 0E 16 17 1E 1F 27 2F 37 3F 60 61
// CE D6: 1 byte; D4/D5: with imm8; 82: as 80 /r ib; 9A/EA ptr16:32: far
// call/jump), 8C/8E with an undefined segment register, C6/C7 with a
// ModRM.reg other than 0 (C6 with imm8, C7 with none), FE/FF
// with an undefined ModRM.reg or operand, two-byte
// opcodes of a group with an undefined ModRM (0F 00, 01, 0D, 18-1F, 71-73,
// AE, B9, BA, C7: ModRM and imm8 as their layout), and VEX (C4/C5)
// encodings with an undefined prefix/opcode combination (ModRM, SIB,
// displacement, and imm8 where the opcode map has one). Others stay EILSEQ.
int InsnClassifier::ClassifyUndefined(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out) {
  const bool m64 = mode == ExecMode::k64Bit;
  const LegacyPrefixes prefixes = ScanLegacyPrefixes(bytes);
  size_t n = prefixes.count;
  const bool opsize = prefixes.opsize, addrsize = prefixes.addrsize;
  if (m64 && n < bytes.size() && (bytes[n] & 0xf0) == 0x40) ++n;  // REX
  if (n >= bytes.size()) return EILSEQ;
  const bool addr16 = mode == ExecMode::k16Bit ? !addrsize : (!m64 && addrsize);
  const bool op16 = mode == ExecMode::k16Bit ? !opsize : opsize;
  // Bytes of ModRM (+ SIB + displacement) at `at`, or 0 if cut off.
  auto modrm_len = [&](size_t at) -> size_t {
    if (at >= bytes.size()) return 0;
    const uint8_t modrm = bytes[at];
    const unsigned mod = modrm >> 6, rm = modrm & 7;
    if (mod == 3) return 1;
    if (addr16) return 1 + (mod == 1 ? 1 : mod == 2 || (mod == 0 && rm == 6) ? 2 : 0);
    size_t len = 1;
    if (rm == 4) {
      if (at + 1 >= bytes.size()) return 0;
      ++len;
      if (mod == 0 && (bytes[at + 1] & 7) == 5) len += 4;
    }
    if (mod == 1) len += 1;
    else if (mod == 2 || (mod == 0 && rm == 5)) len += 4;
    return len;
  };
  Insn insn;
  insn.ip = ip;
  insn.mode = mode;
  const uint8_t op = bytes[n];
  size_t len = 0;
  switch (op) {
    case 0x06: case 0x07: case 0x0e: case 0x16: case 0x17: case 0x1e: case 0x1f: case 0x27: case 0x2f:
    case 0x37: case 0x3f: case 0x60: case 0x61: case 0xce: case 0xd6:
      if (!m64) return EILSEQ;
      len = n + 1;
      break;
    case 0xd4: case 0xd5:
      len = n + 2;
      break;
    case 0x82: {
      const size_t m = modrm_len(n + 1);
      if (m == 0) return EILSEQ;
      len = n + 1 + m + 1;
      break;
    }
    case 0x9a: case 0xea:
      len = n + 1 + (op16 ? 4 : 6);
      insn.branch = BranchClass::kFarTransfer;
      insn.far = op == 0x9a ? FarKind::kFarCall : FarKind::kFarJump;
      break;
    case 0x8c: case 0x8e: {
      // MOV to or from a segment register that does not exist (ModRM.reg
      // 6, 7) or, for 8E, to CS: libipt sizes them by ModRM.
      const size_t m = modrm_len(n + 1);
      if (m == 0) return EILSEQ;
      len = n + 1 + m;
      break;
    }
    case 0xc6: case 0xc7: {
      // Group 11 (MOV r/m, imm) with a ModRM.reg other than 0 (but XABORT
      // and XBEGIN, C6/C7 F8): libipt's length decoder sizes them by ModRM,
      // C6 with its imm8 (a constant immediate width), C7 without its
      // immediate (sized by ModRM.reg: only /0 has one); C7 /7 but F8 it
      // rejects.
      const size_t m = modrm_len(n + 1);
      if (m == 0) return EILSEQ;
      if (op == 0xc7 && ((bytes[n + 1] >> 3) & 7) == 7) return EILSEQ;  // (XBEGIN's: libipt -pte_bad_insn)
      len = n + 1 + m + (op == 0xc6 ? 1 : 0);
      break;
    }
    case 0xfe: case 0xff: {
      const size_t m = modrm_len(n + 1);
      if (m == 0) return EILSEQ;
      len = n + 1 + m;
      if (op == 0xff) {
        switch ((bytes[n + 1] >> 3) & 7) {
          case 2: insn.branch = BranchClass::kIndirectCall; break;
          case 3: insn.branch = BranchClass::kFarTransfer; insn.far = FarKind::kFarCall; break;
          case 4: insn.branch = BranchClass::kIndirectJump; break;
          case 5: insn.branch = BranchClass::kFarTransfer; insn.far = FarKind::kFarJump; break;
          default: break;
        }
      }
      break;
    }
    case 0x0f: {
      // Two-byte opcodes with ModRM whose ModRM.reg or .mod leaves them
      // undefined (groups 6, 7, 9, 15, the hint space 0F 18-1F, UD1):
      // libipt sizes them by ModRM (+ imm8 for 0F 71-73 and 0F BA).
      if (n + 1 >= bytes.size()) return EILSEQ;
      const uint8_t op2 = bytes[n + 1];
      const bool modrm_only = op2 == 0x00 || op2 == 0x01 || op2 == 0x0d || (op2 >= 0x18 && op2 <= 0x1f) ||
                              op2 == 0xae || op2 == 0xb9 || op2 == 0xc7;
      const bool imm8 = (op2 >= 0x71 && op2 <= 0x73) || op2 == 0xba;
      if (!modrm_only && !imm8) return EILSEQ;
      const size_t m = modrm_len(n + 2);
      if (m == 0) return EILSEQ;
      len = n + 2 + m + (imm8 ? 1 : 0);
      break;
    }
    case 0xc4: case 0xc5: {
      if (!m64 && (n + 1 >= bytes.size() || (bytes[n + 1] & 0xc0) != 0xc0)) return EILSEQ;  // LES/LDS
      const size_t vex = op == 0xc5 ? 2 : 3;
      if (n + vex >= bytes.size()) return EILSEQ;
      const unsigned map = op == 0xc5 ? 1 : (bytes[n + 1] & 0x1f);
      if (map < 1 || map > 3) return EILSEQ;
      const uint8_t opcode = bytes[n + vex];
      const size_t m = modrm_len(n + vex + 1);
      if (m == 0) return EILSEQ;
      const bool imm8 = map == 3 || (map == 1 && ((opcode >= 0x70 && opcode <= 0x73) || opcode == 0xc2 ||
                                                   (opcode >= 0xc4 && opcode <= 0xc6)));
      len = n + vex + 1 + m + (imm8 ? 1 : 0);
      break;
    }
    default:
      return EILSEQ;
  }
  if (len > 15) return EILSEQ;
  if (len > bytes.size()) return bytes.size() < 15 ? ENODATA : EILSEQ;
  insn.length = static_cast<uint8_t>(len);
  *out = insn;
  return 0;
}

int InsnClassifier::ClassifyLenient(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out) const {
  const int err = Classify(bytes, ip, mode, out);
  return err == EILSEQ ? ClassifyUndefined(bytes, ip, mode, out) : err;
}

int ClassifyInsn(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out) {
  static const InsnClassifier classifier;
  return classifier.Classify(bytes, ip, mode, out);
}

}  // namespace perftest::pt
