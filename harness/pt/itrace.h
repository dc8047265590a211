// itrace synthesis: the events `perf script --itrace=...` makes from an
// Intel PT trace (perf-intel-pt.txt "New --itrace option"), on top of the
// flow decoder.
//
//   Result<pt::ItraceOptions> o = pt::ParseItrace("i100usbe-o");
//   pt::ItraceSynth synth(*o);
//   Result<pt::ItraceStats> r = pt::SynthesizeItrace(trace, image, *o, {}, &synth);
//   for (const pt::ItraceSample& s : synth.samples()) fmt::print("{}\n", pt::ToText(s));
//
// Letters: i (instructions; period N with unit i, t, ns, us or ms, a bare
// number being ns; default 100us; 0 = every instruction), b (branches), c (calls only), r (returns
// only; c and r combine), x (transactions), w (ptwrite), p (power: cbr,
// mwait, pwre, pwrx, exstop, and psb — one per PSB+ with its trace offset
// and FUP IP, as perf's intel_pt_synth_psb_sample), e (errors; e-o hides
// overflows, e-l lost data), d (debug log, itrace_log.h; flags +a/-a log
// perf events — here the existing events — or not, +e keep only the last
// 16384 bytes and write them at each error, +o to stdout instead of
// intel_pt.log), g[N] (call chain on i/x samples, default 16, max 1024),
// G[N] (call chain on existing events), l[N] (last branch entries on i/x
// samples, default 64, max 1024, cleared per sample), L[N] (last branch
// entries on existing events, not cleared), sN (skip the first N i/b/x
// samples), q (quick: no TNT, no object code; samples from
// TIP/FUP/TIP.PGE/TIP.PGD), qq (only the FUPs of PSB+). No letters at all
// is "cepwx".
//
// Existing events (G, L): perf adds call chains and branch stacks to the
// samples of other events recorded with the trace (sample mode,
// perf-intel-pt.txt "The G and L options"). Here they are given by time
// (ItraceSynth::SetExistingEvents, CLI --existing-event TSC[:NAME]): each is
// attached to the first instruction whose time estimate (the rule of i
// periods: the block's TSC plus 1 tick per instruction) reaches its time, and
// becomes a sample of that name at that IP, with the call chain (G) and the
// branch stack (L) there. Events whose time the trace never reaches are not
// output. Time periods need the TSC frequency
// (ItraceOptions::tsc_hz); 1 tick per instruction between timing updates.
//
// Branch flags (perf's PERF_IP_FLAG_*, printed as "bcrosyiABEx"): b branch,
// c call, r return, o conditional, s system call/return (far transfer),
// y asynchronous, i interrupt, A transaction abort, B trace begin,
// E trace end, x in transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/image.h"
#include "harness/result.h"

namespace perftest::pt {

struct ItraceOptions {
  bool instructions = false, branches = false, calls = false, returns = false, transactions = false;
  bool ptwrite = false, power = false, errors = false, callchain = false, last_branch = false;
  bool add_callchain = false, add_last_branch = false;  // G, L: on existing events
  // d: the debug log, with perf's flags (AUXTRACE_LOG_FLG_*): +a/-a log
  // perf events (default on), +e log on error only, +o use stdout.
  bool debug_log = false;
  bool log_perf_events = true;
  bool log_on_error = false;
  bool log_stdout = false;
  size_t log_on_error_size = 16384;  // perf's ITRACE_DFLT_LOG_ON_ERROR_SZ
  enum class Unit : uint8_t { kInstructions, kTicks, kNanoseconds };
  Unit period_unit = Unit::kNanoseconds;
  uint64_t period = 100000;  // 100us
  unsigned callchain_size = 16;
  unsigned last_branch_size = 64;
  uint64_t skip = 0;
  int quick = 0;                  // 0, 1 (q), 2 (qq)
  bool suppress_overflow = false;  // e-o
  bool suppress_lost = false;      // e-l
  uint64_t tsc_hz = 0;             // TSC frequency for ns/us/ms periods; 0: 1 GHz assumed
  // IPC without CYC packets (perf-intel-pt.txt: "otherwise MTC packets are
  // used"): the maximum non-turbo ratio (MSR_PLATFORM_INFO[15:8], the
  // intel_pt PMU's sysfs max_nonturbo_ratio); cycles are then TSC ticks *
  // CBR / this since tracing was enabled or the CBR changed (perf's
  // intel_pt_mtc_cyc_cnt_upd()). 0: IPC from CYC packets only.
  uint32_t max_nonturbo_ratio = 0;
};

// Parses the letters after "--itrace=". Errors: EINVAL with the call naming
// the offending letter ("unknown itrace letter 'z'", "bad period unit",
// "call chain size above 1024", "unknown debug log flag").
Result<ItraceOptions> ParseItrace(std::string_view spec);

// ItraceSample::flags bits.
inline constexpr uint32_t kFlagBranch = 1u << 0;       // b
inline constexpr uint32_t kFlagCall = 1u << 1;         // c
inline constexpr uint32_t kFlagReturn = 1u << 2;       // r
inline constexpr uint32_t kFlagConditional = 1u << 3;  // o
inline constexpr uint32_t kFlagSyscall = 1u << 4;      // s
inline constexpr uint32_t kFlagAsync = 1u << 5;        // y
inline constexpr uint32_t kFlagInterrupt = 1u << 6;    // i
inline constexpr uint32_t kFlagTxAbort = 1u << 7;      // A
inline constexpr uint32_t kFlagTraceBegin = 1u << 8;   // B
inline constexpr uint32_t kFlagTraceEnd = 1u << 9;     // E
inline constexpr uint32_t kFlagInTx = 1u << 10;        // x
// The flags as perf script prints them: one letter per set flag, in "bcrosyiABEx" order.
std::string FlagString(uint32_t flags);
// The flags as perf script's flags field names a branch (perf_sample__sprintf_flags):
// "call", "return", "jcc", "jmp", "int", "iret", "syscall", "sysret", "async",
// "hw int", "tx abrt", "tr strt", "tr end", or "tr strt "/"tr end  " before
// one of those, padded to 21 characters with "(x)" right-aligned in the
// last 6 for a branch in a transaction; another combination is its letters.
std::string FlagName(uint32_t flags);

struct ItraceSample {
  std::string event;       // "instructions", "branches", "transactions", "ptwrite", "cbr",
                           // "mwait", "pwre", "pwrx", "exstop", "psb", "error", or an
                           // existing event's name
  uint64_t ip = 0;
  uint64_t addr = 0;       // branches: the target (0 for trace end)
  uint32_t flags = 0;
  // branches: the call depth as perf script's callindent shows it (its
  // thread_stack__depth(), the stack after this branch; a return one more,
  // at its call's depth).
  uint32_t depth = 0;
  uint64_t time = 0;       // TSC estimate
  uint64_t period = 0;     // instructions: the instructions the sample stands for
  // IPC: instructions and core cycles since the last sample of this event
  // with a cycle update (cycles from CYC packets, else estimated from the
  // MTC/TSC time: ItraceOptions::max_nonturbo_ratio); 0 without an update.
  uint64_t insn_count = 0, cyc_count = 0;
  uint64_t payload = 0;    // ptwrite payload, cbr ratio, mwait/pwre/pwrx payload
  uint64_t offset = 0;     // trace offset (errors, events; psb: the PSB's)
  uint64_t insn_index = 0; // existing events: instructions decoded before this one
  int error = 0;           // errno of an error sample
  std::string message;     // error text
  std::vector<uint64_t> callchain;                          // g: ip first, then return addresses
  std::vector<std::pair<uint64_t, uint64_t>> branch_stack;  // l: (from, to), newest first
};
// One line, perf script style:
//   "instructions:  401005"   "branches: bcs  401000 => 0"   "error: EBADMSG ... @0x1a0"
std::string ToText(const ItraceSample& s);
// One JSON object (a line of JSON Lines); branches carry "depth".
std::string ToJson(const ItraceSample& s);
// perf script --call-trace (with_flags false) and --call-ret-trace (true)
// lines: a branch sample as its time, (the flag name,) and, indented four
// spaces per call depth (callindent), the call's or trace begin's target or
// the return's or trace end's source IP, as 16 hex digits (perf prints the
// symbol there; the image here has none). Other samples (errors, power
// events, ptwrite) as ToText().
std::string ToCallTrace(const ItraceSample& s, bool with_flags);
// The same lines appended to `out` (no newline): what the decoder streams
// its output through, one buffer for many samples.
void AppendText(fmt::memory_buffer* out, const ItraceSample& s);
void AppendJson(fmt::memory_buffer* out, const ItraceSample& s);
void AppendCallTrace(fmt::memory_buffer* out, const ItraceSample& s, bool with_flags);

// An event recorded with the trace (G, L): a name and a TSC time.
struct ExistingEvent {
  std::string name = "event";
  uint64_t time = 0;
};

class ItraceLog;

// Turns the flow decoder's blocks, events and errors into samples.
class ItraceSynth {
 public:
  explicit ItraceSynth(const ItraceOptions& options) : o_(options) {}
  // The existing events to attach call chains (G) / branch stacks (L) to;
  // sorted by time here.
  void SetExistingEvents(std::vector<ExistingEvent> events);
  // The debug log to write existing events to (+a), or null.
  void SetLog(ItraceLog* log) { log_ = log; }
  void OnSync(uint64_t offset);
  // A PSB+ at `offset`, its FUP IP (0 without one) and TSC (0 without one).
  void OnPsb(uint64_t offset, uint64_t ip, uint64_t tsc);
  void OnBlock(const FlowBlock& block);
  void OnEvent(const FlowEvent& event);
  void OnError(int err, uint64_t offset, uint64_t ip, const std::string& message);
  // Trace data lost before `offset` (an AUX record with
  // PERF_AUX_FLAG_TRUNCATED: perf's intel_pt_lost()): with e and without
  // e-l an error sample ENOSPC "Lost trace data" there; the flow starts over.
  void OnLost(uint64_t offset);
  // Quick modes: a control-flow point known from a packet alone.
  void OnQuick(std::string_view kind, uint64_t from, uint64_t to, uint32_t flags, uint64_t offset);

  // Where samples go: with a sink each is handed to it as it is made and
  // not kept (samples() stays empty); without one they are kept in order.
  void SetSink(std::function<void(const ItraceSample&)> sink) { sink_ = std::move(sink); }
  const std::vector<ItraceSample>& samples() const { return samples_; }
  // Samples made (kept or handed to the sink).
  uint64_t sample_count() const { return sample_count_; }
  uint64_t instructions() const { return insns_; }

 private:
  void Emit(ItraceSample s, bool skippable);
  // A branch from `from` (an instruction of `insn_len` bytes; 0 for an
  // asynchronous one) to `to` (0: none, trace end): the call stack, the
  // branch stacks, and a branches sample if the letters ask for it.
  void TakeBranch(uint64_t from, uint64_t to, uint32_t flags, const FlowTime& t, uint8_t insn_len = 0);
  // perf's thread_stack__event() for the call stack (g, G, callindent).
  void StackEvent(uint64_t from, uint64_t to, uint32_t flags, uint8_t insn_len);
  // thread_stack__pop(): down to and without the entry for return address
  // `ret`, if there is one; else nothing.
  void PopTo(uint64_t ret);
  void InstructionSample(uint64_t ip, const FlowTime& t);
  void ExistingSample(uint64_t ip);
  // g/G: `ip`, then the return addresses, innermost first (callchain_size at most).
  std::vector<uint64_t> CallChain(uint64_t ip) const;
  uint64_t PeriodTicks() const;

  ItraceOptions o_;
  std::vector<ItraceSample> samples_;
  std::function<void(const ItraceSample&)> sink_;
  uint64_t sample_count_ = 0;
  uint64_t skipped_ = 0;
  uint64_t insns_ = 0;
  // The last instruction of the previous block, whose successor decides
  // whether it was taken.
  bool have_pending_ = false;
  Insn pending_;
  FlowTime pending_time_;
  // Instruction sampling.
  uint64_t since_sample_ = 0;       // instructions
  uint64_t last_time_ = 0;          // TSC of the last sample (time units)
  uint64_t last_tsc_seen_ = 0, insns_since_tsc_ = 0;
  bool in_tx_ = false;
  // The call stack (perf's thread stack): return addresses, oldest first,
  // each marked if its call ended the trace (TIP.PGD).
  struct Frame {
    uint64_t ret;
    bool trace_end;
  };
  std::vector<Frame> calls_;
  std::vector<std::pair<uint64_t, uint64_t>> lbr_;  // (from, to), oldest first (l)
  std::vector<std::pair<uint64_t, uint64_t>> lbr_all_;  // (from, to), oldest first (L: not cleared)
  std::vector<ExistingEvent> existing_;
  size_t next_existing_ = 0;
  ItraceLog* log_ = nullptr;
  uint64_t ipc_insns_i_ = 0, ipc_cyc_i_ = 0, ipc_insns_b_ = 0, ipc_cyc_b_ = 0;
  // The core cycles at time `t` for IPC: CYC's count once the trace has CYC
  // packets, else the MTC estimate (MtcCycles()).
  uint64_t Cycles(const FlowTime& t) const { return have_cyc_ || o_.max_nonturbo_ratio == 0 ? t.cyc : mtc_cycles_; }
  // perf's intel_pt_mtc_cyc_cnt_upd() at a new time `t` (and _cbr() at a new
  // CBR); `enable`: tracing (re)starts here (_pge()).
  void MtcCycles(const FlowTime& t, bool enable = false);
  bool have_cyc_ = false;
  uint64_t mtc_cycles_ = 0, mtc_base_cycles_ = 0, mtc_base_tsc_ = 0;
  uint8_t mtc_cbr_ = 0;
};

struct ItraceStats {
  uint64_t instructions = 0;  // instructions walked
  uint64_t errors = 0;        // decode errors (each followed by a resync)
  uint64_t samples = 0;
  // How the decode ended: the trace's end reached (the last flow stopped at
  // the end of the trace, FlowDecoder ENODATA), or after an error with no
  // PSB left to resync at. With FlowDecoder::Options::stop_at_end the flow
  // stops where the trace ends.
  bool end_of_trace = true;
  bool stopped_at_end = false;  // FlowDecoder::end_of_trace(): stopped with nothing left to walk on
};

// Decodes the whole trace (sync, decode to an error, resync at the next
// PSB, ...) into `synth`. With options.quick, walks packets only. With a
// `log` (options.debug_log), writes the debug log to it as it goes.
// `data_lost`: trace offsets where data was lost before (a capture's
// TRUNCATED AUX records, capture_file.h CaptureTrace::data_lost): the
// stretches between them are decoded apart, each after an
// ItraceSynth::OnLost(). Offsets in samples are in the whole trace.
ItraceStats SynthesizeItrace(std::span<const uint8_t> trace, const Image& image, const ItraceOptions& options,
                             FlowDecoder::Options decoder_options, ItraceSynth* synth, ItraceLog* log = nullptr,
                             std::span<const uint64_t> data_lost = {});

// The PSB+s of a trace, in order: the PSB's offset, the IP of the FUP in
// its PSB+ (0 without one) and its TSC (0 without one). Bad packets are
// skipped to the next PSB.
struct PsbInfo {
  uint64_t offset = 0, ip = 0, tsc = 0;
};
std::vector<PsbInfo> FindPsbs(std::span<const uint8_t> trace);

}  // namespace perftest::pt
