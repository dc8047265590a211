#include "mocks/pt_sim/program.h"

#include <fmt/format.h>

#include <cstdint>

namespace perftest::pt_sim {

Assembler::Assembler(uint64_t base, std::string name) : base_(base), name_(std::move(name)) {}

Assembler::Label Assembler::NewLabel() {
  labels_.push_back(-1);
  return Label{static_cast<int>(labels_.size()) - 1};
}

void Assembler::Bind(Label label) { labels_.at(label.id) = static_cast<int64_t>(code_.size()); }

uint64_t Assembler::AddressOf(Label label) const {
  const int64_t off = labels_.at(label.id);
  return off < 0 ? 0 : base_ + static_cast<uint64_t>(off);
}

void Assembler::Nop(unsigned length) {
  static const std::vector<uint8_t> kNops[] = {
      {0x90},
      {0x66, 0x90},
      {0x0f, 0x1f, 0x00},
      {0x0f, 0x1f, 0x40, 0x00},
      {0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
      {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
      {0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
  };
  if (length < 1) length = 1;
  if (length > 9) length = 9;
  Raw(kNops[length - 1]);
}

void Assembler::AluOp() { Raw({0x48, 0x83, 0xc0, 0x01}); }
void Assembler::MovOp() { Raw({0x48, 0x89, 0xf8}); }
void Assembler::Raw(std::vector<uint8_t> bytes) { code_.insert(code_.end(), bytes.begin(), bytes.end()); }

void Assembler::Rel(Label target, int width) {
  const size_t at = code_.size();
  code_.resize(code_.size() + width, 0);
  fixups_.push_back(Fixup{at, width, code_.size(), target.id});
}

void Assembler::Jcc(uint8_t cc, Label target, bool short_form) {
  if (short_form) {
    code_.push_back(static_cast<uint8_t>(0x70 | (cc & 0xf)));
    Rel(target, 1);
  } else {
    Raw({0x0f, static_cast<uint8_t>(0x80 | (cc & 0xf))});
    Rel(target, 4);
  }
}

void Assembler::JccGate(uint8_t cc, Label target, bool short_form) {
  gates_.insert(here());
  Jcc(cc, target, short_form);
}

void Assembler::Jmp(Label target, bool short_form) {
  code_.push_back(short_form ? 0xeb : 0xe9);
  Rel(target, short_form ? 1 : 4);
}

void Assembler::Call(Label target) {
  code_.push_back(0xe8);
  Rel(target, 4);
}

void Assembler::CallAddress(uint64_t target) {
  code_.push_back(0xe8);
  const size_t at = code_.size();
  code_.resize(code_.size() + 4, 0);
  fixups_.push_back(Fixup{at, 4, code_.size(), -1, target});
}

void Assembler::Ret() { code_.push_back(0xc3); }

void Assembler::JmpIndirect(std::vector<Label> targets) {
  indirect_.emplace_back(here(), std::move(targets));
  Raw({0xff, 0xe0});
}

void Assembler::CallIndirect(std::vector<Label> targets) {
  indirect_.emplace_back(here(), std::move(targets));
  Raw({0xff, 0xd0});
}

void Assembler::Syscall() { Raw({0x0f, 0x05}); }

void Assembler::Ptwrite(bool rex_w) {
  if (rex_w) {
    Raw({0xf3, 0x48, 0x0f, 0xae, 0xe0});
  } else {
    Raw({0xf3, 0x0f, 0xae, 0xe0});
  }
}

void Assembler::Exit() { exits_.insert(here()); }

Result<Program> Assembler::Finish() {
  const std::string call = fmt::format("Assembler::Finish(base={:#x}, name={})", base_, name_);
  for (const Fixup& f : fixups_) {
    int64_t disp = 0;
    if (f.label < 0) {
      disp = static_cast<int64_t>(f.address - (base_ + f.next));
      if (disp < INT32_MIN || disp > INT32_MAX) {
        return Result<Program>::Failure(EINVAL, fmt::format("{}: rel32 to {:#x} out of range", call, f.address));
      }
    } else if (f.label >= static_cast<int>(labels_.size()) || labels_[f.label] < 0) {
      return Result<Program>::Failure(EINVAL, call + ": unbound label");
    } else {
      disp = labels_[f.label] - static_cast<int64_t>(f.next);
    }
    if (f.width == 1 && (disp < -128 || disp > 127)) {
      return Result<Program>::Failure(EINVAL, fmt::format("{}: rel8 displacement {} out of range", call, disp));
    }
    for (int i = 0; i < f.width; ++i) code_[f.at + i] = static_cast<uint8_t>(static_cast<uint64_t>(disp) >> (8 * i));
  }
  Program p;
  p.name = name_;
  p.entry = base_;
  p.exits = exits_;
  p.gates = gates_;
  for (const auto& [site, targets] : indirect_) {
    std::vector<uint64_t>& list = p.indirect_targets[site];
    for (Label l : targets) {
      if (labels_.at(l.id) < 0) return Result<Program>::Failure(EINVAL, call + ": unbound indirect target label");
      list.push_back(AddressOf(l));
    }
  }
  if (code_.empty()) return Result<Program>::Failure(EINVAL, call + ": no code");
  Result<void> added = p.image.Add(base_, code_, name_);
  if (!added.ok()) return Result<Program>::FailureFrom(added);
  return Result<Program>::Ok(std::move(p), call);
}

Result<Program> Relocate(const Program& program, uint64_t base) {
  const std::vector<CodeSection>& sections = program.image.sections();
  if (sections.empty()) return Result<Program>::Failure(EINVAL, "Relocate: the program has no code");
  const uint64_t delta = base - sections.front().address;  // modulo 2^64: moves down as well as up
  auto move = [delta](uint64_t a) { return a + delta; };
  Program p;
  p.name = program.name;
  p.cr3 = program.cr3;
  p.entry = move(program.entry);
  for (uint64_t a : program.exits) p.exits.insert(move(a));
  for (uint64_t a : program.gates) p.gates.insert(move(a));
  for (const auto& [site, targets] : program.indirect_targets) {
    std::vector<uint64_t>& list = p.indirect_targets[move(site)];
    for (uint64_t t : targets) list.push_back(move(t));
  }
  for (uint64_t t : program.any_indirect_targets) p.any_indirect_targets.push_back(move(t));
  for (const CodeSection& s : sections) {
    if (move(s.address) < base || move(s.address) + s.bytes.size() < move(s.address)) {
      return Result<Program>::Failure(EINVAL, fmt::format("Relocate({:#x}): section {} at {:#x} would wrap past 2^64",
                                                          base, s.name, s.address));
    }
    Result<void> added = p.image.Add(move(s.address), s.bytes, s.name);
    if (!added.ok()) return Result<Program>::FailureFrom(added);
  }
  return Result<Program>::Ok(std::move(p), fmt::format("Relocate({:#x})", base));
}

}  // namespace perftest::pt_sim
