// The Intel PT packet generator of the mock: runs a simulated program
// (program.h) instruction by instruction, decided by a seeded branch oracle
// (oracle.h), and writes the packets a processor with the given intel_pt
// config would write (Intel SDM Vol. 3C chapter 33 "Intel Processor Trace"),
// together with the ground truth of the run (ground_truth.h).
//
//   Result<pt_sim::GeneratedTrace> t = pt_sim::Generate(program, config, {.max_insns = 100000});
//   // t->bytes: the trace;  t->truth.TracedIps(): what a decoder must reproduce
//
//   pt_sim::PtGenerator gen(program, config, options);   // incremental, for the AUX area
//   RETURN_IF_ERROR(gen.Run(1000));                      // up to 1000 more instructions
//   std::vector<uint8_t> chunk = gen.TakeTrace();        // bytes written since the last take
//   gen.Disable(); ... gen.Enable();                     // PERF_EVENT_IOC_DISABLE/ENABLE
//   RETURN_IF_ERROR(gen.Finish());
//
// What is emitted, and when (the simulated program is user code; the kernel
// is not simulated, its time only passes):
//   PSB+         PSB, TSC (tsc), TMA (tsc and mtc), CBR, PIP, MODE.Exec and
//                FUP (only while branch packets are on in user code), PSBEND:
//                at enable, after an OVF, and at the first instruction
//                boundary once 2^(psb_period+11) bytes followed the last PSB
//                (SDM §33.4.2.17; perf-intel-pt.txt "psb_period").
//   TNT-8/TNT-64 one bit per conditional branch, oldest bit first (most
//                significant), flushed at 6 (TNT-8) or 47 (TNT-64) bits and
//                before any other control-flow packet (SDM §33.4.2.1).
//   TIP          target of an indirect JMP/CALL, and of a RET without return
//                compression, compressed against the last IP (§33.4.2.2).
//   RET          a TNT taken bit when the return address matches a CALL
//                traced since the last PSB+/OVF/TIP.PGE (at most 64 deep),
//                unless noretcomp (perf-intel-pt.txt "noretcomp").
//   TIP.PGD/PGE  a far transfer (SYSCALL, INT ...) leaves user code: TIP.PGD
//                with the IP suppressed; the return to user code: MODE.Exec,
//                TIP.PGE(IP). Enable/Disable(): PSB+ ... TIP.PGE / FUP,
//                TIP.PGD (§33.4.2.4, §33.4.2.5; exclude_kernel: the kernel
//                is never traced).
//   FUP          asynchronous events: a simulated interrupt is FUP(IP),
//                TIP.PGD, then MODE.Exec, TIP.PGE(IP) on return (§33.4.2.6).
//   CBR          in PSB+, and when the simulated frequency changes (cbr_change_every).
//   MTC          when CTC bit mtc_period changes (mtc); CTC[mtc_period+7:mtc_period].
//   CYC          core cycles since the last CYC, before any packet outside
//                PSB+ while TraceEn (MTCs in the kernel too), at least
//                2^(cyc_thresh-1) of them (cyc).
//   OVF          an internal-buffer overflow (the oracle schedules it every
//                ~overflow_every instructions, or the internal buffer of
//                output_buffer_bytes fills up): packets after the next
//                branch packet are lost for overflow_insns instructions,
//                then OVF, FUP(IP) with a full IP, and a PSB+ (§33.4.2.16).
//   PTW          PTWRITE with the oracle's operand (ptw); FUP(IP of the
//                PTWRITE) after it with fup_on_ptw (§33.4.2.21).
//   MWAIT/PWRE/EXSTOP/PWRX   a C-state entry every ~power_every
//                instructions (pwr_evt): MWAIT, PWRE, EXSTOP(IP=1), FUP(IP),
//                PWRX (§33.4.2.22-25).
//   branch=0     (with pt=1, see PtConfig::branch_en())
//                no TNT/TIP/FUP/TIP.PGE/TIP.PGD/MODE.Exec: only PSB+ (without
//                FUP), timing packets and PTW.
// exclude_user traces nothing of the program (PSB+ and timing only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/pt/insn.h"
#include "harness/pt/packet_encoder.h"
#include "harness/result.h"
#include "mocks/pt_sim/config.h"
#include "mocks/pt_sim/ground_truth.h"
#include "mocks/pt_sim/oracle.h"
#include "mocks/pt_sim/program.h"

namespace perftest::pt_sim {

struct RunOptions {
  OracleOptions oracle;
  uint64_t max_insns = 10000;      // Generate(): instructions to run at most
  bool exclude_user = false;       // perf_event_attr.exclude_user: the program is not traced
  uint64_t interrupt_every = 0;    // mean instructions between simulated interrupts; 0: none
  uint64_t overflow_every = 0;     // mean instructions between internal-buffer overflows; 0: none
  uint64_t overflow_insns = 40;    // instructions whose packets an overflow loses
  // The internal buffer between packet generation and memory: when it holds
  // more than output_buffer_bytes (0: unlimited), the next packets overflow.
  // It drains one byte per drain_cycles_per_byte TSC ticks.
  uint32_t output_buffer_bytes = 0;
  uint32_t drain_cycles_per_byte = 1;
  uint64_t power_every = 0;        // mean instructions between C-state entries (with pwr_evt); 0: none
  bool tnt64 = false;              // TNT-64 packets (up to 47 bits) instead of TNT-8
  uint8_t cbr = 0x20;              // nominal core:bus ratio: TSC ticks once per core cycle at it
  uint64_t cbr_change_every = 0;   // mean instructions between frequency changes (a CBR packet
                                   // with a ratio from [cbr/2, 3*cbr/2]); 0: none
  uint32_t ctc_eax = 1;            // CPUID.15H EAX/EBX: TSC ticks = CTC ticks * ebx / eax
  uint32_t ctc_ebx = 32;
  uint64_t tsc_start = 0x10000000;
  uint64_t kernel_cycles = 500;    // mean cycles spent in the kernel per interrupt/far transfer
  // Keep the per-instruction truth (GroundTruth insns, branches, ptwrites:
  // ~40 bytes an instruction). Off, the run is the same and the truth has
  // the rest (events, clock, image, trace_size), with insn indices still
  // counting every instruction: for traces too long to keep (a benchmark's).
  bool record_insns = true;
};

struct GeneratedTrace {
  std::vector<uint8_t> bytes;
  GroundTruth truth;
};

class PtGenerator {
 public:
  PtGenerator(Program program, const PtConfig& config, const RunOptions& options);

  // Runs up to `insns` more instructions, or until an exit point (a
  // Program::exits address, or a RET with an empty call stack). The first
  // call enables tracing (PSB+, TIP.PGE). Errors: EFAULT, execution reached
  // an address outside the image; EILSEQ/ENODATA, the bytes there are not an
  // instruction (pt::InsnClassifier); EINVAL, an indirect branch with no
  // Program::indirect_targets entry; ENOTSUP, a mode other than 64-bit.
  // After an error the generator is finished.
  Result<void> Run(uint64_t insns);

  // PERF_EVENT_IOC_DISABLE / ENABLE between instructions: FUP, TIP.PGD /
  // PSB+ and TIP.PGE before the next instruction. No-ops when already so.
  void Disable();
  void Enable();

  // The next `n` passes through a Program::gates jump fall through (not
  // taken); the gates are taken otherwise.
  void RequestGate(uint64_t n) { gate_requests_ += n; }
  uint64_t gate_requests() const { return gate_requests_; }
  // Far transfers (SYSCALL, INT ...) executed so far.
  uint64_t far_transfers() const { return far_transfers_; }

  // Ends the run: disables tracing (FUP, TIP.PGD) and flushes pending TNT bits.
  // Further Run() calls do nothing.
  Result<void> Finish();

  bool finished() const { return finished_; }
  bool enabled() const { return trace_en_; }
  uint64_t ip() const { return ip_; }

  // The whole trace so far, and the bytes written since the last TakeTrace()/TakeBytes().
  const std::vector<uint8_t>& trace() const { return enc_.bytes(); }
  std::vector<uint8_t> TakeTrace();

  // For a consumer that asks for bytes (the AUX area): runs instructions
  // until at least `n` bytes wait untaken — at most `max_insns` more, and
  // finishing the run when the program ends — then takes min(n, waiting)
  // bytes, cut wherever n falls (the trace is one byte stream; a decoder
  // resyncs at the next PSB). Fewer than n bytes: the program ended or
  // max_insns passed (a config that writes little, e.g. branch=0 without
  // timing packets). Errors: as Run().
  Result<std::vector<uint8_t>> TakeBytes(uint64_t n, uint64_t max_insns = uint64_t{1} << 22);

  // The ground truth so far (trace_size and tsc_end are current).
  const GroundTruth& truth();

 private:
  bool ContextEn() const { return trace_en_ && !pge_pending_ && !options_.exclude_user; }
  bool PacketEn() const { return ContextEn() && config_.branch_en(); }
  bool Dropping() const { return overflowing_; }

  Result<void> Step();
  void Boundary();
  void Out(const pt::Packet& p);
  void Pkt(const pt::Packet& p);   // CYC first, then p
  void OutIp(pt::PacketType type, std::optional<uint64_t> ip);
  void MaybeCyc();
  void MaybeMtc();
  void AddTnt(bool taken);
  void FlushTnt();
  void EmitPsb();
  void EmitPge();
  void BeginOverflow();
  void EndOverflow();
  void KernelTime();
  void Interrupt();
  void Power();
  void Event(EventKind kind, bool traced);
  uint64_t Ctc() const;
  // Core cycles run at the current ratio (TSC advances cycles * cbr / current);
  // idle TSC ticks pass with the core stopped.
  void Advance(uint64_t core_cycles, uint64_t idle_tsc_ticks);

  Program program_;
  PtConfig config_;
  RunOptions options_;
  BranchOracle oracle_;
  pt::InsnClassifier classifier_;
  pt::PacketEncoder enc_;
  GroundTruth truth_;

  uint64_t ip_ = 0;
  std::vector<uint64_t> call_stack_;
  std::vector<uint64_t> retcomp_;  // return addresses the decoder can match (<= 64)
  bool started_ = false;
  bool finished_ = false;
  bool trace_en_ = false;
  bool pge_pending_ = false;
  bool overflow_pending_ = false;
  bool overflowing_ = false;
  uint64_t overflow_left_ = 0;
  uint64_t tnt_bits_ = 0;
  unsigned tnt_count_ = 0;
  uint64_t last_psb_offset_ = 0;
  uint64_t taken_offset_ = 0;
  uint64_t cycles_ = 0;       // core cycles while executing
  uint64_t tsc_ = 0;
  uint64_t last_cyc_ = 0;     // cycles_ at the last CYC (or PSB+)
  uint64_t last_mtc_ = 0;     // CTC >> mtc_period at the last MTC/TMA
  uint8_t cbr_ = 0;           // the current core:bus ratio
  uint64_t tsc_frac_ = 0;     // core cycles * nominal not yet a whole TSC tick
  uint64_t fill_ = 0;         // bytes in the internal buffer (output_buffer_bytes)
  uint64_t drain_ticks_ = 0;  // TSC ticks not yet turned into drained bytes
  uint64_t gate_requests_ = 0;  // RequestGate() passes not yet taken
  uint64_t far_transfers_ = 0;
  uint64_t insns_ = 0;  // instructions executed (truth_.insns.size() when record_insns)
};

// A run on disk, for `perftest pt record` and for decoders under test:
// BASE.bin holds the trace bytes exactly as written (the AUX data), and
// BASE.truth.json the ground truth (format in ground_truth.h), which
// includes the code image and the config. Errors: EIO naming the file that
// could not be written or read; EINVAL as ReadGroundTruthFile, or when the
// .bin size is not the truth's trace_size.
Result<void> WriteGeneratedTrace(const GeneratedTrace& trace, const std::string& base);
Result<GeneratedTrace> ReadGeneratedTrace(const std::string& base);

// Runs `program` for at most options.max_insns instructions with a fresh
// generator and finishes it. Errors: as PtGenerator::Run.
Result<GeneratedTrace> Generate(const Program& program, const PtConfig& config, const RunOptions& options);

}  // namespace perftest::pt_sim
