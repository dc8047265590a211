#include "tools/pt/record.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
#include "harness/user_time.h"
#include "harness/perf_data/user_records.h"
#include "mocks/mock_backend.h"
#include "mocks/mock_control.h"
#include "mocks/profile.h"
#include "mocks/pt_sim/ground_truth.h"
#include "mocks/pt_sim_source.h"
#include "tools/pt/elf_image.h"
#include "tools/pt/record_perf_data.h"

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
  SampleLayout dummy_layout, pt_layout;
  std::vector<std::string> images;  // ADDR:FILE:OFFSET:SIZE of each executable mapping (side-band)
  // The outputs: one of the two.
  std::optional<Writer> ptcap;
  std::optional<PerfDataSink> perf_data;
  std::optional<SampleId> first_pt_id;  // the PT event's first record's sample_id (ITRACE_START)
  MockControl* control = nullptr;        // the mock's: its PT model's clock
  uint64_t last_time = 0;                // the latest sample_id time read so far
  std::optional<uint64_t> trace_start;   // last_time when the first AUX record was read
};

// The TSC now, as perf's intel_pt_reference() reads it for each AUXTRACE:
// the mock's simulated TSC (its PT model's clock), else rdtsc.
uint64_t ReadTsc(const Session& s) {
  if (s.control != nullptr) {
    if (const pt_sim::GroundTruth* t = s.control->PtGroundTruth(s.pt->fd())) return t->clock.tsc_end;
  }
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return 0;
#endif
}

// Drains both data buffers into the file; AUX data follows each AUX record
// (full-trace: the reader then frees it by advancing aux_tail).
void Drain(Session& s, CaptureSummary* sum) {
  auto drain = [&](RingBuffer& rb, uint32_t source, bool pt) {
    rb.Begin();
    while (std::optional<RawRecord> r = rb.Next()) {
      if (s.ptcap) s.ptcap->Chunk(kCaptureRecord, source, r->bytes.data(), r->bytes.size());
      if (s.perf_data) s.perf_data->Record(r->bytes);
      ++sum->records;
      if (Result<perftest::Record> rec = ParseRecord(pt ? s.pt_layout : s.dummy_layout, r->bytes);
          rec.ok() && rec->sample_id) {
        if (pt && !s.first_pt_id) s.first_pt_id = rec->sample_id;
        if (rec->sample_id->time) s.last_time = std::max(s.last_time, *rec->sample_id->time);
      }
      if (pt && r->header.type == PERF_RECORD_AUX && !s.trace_start) s.trace_start = s.last_time;
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
      if (s.ptcap) s.ptcap->Chunk(kCaptureAux, source, f.data(), 24, data.data(), data.size());
      if (s.perf_data) {
        s.perf_data->Aux(a.aux_offset, data, ReadTsc(s), (a.flags & PERF_AUX_FLAG_TRUNCATED) != 0);
      }
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
  if (s.perf_data) s.perf_data->EndRound();
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

// The perftest PT capture's META chunk (capture_file.h).
void WriteMeta(Writer& w, const RecordOptions& o, Backend& b, const Pmu& pt, const perf_event_attr& attr,
               uint64_t aux_size, const CaptureTiming& timing) {
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
      {"pmu", {{"name", pt.name}, {"type", pt.type}, {"format", pt.format}, {"caps", pt.caps}}},
      {"page_size", b.Machine().page_size},
      {"aux_size", aux_size},
      {"mode", o.snapshot ? "snapshot" : "full-trace"},
      {"timing",
       {{"mtc_period", timing.mtc_period},
        {"tsc_ctc_ratio_n", timing.tsc_ctc_ratio_n},
        {"tsc_ctc_ratio_d", timing.tsc_ctc_ratio_d},
        {"max_nonturbo_ratio", timing.max_nonturbo_ratio}}},
  };
  const std::string meta_text = meta.dump();
  w.Chunk(kCaptureMeta, 0, meta_text.data(), meta_text.size());
}

// Intel PT's AUXTRACE_INFO words as intel_pt_info_fill()
// (tools/perf/arch/x86/util/intel-pt.c) fills them: the PMU type, the config
// masks of tsc/noretcomp/mtc/mtc_period/cyc (the PMU's format/), whether
// switch events are used (0: one task's queue),
// snapshot mode, per-CPU mmaps (0: this recorder traces one task, cpu -1),
// the timing parameters. The time_* words are set by the caller.
perf_data::IntelPtInfo PtInfoOf(const Pmu& pt, const perf_event_attr& attr, const perf_event_attr& dummy,
                                const RecordOptions& o, const CaptureTiming& timing) {
  auto bits = [&](const char* name) -> uint64_t {
    const auto f = pt.format.find(name);
    int word = -1;
    const uint64_t mask = f == pt.format.end() ? 0 : FormatBits(f->second, &word);
    return word == 0 ? mask : 0;
  };
  perf_data::IntelPtInfo i;
  i.pmu_type = attr.type;
  i.tsc_bit = bits("tsc");
  i.noretcomp_bit = bits("noretcomp");
  // perf uses switch events to follow the task on a CPU's queue only with
  // per-CPU mmaps (intel_pt_recording_options() sets it there); with one
  // task's queue the AUXTRACE records' tid names the task, and a nonzero
  // value would make perf look the tid up by CPU instead (-1 here).
  i.have_sched_switch = 0;
  (void)dummy;
  i.snapshot_mode = o.snapshot ? 1 : 0;
  i.per_cpu_mmaps = 0;
  i.mtc_bit = bits("mtc");
  i.mtc_freq_bits = bits("mtc_period");
  i.tsc_ctc_ratio_n = timing.tsc_ctc_ratio_n;
  i.tsc_ctc_ratio_d = timing.tsc_ctc_ratio_d;
  i.cyc_bit = bits("cyc");
  i.max_non_turbo_ratio = timing.max_nonturbo_ratio;
  i.event_trace = 0;
  return i;
}

// The mult/shift pair that turns ticks at `hz` into ns, as the kernel's
// clocks_calc_mult_shift() picks it: the largest shift (<= 31) whose mult
// fits in 32 bits.
void SetTscRate(perf_data::IntelPtInfo* i, uint64_t hz) {
  for (uint32_t shift = 31;; --shift) {
    const unsigned __int128 mult = ((static_cast<unsigned __int128>(1000000000) << shift) + hz / 2) / hz;
    if (mult <= UINT32_MAX || shift == 0) {
      i->time_shift = shift;
      i->time_mult = static_cast<uint64_t>(mult);
      return;
    }
  }
}

uint64_t TscToPerfTime(const perf_data::IntelPtInfo& i, uint64_t tsc) {
  const uint64_t quot = tsc >> i.time_shift, rem = tsc & ((uint64_t{1} << i.time_shift) - 1);
  return i.time_zero + quot * i.time_mult + ((rem * i.time_mult) >> i.time_shift);
}

// The mock's simulated program as perf needs it: OUTPUT.NAME.elf (its code,
// its functions, a build id), and the records perf record synthesizes for
// a running task (COMM with its name, MMAP2 of each code section of that
// file), timed just before the PT event's first record; the TSC
// conversion (see record.h).
Result<void> SynthesizeMockTask(MockControl& control, Session& s, const std::string& output,
                                PerfDataInfo* info, CaptureSummary* sum) {
  const pt_sim::GroundTruth* truth = control.PtGroundTruth(s.pt->fd());
  if (truth == nullptr) return Result<void>::Ok();
  const SampleId first = s.first_pt_id.value_or(SampleId{});
  const uint32_t pid = first.pid.value_or(kMockPid), tid = first.tid.value_or(kMockPid);
  // The trace starts after the records read before its first AUX data (the
  // simulated task's MMAP and COMM come before its instructions).
  const uint64_t t0 = std::max<uint64_t>(s.trace_start.value_or(s.last_time), 1);
  info->pid = static_cast<int32_t>(pid);
  info->tid = static_cast<int32_t>(tid);
  // The TSC runs once per core cycle at the nominal ratio (pt_sim ClockInfo): cbr x 100 MHz.
  SetTscRate(&info->intel_pt, truth->clock.cbr != 0 ? uint64_t{truth->clock.cbr} * 100000000 : 1000000000);
  info->intel_pt.time_zero = 0;
  info->intel_pt.time_zero = t0 - TscToPerfTime(info->intel_pt, truth->clock.tsc_start);
  info->intel_pt.cap_user_time_zero = 1;

  std::vector<ElfCodeSection> sections;
  for (const pt_sim::CodeSection& sec : truth->image.sections()) sections.push_back({sec.address, sec.bytes});
  const std::string program = truth->program.empty() ? "program" : truth->program;
  std::error_code ec;
  const std::string elf = std::filesystem::absolute(fmt::format("{}.{}.elf", output, program), ec).string();
  const std::vector<ElfSymbol> symbols = FunctionSymbols(sections, program);
  Result<std::vector<uint8_t>> id = WriteElfImage(elf, sections, symbols);
  if (!id.ok()) return Result<void>::FailureFrom(id);
  sum->elf_file = elf;
  struct stat st{};
  ::stat(elf.c_str(), &st);

  SampleId sid = first;
  sid.time = 0;  // before everything recorded, as perf's synthesized records (zero sample_id)
  Result<uint64_t> dummy_id = s.dummy->Id();
  sid.identifier = dummy_id.ok() ? *dummy_id : 0;
  if (!sid.pid) sid.pid = pid, sid.tid = tid;
  perftest::Record comm;
  comm.header.type = PERF_RECORD_COMM;
  comm.body = CommRecord{pid, tid, kMockComm};
  comm.sample_id = sid;
  std::vector<std::byte> bytes;
  EncodeRecord(s.dummy_layout, comm, &bytes);
  s.perf_data->Synthesized(std::move(bytes));
  const uint64_t page = 4096;
  for (size_t i = 0; i < sections.size(); ++i) {
    perftest::Record m;
    m.header.type = PERF_RECORD_MMAP2;
    m.header.misc = PERF_RECORD_MISC_USER;
    Mmap2Record body;
    body.pid = pid;
    body.tid = tid;
    body.addr = sections[i].address / page * page;
    body.len = (sections[i].address + sections[i].bytes.size() - body.addr + page - 1) / page * page;
    body.pgoff = ElfCodeOffset(sections, i) / page * page;
    body.maj = major(st.st_dev);
    body.min = minor(st.st_dev);
    body.ino = st.st_ino;
    body.prot = PROT_READ | PROT_EXEC;
    body.flags = MAP_PRIVATE;
    body.filename = elf;
    m.body = body;
    m.sample_id = sid;
    std::vector<std::byte> mb;
    EncodeRecord(s.dummy_layout, m, &mb);
    s.perf_data->Synthesized(std::move(mb));
  }
  perf_data::BuildIdRecord b;
  b.misc = PERF_RECORD_MISC_USER;
  b.pid = -1;  // perf's HOST_KERNEL_ID: the host machine
  b.build_id.assign(reinterpret_cast<const std::byte*>(id->data()),
                    reinterpret_cast<const std::byte*>(id->data()) + id->size());
  b.filename = elf;
  info->build_ids.push_back(std::move(b));
  return Result<void>::Ok();
}

// A real command's recording: the traced task, the kernel's TSC conversion
// (the PT event's perf_event_mmap_page, read under its lock as perf's
// perf_read_tsc_conversion() does) and the build id of each file the
// side-band mapped executable (those without one are left out, as perf
// leaves them out of HEADER_BUILD_ID).
void KernelSideband(const Session& s, pid_t child, PerfDataInfo* info) {
  info->pid = info->tid = child;
  const volatile perf_event_mmap_page& pg = s.pt_rb->page();
  UserTimeFields f;
  for (int tries = 0; tries < 1000; ++tries) {
    const uint32_t seq = pg.lock;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    f = UserTimeFieldsOf(pg);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (pg.lock == seq && (seq & 1) == 0) break;
  }
  info->intel_pt.time_shift = f.time_shift;
  info->intel_pt.time_mult = f.time_mult;
  info->intel_pt.time_zero = f.time_zero;
  info->intel_pt.cap_user_time_zero = f.cap_user_time_zero ? 1 : 0;
  for (const std::string& spec : s.images) {
    // ADDR:FILE:PGOFF:LEN (ImageSpecOf).
    const size_t first = spec.find(':'), last = spec.rfind(':', spec.rfind(':') - 1);
    const std::string file = spec.substr(first + 1, last - first - 1);
    if (std::any_of(info->build_ids.begin(), info->build_ids.end(),
                    [&](const perf_data::BuildIdRecord& r) { return r.filename == file; })) {
      continue;
    }
    Result<std::vector<uint8_t>> id = ReadBuildId(file);
    if (!id.ok()) continue;
    perf_data::BuildIdRecord b;
    b.misc = PERF_RECORD_MISC_USER;
    b.pid = -1;
    b.build_id.assign(reinterpret_cast<const std::byte*>(id->data()),
                      reinterpret_cast<const std::byte*>(id->data()) + id->size());
    b.filename = file;
    info->build_ids.push_back(std::move(b));
  }
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
    MockWithControl m = MakeMockBackendWithControl(std::move(*p), {.pt_trace = mock::PtSimTraceModel(/*record_insns=*/o.truth)});
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
  // perf record's: evsel__config() sets IP and TID on every event (neither
  // event here samples, so IP changes no record; perf script wants it to
  // print the samples it synthesizes from the trace).
  attr.sample_type =
      PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
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
  s.control = control;
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

  const CaptureTiming timing = Timing(control, *pt, attr, s.pt->fd());
  if (o.format == "ptcap") {
    s.ptcap.emplace(o.output);
    if (!s.ptcap->ok()) return close_go(), Fail<CaptureSummary>(errno == 0 ? EIO : errno, "cannot write " + o.output);
    WriteMeta(*s.ptcap, o, b, *pt, attr, s.aux->size(), timing);
  } else {
    Result<uint64_t> pt_id = s.pt->Id();
    if (!pt_id.ok()) return close_go(), R::FailureFrom(pt_id);
    Result<uint64_t> dummy_id = s.dummy->Id();
    if (!dummy_id.ok()) return close_go(), R::FailureFrom(dummy_id);
    s.perf_data.emplace(PerfDataEvent{attr, *pt_id, o.event}, PerfDataEvent{dummy, *dummy_id, "dummy:u"});
  }
  s.pt_layout = SampleLayout::FromAttr(attr);

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
      Drain(s, &sum);
      if (sum.truncated != truncated && !o.snapshot) (void)s.pt->Enable();
    }
    (void)s.pt->Disable();
    (void)s.dummy->Disable();
    Drain(s, &sum);
    if (o.truth) {
      if (Result<void> r = WriteMockTruth(*control, s, o.output, &sum); !r.ok()) return R::FailureFrom(r);
    }
  } else {
    if (!start_child()) return Fail<CaptureSummary>(EIO, "cannot start the command (pipe write)");
    for (;;) {
      std::array<pollfd, 2> fds = {pollfd{s.pt->fd(), POLLIN, 0}, pollfd{s.dummy->fd(), POLLIN, 0}};
      (void)b.Poll(fds, 100);
      const uint64_t truncated = sum.truncated;
      Drain(s, &sum);
      // A full AUX area disabled the event (TRUNCATED, perf_aux_output_end());
      // the drain freed the space: trace on, with a gap.
      if (sum.truncated != truncated && o.snapshot == false) (void)s.pt->Enable();
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) {
        reaper.pid = 0;
        break;
      }
    }
    Drain(s, &sum);
    sum.exit_status = status;
    if (Result<void> r = WriteKernelTrace(s, o.output, &sum); !r.ok()) return R::FailureFrom(r);
  }
  if (s.ptcap && !s.ptcap->ok()) return Fail<CaptureSummary>(EIO, "write " + o.output);
  if (s.perf_data) {
    PerfDataInfo info;
    info.intel_pt = PtInfoOf(*pt, attr, dummy, o, timing);
    info.nr_cpus = static_cast<uint32_t>(std::max(1, b.Machine().ncpus));
    info.cmdline = o.cmdline;
    if (control != nullptr) {
      if (Result<void> r = SynthesizeMockTask(*control, s, o.output, &info, &sum); !r.ok()) return R::FailureFrom(r);
    } else {
      KernelSideband(s, child, &info);
    }
    if (Result<void> r = s.perf_data->Write(o.output, info); !r.ok()) return R::FailureFrom(r);
  }
  return R::Ok(sum, fmt::format("pt record -> {}", o.output));
}

}  // namespace perftest::pt
