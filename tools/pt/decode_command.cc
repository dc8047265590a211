#include "tools/pt/decode_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include <unistd.h>

#include "harness/perf_data/aux_queues.h"
#include "harness/perf_data/features.h"
#include "harness/perf_data/reader.h"
#include "harness/pt/capture_file.h"
#include "harness/pt/cpu.h"
#include "harness/pt/image.h"
#include "harness/pt/itrace.h"
#include "harness/pt/itrace_log.h"
#include "tools/data/pt_trace.h"

namespace perftest::pt {

namespace {
constexpr int kExitBadInput = 2;

// ADDR:FILE[:OFFSET[:SIZE]], numbers in C syntax (0x...).
bool AddImage(Image* image, const std::string& spec, std::string* error) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    *error = fmt::format("--image {}: expected ADDR:FILE[:OFFSET[:SIZE]]", spec);
    return false;
  }
  char* end = nullptr;
  const uint64_t addr = std::strtoull(spec.c_str(), &end, 0);
  if (end != spec.c_str() + colon) {
    *error = fmt::format("--image {}: bad address '{}'", spec, spec.substr(0, colon));
    return false;
  }
  std::string path = spec.substr(colon + 1);
  uint64_t offset = 0, size = 0;
  // Trailing :OFFSET[:SIZE] only when they parse as numbers (paths may hold ':').
  for (int k = 0; k < 2; ++k) {
    const size_t c = path.rfind(':');
    if (c == std::string::npos) break;
    char* e = nullptr;
    const std::string tail = path.substr(c + 1);
    const uint64_t v = std::strtoull(tail.c_str(), &e, 0);
    if (tail.empty() || *e != '\0') break;
    size = offset;
    offset = v;
    path.resize(c);
    if (k == 0) size = 0;
  }
  Result<void> r = image->AddFile(path, offset, size, addr);
  if (!r.ok()) {
    *error = fmt::format("--image {}: {}", spec, r.ToString());
    return false;
  }
  return true;
}

// TSC[:NAME], the TSC in C syntax.
bool ParseExisting(const std::string& spec, ExistingEvent* out, std::string* error) {
  const size_t colon = spec.find(':');
  const std::string num = spec.substr(0, colon);
  char* end = nullptr;
  errno = 0;
  out->time = std::strtoull(num.c_str(), &end, 0);
  if (num.empty() || *end != '\0' || errno != 0) {
    *error = fmt::format("--existing-event {}: bad time '{}' (expected TSC[:NAME])", spec, num);
    return false;
  }
  if (colon != std::string::npos) {
    out->name = spec.substr(colon + 1);
    if (out->name.empty()) {
      *error = fmt::format("--existing-event {}: empty name", spec);
      return false;
    }
  }
  return true;
}
// Standard output through one large buffer written with write(2) in big
// chunks: the decoder's samples are formatted into it as they are made,
// none kept.
class StdoutBuffer {
 public:
  static constexpr size_t kFlushAt = size_t{1} << 20;
  ~StdoutBuffer() { Flush(); }
  fmt::memory_buffer& buf() { return buf_; }
  void MaybeFlush() {
    if (buf_.size() >= kFlushAt) Flush();
  }
  // Writes out what is buffered; false (errno in error()) once a write failed.
  bool Flush() {
    std::fflush(stdout);  // anything printed through stdio first
    const char* p = buf_.data();
    size_t left = failed_ ? 0 : buf_.size();
    while (left > 0) {
      const ssize_t n = ::write(STDOUT_FILENO, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed_ = true;
        error_ = n < 0 ? errno : EIO;
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    buf_.clear();
    return !failed_;
  }
  int error() const { return error_; }

 private:
  fmt::memory_buffer buf_;
  bool failed_ = false;
  int error_ = 0;
};
}  // namespace

namespace {
// A perf.data file's Intel PT (tools/data/pt_trace.h): its AUX queues one
// after another (each a new stretch: a queue starts at its own PSB; perf
// interleaves the queues by time, this decodes them in queue order), the
// side-band's code, the timing of AUXTRACE_INFO.
bool IsPerfDataFile(std::span<const uint8_t> head) {
  uint64_t magic = 0;
  if (head.size() < sizeof magic) return false;
  std::memcpy(&magic, head.data(), sizeof magic);
  return magic == perf_data::kMagic;
}

Result<CaptureTrace> PerfDataTrace(const std::vector<uint8_t>& bytes, const std::string& path, uint64_t* tsc_hz) {
  using R = Result<CaptureTrace>;
  Result<perf_data::PerfData> d = perf_data::ReadPerfData(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
  if (!d.ok()) return R::Failure(d.error(), fmt::format("{}: {}", path, d.call()));
  Result<perf_data::AuxQueues> q = perf_data::AuxQueuesOf(*d);
  if (!q.ok()) return R::Failure(q.error(), fmt::format("{}: {}", path, q.call()));
  if (q->queues.empty()) return R::Failure(EINVAL, fmt::format("{}: no AUXTRACE data (not an Intel PT recording)", path));
  if (tsc_hz != nullptr && q->intel_pt && q->intel_pt->time_mult != 0 && q->intel_pt->time_shift < 64) {
    *tsc_hz = static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000) << q->intel_pt->time_shift) /
                                    q->intel_pt->time_mult);
  }
  CaptureTrace all;
  if (const auto f = d->features.find(perf_data::HEADER_CPUID); f != d->features.end()) {
    if (Result<std::string> cpuid = perf_data::ParseStringFeature(f->second); cpuid.ok()) all.cpuid = *cpuid;
  }
  for (size_t i = 0; i < q->queues.size(); ++i) {
    Result<CaptureTrace> t = data::PtTraceOf(*d, *q, i);
    if (!t.ok()) return R::Failure(t.error(), fmt::format("{}: {}", path, t.call()));
    if (i == 0) {
      all.timing = t->timing;
      all.image_specs = t->image_specs;
      all.notes = t->notes;
    } else {
      all.data_lost.push_back(all.trace.size());
    }
    for (uint64_t at : t->data_lost) all.data_lost.push_back(all.trace.size() + at);
    all.trace.insert(all.trace.end(), t->trace.begin(), t->trace.end());
    all.aux_records += t->aux_records;
  }
  return R::Ok(std::move(all));
}
}  // namespace

bool ReadTraceInput(const std::string& path, std::string_view command, std::vector<uint8_t>* trace,
                    std::vector<std::string>* image_specs, std::string* error, CaptureTiming* timing,
                    std::vector<uint64_t>* data_lost, uint64_t* tsc_hz, std::string* cpuid) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return false;
  }
  trace->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = fmt::format("cannot read {}", path);
    return false;
  }
  const bool perf_data = IsPerfDataFile(*trace);
  if (!perf_data && !IsCaptureFile(*trace)) return true;
  Result<CaptureTrace> t = perf_data ? PerfDataTrace(*trace, path, tsc_hz) : [&] {
    Result<Capture> capture = ReadCapture(path);
    return capture.ok() ? CaptureTraceOf(*capture, path) : Result<CaptureTrace>::FailureFrom(capture);
  }();
  if (!t.ok()) {
    *error = t.ToString();
    return false;
  }
  *trace = std::move(t->trace);
  if (cpuid != nullptr) *cpuid = t->cpuid;
  if (timing != nullptr) *timing = t->timing;
  if (data_lost != nullptr) *data_lost = t->data_lost;
  // On stderr: what was taken from the capture (stdout is the tool's output).
  fmt::print(stderr, "perftest_pt {}: {} is a {}: {} trace bytes from {} AUX records", command, path,
             perf_data ? "perf.data file" : "perftest PT capture", trace->size(), t->aux_records);
  if (!t->data_lost.empty()) fmt::print(stderr, " (data lost {} times: TRUNCATED)", t->data_lost.size());
  if (image_specs != nullptr) {
    *image_specs = std::move(t->image_specs);
    fmt::print(stderr, "; code: {}\n", image_specs->empty() ? "none found" : fmt::format("{}", fmt::join(*image_specs, " ")));
    for (const std::string& note : t->notes) fmt::print(stderr, "perftest_pt {}: {}\n", command, note);
  } else {
    fmt::print(stderr, "\n");
  }
  return true;
}

void AddDecodeCommand(CLI::App& app, DecodeCommand* cmd) {
  cmd->app = app.add_subcommand("decode", "decode the instruction flow and print itrace samples (like perf script --itrace)");
  cmd->app->add_option("FILE", cmd->file,
                       "raw Intel PT trace bytes, or a capture from `perftest pt record` (its AUX data, and its "
                       "code unless --image is given)")
      ->required();
  CLI::Option* itrace = cmd->app->add_option("--itrace", cmd->itrace,
                       "itrace letters (perf-intel-pt.txt): i[N[i|t|ns|us|ms]] b c r x w p e[-o-l] d[+a-a+e+o] g[N] "
                       "G[N] l[N] L[N] sN q qq; empty: cepwx");
  cmd->app->add_option("--image", cmd->images, "object code: ADDR:FILE[:OFFSET[:SIZE]] (repeatable)");
  cmd->app->add_option("--format", cmd->format, "text (perf script style) or json (JSON Lines)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->app->add_option("--tsc-hz", cmd->tsc_hz, "TSC frequency, for i periods in ns/us/ms (default: a perf.data file's TIME_CONV rate, else 1 GHz)");
  cmd->app->add_option("--max-nonturbo-ratio", cmd->max_nonturbo_ratio,
                       "MSR_PLATFORM_INFO[15:8] (intel_pt sysfs max_nonturbo_ratio): times CYC packets with CBR, and "
                       "counts cycles for IPC from MTC when there is no CYC (default: a capture's)");
  cmd->app->add_option("--mtc-period", cmd->mtc_period,
                       "the mtc_period the trace was recorded with (MTC every 2^N CTC ticks; default: a capture's, else 3)")
      ->check(CLI::Range(0, 15));
  cmd->app->add_option("--tsc-ctc-ratio", cmd->tsc_ctc_ratio,
                       "N/D: TSC ticks per CTC tick, CPUID.15H EBX/EAX; MTC packets time the trace only with it "
                       "(default: a capture's)");
  cmd->app->add_option("--existing-event", cmd->existing_events,
                       "an event recorded with the trace, TSC[:NAME] (repeatable): G/L add call chain/branch stack");
  cmd->app->add_option("--debug-log", cmd->debug_log, "the d log file (default intel_pt.log; d+o: stdout)");
  cmd->app->add_option("--cpu", cmd->cpu,
                       "FAMILY/MODEL[/STEPPING] the trace was recorded on: applies that CPU's errata workarounds "
                       "(as libipt's pt_cpu_errata; the packet-layer ones: SKD007, SKZ84)");
  CLI::Option* call_trace = cmd->app->add_flag(
      "--call-trace", cmd->call_trace,
      "perf script --call-trace: calls (itrace cewp), each target indented 4 spaces per call depth");
  CLI::Option* call_ret_trace = cmd->app->add_flag(
      "--call-ret-trace", cmd->call_ret_trace,
      "perf script --call-ret-trace: calls and returns (itrace crewp) with flag names, indented by call depth");
  call_trace->excludes(itrace)->excludes(call_ret_trace);
  call_ret_trace->excludes(itrace);
}

int RunDecode(const DecodeCommand& cmd) {
  // perf script's parse_call_trace() and parse_callret_trace().
  const bool view = cmd.call_trace || cmd.call_ret_trace;
  if (view && !cmd.itrace.empty()) {
    fmt::print(stderr, "perftest_pt decode: --call-trace and --call-ret-trace choose the itrace letters; drop --itrace\n");
    return kExitBadInput;
  }
  Result<ItraceOptions> o = ParseItrace(cmd.call_trace ? "cewp" : cmd.call_ret_trace ? "crewp" : cmd.itrace);
  if (!o.ok()) {
    fmt::print(stderr, "perftest_pt decode: {}\n", o.ToString());
    return kExitBadInput;
  }
  o->tsc_hz = cmd.tsc_hz;
  std::vector<uint8_t> trace;
  std::vector<std::string> image_specs = cmd.images;
  std::string error;
  CaptureTiming timing;
  timing.mtc_period = 3;  // perf's default; a capture's own replaces it
  std::vector<uint64_t> data_lost;
  uint64_t file_tsc_hz = 0;
  std::string file_cpuid;
  if (!ReadTraceInput(cmd.file, "decode", &trace, cmd.images.empty() ? &image_specs : nullptr, &error, &timing,
                      &data_lost, &file_tsc_hz, &file_cpuid)) {
    fmt::print(stderr, "perftest_pt decode: {}\n", error);
    return kExitBadInput;
  }
  if (cmd.tsc_hz == 0 && file_tsc_hz != 0) o->tsc_hz = file_tsc_hz;  // a perf.data file's TIME_CONV rate
  // The timing parameters: given, else the capture's.
  if (!cmd.tsc_ctc_ratio.empty()) {
    unsigned n = 0, d = 0;
    char tail = 0;
    if (std::sscanf(cmd.tsc_ctc_ratio.c_str(), "%u/%u%c", &n, &d, &tail) != 2 || n == 0 || d == 0) {
      fmt::print(stderr, "perftest_pt decode: --tsc-ctc-ratio {}: expected N/D with N, D > 0 (CPUID.15H EBX/EAX)\n",
                 cmd.tsc_ctc_ratio);
      return kExitBadInput;
    }
    timing.tsc_ctc_ratio_n = n;
    timing.tsc_ctc_ratio_d = d;
  }
  if (cmd.max_nonturbo_ratio != 0) timing.max_nonturbo_ratio = cmd.max_nonturbo_ratio;
  FlowDecoder::Options d;
  d.max_nonturbo_ratio = timing.max_nonturbo_ratio;
  d.mtc_period = cmd.mtc_period >= 0 ? static_cast<unsigned>(cmd.mtc_period) : timing.mtc_period;
  d.tsc_ctc_ratio_n = timing.tsc_ctc_ratio_n;
  d.tsc_ctc_ratio_d = timing.tsc_ctc_ratio_d == 0 ? 1 : timing.tsc_ctc_ratio_d;
  d.stop_at_end = true;  // as ptxed: nothing past the end of the trace (pts_eos)
  // The CPU: --cpu, else the one a perf.data file's HEADER_CPUID names.
  std::optional<Cpu> cpu;
  if (!cmd.cpu.empty()) {
    std::string cpu_error;
    cpu = ParseCpu(cmd.cpu, &cpu_error);
    if (!cpu) {
      fmt::print(stderr, "perftest_pt decode: --cpu {}\n", cpu_error);
      return kExitBadInput;
    }
  } else if (!file_cpuid.empty()) {
    cpu = CpuFromPerfCpuid(file_cpuid);
  }
  if (cpu) {
    const Errata errata = ErrataFor(*cpu);
    if (cmd.cpu.empty()) {
      fmt::print(stderr, "perftest_pt decode: CPU {}/{}/{} (HEADER_CPUID {}): errata {}\n", cpu->family, cpu->model,
                 cpu->stepping, file_cpuid, ErrataNames(errata).empty() ? "none known" : ErrataNames(errata));
    }
    d.packets.skd007 = errata.skd007;
    d.packets.skz84 = errata.skz84;
  }
  o->max_nonturbo_ratio = timing.max_nonturbo_ratio;
  if (image_specs.empty()) {
    fmt::print(stderr,
               "perftest_pt decode: no object code (--image ADDR:FILE): the flow cannot be walked past the first "
               "IP; each sync point is an error 'no object code'\n");
  }
  Image image;
  for (const std::string& spec : image_specs) {
    if (!AddImage(&image, spec, &error)) {
      fmt::print(stderr, "perftest_pt decode: {}\n", error);
      return kExitBadInput;
    }
  }
  std::vector<ExistingEvent> existing;
  for (const std::string& spec : cmd.existing_events) {
    std::string error;
    if (!ParseExisting(spec, &existing.emplace_back(), &error)) {
      fmt::print(stderr, "perftest_pt decode: {}\n", error);
      return kExitBadInput;
    }
  }
  std::FILE* log_file = nullptr;
  if (o->debug_log && !o->log_stdout) {
    log_file = std::fopen(cmd.debug_log.c_str(), "w");
    if (log_file == nullptr) {
      fmt::print(stderr, "perftest_pt decode: cannot write the debug log {}: {}\n", cmd.debug_log, std::strerror(errno));
      return kExitBadInput;
    }
  }
  std::FILE* log_out = log_file != nullptr ? log_file : stdout;
  ItraceLog log(trace, *o, [log_out](std::string_view s) { std::fwrite(s.data(), 1, s.size(), log_out); });
  ItraceSynth synth(*o);
  synth.SetExistingEvents(std::move(existing));
  const bool json = cmd.format == "json";
  StdoutBuffer out;
  auto append = [&](const ItraceSample& s) {
    if (json) {
      AppendJson(&out.buf(), s);
    } else if (view) {
      AppendCallTrace(&out.buf(), s, cmd.call_ret_trace);
    } else {
      AppendText(&out.buf(), s);
    }
    out.buf().push_back('\n');
  };
  // Each sample is formatted and written as it is made; only with the debug
  // log on stdout (d+o) are they kept, to follow the whole log as before.
  const bool stream = !(o->debug_log && log_file == nullptr);
  if (stream) {
    synth.SetSink([&](const ItraceSample& s) {
      append(s);
      out.MaybeFlush();
    });
  }
  const ItraceStats stats = SynthesizeItrace(trace, image, *o, d, &synth, o->debug_log ? &log : nullptr, data_lost);
  if (o->debug_log) log.Finish();
  if (log_file != nullptr && std::fclose(log_file) != 0) {
    fmt::print(stderr, "perftest_pt decode: writing the debug log {}: {}\n", cmd.debug_log, std::strerror(errno));
    return kExitBadInput;
  }
  for (const ItraceSample& s : synth.samples()) {
    append(s);
    out.MaybeFlush();
  }
  // How it ended: "end of trace" (the flow reached the trace's end), or
  // "error" (the last flow ended in an error and no PSB followed).
  const std::string_view status = stats.end_of_trace ? "end of trace" : "error";
  if (json) {
    fmt::format_to(fmt::appender(out.buf()),
                   R"({{"summary":{{"instructions":{},"samples":{},"errors":{},"status":"{}"}}}})" "\n",
                   stats.instructions, stats.samples, stats.errors, status);
  } else {
    fmt::format_to(fmt::appender(out.buf()), "# {} instructions, {} samples, {} errors\n# {}\n", stats.instructions,
                   stats.samples, stats.errors, status);
  }
  if (!out.Flush()) {
    fmt::print(stderr, "perftest_pt decode: writing the output: {}\n", std::strerror(out.error()));
    return 1;
  }
  return 0;
}

}  // namespace perftest::pt
