#include "tools/pt/record.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

#include "harness/attr.h"
#include "harness/aux_buffer.h"
#include "harness/backend.h"
#include "harness/event.h"
#include "harness/event_string.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"
#include "mocks/mock_backend.h"
#include "mocks/mock_control.h"
#include "mocks/profile.h"
#include "mocks/pt_sim/ground_truth.h"
#include "mocks/pt_sim_source.h"

namespace perftest::pt {
namespace {

constexpr uint64_t kMockSyscalls = 4;  // system calls the simulated task makes in a mock recording
constexpr uint64_t kMockDrainEvery = 50000;  // instructions of the simulated task between two drains

class Writer {
 public:
  explicit Writer(const std::string& path) : out_(path, std::ios::binary | std::ios::trunc) {
    if (out_) out_.write(kCaptureMagic, sizeof kCaptureMagic);
  }
  bool ok() const { return static_cast<bool>(out_); }
  void Chunk(uint32_t type, uint32_t source, const void* a, size_t na, const void* b = nullptr, size_t nb = 0) {
    const uint64_t size = na + nb;
    out_.write(reinterpret_cast<const char*>(&type), 4);
    out_.write(reinterpret_cast<const char*>(&source), 4);
    out_.write(reinterpret_cast<const char*>(&size), 8);
    out_.write(static_cast<const char*>(a), static_cast<std::streamsize>(na));
    if (nb != 0) out_.write(static_cast<const char*>(b), static_cast<std::streamsize>(nb));
    static const char zeros[8] = {};
    out_.write(zeros, static_cast<std::streamsize>((8 - size % 8) % 8));
  }

 private:
  std::ofstream out_;
};

// The events of one capture and their buffers.
struct Session {
  std::optional<Event> pt, dummy;
  std::optional<RingBuffer> pt_rb, dummy_rb;
  std::optional<AuxBuffer> aux;
  std::vector<uint8_t> trace;  // every AUX byte read, in order
  SampleLayout dummy_layout;
  std::vector<std::string> images;  // ADDR:FILE:OFFSET:SIZE of each executable mapping (side-band)
};

// Drains both data buffers into the file; AUX data follows each AUX record
// (full-trace: the reader then frees it by advancing aux_tail).
void Drain(Session& s, Writer& w, CaptureSummary* sum) {
  auto drain = [&](RingBuffer& rb, uint32_t source, bool pt) {
    rb.Begin();
    while (std::optional<RawRecord> r = rb.Next()) {
      w.Chunk(kCaptureRecord, source, r->bytes.data(), r->bytes.size());
      ++sum->records;
      if (!pt && (r->header.type == PERF_RECORD_MMAP || r->header.type == PERF_RECORD_MMAP2)) {
        if (Result<perftest::Record> rec = ParseRecord(s.dummy_layout, r->bytes); rec.ok()) {
          if (std::string spec = ImageSpecOf(*rec); !spec.empty()) s.images.push_back(std::move(spec));
        }
      }
      if (!pt || r->header.type != PERF_RECORD_AUX || r->bytes.size() < 32) continue;
      std::array<uint64_t, 3> f;
      std::memcpy(f.data(), r->bytes.data() + 8, 24);
      const AuxRecord a{f[0], f[1], f[2]};
      const std::vector<std::byte> data = s.aux->Take(a);
      w.Chunk(kCaptureAux, source, f.data(), 24, data.data(), data.size());
      const auto* d = reinterpret_cast<const uint8_t*>(data.data());
      s.trace.insert(s.trace.end(), d, d + data.size());
      ++sum->aux_records;
      sum->aux_bytes += data.size();
      if (a.flags & PERF_AUX_FLAG_TRUNCATED) ++sum->truncated;
      if (s.aux->mode() == AuxMode::kFullTrace) s.aux->WriteTail(a.aux_offset + a.aux_size);
    }
    rb.Consume();
  };
  drain(*s.pt_rb, 0, true);
  drain(*s.dummy_rb, 1, false);
}

template <typename T>
Result<T> Fail(int err, const std::string& what) {
  return Result<T>::Failure(err, "pt record: " + what);
}

// The mock's simulated run beside the capture, for `perftest pt decode` and
// for checking a decoder: OUTPUT.trace.bin (the AUX bytes, concatenated),
// OUTPUT.trace.truth.json (pt_sim ground truth: config, clock, code image,
// every instruction; the pair reads back with pt_sim::ReadGeneratedTrace(
// OUTPUT + ".trace")) and OUTPUT.image-ADDR.bin for each code section.
Result<void> WriteMockTruth(MockControl& control, const Session& s, const std::string& output, CaptureSummary* sum) {
  const pt_sim::GroundTruth* truth = control.PtGroundTruth(s.pt->fd());
  if (truth == nullptr) return Result<void>::Ok();  // no simulated program behind this event
  auto write = [](const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(f);
  };
  sum->trace_file = output + ".trace.bin";
  if (!write(sum->trace_file, s.trace)) return Fail<void>(EIO, "cannot write " + sum->trace_file);
  sum->truth_file = output + ".trace.truth.json";
  if (Result<void> r = pt_sim::WriteGroundTruthFile(*truth, sum->truth_file); !r.ok()) return r;
  for (const pt_sim::CodeSection& sec : truth->image.sections()) {
    const std::string path = fmt::format("{}.image-{:#x}.bin", output, sec.address);
    if (!write(path, sec.bytes)) return Fail<void>(EIO, "cannot write " + path);
    sum->image_specs.push_back(fmt::format("{:#x}:{}", sec.address, path));
  }
  sum->truth_complete = s.aux->mode() == AuxMode::kFullTrace && sum->truncated == 0 &&
                        s.trace.size() == truth->trace_size;
  return Result<void>::Ok();
}

// A real command's trace beside the capture: OUTPUT.trace.bin (the AUX bytes,
// concatenated) and, as image specs, the executable file mappings the
// side-band recorded (MMAP2 of the exec'd binary, its libraries); the kernel,
// the vDSO and JIT code are not in any file here.
Result<void> WriteKernelTrace(const Session& s, const std::string& output, CaptureSummary* sum) {
  sum->trace_file = output + ".trace.bin";
  std::ofstream f(sum->trace_file, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(s.trace.data()), static_cast<std::streamsize>(s.trace.size()));
  if (!f) return Fail<void>(EIO, "cannot write " + sum->trace_file);
  sum->image_specs = s.images;
  return Result<void>::Ok();
}

// The timing parameters a decoder needs, as perf's intel_pt_info_fill()
// records them: the attr's mtc_period (through format/mtc_period); on the
// kernel CPUID.15H (TSC/CTC = EBX/EAX) and the PMU's sysfs
// max_nonturbo_ratio; on the mock (`control` not null) the simulated clock
// (pt_sim: the TSC ticks once per cycle at the nominal ratio, so that is the
// max non-turbo ratio).
CaptureTiming Timing(MockControl* control, const Pmu& pt, const perf_event_attr& attr, int pt_fd) {
  CaptureTiming t;
  if (auto f = pt.format.find("mtc_period"); f != pt.format.end()) {
    int word = -1;
    const uint64_t mask = FormatBits(f->second, &word);
    if (mask != 0 && word == 0) t.mtc_period = static_cast<uint32_t>((attr.config & mask) >> std::countr_zero(mask));
  }
  if (const pt_sim::GroundTruth* truth = control != nullptr ? control->PtGroundTruth(pt_fd) : nullptr) {
    t.tsc_ctc_ratio_n = truth->clock.ctc_ebx;
    t.tsc_ctc_ratio_d = truth->clock.ctc_eax;
    t.max_nonturbo_ratio = truth->clock.cbr;
    return t;
  }
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) >= 0x15 && __get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx) && eax != 0 &&
      ebx != 0) {
    t.tsc_ctc_ratio_n = ebx;
    t.tsc_ctc_ratio_d = eax;
  }
#endif
  std::ifstream f(std::string(kSysfsPmuRoot) + "/" + pt.name + "/max_nonturbo_ratio");
  unsigned ratio = 0;
  if (f >> ratio) t.max_nonturbo_ratio = ratio;
  return t;
}

// execvp()'s PATH search, done before forking so that a missing command is an
// error of its own and not an exit status 127 of a traced child.
std::optional<std::string> FindCommand(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    return ::access(name.c_str(), X_OK) == 0 ? std::optional<std::string>(name) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', at), dirs.size());
    // (An empty entry is "."; built by appending: GCC 12 warns -Wrestrict,
    // a false positive, on assigning "." or on dir + "/" + name once inlined.)
    std::string candidate = colon == at ? std::string(".") : dirs.substr(at, colon - at);
    candidate.append("/").append(name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = colon + 1;
  }
  return std::nullopt;
}

}  // namespace

Result<CaptureSummary> Record(const RecordOptions& o) {
  using R = Result<CaptureSummary>;
  if (!std::has_single_bit(o.data_pages) || !std::has_single_bit(o.aux_pages)) {
    return Fail<CaptureSummary>(EINVAL, "--data-pages and --aux-pages must be powers of two");
  }
  std::unique_ptr<Backend> backend;
  MockControl* control = nullptr;  // the mock's controls: its PT ground truth
  if (o.backend == "mock") {
    Result<MockProfile> p = LoadProfile(o.profile);
    if (!p.ok()) return R::FailureFrom(p);
    // The simulated task's real program, traced by pt_sim (mocks/pt_sim_source.h).
    MockWithControl m = MakeMockBackendWithControl(std::move(*p), {.pt_trace = mock::PtSimTraceModel()});
    backend = std::move(m.backend);
    control = m.control;
  } else if (o.backend == "kernel") {
    if (o.command.empty()) return Fail<CaptureSummary>(EINVAL, "the kernel backend needs a command to trace (-- CMD ...)");
    backend = MakeKernelBackend();
  } else {
    return Fail<CaptureSummary>(EINVAL, fmt::format("unknown backend '{}' (kernel or mock)", o.backend));
  }
  Backend& b = *backend;
  const std::vector<Pmu>& pmus = b.Machine().pmus;
  const Pmu* pt = FindPmu(pmus, "intel_pt");
  if (pt == nullptr) {
    return Fail<CaptureSummary>(
        ENOENT, o.backend == "kernel"
                    ? fmt::format("no intel_pt PMU on this machine: {}/intel_pt does not exist (a CPU or kernel "
                                  "without Intel PT, or a VM that does not pass it through); nothing was run",
                                  kSysfsPmuRoot)
                    : fmt::format("no intel_pt PMU in profile '{}' (its {}/intel_pt does not exist)", o.profile,
                                  kSysfsPmuRoot));
  }
  Result<perf_event_attr> parsed = ParseEventString(o.event, pmus);
  if (!parsed.ok()) return R::FailureFrom(parsed);
  perf_event_attr attr = *parsed;
  attr.sample_id_all = 1;
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  perf_event_attr dummy = SoftwareAttr(PERF_COUNT_SW_DUMMY);
  dummy.sample_id_all = 1;
  dummy.sample_type = attr.sample_type;
  dummy.mmap = dummy.mmap2 = dummy.comm = dummy.task = dummy.context_switch = 1;
  dummy.exclude_kernel = attr.exclude_kernel;

  // Kernel: a child that waits on a pipe for one byte, then execs the
  // command; the events are opened on it disabled with enable_on_exec, so
  // the trace starts at the exec (perf record's way with a workload). Without
  // the byte (we failed before the events were ready) the child exits 126.
  pid_t child = 0;
  int go[2] = {-1, -1};
  if (o.backend == "kernel") {
    const std::optional<std::string> path = FindCommand(o.command[0]);
    if (!path) return Fail<CaptureSummary>(ENOENT, fmt::format("command '{}' not found (PATH)", o.command[0]));
    if (::pipe2(go, O_CLOEXEC) != 0) return Fail<CaptureSummary>(errno, "pipe2");
    child = ::fork();
    if (child < 0) return Fail<CaptureSummary>(errno, "fork");
    if (child == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(126);
      std::vector<char*> argv;
      for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(path->c_str(), argv.data());
      ::_exit(127);
    }
    ::setpgid(child, child);
    ::close(go[0]);
    attr.enable_on_exec = 1;
    dummy.enable_on_exec = 1;
  }
  // Reaps the child however we leave (its own process group: killed whole).
  struct Reaper {
    pid_t pid;
    int* status;
    ~Reaper() {
      if (pid <= 0) return;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, status, 0);
    }
  };
  int status = 0;
  Reaper reaper{child, &status};
  auto close_go = [&]() {
    if (go[1] >= 0) ::close(go[1]);
    go[1] = -1;
  };

  auto start_child = [&]() {
    const char byte = 1;
    const bool sent = ::write(go[1], &byte, 1) == 1;
    close_go();
    return sent;
  };

  Session s;
  s.dummy_layout = SampleLayout::FromAttr(dummy);
  const pid_t target = child;  // 0: this (simulated) task
  Result<Event> pte = Event::Open(b, attr, target, -1);
  if (!pte.ok()) return close_go(), R::FailureFrom(pte);
  s.pt.emplace(std::move(*pte));
  Result<Event> de = Event::Open(b, dummy, target, -1);
  if (!de.ok()) return close_go(), R::FailureFrom(de);
  s.dummy.emplace(std::move(*de));
  Result<RingBuffer> prb = RingBuffer::Map(b, s.pt->fd(), o.data_pages);
  if (!prb.ok()) return close_go(), R::FailureFrom(prb);
  s.pt_rb.emplace(std::move(*prb));
  Result<RingBuffer> drb = RingBuffer::Map(b, s.dummy->fd(), o.data_pages);
  if (!drb.ok()) return close_go(), R::FailureFrom(drb);
  s.dummy_rb.emplace(std::move(*drb));
  Result<AuxBuffer> aux =
      AuxBuffer::Map(b, s.pt->fd(), *s.pt_rb, o.aux_pages, o.snapshot ? AuxMode::kSnapshot : AuxMode::kFullTrace);
  if (!aux.ok()) return close_go(), R::FailureFrom(aux);
  s.aux.emplace(std::move(*aux));

  Writer w(o.output);
  if (!w.ok()) return close_go(), Fail<CaptureSummary>(errno == 0 ? EIO : errno, "cannot write " + o.output);
  const CaptureTiming timing = Timing(control, *pt, attr, s.pt->fd());
  nlohmann::json meta = {
      {"format", "perftest PT capture v1"},
      {"backend", o.backend},
      {"profile", o.backend == "mock" ? o.profile : ""},
      {"event", o.event},
      {"command", o.command},
      {"attr",
       {{"type", attr.type},
        {"config", attr.config},
        {"exclude_user", static_cast<int>(attr.exclude_user)},
        {"exclude_kernel", static_cast<int>(attr.exclude_kernel)},
        {"sample_type", attr.sample_type},
        {"sample_id_all", static_cast<int>(attr.sample_id_all)}}},
      {"pmu", {{"name", pt->name}, {"type", pt->type}, {"format", pt->format}, {"caps", pt->caps}}},
      {"page_size", b.Machine().page_size},
      {"aux_size", s.aux->size()},
      {"mode", o.snapshot ? "snapshot" : "full-trace"},
      {"timing",
       {{"mtc_period", timing.mtc_period},
        {"tsc_ctc_ratio_n", timing.tsc_ctc_ratio_n},
        {"tsc_ctc_ratio_d", timing.tsc_ctc_ratio_d},
        {"max_nonturbo_ratio", timing.max_nonturbo_ratio}}},
  };
  const std::string meta_text = meta.dump();
  w.Chunk(kCaptureMeta, 0, meta_text.data(), meta_text.size());

  CaptureSummary sum;
  if (o.backend == "mock") {
    // The simulated task: an executable mapping and a name (side-band), then
    // the instructions the PT event traces, with a few system calls halfway
    // (TIP.PGD/TIP.PGE in the trace).
    if (Result<void> r = s.dummy->Enable(); !r.ok()) return R::FailureFrom(r);
    if (Result<void> r = s.pt->Enable(); !r.ok()) return R::FailureFrom(r);
    // The instructions in steps, drained after each: as on the kernel, a
    // TRUNCATED transaction (AUX area full, event stopped) is drained and
    // the event enabled again, leaving a gap in the trace.
    std::vector<Workload> steps = {Workload::MmapExec(4), Workload::SetComm("perftest-pt")};
    auto instructions = [&](uint64_t n) {
      for (uint64_t done = 0; done < n; done += kMockDrainEvery)
        steps.push_back(Workload::Instructions(std::min(kMockDrainEvery, n - done)));
    };
    instructions(o.instructions / 2);
    steps.push_back(Workload::Syscalls(kMockSyscalls));
    instructions(o.instructions - o.instructions / 2);
    for (const Workload& wl : steps) {
      Result<WorkloadResult> r = b.RunWorkload(wl);
      if (!r.ok()) return R::FailureFrom(r);
      const uint64_t truncated = sum.truncated;
      Drain(s, w, &sum);
      if (sum.truncated != truncated && !o.snapshot) (void)s.pt->Enable();
    }
    (void)s.pt->Disable();
    (void)s.dummy->Disable();
    Drain(s, w, &sum);
    if (Result<void> r = WriteMockTruth(*control, s, o.output, &sum); !r.ok()) return R::FailureFrom(r);
  } else {
    if (!start_child()) return Fail<CaptureSummary>(EIO, "cannot start the command (pipe write)");
    for (;;) {
      std::array<pollfd, 2> fds = {pollfd{s.pt->fd(), POLLIN, 0}, pollfd{s.dummy->fd(), POLLIN, 0}};
      (void)b.Poll(fds, 100);
      const uint64_t truncated = sum.truncated;
      Drain(s, w, &sum);
      // A full AUX area disabled the event (TRUNCATED, perf_aux_output_end());
      // the drain freed the space: trace on, with a gap.
      if (sum.truncated != truncated && o.snapshot == false) (void)s.pt->Enable();
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) {
        reaper.pid = 0;
        break;
      }
    }
    Drain(s, w, &sum);
    sum.exit_status = status;
    if (Result<void> r = WriteKernelTrace(s, o.output, &sum); !r.ok()) return R::FailureFrom(r);
  }
  if (!w.ok()) return Fail<CaptureSummary>(EIO, "write " + o.output);
  return R::Ok(sum, fmt::format("pt record -> {}", o.output));
}

}  // namespace perftest::pt
