#include "harness/pt/itrace.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "harness/pt/itrace_log.h"
#include "harness/pt/last_ip.h"
#include "harness/pt/packet_decoder.h"
#include "harness/pt/sync.h"

namespace perftest::pt {

namespace {

Result<ItraceOptions> Bad(std::string_view spec, std::string what) {
  return Result<ItraceOptions>::Failure(EINVAL, fmt::format("pt::ParseItrace(\"{}\"): {}", spec, what));
}

// Digits at s[*i...]; false if none.
bool Number(std::string_view s, size_t* i, uint64_t* out) {
  size_t j = *i;
  uint64_t v = 0;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
    if (v > (~uint64_t{0} - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(s[j] - '0');
    ++j;
  }
  if (j == *i) return false;
  *i = j;
  *out = v;
  return true;
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out;
}

// An instruction's branch flags as perf's intel_pt_insn_type() gives them:
// SYSCALL/SYSENTER "syscall" (b c s), SYSRET/SYSEXIT "sysret" (b r s), INT n
// "int" (b c i), IRET "iret" (b r i), a far CALL or RET a call or return, a
// far JMP a jump. VMLAUNCH/VMRESUME (perf: b c and its VMENTRY flag, which
// "bcrosyiABEx" has no letter for) and VMCALL are calls here.
uint32_t BranchFlags(const Insn& x) {
  uint32_t f = kFlagBranch;
  switch (x.branch) {
    case BranchClass::kCondJump: f |= kFlagConditional; break;
    case BranchClass::kDirectCall:
    case BranchClass::kIndirectCall: f |= kFlagCall; break;
    case BranchClass::kReturn: f |= kFlagReturn; break;
    case BranchClass::kFarTransfer:
      switch (x.far) {
        case FarKind::kSyscall:
        case FarKind::kSysenter: f |= kFlagCall | kFlagSyscall; break;
        case FarKind::kSysret:
        case FarKind::kSysexit: f |= kFlagReturn | kFlagSyscall; break;
        case FarKind::kInterrupt: f |= kFlagCall | kFlagInterrupt; break;
        case FarKind::kIret:
        case FarKind::kUiret: f |= kFlagReturn | kFlagInterrupt; break;
        case FarKind::kFarCall:
        case FarKind::kVmCall:
        case FarKind::kVmEntry: f |= kFlagCall; break;
        case FarKind::kFarReturn: f |= kFlagReturn; break;
        case FarKind::kFarJump:
        case FarKind::kNone: break;
      }
      break;
    default: break;
  }
  return f;
}

}  // namespace

Result<ItraceOptions> ParseItrace(std::string_view spec) {
  ItraceOptions o;
  if (spec.empty()) spec = "cepwx";
  size_t i = 0;
  while (i < spec.size()) {
    const char c = spec[i++];
    uint64_t n = 0;
    switch (c) {
      case 'i': {
        o.instructions = true;
        if (Number(spec, &i, &n)) {
          // Without a unit the number is nanoseconds (perf's default
          // period type, PERF_ITRACE_PERIOD_NANOSECS).
          o.period_unit = ItraceOptions::Unit::kNanoseconds;
          uint64_t scale = 1;
          const std::string_view rest = spec.substr(i);
          if (rest.starts_with("ns")) {
            o.period_unit = ItraceOptions::Unit::kNanoseconds, scale = 1, i += 2;
          } else if (rest.starts_with("us")) {
            o.period_unit = ItraceOptions::Unit::kNanoseconds, scale = 1000, i += 2;
          } else if (rest.starts_with("ms")) {
            o.period_unit = ItraceOptions::Unit::kNanoseconds, scale = 1000000, i += 2;
          } else if (rest.starts_with("t")) {
            o.period_unit = ItraceOptions::Unit::kTicks, i += 1;
          } else if (rest.starts_with("i")) {
            o.period_unit = ItraceOptions::Unit::kInstructions, i += 1;
          }
          o.period = n * scale;
          if (o.period == 0) {  // "as often as possible" = i1i
            o.period = 1;
            o.period_unit = ItraceOptions::Unit::kInstructions;
          }
        }
        break;
      }
      case 'b': o.branches = true; break;
      case 'c': o.calls = true; break;
      case 'r': o.returns = true; break;
      case 'x': o.transactions = true; break;
      case 'w': o.ptwrite = true; break;
      case 'p': o.power = true; break;
      case 'e':
        o.errors = true;
        while (i + 1 < spec.size() && (spec[i] == '+' || spec[i] == '-')) {
          const bool off = spec[i] == '-';
          if (spec[i + 1] == 'o') {
            o.suppress_overflow = off;
          } else if (spec[i + 1] == 'l') {
            o.suppress_lost = off;
          } else {
            return Bad(spec, fmt::format("unknown error flag '{}{}' (e takes -o, -l, +o, +l)", spec[i], spec[i + 1]));
          }
          i += 2;
        }
        break;
      case 'd':
        // perf's get_flags(): each flag a letter after + or -.
        o.debug_log = true;
        while (i + 1 < spec.size() && (spec[i] == '+' || spec[i] == '-')) {
          const bool on = spec[i] == '+';
          switch (spec[i + 1]) {
            case 'a': o.log_perf_events = on; break;
            case 'e': o.log_on_error = on; break;
            case 'o': o.log_stdout = on; break;
            default:
              return Bad(spec, fmt::format("unknown debug log flag '{}{}' (d takes +a, -a, +e, +o)", spec[i], spec[i + 1]));
          }
          i += 2;
        }
        break;
      case 'g':
      case 'G':
        (c == 'g' ? o.callchain : o.add_callchain) = true;
        if (Number(spec, &i, &n)) {
          if (n == 0 || n > 1024) return Bad(spec, fmt::format("call chain size {} not in 1..1024", n));
          o.callchain_size = static_cast<unsigned>(n);
        }
        break;
      case 'l':
      case 'L':
        (c == 'l' ? o.last_branch : o.add_last_branch) = true;
        if (Number(spec, &i, &n)) {
          if (n == 0 || n > 1024) return Bad(spec, fmt::format("last branch size {} not in 1..1024", n));
          o.last_branch_size = static_cast<unsigned>(n);
        }
        break;
      case 's':
        if (!Number(spec, &i, &n)) return Bad(spec, "'s' needs a number of events to skip");
        o.skip = n;
        break;
      case 'q':
        if (o.quick >= 2) return Bad(spec, "at most 'qq'");
        ++o.quick;
        break;
      case 'o': case 'f': case 'm': case 't': case 'T': case 'I': case 'Z':
        return Bad(spec, fmt::format("itrace letter '{}' is not supported by perftest", c));
      default:
        return Bad(spec, fmt::format("unknown itrace letter '{}'", c));
    }
  }
  return Result<ItraceOptions>::Ok(o);
}

std::string FlagString(uint32_t flags) {
  static constexpr char kLetters[] = "bcrosyiABEx";
  std::string s;
  for (int i = 0; i < 11; ++i)
    if (flags & (1u << i)) s += kLetters[i];
  return s;
}

std::string FlagName(uint32_t flags) {
  // perf's sample_flags table: each name for exactly these flags.
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {kFlagBranch | kFlagCall, "call"},
      {kFlagBranch | kFlagReturn, "return"},
      {kFlagBranch | kFlagConditional, "jcc"},
      {kFlagBranch, "jmp"},
      {kFlagBranch | kFlagCall | kFlagInterrupt, "int"},
      {kFlagBranch | kFlagReturn | kFlagInterrupt, "iret"},
      {kFlagBranch | kFlagCall | kFlagSyscall, "syscall"},
      {kFlagBranch | kFlagReturn | kFlagSyscall, "sysret"},
      {kFlagBranch | kFlagAsync, "async"},
      {kFlagBranch | kFlagCall | kFlagAsync | kFlagInterrupt, "hw int"},
      {kFlagBranch | kFlagTxAbort, "tx abrt"},
      {kFlagBranch | kFlagTraceBegin, "tr strt"},
      {kFlagBranch | kFlagTraceEnd, "tr end"},
  };
  auto name = [](uint32_t f) -> const char* {
    for (const auto& [flags, n] : kNames)
      if (flags == f) return n;
    return nullptr;
  };
  const char* in_tx = (flags & kFlagInTx) ? "(x)" : "";
  const uint32_t f = flags & ~kFlagInTx;
  if (const char* n = name(f)) return fmt::format("{:<15}{:>6}", n, in_tx);
  if (f & kFlagTraceBegin) {
    if (const char* n = name(f & ~kFlagTraceBegin)) return fmt::format("tr strt {:<7}{:>6}", n, in_tx);
  }
  if (f & kFlagTraceEnd) {
    if (const char* n = name(f & ~kFlagTraceEnd)) return fmt::format("tr end  {:<7}{:>6}", n, in_tx);
  }
  return fmt::format("{:<21}", FlagString(flags));
}

void AppendCallTrace(fmt::memory_buffer* out, const ItraceSample& s, bool with_flags) {
  if (s.event != "branches") return AppendText(out, s);
  fmt::format_to(fmt::appender(*out), "{:>12}: ", s.time);
  if (with_flags) fmt::format_to(fmt::appender(*out), "{} ", FlagName(s.flags));
  // perf's resolve_branch_sym(): a call's (or trace begin's) target, a
  // return's (or trace end's) source; nothing for other branches.
  uint64_t ip = 0;
  if (s.flags & (kFlagCall | kFlagTraceBegin)) {
    ip = s.addr;
  } else if (s.flags & (kFlagReturn | kFlagTraceEnd)) {
    ip = s.ip;
  }
  for (size_t i = 0; i < size_t{s.depth} * 4; ++i) out->push_back(' ');
  if (ip != 0) fmt::format_to(fmt::appender(*out), "{:16x}", ip);
}

std::string ToCallTrace(const ItraceSample& s, bool with_flags) {
  fmt::memory_buffer out;
  AppendCallTrace(&out, s, with_flags);
  return fmt::to_string(out);
}

namespace {
// FlagString() into a fixed buffer (at most 11 letters): no allocation per sample.
size_t FlagLetters(uint32_t flags, char (&buf)[12]) {
  static constexpr char kLetters[] = "bcrosyiABEx";
  size_t n = 0;
  for (int i = 0; i < 11; ++i)
    if (flags & (1u << i)) buf[n++] = kLetters[i];
  return n;
}
}  // namespace

namespace {
// Hand-written formatting of the hot lines (instructions and branches
// samples, most of the output): the same bytes as the fmt specs beside each,
// without parsing a format string per field.
//
// `v` in decimal, right-aligned in `width` ("{:>W}"); at `p`, returns the end.
char* PutDec(char* p, uint64_t v, size_t width) {
  size_t n = 1;
  for (uint64_t x = v; x >= 10; x /= 10) ++n;
  for (size_t i = n; i < width; ++i) *p++ = ' ';
  char* end = p + n;
  do {
    *--end = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return p + n;
}
// `v` in lower-case hex, right-aligned in `width` ("{:Wx}").
char* PutHex(char* p, uint64_t v, size_t width) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const size_t n = static_cast<size_t>(67 - __builtin_clzll(v | 1)) / 4;
  for (size_t i = n; i < width; ++i) *p++ = ' ';
  for (size_t i = n; i != 0; --i, v >>= 4) p[i - 1] = kDigits[v & 15];
  return p + n;
}
// `s` left-aligned in `width` ("{:W}" of ASCII text).
char* PutLeft(char* p, std::string_view s, size_t width) {
  std::memcpy(p, s.data(), s.size());
  p += s.size();
  for (size_t i = s.size(); i < width; ++i) *p++ = ' ';
  return p;
}
// `s` right-aligned in `width` ("{:>W}" of ASCII text).
char* PutRight(char* p, std::string_view s, size_t width) {
  for (size_t i = s.size(); i < width; ++i) *p++ = ' ';
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}
}  // namespace

void AppendText(fmt::memory_buffer* out, const ItraceSample& s) {
  char letters[12];
  const std::string_view flags(letters, FlagLetters(s.flags, letters));
  const bool insn = s.event.size() == 12 && s.event == "instructions";
  if (insn || (s.event.size() == 8 && s.event == "branches")) {
    // "{:>12} {:16}: " then "{:16x}" or "{:>6} {:16x} => {:16x}", straight
    // into the buffer (room for the longest such line).
    constexpr size_t kMax = 20 + 1 + 16 + 2 + 11 + 1 + 16 + 4 + 16;
    const size_t at = out->size();
    out->resize(at + kMax);
    char* const line = out->data() + at;
    char* p = PutDec(line, s.time, 12);
    *p++ = ' ';
    p = PutLeft(p, s.event, 16);
    *p++ = ':';
    *p++ = ' ';
    if (insn) {
      p = PutHex(p, s.ip, 16);
    } else {
      p = PutRight(p, flags, 6);
      *p++ = ' ';
      p = PutHex(p, s.ip, 16);
      std::memcpy(p, " => ", 4);
      p = PutHex(p + 4, s.addr, 16);
    }
    out->resize(at + static_cast<size_t>(p - line));
  } else {
    auto o = fmt::appender(*out);
    o = fmt::format_to(o, "{:>12} {:16}: ", s.time, s.event);
    if (s.event == "error") {
      o = fmt::format_to(o, "{} at offset {:#x} ip {:#x}: {}", ErrnoName(s.error), s.offset, s.ip, s.message);
    } else if (s.event == "psb") {
      o = fmt::format_to(o, "{:>6} {:16x} offs: {:#x}", "", s.ip, s.offset);
    } else if (s.event != "ptwrite" && s.event != "cbr" && s.event != "mwait" && s.event != "pwre" &&
               s.event != "pwrx" && s.event != "exstop" && s.event != "transactions") {
      o = fmt::format_to(o, "{:16x}", s.ip);  // an existing event
    } else {
      o = fmt::format_to(o, "{:>6} {:16x} payload {:#x}", flags, s.ip, s.payload);
    }
  }
  auto o = fmt::appender(*out);
  if (s.cyc_count != 0)
    o = fmt::format_to(o, " IPC: {:.2f} ({}/{})", static_cast<double>(s.insn_count) / static_cast<double>(s.cyc_count),
                       s.insn_count, s.cyc_count);
  for (uint64_t ip : s.callchain) o = fmt::format_to(o, "\n\t{:16x}", ip);
  for (const auto& [from, to] : s.branch_stack) o = fmt::format_to(o, "\n\t{:#x} => {:#x}", from, to);
}

std::string ToText(const ItraceSample& s) {
  fmt::memory_buffer out;
  AppendText(&out, s);
  return fmt::to_string(out);
}

void AppendJson(fmt::memory_buffer* out, const ItraceSample& s) {
  auto o = fmt::appender(*out);
  o = fmt::format_to(o, R"({{"event":"{}","time":{},"ip":{},"addr":{},"flags":"{}")", JsonEscape(s.event), s.time,
                     s.ip, s.addr, FlagString(s.flags));
  if (s.event == "branches") o = fmt::format_to(o, R"(,"depth":{})", s.depth);
  if (s.period) o = fmt::format_to(o, R"(,"period":{})", s.period);
  if (s.cyc_count) o = fmt::format_to(o, R"(,"insn_count":{},"cyc_count":{})", s.insn_count, s.cyc_count);
  if (s.event != "instructions" && s.event != "branches") o = fmt::format_to(o, R"(,"payload":{})", s.payload);
  if (s.event == "psb") o = fmt::format_to(o, R"(,"offset":{})", s.offset);
  if (s.event == "error")
    o = fmt::format_to(o, R"(,"errno":"{}","offset":{},"message":"{}")", ErrnoName(s.error), s.offset,
                       JsonEscape(s.message));
  if (!s.callchain.empty()) {
    o = fmt::format_to(o, R"(,"callchain":[)");
    for (size_t i = 0; i < s.callchain.size(); ++i) o = fmt::format_to(o, "{}{}", i ? "," : "", s.callchain[i]);
    o = fmt::format_to(o, "]");
  }
  if (!s.branch_stack.empty()) {
    o = fmt::format_to(o, R"(,"branch_stack":[)");
    for (size_t i = 0; i < s.branch_stack.size(); ++i)
      o = fmt::format_to(o, "{}[{},{}]", i ? "," : "", s.branch_stack[i].first, s.branch_stack[i].second);
    o = fmt::format_to(o, "]");
  }
  fmt::format_to(o, "}}");
}

std::string ToJson(const ItraceSample& s) {
  fmt::memory_buffer out;
  AppendJson(&out, s);
  return fmt::to_string(out);
}

// ---------------------------------------------------------------------------

void ItraceSynth::Emit(ItraceSample s, bool skippable) {
  if (skippable && skipped_ < o_.skip) {
    ++skipped_;
    return;
  }
  ++sample_count_;
  if (sink_) {
    sink_(s);
  } else {
    samples_.push_back(std::move(s));
  }
}

uint64_t ItraceSynth::PeriodTicks() const {
  if (o_.period_unit == ItraceOptions::Unit::kTicks) return o_.period;
  const uint64_t hz = o_.tsc_hz ? o_.tsc_hz : 1000000000;
  return std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(o_.period) * static_cast<double>(hz) / 1e9));
}

void ItraceSynth::SetExistingEvents(std::vector<ExistingEvent> events) {
  std::stable_sort(events.begin(), events.end(),
                   [](const ExistingEvent& a, const ExistingEvent& b) { return a.time < b.time; });
  existing_ = std::move(events);
  next_existing_ = 0;
}

void ItraceSynth::OnPsb(uint64_t offset, uint64_t ip, uint64_t tsc) {
  if (!o_.power) return;
  ItraceSample s;
  s.event = "psb";
  s.ip = ip;
  s.offset = offset;
  s.payload = offset;
  s.time = tsc;
  Emit(std::move(s), false);
}

std::vector<uint64_t> ItraceSynth::CallChain(uint64_t ip) const {
  std::vector<uint64_t> chain = {ip};
  for (auto it = calls_.rbegin(); it != calls_.rend() && chain.size() < o_.callchain_size; ++it) chain.push_back(it->ret);
  return chain;
}

void ItraceSynth::ExistingSample(uint64_t ip) {
  const ExistingEvent& e = existing_[next_existing_++];
  if (log_ != nullptr) log_->PerfEvent(e.name, e.time);
  ItraceSample s;
  s.event = e.name;
  s.ip = ip;
  s.time = e.time;
  s.insn_index = insns_;
  if (o_.add_callchain) s.callchain = CallChain(ip);
  if (o_.add_last_branch) s.branch_stack.assign(lbr_all_.rbegin(), lbr_all_.rend());
  Emit(std::move(s), false);
}

void ItraceSynth::OnSync(uint64_t) {
  have_pending_ = false;
  calls_.clear();
  lbr_.clear();
  lbr_all_.clear();
}

void ItraceSynth::PopTo(uint64_t ret) {
  for (size_t i = calls_.size(); i != 0;) {
    if (calls_[--i].ret == ret) {
      calls_.resize(i);
      return;
    }
  }
}

void ItraceSynth::StackEvent(uint64_t from, uint64_t to, uint32_t flags, uint8_t insn_len) {
  if (flags & kFlagCall) {
    if (to == 0) return;
    const uint64_t ret = from + insn_len;
    if (ret == to) return;  // a call to the next instruction: no call (perf excludes zero-length calls)
    calls_.push_back({ret, (flags & kFlagTraceEnd) != 0});
    if (calls_.size() > 1024) calls_.erase(calls_.begin());
  } else if (flags & kFlagTraceBegin) {
    // Tracing may have begun again right after a return to `to`; a call
    // that ended the trace is not expected to return.
    PopTo(to);
    while (!calls_.empty() && calls_.back().trace_end) calls_.pop_back();
  } else if ((flags & kFlagReturn) && from != 0) {
    PopTo(to);
  }
}

void ItraceSynth::TakeBranch(uint64_t from, uint64_t to, uint32_t flags, const FlowTime& t, uint8_t insn_len) {
  StackEvent(from, to, flags, insn_len);
  if (in_tx_) flags |= kFlagInTx;
  if (o_.last_branch) {
    lbr_.emplace_back(from, to);
    if (lbr_.size() > o_.last_branch_size) lbr_.erase(lbr_.begin());
  }
  if (o_.add_last_branch) {
    lbr_all_.emplace_back(from, to);
    if (lbr_all_.size() > o_.last_branch_size) lbr_all_.erase(lbr_all_.begin());
  }
  // c: calls, asynchronous branches and trace ends; r: returns and trace
  // begins (perf's branches_filter, intel_pt_process_auxtrace_info()).
  const bool want = o_.branches || (o_.calls && (flags & (kFlagCall | kFlagAsync | kFlagTraceEnd))) ||
                    (o_.returns && (flags & (kFlagReturn | kFlagTraceBegin)));
  if (!want) return;
  ItraceSample s;
  s.event = "branches";
  s.ip = from;
  s.addr = to;
  s.flags = flags;
  s.depth = static_cast<uint32_t>(calls_.size()) + ((flags & kFlagReturn) ? 1 : 0);
  s.time = t.tsc;
  if (const uint64_t cyc = Cycles(t); cyc > ipc_cyc_b_) {
    s.insn_count = insns_ - ipc_insns_b_;
    s.cyc_count = cyc - ipc_cyc_b_;
    ipc_insns_b_ = insns_;
    ipc_cyc_b_ = cyc;
  }
  Emit(std::move(s), true);
}

void ItraceSynth::MtcCycles(const FlowTime& t, bool enable) {
  if (have_cyc_ || o_.max_nonturbo_ratio == 0) return;
  if (t.cyc != 0) {  // the trace has CYC packets: IPC from them
    have_cyc_ = true;
    return;
  }
  // A new CBR or tracing enabled: the estimate goes on from here.
  if (enable || t.cbr != mtc_cbr_) {
    mtc_cbr_ = t.cbr;
    mtc_base_tsc_ = t.tsc;
    mtc_base_cycles_ = mtc_cycles_;
    return;
  }
  if (t.tsc <= mtc_base_tsc_) return;
  const uint64_t est = (t.tsc - mtc_base_tsc_) * t.cbr / o_.max_nonturbo_ratio + mtc_base_cycles_;
  mtc_cycles_ = std::max(mtc_cycles_, est);
}

void ItraceSynth::InstructionSample(uint64_t ip, const FlowTime& t) {
  ItraceSample s;
  s.event = "instructions";
  s.ip = ip;
  s.time = t.tsc;
  s.period = since_sample_;
  since_sample_ = 0;
  if (const uint64_t cyc = Cycles(t); cyc > ipc_cyc_i_) {
    s.insn_count = insns_ - ipc_insns_i_;
    s.cyc_count = cyc - ipc_cyc_i_;
    ipc_insns_i_ = insns_;
    ipc_cyc_i_ = cyc;
  }
  if (o_.callchain) s.callchain = CallChain(ip);
  if (o_.last_branch) {
    s.branch_stack.assign(lbr_.rbegin(), lbr_.rend());
    lbr_.clear();
  }
  Emit(std::move(s), true);
}

void ItraceSynth::OnBlock(const FlowBlock& b) {
  if (have_pending_) {
    const Insn& x = pending_;
    const bool taken = x.branch != BranchClass::kCondJump || b.ip != x.next_ip() || x.target == x.next_ip();
    const uint32_t flags = BranchFlags(x);
    if (taken) TakeBranch(x.ip, b.ip, flags, pending_time_, x.length);
    have_pending_ = false;
  }
  MtcCycles(b.time);  // (after the branch into the block, which is at the last block's time)
  // Existing events due in this block, at the first instruction whose time
  // estimate (the block's TSC + 1 tick per instruction since it changed)
  // reaches theirs.
  if (next_existing_ < existing_.size()) {
    uint64_t est = b.time.tsc + (b.time.tsc == last_tsc_seen_ ? insns_since_tsc_ : 0);
    if (existing_[next_existing_].time < est + b.ninsn) {
      const uint64_t insns_at_block = insns_;
      for (BlockInsns it(b); it.ok() && next_existing_ < existing_.size(); it.Advance(), ++est, ++insns_) {
        while (next_existing_ < existing_.size() && existing_[next_existing_].time <= est) ExistingSample(it.ip());
      }
      insns_ = insns_at_block;
    }
  }
  if (o_.instructions) {
    const bool by_count = o_.period_unit == ItraceOptions::Unit::kInstructions;
    if (by_count && since_sample_ + b.ninsn < o_.period) {
      since_sample_ += b.ninsn;  // no sample in this block
      insns_ += b.ninsn;
    } else {
      const uint64_t ticks = by_count ? 0 : PeriodTicks();
      uint64_t since_tsc = b.time.tsc == last_tsc_seen_ ? insns_since_tsc_ : 0;
      for (BlockInsns it(b); it.ok(); it.Advance()) {
        ++insns_;
        ++since_sample_;
        const uint64_t est = b.time.tsc + since_tsc++;  // 1 tick per instruction
        if (by_count ? since_sample_ >= o_.period : est - last_time_ >= ticks) {
          last_time_ = est;
          FlowTime t = b.time;
          t.tsc = est;
          InstructionSample(it.ip(), t);
        }
      }
    }
  } else {
    insns_ += b.ninsn;
  }
  {  // The time estimate: the block's TSC + 1 tick per instruction since it changed.
    if (b.time.tsc != last_tsc_seen_) {
      last_tsc_seen_ = b.time.tsc;
      insns_since_tsc_ = 0;
    }
    insns_since_tsc_ += b.ninsn;
  }
  if (!b.truncated && b.last.ends_block()) {
    pending_ = b.last;
    pending_time_ = b.time;
    have_pending_ = true;
  }
}

void ItraceSynth::OnEvent(const FlowEvent& e) {
  using T = FlowEvent::Type;
  MtcCycles(e.time, e.type == T::kEnabled);
  auto power = [&](std::string_view name) {
    if (!o_.power) return;
    ItraceSample s;
    s.event = name;
    s.ip = e.ip_suppressed ? 0 : e.ip;
    s.payload = e.payload;
    s.time = e.time.tsc;
    s.offset = e.offset;
    Emit(std::move(s), false);
  };
  switch (e.type) {
    case T::kEnabled:
      have_pending_ = false;
      TakeBranch(0, e.ip, kFlagBranch | kFlagTraceBegin, e.time);
      break;
    case T::kDisabled: {
      const uint32_t flags = (have_pending_ ? BranchFlags(pending_) : kFlagBranch) | kFlagTraceEnd;
      const uint64_t from = have_pending_ ? pending_.ip : 0;
      // (A call into untraced code — TIP.PGD with the IP suppressed: a
      // syscall, a call out of the filter range — is not pushed: perf's
      // thread_stack__event() pushes a call only with a to_ip.)
      TakeBranch(from, e.ip_suppressed ? 0 : e.ip, flags, e.time, have_pending_ ? pending_.length : 0);
      have_pending_ = false;
      break;
    }
    case T::kAsyncBranch:
    case T::kAsyncDisabled: {
      if (have_pending_) {
        // Resolve the previous branch against where the event happened.
        const Insn x = pending_;
        have_pending_ = false;
        const bool taken = x.branch != BranchClass::kCondJump || e.from != x.next_ip();
        if (taken) TakeBranch(x.ip, e.from, BranchFlags(x), pending_time_, x.length);
      }
      // perf's intel_pt_sample_flags(): an interrupt or exception with a
      // target is "hw int" (b c y i, a call of the interrupted instruction,
      // insn_len 0), one that disables tracing b y E.
      if (e.type == T::kAsyncDisabled) {
        TakeBranch(e.from, e.ip_suppressed ? 0 : e.ip, kFlagBranch | kFlagAsync | kFlagTraceEnd, e.time);
      } else {
        TakeBranch(e.from, e.ip, kFlagBranch | kFlagCall | kFlagAsync | kFlagInterrupt, e.time);
      }
      break;
    }
    case T::kOverflow:
      have_pending_ = false;
      calls_.clear();
      if (o_.errors && !o_.suppress_overflow) {
        ItraceSample s;
        s.event = "error";
        s.error = EOVERFLOW;
        s.offset = e.offset;
        s.time = e.time.tsc;
        s.message = "Overflow packet";
        Emit(std::move(s), false);
      }
      if (!e.ip_suppressed) TakeBranch(0, e.ip, kFlagBranch | kFlagTraceBegin, e.time);
      break;
    case T::kTsx: {
      const bool intx = e.payload & 1, abort = e.payload & 2;
      if (o_.transactions && (intx != in_tx_ || abort)) {
        ItraceSample s;
        s.event = "transactions";
        s.ip = e.ip_suppressed ? 0 : e.ip;
        s.flags = abort ? kFlagTxAbort : intx ? kFlagInTx : 0;
        s.time = e.time.tsc;
        if (o_.callchain) s.callchain.push_back(s.ip);
        Emit(std::move(s), true);
      }
      in_tx_ = intx;
      break;
    }
    case T::kPtwrite:
      if (o_.ptwrite) {
        ItraceSample s;
        s.event = "ptwrite";
        s.ip = e.ip_suppressed ? 0 : e.ip;
        s.payload = e.payload;
        s.time = e.time.tsc;
        s.flags = e.ip_suppressed ? 0 : kFlagBranch;  // "ip: 1" (fup_on_ptw) shown as b
        Emit(std::move(s), false);
      }
      break;
    case T::kCbr: power("cbr"); break;
    case T::kMwait: power("mwait"); break;
    case T::kPwre: power("pwre"); break;
    case T::kPwrx: power("pwrx"); break;
    case T::kExStop: power("exstop"); break;
    default:
      break;
  }
}

void ItraceSynth::OnError(int err, uint64_t offset, uint64_t ip, const std::string& message) {
  have_pending_ = false;
  calls_.clear();
  if (!o_.errors) return;
  ItraceSample s;
  s.event = "error";
  s.error = err;
  s.offset = offset;
  s.ip = ip;
  s.message = message;
  Emit(std::move(s), false);
}

void ItraceSynth::OnLost(uint64_t offset) {
  have_pending_ = false;
  calls_.clear();
  if (!o_.errors || o_.suppress_lost) return;
  ItraceSample s;
  s.event = "error";
  s.error = ENOSPC;
  s.offset = offset;
  s.message = "Lost trace data";
  Emit(std::move(s), false);
}

void ItraceSynth::OnQuick(std::string_view kind, uint64_t from, uint64_t to, uint32_t flags, uint64_t offset) {
  FlowTime t;
  if (o_.instructions && to != 0) {
    ++since_sample_;
    InstructionSample(to, t);
  }
  if (kind == "branch") TakeBranch(from, to, flags, t);
  (void)offset;
}

// ---------------------------------------------------------------------------

namespace {

// q and qq: packets only (perf-intel-pt.txt "The q option").
// The stretch [start, end) of `trace` (from its first PSB on), whose
// PSB+s are `psbs` (`next_psb` the first not reported).
void Quick(std::span<const uint8_t> trace, uint64_t start, uint64_t end, const std::vector<PsbInfo>& psbs,
           size_t& next_psb, const ItraceOptions& o, ItraceSynth* synth, ItraceStats* stats) {
  trace = trace.first(end);
  PacketDecoder d(trace, PacketDecoder::Options{.block_packets = true});
  // The first sync point: the first PSB at or after `start`.
  auto sync = [&, first = true]() mutable {
    if (!std::exchange(first, false) || start == 0) return d.SyncForward().ok();
    const std::optional<uint64_t> psb = FindPsbForward(trace, start);
    return psb.has_value() && d.SyncSet(*psb).ok();
  };
  LastIp last_ip;
  while (sync()) {
    bool in_psb = false;
    bool have_fup = false;
    uint64_t fup = 0;
    Packet p;
    int err;
    while ((err = d.Next(p)) == 0) {
      if (p.type == PacketType::kPsb) {
        last_ip.Reset();
        in_psb = true;
        continue;
      }
      if (p.type == PacketType::kPsbEnd) {
        in_psb = false;
        for (; next_psb < psbs.size() && psbs[next_psb].offset < p.offset; ++next_psb)
          synth->OnPsb(psbs[next_psb].offset, psbs[next_psb].ip, psbs[next_psb].tsc);
        continue;
      }
      if (!p.is_ip()) continue;
      if (!last_ip.Update(p).ok()) break;
      const bool suppressed = p.ipbytes() == 0;
      const uint64_t ip = last_ip.raw();
      if (in_psb) {
        if (p.type == PacketType::kFup && !suppressed) synth->OnQuick("psb", 0, ip, 0, p.offset);
        continue;
      }
      if (o.quick >= 2) continue;
      switch (p.type) {
        case PacketType::kFup:
          have_fup = !suppressed;
          fup = ip;
          break;
        case PacketType::kTip:
          synth->OnQuick("branch", have_fup ? fup : 0, suppressed ? 0 : ip,
                         kFlagBranch | (have_fup ? kFlagCall | kFlagAsync | kFlagInterrupt : 0), p.offset);
          have_fup = false;
          break;
        case PacketType::kTipPge:
          synth->OnQuick("branch", 0, suppressed ? 0 : ip, kFlagBranch | kFlagTraceBegin, p.offset);
          have_fup = false;
          break;
        case PacketType::kTipPgd:
          synth->OnQuick("branch", have_fup ? fup : 0, 0,
                         kFlagBranch | kFlagTraceEnd | (have_fup ? kFlagAsync : 0), p.offset);
          have_fup = false;
          break;
        default:
          break;
      }
    }
    if (err == ENODATA) break;
    ++stats->errors;
    synth->OnError(err, d.offset(), 0, std::string(PacketDecoder::ErrorDescription(err)));
  }
}

}  // namespace

std::vector<PsbInfo> FindPsbs(std::span<const uint8_t> trace) {
  std::vector<PsbInfo> out;
  PacketDecoder d(trace, PacketDecoder::Options{.block_packets = true});
  for (Result<uint64_t> s = d.SyncForward(); s.ok(); s = d.SyncForward()) {
    LastIp last_ip;
    bool in_psb = false;
    Packet p;
    int err;
    while ((err = d.Next(p)) == 0) {
      if (p.type == PacketType::kPsb) {
        out.push_back({.offset = p.offset});
        last_ip.Reset();
        in_psb = true;
      } else if (p.type == PacketType::kPsbEnd) {
        in_psb = false;
      } else if (in_psb && p.type == PacketType::kTsc) {
        out.back().tsc = p.payload;
      } else if (p.is_ip()) {
        if (!last_ip.Update(p).ok()) break;
        if (in_psb && p.type == PacketType::kFup && p.ipbytes() != 0) out.back().ip = last_ip.raw();
      }
    }
    if (err == ENODATA) break;
  }
  return out;
}

namespace {

// SynthesizeItrace() over the stretch [start, end) of `trace` (from its
// first PSB on), whose PSB+s are `psbs`: a flow decoder of its own.
void DecodeSegment(std::span<const uint8_t> trace, uint64_t start, uint64_t end, const std::vector<PsbInfo>& psbs,
                   size_t& next_psb, const Image& image, FlowDecoder::Options decoder_options, ItraceSynth* synth,
                   ItraceLog* log, ItraceStats* stats) {
  // PSB events (p): each PSB+ once the flow has read past it.
  auto psbs_before = [&](uint64_t offset) {
    for (; next_psb < psbs.size() && psbs[next_psb].offset < offset; ++next_psb)
      synth->OnPsb(psbs[next_psb].offset, psbs[next_psb].ip, psbs[next_psb].tsc);
  };
  FlowDecoder dec(trace.first(end), &image, decoder_options);
  // The first sync point: the first PSB at or after `start`.
  auto sync = [&, first = true]() mutable -> Result<uint64_t> {
    if (!std::exchange(first, false) || start == 0) return dec.SyncForward();
    const std::optional<uint64_t> psb = FindPsbForward(trace.first(end), start);
    if (!psb) return Result<uint64_t>::Failure(ENODATA, "no PSB after the lost data");
    Result<uint64_t> s = dec.SyncSet(*psb);
    return s.ok() || s.error() == ENODATA ? s : dec.SyncForward();
  };
  for (;;) {
    Result<uint64_t> s = sync();
    if (!s.ok()) {
      if (s.error() == ENODATA) break;
      stats->end_of_trace = false;
      ++stats->errors;
      if (log != nullptr) {
        log->PacketsUpTo(dec.error_offset());
        log->Error(s.error(), dec.error_offset(), 0, s.call());
      }
      synth->OnError(s.error(), dec.error_offset(), 0, s.call());
      continue;
    }
    psbs_before(*s + 1);
    if (log != nullptr) {
      log->PacketsUpTo(dec.offset());
      log->Line(fmt::format("sync at PSB {:#x}", *s));
    }
    synth->OnSync(*s);
    FlowStep step;
    int err;
    while ((err = dec.Next(&step)) == 0) {
      if (step.kind == FlowStep::kBlock) {
        if (log != nullptr) {
          log->PacketsUpTo(dec.offset());
          uint64_t ip = step.block.ip;
          for (uint32_t i = 0; i < step.block.ninsn; ip += step.block.lengths[i++])
            log->Line(fmt::format("insn {:x} len {}", ip, step.block.lengths[i]));
        }
        stats->instructions += step.block.ninsn;
        synth->OnBlock(step.block);
        psbs_before(dec.offset());
      } else {
        psbs_before(step.event.offset);
        if (log != nullptr) {
          log->PacketsUpTo(step.event.offset + 1);
          log->Line(fmt::format("event {}", ToString(step.event)));
        }
        synth->OnEvent(step.event);
      }
    }
    if (err == ENODATA) {
      stats->end_of_trace = true;
      stats->stopped_at_end = dec.end_of_trace();
      break;
    }
    stats->end_of_trace = false;
    ++stats->errors;
    if (log != nullptr) {
      log->PacketsUpTo(dec.error_offset() + 1);
      log->Error(err, dec.error_offset(), dec.error_ip(), dec.error_message());
    }
    synth->OnError(err, dec.error_offset(), dec.error_ip(), dec.error_message());
  }
}

}  // namespace

ItraceStats SynthesizeItrace(std::span<const uint8_t> trace, const Image& image, const ItraceOptions& options,
                             FlowDecoder::Options decoder_options, ItraceSynth* synth, ItraceLog* log,
                             std::span<const uint64_t> data_lost) {
  ItraceStats stats;
  if (log != nullptr) synth->SetLog(log);
  const std::vector<PsbInfo> psbs = options.power ? FindPsbs(trace) : std::vector<PsbInfo>{};
  size_t next_psb = 0;
  // The stretches between the points where trace data was lost, each
  // decoded on its own (the bytes on either side do not continue each other).
  std::vector<uint64_t> cuts(data_lost.begin(), data_lost.end());
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::erase_if(cuts, [&](uint64_t c) { return c == 0 || c >= trace.size(); });
  cuts.push_back(trace.size());
  uint64_t start = 0;
  for (const uint64_t end : cuts) {
    if (start != 0) synth->OnLost(start);
    if (options.quick > 0) {
      Quick(trace, start, end, psbs, next_psb, options, synth, &stats);
    } else {
      DecodeSegment(trace, start, end, psbs, next_psb, image, decoder_options, synth, log, &stats);
    }
    start = end;
  }
  for (; next_psb < psbs.size(); ++next_psb) synth->OnPsb(psbs[next_psb].offset, psbs[next_psb].ip, psbs[next_psb].tsc);
  stats.samples = synth->sample_count();
  return stats;
}

}  // namespace perftest::pt
