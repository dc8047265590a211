// InsnClassifier against hand-checked encodings (Intel SDM Vol. 2 opcode
// tables) in 64-, 32- and 16-bit mode.
#include "harness/pt/insn.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <string>
#include <vector>

#include "harness/pt/testing/spec.h"

namespace perftest::pt {
namespace {

struct Case {
  const char* what;
  ExecMode mode;
  std::vector<uint8_t> bytes;
  uint8_t length;
  BranchClass branch;
  FarKind far = FarKind::kNone;
  uint64_t target = 0;
};

constexpr uint64_t kIp = 0x401000;
constexpr auto k64 = ExecMode::k64Bit;
constexpr auto k32 = ExecMode::k32Bit;
constexpr auto k16 = ExecMode::k16Bit;
using B = BranchClass;
using F = FarKind;

const Case kCases[] = {
    // Straight-line code.
    {"nop", k64, {0x90}, 1, B::kNone},
    {"mov rax, rbx", k64, {0x48, 0x89, 0xd8}, 3, B::kNone},
    {"mov rax, imm64", k64, {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 10, B::kNone},
    {"nopw 0(rax,rax)", k64, {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, 6, B::kNone},
    {"endbr64", k64, {0xf3, 0x0f, 0x1e, 0xfa}, 4, B::kNone},
    {"ud2", k64, {0x0f, 0x0b}, 2, B::kNone},
    {"vaddps ymm0,ymm1,ymm2", k64, {0xc5, 0xf4, 0x58, 0xc2}, 4, B::kNone},
    // Conditional: Jcc rel8/rel32, JrCXZ, LOOPcc.
    {"jz +0x10", k64, {0x74, 0x10}, 2, B::kCondJump, F::kNone, kIp + 2 + 0x10},
    {"jnz -2 (self)", k64, {0x75, 0xfe}, 2, B::kCondJump, F::kNone, kIp},
    {"jl rel32", k64, {0x0f, 0x8c, 0x00, 0x01, 0x00, 0x00}, 6, B::kCondJump, F::kNone, kIp + 6 + 0x100},
    {"jg rel32 back", k64, {0x0f, 0x8f, 0x00, 0xff, 0xff, 0xff}, 6, B::kCondJump, F::kNone, kIp + 6 - 0x100},
    {"jrcxz", k64, {0xe3, 0x05}, 2, B::kCondJump, F::kNone, kIp + 7},
    {"jecxz (67)", k64, {0x67, 0xe3, 0x05}, 3, B::kCondJump, F::kNone, kIp + 8},
    {"loop", k64, {0xe2, 0xfc}, 2, B::kCondJump, F::kNone, kIp - 2},
    {"loope", k64, {0xe1, 0x00}, 2, B::kCondJump, F::kNone, kIp + 2},
    {"loopne", k64, {0xe0, 0x01}, 2, B::kCondJump, F::kNone, kIp + 3},
    {"bnd jz (F2)", k64, {0xf2, 0x74, 0x00}, 3, B::kCondJump, F::kNone, kIp + 3},
    // Direct jumps and calls.
    {"jmp rel8", k64, {0xeb, 0x7f}, 2, B::kDirectJump, F::kNone, kIp + 2 + 0x7f},
    {"jmp rel32", k64, {0xe9, 0xfb, 0xff, 0xff, 0xff}, 5, B::kDirectJump, F::kNone, kIp},
    {"call rel32", k64, {0xe8, 0x10, 0x00, 0x00, 0x00}, 5, B::kDirectCall, F::kNone, kIp + 0x15},
    {"call rel32 (66 ignored in 64-bit)", k64, {0x66, 0xe8, 0x10, 0x00, 0x00, 0x00}, 6, B::kDirectCall, F::kNone, kIp + 0x16},
    {"call next (pic)", k64, {0xe8, 0x00, 0x00, 0x00, 0x00}, 5, B::kDirectCall, F::kNone, kIp + 5},
    // Indirect.
    {"jmp rax", k64, {0xff, 0xe0}, 2, B::kIndirectJump},
    {"jmp [rip+0]", k64, {0xff, 0x25, 0, 0, 0, 0}, 6, B::kIndirectJump},
    {"notrack jmp [rax*8+disp32]", k64, {0x3e, 0xff, 0x24, 0xc5, 0, 0x10, 0x40, 0}, 8, B::kIndirectJump},
    {"call rax", k64, {0xff, 0xd0}, 2, B::kIndirectCall},
    {"call [rbx+8]", k64, {0xff, 0x53, 0x08}, 3, B::kIndirectCall},
    {"call r11 (REX.B)", k64, {0x41, 0xff, 0xd3}, 3, B::kIndirectCall},
    // Returns.
    {"ret", k64, {0xc3}, 1, B::kReturn},
    {"ret imm16", k64, {0xc2, 0x08, 0x00}, 3, B::kReturn},
    {"rep ret", k64, {0xf3, 0xc3}, 2, B::kReturn},
    // Far transfers.
    {"syscall", k64, {0x0f, 0x05}, 2, B::kFarTransfer, F::kSyscall},
    {"sysretq", k64, {0x48, 0x0f, 0x07}, 3, B::kFarTransfer, F::kSysret},
    {"sysenter", k32, {0x0f, 0x34}, 2, B::kFarTransfer, F::kSysenter},
    {"sysexit", k32, {0x0f, 0x35}, 2, B::kFarTransfer, F::kSysexit},
    {"int 0x80", k64, {0xcd, 0x80}, 2, B::kFarTransfer, F::kInterrupt},
    {"int3", k64, {0xcc}, 1, B::kFarTransfer, F::kInterrupt},
    {"int1", k64, {0xf1}, 1, B::kFarTransfer, F::kInterrupt},
    {"into (32-bit)", k32, {0xce}, 1, B::kFarTransfer, F::kInterrupt},
    {"iretq", k64, {0x48, 0xcf}, 2, B::kFarTransfer, F::kIret},
    {"iretd", k64, {0xcf}, 1, B::kFarTransfer, F::kIret},
    {"lcall [rax]", k64, {0xff, 0x18}, 2, B::kFarTransfer, F::kFarCall},
    {"ljmp [rax]", k64, {0xff, 0x28}, 2, B::kFarTransfer, F::kFarJump},
    {"lret", k64, {0xcb}, 1, B::kFarTransfer, F::kFarReturn},
    {"lret imm16", k64, {0xca, 0x04, 0x00}, 3, B::kFarTransfer, F::kFarReturn},
    {"lcall ptr16:32 (32-bit)", k32, {0x9a, 0, 0x10, 0, 0, 0x23, 0}, 7, B::kFarTransfer, F::kFarCall},
    {"ljmp ptr16:32 (32-bit)", k32, {0xea, 0, 0x10, 0, 0, 0x33, 0}, 7, B::kFarTransfer, F::kFarJump},
    {"vmcall", k64, {0x0f, 0x01, 0xc1}, 3, B::kFarTransfer, F::kVmCall},
    {"vmlaunch", k64, {0x0f, 0x01, 0xc2}, 3, B::kFarTransfer, F::kVmEntry},
    {"vmresume", k64, {0x0f, 0x01, 0xc3}, 3, B::kFarTransfer, F::kVmEntry},
    // PTWRITE (F3 0F AE /4).
    {"ptwrite eax", k64, {0xf3, 0x0f, 0xae, 0xe0}, 4, B::kPtwrite},
    {"ptwrite rax", k64, {0xf3, 0x48, 0x0f, 0xae, 0xe0}, 5, B::kPtwrite},
    {"ptwrite [rdi]", k64, {0xf3, 0x0f, 0xae, 0x27}, 4, B::kPtwrite},
    // 32-bit mode (targets are next_ip + displacement, not wrapped: as libipt).
    {"jmp rel32 (32-bit)", k32, {0xe9, 0x00, 0x10, 0x00, 0x00}, 5, B::kDirectJump, F::kNone, kIp + 5 + 0x1000},
    {"call rel32 (32-bit, back)", k32, {0xe8, 0x00, 0x00, 0xc0, 0xff}, 5, B::kDirectCall, F::kNone, kIp + 5 - 0x400000},
    {"jmp eax (32-bit)", k32, {0xff, 0xe0}, 2, B::kIndirectJump},
    {"inc eax (32-bit, 40)", k32, {0x40}, 1, B::kNone},
    // 16-bit mode: rel16.
    {"jmp rel16 (16-bit)", k16, {0xe9, 0x00, 0x01}, 3, B::kDirectJump, F::kNone, 0x1103},
    {"call rel16 (16-bit)", k16, {0xe8, 0xfd, 0xff}, 3, B::kDirectCall, F::kNone, 0x1000},
    {"jz rel8 (16-bit, back)", k16, {0x74, 0x80}, 2, B::kCondJump, F::kNone, 0x1000 + 2 - 0x80},
    {"call rel32 (16-bit, 66)", k16, {0x66, 0xe8, 0x00, 0x00, 0x01, 0x00}, 6, B::kDirectCall, F::kNone, 0x11006},
    {"ret (16-bit)", k16, {0xc3}, 1, B::kReturn},
};

class InsnCases : public ::testing::TestWithParam<Case> {};

TEST_P(InsnCases, Classifies) {
  const Case& c = GetParam();
  const uint64_t ip = c.mode == k16 ? 0x1000 : kIp;
  Insn insn;
  ASSERT_EQ(ClassifyInsn(c.bytes, ip, c.mode, &insn), 0) << c.what;
  EXPECT_EQ(insn.ip, ip);
  EXPECT_EQ(insn.length, c.length) << c.what;
  EXPECT_EQ(BranchClassName(insn.branch), BranchClassName(c.branch)) << c.what;
  EXPECT_EQ(FarKindName(insn.far), FarKindName(c.far)) << c.what;
  EXPECT_EQ(insn.mode, c.mode);
  EXPECT_EQ(insn.next_ip(), ip + c.length);
  if (insn.has_target()) {
    EXPECT_EQ(insn.target, c.target) << c.what;
  } else {
    EXPECT_EQ(insn.target, 0u) << c.what;
  }
}

INSTANTIATE_TEST_SUITE_P(Sdm, InsnCases, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name;
                           for (const char* p = info.param.what; *p; ++p)
                             name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                           return name + "_" + std::to_string(info.index);
                         });

// Outside 64-bit mode a relative target is next_ip + displacement on the
// whole 64-bit IP, as libipt computes it (pt_insn_next_ip): an IP above
// 4 GiB in 32-bit mode (a corrupted MODE.Exec) keeps its upper bits.
TEST(Insn, RelativeTargetIsNotWrappedOutside64BitMode) {
  const uint8_t jmp[] = {0xe9, 0x00, 0x10, 0x00, 0x00};
  Insn insn;
  ASSERT_EQ(ClassifyInsn(jmp, 0x555555559000, k32, &insn), 0);
  EXPECT_EQ(insn.target, 0x55555555a005u);
  const uint8_t jz[] = {0x74, 0x80};
  ASSERT_EQ(ClassifyInsn(jz, 0x20000, k16, &insn), 0);
  EXPECT_EQ(insn.target, 0x20002u - 0x80);
}

TEST(Insn, TrailingBytesAreIgnored) {
  const uint8_t code[] = {0xc3, 0xcc, 0xcc, 0xcc};
  Insn insn;
  ASSERT_EQ(ClassifyInsn(code, 0x1000, k64, &insn), 0);
  EXPECT_EQ(insn.length, 1);
  EXPECT_EQ(insn.branch, B::kReturn);
}

// FRED's ERETS (F2 0F 01 CA) and ERETU (F3 0F 01 CA): libipt (pt_ild.c,
// after 2.0.5) classifies them ptic_far_return with PTI_INST_ERETS/ERETU,
// changing CPL as IRET (pt_insn_changes_cpl); Zydis 4 takes them as CLAC.
// NP 0F 01 CA stays CLAC (no branch); the last F2/F3 prefix decides.
TEST(Insn, FredEretIsFarReturn) {
  testing::Spec("pt.insn.fred_eret", "SDM (FRED spec) ERETS/ERETU; libipt pt_ild.c PTI_INST_ERETS/ERETU");
  Insn insn;
  const uint8_t erets[] = {0xf2, 0x0f, 0x01, 0xca, 0xcc};
  ASSERT_EQ(ClassifyInsn(erets, 0x1000, k64, &insn), 0);
  EXPECT_EQ(insn.length, 4);
  EXPECT_EQ(insn.branch, B::kFarTransfer);
  EXPECT_EQ(insn.far, FarKind::kIret);
  EXPECT_TRUE(IsFarReturn(insn.far));
  const uint8_t eretu[] = {0x66, 0xf2, 0xf3, 0x0f, 0x01, 0xca};
  ASSERT_EQ(ClassifyInsn(eretu, 0x1000, k64, &insn), 0);
  EXPECT_EQ(insn.length, 6);
  EXPECT_EQ(insn.far, FarKind::kIret);
  const uint8_t clac[] = {0x0f, 0x01, 0xca};
  ASSERT_EQ(ClassifyInsn(clac, 0x1000, k64, &insn), 0);
  EXPECT_EQ(insn.length, 3);
  EXPECT_EQ(insn.branch, B::kNone);
}

TEST(Insn, TruncatedInstructionIsEnodata) {
  const uint8_t code[] = {0xe8, 0x10, 0x00};  // call rel32 cut after 3 bytes
  Insn insn;
  insn.length = 77;
  EXPECT_EQ(ClassifyInsn(code, 0x1000, k64, &insn), ENODATA);
  EXPECT_EQ(insn.length, 77) << "left unchanged on error";
  EXPECT_EQ(ClassifyInsn({}, 0x1000, k64, &insn), ENODATA);
}

TEST(Insn, InvalidEncodingIsEilseq) {
  Insn insn;
  const uint8_t push_es[] = {0x06};  // PUSH ES: invalid in 64-bit mode, valid in 32-bit mode
  EXPECT_EQ(ClassifyInsn(push_es, 0x1000, k64, &insn), EILSEQ);
  EXPECT_EQ(ClassifyInsn(push_es, 0x1000, k32, &insn), 0);
  const uint8_t into[] = {0xce};  // INTO: invalid in 64-bit mode
  EXPECT_EQ(ClassifyInsn(into, 0x1000, k64, &insn), EILSEQ);
  const uint8_t ljmp[] = {0xea, 0, 0, 0, 0, 0, 0};  // JMP ptr16:32: invalid in 64-bit mode
  EXPECT_EQ(ClassifyInsn(ljmp, 0x1000, k64, &insn), EILSEQ);
  std::vector<uint8_t> too_long(16, 0x66);  // 15 prefixes and more: longer than 15 bytes
  too_long.push_back(0x90);
  EXPECT_EQ(ClassifyInsn(too_long, 0x1000, k64, &insn), EILSEQ);
}

TEST(Insn, InvalidModeIsEinval) {
  const uint8_t nop[] = {0x90};
  Insn insn;
  EXPECT_EQ(ClassifyInsn(nop, 0x1000, ExecMode::kInvalid, &insn), EINVAL);
}

TEST(Insn, FarGroups) {
  EXPECT_TRUE(IsFarCall(F::kSyscall));
  EXPECT_TRUE(IsFarCall(F::kInterrupt));
  EXPECT_TRUE(IsFarReturn(F::kSysret));
  EXPECT_TRUE(IsFarReturn(F::kIret));
  EXPECT_FALSE(IsFarCall(F::kFarJump));
  EXPECT_FALSE(IsFarReturn(F::kFarJump));
  EXPECT_FALSE(IsFarCall(F::kNone));
}

TEST(Insn, EndsBlock) {
  Insn insn;
  const uint8_t ptw[] = {0xf3, 0x0f, 0xae, 0xe0};
  ASSERT_EQ(ClassifyInsn(ptw, 0, k64, &insn), 0);
  EXPECT_FALSE(insn.ends_block());
  const uint8_t jz[] = {0x74, 0x00};
  ASSERT_EQ(ClassifyInsn(jz, 0, k64, &insn), 0);
  EXPECT_TRUE(insn.ends_block());
}

}  // namespace
}  // namespace perftest::pt
