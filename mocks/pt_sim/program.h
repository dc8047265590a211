// A simulated program for the PT generator: a code image, where execution
// starts and ends, and which targets an indirect branch may take — and a tiny
// x86-64 assembler that builds such programs by hand for tests.
//
//   pt_sim::Assembler a(0x401000);
//   auto loop = a.NewLabel(), done = a.NewLabel();
//   a.Bind(loop);
//   a.AluOp();                  // add $1, %rax
//   a.Jcc(0x5, done);           // jne done (condition 5 = NE)
//   a.Jmp(loop);
//   a.Bind(done);
//   a.Ret();
//   Result<pt_sim::Program> program = a.Finish();   // entry 0x401000
//
// The assembler only encodes (SDM Vol. 2 encodings, cited per method); the
// generator classifies the bytes it executes with harness/pt/insn.h like any
// other code, so hand-assembled programs, code copied out of a compiled
// binary and fixture files run the same way.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/result.h"
#include "mocks/pt_sim/image.h"

namespace perftest::pt_sim {

struct Program {
  CodeImage image;
  uint64_t entry = 0;
  // Reaching one of these addresses ends the run (the instruction there is not executed).
  std::set<uint64_t> exits;
  // For each indirect JMP/CALL (by its address): the targets the branch oracle
  // picks from. An indirect branch with neither this nor any_indirect_targets
  // ends the run with EINVAL.
  std::map<uint64_t, std::vector<uint64_t>> indirect_targets;
  // For indirect branches not in indirect_targets (e.g. in compiled code, whose
  // call sites the test does not know): the targets to pick from.
  std::vector<uint64_t> any_indirect_targets;
  // Conditional jumps the oracle does not decide ("gates"): not taken once
  // for each PtGenerator::RequestGate(), taken otherwise. A program places
  // the code a workload asks for (e.g. a call to a SYSCALL stub) on the
  // fall-through side.
  std::set<uint64_t> gates;
  uint64_t cr3 = 0x12345000;  // the address space (PIP packets); bits 51:5
  std::string name;
};

// `program` with all of its code moved so that its lowest section starts at
// `base` (sections, entry, exits, indirect branch sites and targets, gates):
// the same run at another load address, as ASLR would place it. The code
// must be position-independent (relative branches, as the assembler below
// and -fPIE compilers write it); the bytes are not changed.
// Errors: EINVAL, a program without code, or a section moved past 2^64.
Result<Program> Relocate(const Program& program, uint64_t base);

// Builds a Program at a fixed base address. Labels may be used before they
// are bound; Finish() resolves them (EINVAL for an unbound label or a rel8
// displacement out of range).
class Assembler {
 public:
  struct Label {
    int id = -1;
  };

  explicit Assembler(uint64_t base, std::string name = "asm");

  Label NewLabel();
  void Bind(Label label);
  uint64_t here() const { return base_ + code_.size(); }
  uint64_t AddressOf(Label label) const;  // after Bind(); 0 before

  // Straight-line instructions (no change of flow).
  void Nop(unsigned length = 1);  // 1..9 bytes: the recommended multi-byte NOPs (SDM Vol. 2 "NOP", table 4-12)
  void AluOp();                   // 48 83 C0 01: add $1, %rax
  void MovOp();                   // 48 89 F8: mov %rdi, %rax
  void Raw(std::vector<uint8_t> bytes);  // caller's bytes, taken as they are

  // Control flow.
  void Jcc(uint8_t cc, Label target, bool short_form = false);  // 0F 8x rel32 / 7x rel8
  // A Jcc that is a Program::gates entry.
  void JccGate(uint8_t cc, Label target, bool short_form = false);
  void Jmp(Label target, bool short_form = false);              // E9 rel32 / EB rel8
  void Call(Label target);                                      // E8 rel32
  void CallAddress(uint64_t target);  // E8 rel32 to an address outside this code (EINVAL in Finish() if out of range)
  void Ret();                                                   // C3
  // FF E0 jmp *%rax / FF D0 call *%rax, with the targets the oracle picks from.
  void JmpIndirect(std::vector<Label> targets);
  void CallIndirect(std::vector<Label> targets);
  void Syscall();                 // 0F 05: leaves user mode, returns to the next instruction
  void Ptwrite(bool rex_w = true);  // F3 [48] 0F AE E0: ptwrite %rax / %eax
  void Exit();                    // marks here() as an exit point (emits nothing)

  Result<Program> Finish();

 private:
  struct Fixup {
    size_t at;        // offset of the displacement
    int width;        // 1 or 4
    size_t next;      // offset of the next instruction
    int label;        // -1: `address` instead
    uint64_t address = 0;
  };
  void Rel(Label target, int width);

  uint64_t base_;
  std::string name_;
  std::vector<uint8_t> code_;
  std::vector<int64_t> labels_;  // offset, or -1 while unbound
  std::vector<Fixup> fixups_;
  std::vector<std::pair<uint64_t, std::vector<Label>>> indirect_;
  std::set<uint64_t> exits_;
  std::set<uint64_t> gates_;
};

}  // namespace perftest::pt_sim
