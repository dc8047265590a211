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

// The taken target of a relative branch: next_ip + displacement, wrapped to
// the operand size outside 64-bit mode (SDM Vol. 2 "JMP"/"Jcc"/"CALL":
// EIP <- tempEIP AND 0000FFFFH when the operand size is 16).
uint64_t RelativeTarget(const ZydisDecodedInstruction& z, uint64_t ip, ExecMode mode) {
  uint64_t target = ip + z.length + static_cast<uint64_t>(z.raw.imm[0].value.s);
  if (mode == ExecMode::k64Bit) return target;
  return z.operand_width == 16 ? (target & 0xffff) : (target & 0xffffffff);
}

}  // namespace

int InsnClassifier::Classify(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode,
                             Insn* out) const {
  if (mode == ExecMode::kInvalid) return EINVAL;
  if (bytes.empty()) return ENODATA;
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
      insn.target = RelativeTarget(z, ip, mode);
      break;
    case ZYDIS_MNEMONIC_JMP:
      if (z.raw.imm[0].is_relative) {  // EB cb, E9 cw/cd
        insn.branch = BranchClass::kDirectJump;
        insn.target = RelativeTarget(z, ip, mode);
      } else if (map0 && z.opcode == 0xff && z.raw.modrm.reg == 4) {
        insn.branch = BranchClass::kIndirectJump;
      } else {  // EA ptr16:xx, FF /5 m16:xx
        far(FarKind::kFarJump);
      }
      break;
    case ZYDIS_MNEMONIC_CALL:
      if (z.raw.imm[0].is_relative) {  // E8 cw/cd
        insn.branch = BranchClass::kDirectCall;
        insn.target = RelativeTarget(z, ip, mode);
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

int ClassifyInsn(std::span<const uint8_t> bytes, uint64_t ip, ExecMode mode, Insn* out) {
  static const InsnClassifier classifier;
  return classifier.Classify(bytes, ip, mode, out);
}

}  // namespace perftest::pt
