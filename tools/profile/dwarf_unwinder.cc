#include "tools/profile/dwarf_unwinder.h"

#include <asm/perf_regs.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

namespace perftest::profile {
namespace {

// The architecture's registers: which bits of sample_regs_user the unwinder
// asks for, and for each DWARF register number (the psABI's numbering, as
// libdwfl's set_initial_registers wants them) the PERF_REG_* it comes from
// (arch/*/include/uapi/asm/perf_regs.h).
#if defined(__x86_64__)
// System V AMD64 psABI, "DWARF Register Number Mapping": 0 rax, 1 rdx,
// 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 return address (rip).
constexpr int kDwarfToPerf[] = {
    PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX,  PERF_REG_X86_BX,  PERF_REG_X86_SI,  PERF_REG_X86_DI,
    PERF_REG_X86_BP, PERF_REG_X86_SP, PERF_REG_X86_R8,  PERF_REG_X86_R9,  PERF_REG_X86_R10, PERF_REG_X86_R11,
    PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15, PERF_REG_X86_IP,
};
constexpr int kPerfSp = PERF_REG_X86_SP;
constexpr int kPerfPc = PERF_REG_X86_IP;
constexpr bool kPcIsDwarfReg = true;  // DWARF 16 (the return address column) carries it
constexpr const char* kArch = "x86_64";
#elif defined(__aarch64__)
// DWARF for the Arm 64-bit Architecture: x0-x30 are 0-30, sp 31; the pc has
// no DWARF number (dwfl_thread_state_register_pc()).
constexpr int kDwarfToPerf[] = {
    PERF_REG_ARM64_X0,  PERF_REG_ARM64_X1,  PERF_REG_ARM64_X2,  PERF_REG_ARM64_X3,  PERF_REG_ARM64_X4,
    PERF_REG_ARM64_X5,  PERF_REG_ARM64_X6,  PERF_REG_ARM64_X7,  PERF_REG_ARM64_X8,  PERF_REG_ARM64_X9,
    PERF_REG_ARM64_X10, PERF_REG_ARM64_X11, PERF_REG_ARM64_X12, PERF_REG_ARM64_X13, PERF_REG_ARM64_X14,
    PERF_REG_ARM64_X15, PERF_REG_ARM64_X16, PERF_REG_ARM64_X17, PERF_REG_ARM64_X18, PERF_REG_ARM64_X19,
    PERF_REG_ARM64_X20, PERF_REG_ARM64_X21, PERF_REG_ARM64_X22, PERF_REG_ARM64_X23, PERF_REG_ARM64_X24,
    PERF_REG_ARM64_X25, PERF_REG_ARM64_X26, PERF_REG_ARM64_X27, PERF_REG_ARM64_X28, PERF_REG_ARM64_X29,
    PERF_REG_ARM64_LR,  PERF_REG_ARM64_SP,
};
constexpr int kPerfSp = PERF_REG_ARM64_SP;
constexpr int kPerfPc = PERF_REG_ARM64_PC;
constexpr bool kPcIsDwarfReg = false;
constexpr const char* kArch = "aarch64";
#else
constexpr int kDwarfToPerf[] = {0};
constexpr int kPerfSp = -1;
constexpr int kPerfPc = -1;
constexpr bool kPcIsDwarfReg = false;
constexpr const char* kArch = "this architecture";
#endif
constexpr size_t kDwarfRegs = sizeof kDwarfToPerf / sizeof kDwarfToPerf[0];

constexpr uint64_t Mask() {
  if (kPerfSp < 0) return 0;
  uint64_t m = uint64_t{1} << kPerfSp | uint64_t{1} << kPerfPc;
  for (int r : kDwarfToPerf) m |= uint64_t{1} << r;
  return m;
}

const Dwfl_Callbacks kProcCallbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

}  // namespace

// One process: its Dwfl, and the sample being unwound (the callbacks' dwfl_arg).
struct DwarfUnwinder::Process {
  Dwfl* dwfl = nullptr;
  pid_t tid = 0;
  const SampleView::Regs* regs = nullptr;
  const SampleView::StackUser* stack = nullptr;
  ~Process() {
    if (dwfl) dwfl_end(dwfl);
  }
  // PERF_REG_* value `r` of the sample (regs are stored lowest mask bit first).
  uint64_t Reg(int r) const {
    const uint64_t below = Mask() & ((uint64_t{1} << r) - 1);
    return regs->regs[static_cast<size_t>(std::popcount(below))];
  }
};

namespace {

using Process = DwarfUnwinder::Process;

// Only the thread of the sample: the first call yields it, the next ends.
pid_t NextThread(Dwfl*, void* arg, void** thread_argp) {
  if (*thread_argp != nullptr) return 0;
  *thread_argp = arg;
  return static_cast<Process*>(arg)->tid;
}

bool GetThread(Dwfl*, pid_t tid, void* arg, void** thread_argp) {
  *thread_argp = arg;
  return tid == static_cast<Process*>(arg)->tid;
}

// Stack memory comes from the sample's copy: [SP, SP + dyn_size).
bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  const Process* p = static_cast<Process*>(arg);
  const uint64_t sp = p->Reg(kPerfSp);
  const uint64_t filled = std::min<uint64_t>(p->stack->dyn_size, p->stack->data.size());
  if (addr < sp || addr - sp + sizeof *result > filled) return false;
  std::memcpy(result, p->stack->data.data() + (addr - sp), sizeof *result);
  return true;
}

bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
  const Process* p = static_cast<Process*>(arg);
  Dwarf_Word regs[kDwarfRegs];
  for (size_t i = 0; i < kDwarfRegs; ++i) regs[i] = p->Reg(kDwarfToPerf[i]);
  if (!dwfl_thread_state_registers(thread, 0, kDwarfRegs, regs)) return false;
  if (!kPcIsDwarfReg) dwfl_thread_state_register_pc(thread, p->Reg(kPerfPc));
  return true;
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    .next_thread = NextThread,
    .get_thread = GetThread,
    .memory_read = MemoryRead,
    .set_initial_registers = SetInitialRegisters,
    .detach = nullptr,
    .thread_detach = nullptr,
};

struct FrameSink {
  std::vector<uint64_t> ips;
  size_t max_depth = 127;
};

// dwfl_frame_pc(): the first frame's pc is the interrupted ip (an
// activation); the others' are return addresses, as in a callchain.
int OnFrame(Dwfl_Frame* state, void* arg) {
  auto* sink = static_cast<FrameSink*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0) return DWARF_CB_ABORT;
  sink->ips.push_back(pc);
  return sink->ips.size() >= sink->max_depth ? DWARF_CB_ABORT : DWARF_CB_OK;
}

}  // namespace

DwarfUnwinder::DwarfUnwinder() = default;
DwarfUnwinder::~DwarfUnwinder() = default;

uint64_t DwarfUnwinder::SampleRegsUser() { return Mask(); }
const char* DwarfUnwinder::Arch() { return kArch; }

DwarfUnwinder::Process* DwarfUnwinder::ForPid(pid_t pid) {
  auto it = processes_.find(pid);
  if (it != processes_.end()) return it->second.get();
  auto p = std::make_unique<Process>();
  p->dwfl = dwfl_begin(&kProcCallbacks);
  bool ok = p->dwfl != nullptr;
  if (ok && dwfl_linux_proc_report(p->dwfl, pid) != 0) {
    error_ = fmt::format("pid {}: /proc/{}/maps cannot be read (the process exited?)", pid, pid);
    ok = false;
  }
  if (ok && dwfl_report_end(p->dwfl, nullptr, nullptr) != 0) ok = false;
  // No ELF given: libdwfl takes the architecture from the modules reported.
  if (ok && !dwfl_attach_state(p->dwfl, nullptr, pid, &kThreadCallbacks, p.get())) {
    error_ = fmt::format("pid {}: dwfl_attach_state: {}", pid, dwfl_errmsg(-1));
    ok = false;
  }
  if (!ok) p.reset();  // remembered as null: not tried again for each sample
  Process* raw = p.get();
  processes_.emplace(pid, std::move(p));
  return raw;
}

std::vector<uint64_t> DwarfUnwinder::Unwind(pid_t pid, pid_t tid, const SampleView::Regs& regs,
                                            const SampleView::StackUser& stack, size_t max_depth) {
  if (Mask() == 0) {
    error_ = fmt::format("DWARF unwinding is not implemented for {}", kArch);
    return {};
  }
  if (regs.abi == PERF_SAMPLE_REGS_ABI_NONE || pid <= 0) return {};
  if (regs.regs.size() != static_cast<size_t>(std::popcount(Mask()))) {
    error_ = fmt::format("{} user registers in the sample, {} expected (sample_regs_user={:#x})", regs.regs.size(),
                         std::popcount(Mask()), Mask());
    return {};
  }
  Process* p = ForPid(pid);
  if (p == nullptr) return {};
  p->tid = tid;
  p->regs = &regs;
  p->stack = &stack;
  FrameSink sink;
  sink.max_depth = max_depth;
  const int rc = dwfl_getthread_frames(p->dwfl, tid, OnFrame, &sink);
  ++unwound_;
  if (rc == -1) {
    ++truncated_;
    error_ = fmt::format("pid {} tid {}: unwinding stopped after {} frames: {}", pid, tid, sink.ips.size(),
                         dwfl_errmsg(-1));
  }
  // Without a single frame, the sampled ip at least (as perf shows it).
  if (sink.ips.empty()) sink.ips.push_back(p->Reg(kPerfPc));
  p->regs = nullptr;
  p->stack = nullptr;
  return sink.ips;
}

}  // namespace perftest::profile
