#include "mocks/pt_sim/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace perftest::pt_sim {

namespace make = pt::make;
using pt::BranchClass;
using pt::PacketType;

namespace {
constexpr size_t kRetCompDepth = 64;  // libipt's pt_retstack holds 64; deeper returns get a TIP
}  // namespace

PtGenerator::PtGenerator(Program program, const PtConfig& config, const RunOptions& options)
    : program_(std::move(program)), config_(config), options_(options), oracle_(options.oracle) {
  ip_ = program_.entry;
  tsc_ = options_.tsc_start;
  cbr_ = options_.cbr == 0 ? 1 : options_.cbr;
  truth_.program = program_.name;
  truth_.config = config_;
  truth_.cr3 = program_.cr3;
  truth_.image = program_.image;
  truth_.clock = ClockInfo{options_.cbr, options_.ctc_eax, options_.ctc_ebx, options_.tsc_start, options_.tsc_start};
}

uint64_t PtGenerator::Ctc() const {
  return options_.ctc_ebx == 0 ? 0 : tsc_ * options_.ctc_eax / options_.ctc_ebx;
}

void PtGenerator::Event(EventKind kind, bool traced) {
  truth_.events.push_back(EventRecord{kind, insns_, ip_, enc_.offset(), traced});
}

void PtGenerator::Advance(uint64_t core_cycles, uint64_t idle_tsc_ticks) {
  cycles_ += core_cycles;
  tsc_frac_ += core_cycles * std::max<uint8_t>(options_.cbr, 1);
  const uint64_t tsc_ticks = tsc_frac_ / cbr_ + idle_tsc_ticks;
  tsc_frac_ %= cbr_;
  tsc_ += tsc_ticks;
  if (options_.output_buffer_bytes == 0) return;
  drain_ticks_ += tsc_ticks;
  const uint64_t per = std::max<uint32_t>(1, options_.drain_cycles_per_byte);
  const uint64_t drained = drain_ticks_ / per;
  drain_ticks_ %= per;
  fill_ = drained >= fill_ ? 0 : fill_ - drained;
}

void PtGenerator::Out(const pt::Packet& p) {
  if (Dropping()) return;
  const Result<size_t> n = enc_.Next(p);  // the builders produce valid packets only
  if (n.ok() && options_.output_buffer_bytes != 0) {
    fill_ += *n;
    if (fill_ > options_.output_buffer_bytes) overflow_pending_ = true;
  }
}

void PtGenerator::OutIp(PacketType type, std::optional<uint64_t> ip) {
  if (Dropping()) return;
  const Result<size_t> n = enc_.NextIp(type, ip);
  if (n.ok() && options_.output_buffer_bytes != 0) {
    fill_ += *n;
    if (fill_ > options_.output_buffer_bytes) overflow_pending_ = true;
  }
}

void PtGenerator::MaybeCyc() {
  if (!config_.cyc || !trace_en_ || Dropping()) return;
  const uint64_t elapsed = cycles_ - last_cyc_;
  if (elapsed == 0 || elapsed < config_.cyc_threshold_cycles()) return;
  Out(make::Cyc(elapsed));
  last_cyc_ = cycles_;
}

void PtGenerator::Pkt(const pt::Packet& p) {
  MaybeCyc();
  Out(p);
}

void PtGenerator::MaybeMtc() {
  if (!config_.mtc || !trace_en_ || Dropping()) return;
  const uint64_t now = Ctc() >> config_.mtc_period;
  if (now == last_mtc_) return;
  last_mtc_ = now;
  Pkt(make::Mtc(static_cast<uint8_t>(now)));
}

void PtGenerator::AddTnt(bool taken) {
  if (Dropping()) return;
  tnt_bits_ = tnt_bits_ << 1 | (taken ? 1 : 0);
  ++tnt_count_;
  if (tnt_count_ == (options_.tnt64 ? 47u : 6u)) FlushTnt();
}

void PtGenerator::FlushTnt() {
  if (tnt_count_ == 0) return;
  Pkt(options_.tnt64 ? make::Tnt64(tnt_bits_, tnt_count_) : make::Tnt8(tnt_bits_, tnt_count_));
  tnt_bits_ = 0;
  tnt_count_ = 0;
}

void PtGenerator::EmitPsb() {
  FlushTnt();
  Event(EventKind::kPsb, true);
  last_psb_offset_ = enc_.offset();
  Out(make::Psb());
  if (config_.tsc) Out(make::Tsc(tsc_));
  if (config_.tsc && config_.mtc) {
    // TMA: CTC[15:0] and the TSC ticks since that CTC tick (FastCounter, 9 bits).
    const uint64_t ctc = Ctc();
    const uint64_t fc = options_.ctc_eax == 0 ? 0 : (tsc_ - ctc * options_.ctc_ebx / options_.ctc_eax);
    Out(make::Tma(static_cast<uint16_t>(ctc), static_cast<uint16_t>(fc & 0x1ff)));
    last_mtc_ = ctc >> config_.mtc_period;
  }
  Out(make::Cbr(cbr_));
  Out(make::Pip(program_.cr3, false));
  if (PacketEn()) {
    Out(make::ModeExec(pt::ExecMode::k64Bit));
    OutIp(PacketType::kFup, ip_);
  }
  Out(make::PsbEnd());
  last_cyc_ = cycles_;
  retcomp_.clear();
}

void PtGenerator::EmitPge() {
  pge_pending_ = false;
  if (options_.exclude_user) return;
  Event(EventKind::kEnable, config_.branch_en());
  retcomp_.clear();
  if (!config_.branch_en()) return;
  Pkt(make::ModeExec(pt::ExecMode::k64Bit));
  OutIp(PacketType::kTipPge, ip_);
}

void PtGenerator::BeginOverflow() {
  FlushTnt();
  overflow_pending_ = false;
  Event(EventKind::kOverflowBegin, false);
  overflowing_ = true;
  overflow_left_ = options_.overflow_insns;
}

void PtGenerator::EndOverflow() {
  overflowing_ = false;
  fill_ = 0;  // what was in the buffer has drained while packets were dropped
  tnt_bits_ = 0;
  tnt_count_ = 0;
  Event(EventKind::kOverflow, true);
  Out(make::Ovf());
  pge_pending_ = false;  // an OVF+FUP resumes tracing where a TIP.PGE would have
  if (PacketEn()) {
    // A full IP: the decoder's last IP is not to be trusted after packets were lost.
    Out(make::Fup(pt::IpBytes::kFull, ip_));
  }
  retcomp_.clear();
  EmitPsb();
}

void PtGenerator::KernelTime() {
  Advance(oracle_.Between(options_.kernel_cycles / 2, options_.kernel_cycles * 3 / 2), 0);
  MaybeMtc();
  if (trace_en_ && enc_.offset() - last_psb_offset_ >= config_.psb_period_bytes() && !Dropping()) EmitPsb();
}

void PtGenerator::Interrupt() {
  Event(EventKind::kInterrupt, PacketEn());
  if (PacketEn()) {
    FlushTnt();
    MaybeCyc();
    OutIp(PacketType::kFup, ip_);
    OutIp(PacketType::kTipPgd, std::nullopt);
  }
  pge_pending_ = true;
  KernelTime();
  EmitPge();
}

void PtGenerator::Power() {
  Event(EventKind::kPower, true);
  FlushTnt();
  MaybeCyc();
  Out(make::Mwait(0x20, 0x1));  // hints: C2 (EAX[7:4] = 1: C2), ext: interrupts as break events
  Out(make::Pwre(2, 0, false));
  Out(make::ExStop(true));
  OutIp(PacketType::kFup, ip_);
  // The core is stopped: TSC and CTC advance, core cycles do not.
  Advance(0, oracle_.Between(options_.kernel_cycles / 2, options_.kernel_cycles * 3 / 2));
  MaybeMtc();
  Out(make::Pwrx(2, 2, 0x1));  // woken by an interrupt
}

void PtGenerator::Boundary() {
  if (!trace_en_) return;
  if (overflowing_ && overflow_left_ == 0) EndOverflow();
  if (pge_pending_) {
    if (Dropping()) {
      pge_pending_ = false;  // lost in the overflow; the OVF+FUP resumes
    } else {
      EmitPge();
    }
  }
  if (Dropping()) return;
  MaybeMtc();
  if (enc_.offset() - last_psb_offset_ >= config_.psb_period_bytes()) EmitPsb();
  if (oracle_.OneIn(options_.cbr_change_every)) {
    const uint64_t nominal = std::max<uint8_t>(options_.cbr, 1);
    cbr_ = static_cast<uint8_t>(std::min<uint64_t>(255, std::max<uint64_t>(1, oracle_.Between(nominal / 2, nominal * 3 / 2))));
    Event(EventKind::kCbr, true);
    Pkt(make::Cbr(cbr_));
  }
  if (!ContextEn()) return;
  if (oracle_.OneIn(options_.interrupt_every)) Interrupt();
  if (config_.pwr_evt && oracle_.OneIn(options_.power_every)) Power();
  if (oracle_.OneIn(options_.overflow_every)) overflow_pending_ = true;
}

Result<void> PtGenerator::Step() {
  // (Formatted only for an error: once per instruction it was a tenth of the
  // corpus differential's time.)
  const uint64_t at_ip = ip_;
  const size_t at_insn = insns_;
  auto call = [&] {
    return fmt::format("pt_sim::PtGenerator::Run(program={}, ip={:#x}, insn={})", program_.name, at_ip, at_insn);
  };
  Boundary();
  const std::span<const uint8_t> bytes = program_.image.Read(ip_);
  if (bytes.empty()) return Result<void>::Failure(EFAULT, call() + ": the IP is outside the code image");
  pt::Insn insn;
  if (const int err = classifier_.Classify(bytes, ip_, pt::ExecMode::k64Bit, &insn); err != 0) {
    return Result<void>::Failure(err, call() + ": not an instruction");
  }
  if (insn.branch == BranchClass::kReturn && call_stack_.empty()) {
    finished_ = true;  // the entry function returns: the program ends before this RET
    return Result<void>::Ok();
  }
  const bool traced = PacketEn() && !overflowing_;
  const bool keep = options_.record_insns;
  if (keep) truth_.insns.push_back(InsnRecord{ip_, insn.length, insn.branch, traced, tsc_, cycles_});
  const uint64_t index = insns_++;
  if (overflowing_ && overflow_left_ > 0) --overflow_left_;
  Advance(oracle_.Cycles(), 0);

  uint64_t next = insn.next_ip();
  bool branch_packet = false;  // this instruction gave a TNT bit or a TIP
  switch (insn.branch) {
    case BranchClass::kNone:
      break;
    case BranchClass::kPtwrite: {
      // PTWRITE r/m32 or, with REX.W, r/m64 (SDM Vol. 2 "PTWRITE"): the prefix byte before 0F.
      bool rex_w = false;
      for (size_t i = 0; i < bytes.size() && bytes[i] != 0x0f; ++i) rex_w |= (bytes[i] & 0xf8) == 0x48;
      const uint8_t size = rex_w ? 8 : 4;
      const uint64_t payload = rex_w ? oracle_.Draw() : oracle_.Draw() & 0xffffffffu;
      const bool emit = config_.ptw && ContextEn() && !Dropping();
      if (keep) truth_.ptwrites.push_back(PtwriteRecord{index, payload, size, emit});
      if (emit) {
        FlushTnt();
        Pkt(make::Ptw(payload, size, config_.fup_on_ptw));
        if (config_.fup_on_ptw) OutIp(PacketType::kFup, ip_);
      }
      break;
    }
    case BranchClass::kCondJump: {
      bool taken = false;
      if (program_.gates.count(ip_) != 0) {
        taken = gate_requests_ == 0;
        if (!taken) --gate_requests_;
      } else {
        taken = oracle_.CondTaken(ip_);
      }
      if (taken) next = insn.target;
      if (keep) truth_.branches.push_back(BranchRecord{index, taken, next});
      if (PacketEn()) {
        AddTnt(taken);
        branch_packet = true;
      }
      break;
    }
    case BranchClass::kDirectJump:
      next = insn.target;
      break;
    case BranchClass::kDirectCall:
      next = insn.target;
      call_stack_.push_back(insn.next_ip());
      if (PacketEn()) retcomp_.push_back(insn.next_ip());
      break;
    case BranchClass::kIndirectJump:
    case BranchClass::kIndirectCall: {
      auto it = program_.indirect_targets.find(ip_);
      const std::vector<uint64_t>& targets =
          it != program_.indirect_targets.end() ? it->second : program_.any_indirect_targets;
      if (targets.empty()) {
        if (keep) truth_.insns.pop_back();
        --insns_;
        return Result<void>::Failure(EINVAL, call() + ": no indirect_targets for this indirect branch");
      }
      next = oracle_.PickTarget(ip_, targets);
      if (keep) truth_.branches.push_back(BranchRecord{index, true, next});
      if (insn.branch == BranchClass::kIndirectCall) {
        call_stack_.push_back(insn.next_ip());
        if (PacketEn()) retcomp_.push_back(insn.next_ip());
      }
      if (PacketEn()) {
        FlushTnt();
        MaybeCyc();
        OutIp(PacketType::kTip, next);
        branch_packet = true;
      }
      break;
    }
    case BranchClass::kReturn: {
      next = call_stack_.back();
      call_stack_.pop_back();
      if (keep) truth_.branches.push_back(BranchRecord{index, true, next});
      if (PacketEn()) {
        if (!config_.noretcomp && !retcomp_.empty() && retcomp_.back() == next) {
          retcomp_.pop_back();
          AddTnt(true);
        } else {
          FlushTnt();
          MaybeCyc();
          OutIp(PacketType::kTip, next);
        }
        branch_packet = true;
      }
      break;
    }
    case BranchClass::kFarTransfer:
      // Into the kernel (SYSCALL, INT n, ...) and back to the next instruction.
      if (keep) truth_.branches.push_back(BranchRecord{index, true, next});
      ++far_transfers_;
      Event(EventKind::kSyscall, PacketEn());
      if (PacketEn()) {
        FlushTnt();
        MaybeCyc();
        OutIp(PacketType::kTipPgd, std::nullopt);
      }
      if (trace_en_ && !options_.exclude_user) pge_pending_ = true;
      ip_ = next;
      KernelTime();
      return Result<void>::Ok();
  }
  if (overflow_pending_ && branch_packet && !overflowing_) BeginOverflow();
  if (call_stack_.size() > 1u << 20) return Result<void>::Failure(E2BIG, call() + ": call stack over 2^20 frames");
  if (retcomp_.size() > kRetCompDepth) retcomp_.erase(retcomp_.begin());
  ip_ = next;
  return Result<void>::Ok();
}

Result<void> PtGenerator::Run(uint64_t insns) {
  if (finished_) return Result<void>::Ok();
  if (!started_) {
    started_ = true;
    Enable();
  }
  for (uint64_t i = 0; i < insns && !finished_; ++i) {
    if (program_.exits.count(ip_) != 0) {
      finished_ = true;
      break;
    }
    Result<void> r = Step();
    if (!r.ok()) {
      finished_ = true;
      return r;
    }
  }
  return Result<void>::Ok();
}

void PtGenerator::Disable() {
  if (!trace_en_) return;
  if (overflowing_) EndOverflow();
  const bool traced = PacketEn();
  if (traced) {
    FlushTnt();
    MaybeCyc();
    OutIp(PacketType::kFup, ip_);
    OutIp(PacketType::kTipPgd, std::nullopt);
  }
  FlushTnt();
  Event(EventKind::kDisable, traced);
  trace_en_ = false;
  pge_pending_ = false;
  overflow_pending_ = false;
}

void PtGenerator::Enable() {
  if (trace_en_) return;
  started_ = true;
  trace_en_ = true;
  pge_pending_ = true;  // TraceEn is set in the kernel; user code is traced from the next instruction
  EmitPsb();
  last_mtc_ = Ctc() >> config_.mtc_period;
}

Result<void> PtGenerator::Finish() {
  if (!started_) Enable();
  finished_ = true;
  Disable();
  return Result<void>::Ok();
}

std::vector<uint8_t> PtGenerator::TakeTrace() {
  const std::vector<uint8_t>& all = enc_.bytes();
  std::vector<uint8_t> chunk(all.begin() + static_cast<ptrdiff_t>(taken_offset_), all.end());
  taken_offset_ = all.size();
  return chunk;
}

Result<std::vector<uint8_t>> PtGenerator::TakeBytes(uint64_t n, uint64_t max_insns) {
  constexpr uint64_t kChunk = 64;
  uint64_t ran = 0;
  while (enc_.offset() - taken_offset_ < n && ran < max_insns) {
    if (finished_) break;
    Result<void> r = Run(kChunk);
    if (!r.ok()) return Result<std::vector<uint8_t>>::FailureFrom(r);
    ran += kChunk;
    if (finished_) (void)Finish();
  }
  const std::vector<uint8_t>& all = enc_.bytes();
  const uint64_t take = std::min<uint64_t>(n, all.size() - taken_offset_);
  std::vector<uint8_t> out(all.begin() + static_cast<ptrdiff_t>(taken_offset_),
                           all.begin() + static_cast<ptrdiff_t>(taken_offset_ + take));
  taken_offset_ += take;
  return Result<std::vector<uint8_t>>::Ok(std::move(out));
}

const GroundTruth& PtGenerator::truth() {
  truth_.trace_size = enc_.offset();
  truth_.clock.tsc_end = tsc_;
  return truth_;
}

Result<GeneratedTrace> Generate(const Program& program, const PtConfig& config, const RunOptions& options) {
  PtGenerator gen(program, config, options);
  Result<void> r = gen.Run(options.max_insns);
  if (!r.ok()) return Result<GeneratedTrace>::FailureFrom(r);
  Result<void> f = gen.Finish();
  if (!f.ok()) return Result<GeneratedTrace>::FailureFrom(f);
  GeneratedTrace t;
  t.truth = gen.truth();
  t.bytes = gen.trace();
  return Result<GeneratedTrace>::Ok(std::move(t));
}

Result<void> WriteGeneratedTrace(const GeneratedTrace& trace, const std::string& base) {
  const std::string bin = base + ".bin";
  std::ofstream out(bin, std::ios::binary | std::ios::trunc);
  if (!out) return Result<void>::Failure(EIO, fmt::format("pt_sim::WriteGeneratedTrace({}): cannot open", bin));
  out.write(reinterpret_cast<const char*>(trace.bytes.data()), static_cast<std::streamsize>(trace.bytes.size()));
  out.close();
  if (!out) return Result<void>::Failure(EIO, fmt::format("pt_sim::WriteGeneratedTrace({}): write failed", bin));
  return WriteGroundTruthFile(trace.truth, base + ".truth.json");
}

Result<GeneratedTrace> ReadGeneratedTrace(const std::string& base) {
  const std::string bin = base + ".bin";
  std::ifstream in(bin, std::ios::binary);
  if (!in) return Result<GeneratedTrace>::Failure(EIO, fmt::format("pt_sim::ReadGeneratedTrace({}): cannot open", bin));
  GeneratedTrace t;
  t.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  Result<GroundTruth> truth = ReadGroundTruthFile(base + ".truth.json");
  if (!truth.ok()) return Result<GeneratedTrace>::FailureFrom(truth);
  if (truth->trace_size != t.bytes.size()) {
    return Result<GeneratedTrace>::Failure(
        EINVAL, fmt::format("pt_sim::ReadGeneratedTrace({}): {} bytes, the ground truth says trace_size {}", bin,
                            t.bytes.size(), truth->trace_size));
  }
  t.truth = std::move(*truth);
  return Result<GeneratedTrace>::Ok(std::move(t));
}

}  // namespace perftest::pt_sim
