#include "harness/pt/testing/flow_trace.h"

#include <cstdlib>
#include <optional>
#include <random>

#include "harness/pt/insn.h"
#include "harness/pt/packet_encoder.h"

namespace perftest::pt::testing {
namespace {

// Instruction kinds of the generated code.
enum class K { kStraight, kJcc32, kJcc8Skip, kJmpFwd, kCall, kCallNext, kCallInd, kJmpInd, kRet, kSyscall, kPtwrite };

struct Proto {
  K kind;
  std::vector<uint8_t> bytes;
  uint32_t func = 0;
  uint32_t index = 0;     // in its function
  int target_index = -1;  // kJcc32/kJmpFwd: instruction index in the function; kCall: function
  uint64_t addr = 0;
};

const std::vector<std::vector<uint8_t>> kStraight = {
    {0x90},
    {0x48, 0x89, 0xd8},                                   // mov rax, rbx
    {0x48, 0x8d, 0x44, 0x24, 0x08},                       // lea rax, [rsp+8]
    {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},                 // nopw
    {0x48, 0x81, 0xc0, 0x78, 0x56, 0x34, 0x12},           // add rax, imm32
    {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8},                 // mov rax, imm64
    {0x50},                                               // push rax
    {0x58},                                               // pop rax
    {0xf3, 0x0f, 0x1e, 0xfa},                             // endbr64
    {0xc5, 0xf4, 0x58, 0xc2},                             // vaddps
    {0x8b, 0x04, 0x25, 0x00, 0x10, 0x00, 0x00},           // mov eax, [0x1000]
};

class Sim {
 public:
  explicit Sim(const FlowTraceOptions& o) : o_(o), rng_(o.seed) {}

  FlowTrace Run() {
    Layout();
    FlowTrace t;
    t.code_base = o_.code_base;
    t.code = code_;
    Execute(&t);
    FlushTnt();
    t.trace = enc_.Release();
    return t;
  }

 private:
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  void Put(const Packet& p) {
    if (!enc_.Next(p).ok()) std::abort();
  }
  void PutIp(PacketType type, std::optional<uint64_t> ip) {
    Sprinkle();
    if (!enc_.NextIp(type, ip).ok()) std::abort();
  }
  // Timing packets between the others.
  void Sprinkle() {
    if (!o_.timing) return;
    if (Chance(0.5)) Put(make::Cyc(1 + Below(Chance(0.8) ? 64 : 5000)));
    if (Chance(0.08)) Put(make::Mtc(static_cast<uint8_t>(++mtc_)));
  }

  void FlushTnt() {
    if (tnt_n_ == 0) return;
    Sprinkle();
    Put(tnt_n_ <= 6 ? make::Tnt8(tnt_bits_, tnt_n_) : make::Tnt64(tnt_bits_, tnt_n_));
    tnt_bits_ = 0;
    tnt_n_ = 0;
  }
  void AddTnt(bool taken) {
    if (tnt_n_ == 0) tnt_cap_ = Chance(0.2) ? 47 : 6;
    tnt_bits_ = (tnt_bits_ << 1) | (taken ? 1 : 0);
    if (++tnt_n_ == tnt_cap_) FlushTnt();
  }

  void HwPush(uint64_t ret) {
    hw_top_ = (hw_top_ + 1) % 64;
    hw_[hw_top_] = ret;
    if (hw_count_ < 64) ++hw_count_;
  }

  void Psb() {
    FlushTnt();
    Put(make::Psb());
    Put(make::Tsc(tsc_ += 1000 + Below(100000)));
    if (o_.timing) Put(make::Tma(static_cast<uint16_t>(Below(65536)), static_cast<uint16_t>(Below(512))));
    Put(make::Cbr(static_cast<uint8_t>(20 + Below(20))));
    Put(make::ModeExec(ExecMode::k64Bit));
    if (enabled_) PutIp(PacketType::kFup, ip_);
    Put(make::PsbEnd());
    hw_count_ = 0;
    last_psb_ = enc_.offset();
  }

  void Layout() {
    const uint32_t nf = o_.functions;
    funcs_.resize(nf);
    for (uint32_t f = 0; f < nf; ++f) {
      const uint32_t n = std::max<uint32_t>(4, o_.function_insns / 2 + static_cast<uint32_t>(Below(o_.function_insns)));
      for (uint32_t i = 0; i + 1 < n; ++i) {
        Proto p;
        p.func = f;
        p.index = i;
        const uint64_t r = Below(100);
        const bool last_func = f + 1 == nf;
        if (r < 40 || (last_func && r >= 55 && r < 80)) {
          p.kind = K::kStraight;
          p.bytes = kStraight[Below(kStraight.size())];
        } else if (r < 55) {
          p.kind = K::kJcc32;
          p.target_index = static_cast<int>(Below(n));
          p.bytes = {0x0f, static_cast<uint8_t>(0x80 + Below(16)), 0, 0, 0, 0};
        } else if (r < 60 && i + 3 < n) {
          p.kind = K::kJcc8Skip;
          p.target_index = static_cast<int>(i + 1 + Below(2) + 1);
          p.bytes = {static_cast<uint8_t>(0x70 + Below(16)), 0};
        } else if (r < 64) {
          p.kind = K::kJmpFwd;
          p.target_index = static_cast<int>(i + 1 + Below(n - i - 1));
          p.bytes = {0xe9, 0, 0, 0, 0};
        } else if (r < 72 && !last_func) {
          p.kind = K::kCall;
          p.target_index = static_cast<int>(f + 1 + Below(nf - f - 1));
          p.bytes = {0xe8, 0, 0, 0, 0};
        } else if (r < 74) {
          p.kind = K::kCallNext;
          p.bytes = {0xe8, 0, 0, 0, 0};
        } else if (r < 77 && o_.indirect) {
          p.kind = K::kCallInd;
          p.bytes = Chance(0.5) ? std::vector<uint8_t>{0xff, 0xd0} : std::vector<uint8_t>{0x41, 0xff, 0x53, 0x08};
        } else if (r < 79 && o_.indirect) {
          p.kind = K::kJmpInd;
          p.bytes = {0xff, 0xe0};
        } else if (r < 82) {
          p.kind = K::kRet;
          p.bytes = {0xc3};
        } else if (r < 84 && o_.async) {
          p.kind = K::kSyscall;
          p.bytes = {0x0f, 0x05};
        } else if (r < 85) {
          p.kind = K::kPtwrite;
          p.bytes = {0xf3, 0x48, 0x0f, 0xae, 0xe0};
        } else {
          p.kind = K::kStraight;
          p.bytes = kStraight[Below(kStraight.size())];
        }
        funcs_[f].push_back(p);
      }
      Proto ret;
      ret.kind = K::kRet;
      ret.bytes = {0xc3};
      ret.func = f;
      ret.index = n - 1;
      funcs_[f].push_back(ret);
    }
    uint64_t addr = o_.code_base;
    for (auto& fn : funcs_) {
      for (auto& p : fn) {
        p.addr = addr;
        addr += p.bytes.size();
      }
      addr += Below(8);  // padding between functions (int3)
      addr = (addr + 15) & ~uint64_t{15};
    }
    code_.assign(addr - o_.code_base, 0xcc);
    for (auto& fn : funcs_) {
      for (auto& p : fn) {
        auto rel32 = [&](uint64_t target) {
          const int64_t d = static_cast<int64_t>(target - (p.addr + p.bytes.size()));
          const auto u = static_cast<uint32_t>(static_cast<int32_t>(d));
          const size_t at = p.bytes.size() - 4;
          for (int k = 0; k < 4; ++k) p.bytes[at + k] = static_cast<uint8_t>(u >> (8 * k));
        };
        if (p.kind == K::kJcc32 || p.kind == K::kJmpFwd) rel32(fn[p.target_index].addr);
        if (p.kind == K::kCall) rel32(funcs_[p.target_index][0].addr);
        if (p.kind == K::kJcc8Skip) {
          const int64_t d = static_cast<int64_t>(fn[p.target_index].addr - (p.addr + 2));
          p.bytes[1] = static_cast<uint8_t>(static_cast<int8_t>(d));
        }
        std::copy(p.bytes.begin(), p.bytes.end(), code_.begin() + (p.addr - o_.code_base));
      }
    }
  }

  uint64_t RandomEntry(uint32_t min_func) {
    const uint32_t f = min_func + static_cast<uint32_t>(Below(o_.functions - min_func));
    return funcs_[f][0].addr;
  }
  uint64_t RandomInsn() {
    const auto& fn = funcs_[Below(funcs_.size())];
    return fn[Below(fn.size())].addr;
  }

  void Execute(FlowTrace* t) {
    ip_ = funcs_[0][0].addr;
    enabled_ = true;
    Psb();
    uint64_t done = 0;
    while (done < o_.insns) {
      if (enc_.offset() - last_psb_ >= o_.psb_period) Psb();
      if (o_.async && Chance(0.002)) {
        FlushTnt();
        PutIp(PacketType::kFup, ip_);
        since_packet_ = 0;
        if (Chance(0.5)) {  // into the (untraced) kernel and back
          PutIp(PacketType::kTipPgd, std::nullopt);
          if (Chance(0.3)) Put(make::Tsc(tsc_ += 5000));
          PutIp(PacketType::kTipPge, ip_);
        } else {  // to a handler, traced
          ip_ = RandomEntry(1);
          PutIp(PacketType::kTip, ip_);
        }
        continue;
      }
      if (o_.overflow && Chance(0.0005)) {
        // Decoders apply the overflow right after the last instruction that
        // took a packet: what ran since then is lost with it.
        FlushTnt();
        Put(make::Ovf());
        t->executed.resize(t->executed.size() - since_packet_);
        since_packet_ = 0;
        // After OVF the last IP is gone (libipt and the hardware start over):
        // the FUP carries the whole IP.
        Put(make::Fup(IpBytes::kSext48, ip_ & 0xffffffffffffull));
        hw_count_ = 0;
        continue;
      }
      const uint64_t off = ip_ - o_.code_base;
      Insn insn;
      if (off >= code_.size() ||
          ClassifyInsn(std::span<const uint8_t>(code_).subspan(off), ip_, ExecMode::k64Bit, &insn) != 0) {
        std::abort();  // the generated code is walked only at instruction starts
      }
      t->executed.push_back(ip_);
      ++done;
      ++since_packet_;
      if (insn.branch == BranchClass::kCondJump || insn.branch == BranchClass::kReturn ||
          insn.branch == BranchClass::kIndirectCall || insn.branch == BranchClass::kIndirectJump ||
          insn.branch == BranchClass::kFarTransfer) {
        since_packet_ = 0;
      }
      switch (insn.branch) {
        case BranchClass::kNone:
        case BranchClass::kPtwrite:
          ip_ = insn.next_ip();
          break;
        case BranchClass::kCondJump: {
          const bool taken = Chance(0.5);
          AddTnt(taken);
          ip_ = taken ? insn.target : insn.next_ip();
          break;
        }
        case BranchClass::kDirectJump:
          ip_ = insn.target;
          break;
        case BranchClass::kDirectCall:
          if (insn.target != insn.next_ip()) {
            stack_.push_back(insn.next_ip());
            HwPush(insn.next_ip());
          }
          ip_ = insn.target;
          break;
        case BranchClass::kIndirectCall: {
          stack_.push_back(insn.next_ip());
          HwPush(insn.next_ip());
          const uint32_t f = static_cast<uint32_t>((insn.ip - o_.code_base) * o_.functions / code_.size());
          ip_ = RandomEntry(std::min(o_.functions - 1, f + 1));
          FlushTnt();
          PutIp(PacketType::kTip, ip_);
          break;
        }
        case BranchClass::kIndirectJump:
          ip_ = RandomInsn();
          FlushTnt();
          PutIp(PacketType::kTip, ip_);
          break;
        case BranchClass::kReturn: {
          uint64_t target;
          if (stack_.empty()) {
            target = RandomEntry(0);
          } else {
            target = stack_.back();
            stack_.pop_back();
          }
          if (hw_count_ > 0 && hw_[hw_top_] == target) {
            AddTnt(true);
            hw_top_ = (hw_top_ + 63) % 64;
            --hw_count_;
          } else {
            FlushTnt();
            PutIp(PacketType::kTip, target);
          }
          ip_ = target;
          break;
        }
        case BranchClass::kFarTransfer:  // SYSCALL: out of the traced range and back
          FlushTnt();
          PutIp(PacketType::kTipPgd, std::nullopt);
          if (Chance(0.5)) Put(make::Tsc(tsc_ += 2000));
          ip_ = insn.next_ip();
          PutIp(PacketType::kTipPge, ip_);
          break;
      }
    }
    // A decoder walks on past the end of the trace up to the first
    // instruction that needs a packet: so does the ground truth.
    for (;;) {
      Insn insn;
      if (ClassifyInsn(std::span<const uint8_t>(code_).subspan(ip_ - o_.code_base), ip_, ExecMode::k64Bit, &insn) != 0)
        std::abort();
      if (insn.branch != BranchClass::kNone && insn.branch != BranchClass::kPtwrite &&
          insn.branch != BranchClass::kDirectJump && insn.branch != BranchClass::kDirectCall)
        break;
      t->executed.push_back(ip_);
      ip_ = insn.branch == BranchClass::kNone || insn.branch == BranchClass::kPtwrite ? insn.next_ip() : insn.target;
    }
  }

  const FlowTraceOptions& o_;
  std::mt19937_64 rng_;
  std::vector<std::vector<Proto>> funcs_;
  std::vector<uint8_t> code_;
  PacketEncoder enc_;
  uint64_t ip_ = 0;
  bool enabled_ = false;
  std::vector<uint64_t> stack_;
  uint64_t hw_[64] = {};
  uint32_t hw_top_ = 0, hw_count_ = 0;
  uint64_t tnt_bits_ = 0;
  unsigned tnt_n_ = 0, tnt_cap_ = 6;
  uint64_t last_psb_ = 0;
  uint64_t tsc_ = 1000000;
  uint32_t mtc_ = 0;
  uint64_t since_packet_ = 0;  // instructions executed since the last one that took a packet
};

}  // namespace

FlowTrace MakeFlowTrace(const FlowTraceOptions& options) { return Sim(options).Run(); }

}  // namespace perftest::pt::testing
