#include "tools/profile/ring_sampler.h"

#include <dirent.h>
#include <poll.h>

#include <cstdlib>
#include <variant>

#include "harness/attr.h"

namespace perftest::profile {

Result<std::vector<pid_t>> ThreadsOf(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return Result<std::vector<pid_t>>::Failure(ESRCH, "opendir(" + dir + ")");
  std::vector<pid_t> tids;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  return Result<std::vector<pid_t>>::Ok(std::move(tids));
}

Result<std::vector<std::pair<pid_t, int>>> EventTargets(Backend& backend, const SamplerOptions& o) {
  std::vector<std::pair<pid_t, int>> targets;  // {pid, cpu}
  const int ncpus = backend.Machine().ncpus;
  if (o.pid > 0) {
    std::vector<pid_t> tids{o.pid};
    if (backend.kind() == "kernel") {
      Result<std::vector<pid_t>> t = ThreadsOf(o.pid);
      if (!t.ok()) return Result<std::vector<std::pair<pid_t, int>>>::Failure(t.error(), t.call());
      tids = *t;
    }
    // One event per thread and CPU: perf_mmap() refuses an inherited event
    // with cpu == -1 (EINVAL), and inherit follows threads created later.
    for (pid_t t : tids) {
      for (int cpu = 0; cpu < ncpus; ++cpu) targets.emplace_back(t, cpu);
    }
  } else {
    for (int cpu = 0; cpu < ncpus; ++cpu) targets.emplace_back(-1, cpu);
  }
  return Result<std::vector<std::pair<pid_t, int>>>::Ok(std::move(targets));
}

RingSampler::RingSampler(Backend& backend, SamplerOptions options, CommLookup comm_of, KthreadLookup is_kthread)
    : backend_(backend),
      opt_(options),
      comm_of_(std::move(comm_of)),
      is_kthread_(std::move(is_kthread)),
      counts_(options.stack_storage_size) {}

perf_event_attr RingSampler::Attr(const SamplerOptions& o) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  a.freq = 1;
  a.sample_freq = o.frequency;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;
  a.exclude_callchain_user = o.kernel_stacks_only ? 1 : 0;
  a.exclude_callchain_kernel = o.user_stacks_only ? 1 : 0;
  a.sample_max_stack = o.max_stack;
  a.comm = 1;
  a.sample_id_all = 1;
  a.disabled = 1;
  a.wakeup_events = 0;
  a.watermark = 1;
  a.wakeup_watermark = 1;  // refined in Open() to a quarter of the buffer
  a.inherit = o.pid > 0 ? 1 : 0;
  if (o.dwarf) {
    a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = DwarfUnwinder::SampleRegsUser();
    a.sample_stack_user = o.stack_dump_size;
    a.exclude_callchain_user = 1;
  }
  if (o.sideband) {
    a.sample_type |= PERF_SAMPLE_TIME;
    a.mmap = 1;
    a.mmap2 = 1;
    a.task = 1;
    a.mmap_data = o.dwarf ? 1 : 0;  // the files' read-only segments, for perf's unwinder (perf_data_output.h)
  }
  return a;
}

Result<void> RingSampler::Open() {
  perf_event_attr attr = Attr(opt_);
  attr.wakeup_watermark = static_cast<uint32_t>(opt_.data_pages * backend_.Machine().page_size / 4);
  layout_ = SampleLayout::FromAttr(attr);
  attr_ = attr;
  Result<std::vector<std::pair<pid_t, int>>> targets = EventTargets(backend_, opt_);
  if (!targets.ok()) return Result<void>::Failure(targets.error(), targets.call());
  for (auto [pid, cpu] : *targets) {
    Result<Event> ev = Event::Open(backend_, attr, pid, cpu);
    if (!ev.ok()) {
      if (opt_.pid > 0 && ev.error() == ESRCH) continue;  // a thread that exited meanwhile
      return Result<void>::Failure(ev.error(), ev.call());
    }
    Result<RingBuffer> rb = RingBuffer::Map(backend_, ev->fd(), opt_.data_pages);
    if (!rb.ok()) return Result<void>::Failure(rb.error(), rb.call());
    events_.push_back(std::move(*ev));
    rings_.push_back(std::move(*rb));
  }
  if (events_.empty()) return Result<void>::Failure(ESRCH, "no thread of pid " + std::to_string(opt_.pid));
  return Result<void>::Ok();
}

Result<void> RingSampler::Enable() {
  for (Event& e : events_) {
    if (Result<void> r = e.Enable(); !r.ok()) return r;
  }
  return Result<void>::Ok();
}

Result<void> RingSampler::Disable() {
  for (Event& e : events_) {
    if (Result<void> r = e.Disable(); !r.ok()) return r;
  }
  return Result<void>::Ok();
}

void RingSampler::Wait(int timeout_ms) {
  std::vector<pollfd> fds;
  for (const Event& e : events_) fds.push_back(pollfd{e.fd(), POLLIN, 0});
  (void)backend_.Poll(fds, timeout_ms);
}

void RingSampler::Drain() {
  RecordViewParser parser(layout_);
  for (RingBuffer& rb : rings_) {
    rb.Begin();
    while (std::optional<RawRecord> raw = rb.Next()) {
      // Samples are read in place (zero-copy views); the rare side-band
      // records are parsed into owned records.
      const RecordView* v = parser.Parse(raw->bytes);
      if (v == nullptr) {
        ++malformed_;
        continue;
      }
      if (v->is_sample()) {
        if (HandleSample(v->sample) && on_record_) on_record_(v->bytes);
        continue;
      }
      if (on_record_) on_record_(v->bytes);
      if (v->header.type != PERF_RECORD_COMM && v->header.type != PERF_RECORD_LOST) continue;
      Result<Record> rec = ParseRecord(layout_, v->bytes);
      if (!rec.ok()) {
        ++malformed_;
      } else if (const auto* c = std::get_if<CommRecord>(&rec->body)) {
        comms_[static_cast<pid_t>(c->tid)] = c->comm;
      } else if (const auto* l = std::get_if<LostRecord>(&rec->body)) {
        lost_ += l->lost;
      }
    }
    if (rb.error()) ++malformed_;
    rb.Consume();
  }
}

std::string RingSampler::Comm(pid_t pid, pid_t tid, uint32_t cpu) {
  auto it = comms_.find(tid);
  if (it != comms_.end() && !(tid == 0)) return it->second;
  std::string c = comm_of_(pid, tid, cpu);
  if (tid != 0) comms_[tid] = c;
  return c;
}

std::vector<uint64_t> RingSampler::ids() {
  std::vector<uint64_t> out;
  for (Event& e : events_) {
    if (Result<uint64_t> id = e.Id(); id.ok()) out.push_back(*id);
  }
  return out;
}

bool RingSampler::HandleSample(const SampleView& s) {
  ++samples_;
  const pid_t pid = static_cast<pid_t>(s.pid);
  const pid_t tid = static_cast<pid_t>(s.tid);
  if (opt_.user_threads_only || opt_.kernel_threads_only) {
    auto it = kthreads_.find(pid);
    if (it == kthreads_.end()) it = kthreads_.emplace(pid, pid == 0 || is_kthread_(pid)).first;
    if (opt_.user_threads_only && it->second) return false;
    if (opt_.kernel_threads_only && !it->second) return false;
  }
  if (on_new_process_ && pid > 0 && seen_.emplace(pid, true).second) on_new_process_(pid);
  SplitStack st = SplitCallchain(s.callchain);
  if (opt_.dwarf && !opt_.kernel_stacks_only) st.user = unwinder_.Unwind(pid, tid, s.regs_user, s.stack_user, opt_.max_stack);
  counts_.Add(pid, Comm(pid, tid, s.cpu), st.user, st.kernel, !opt_.kernel_stacks_only,
              !opt_.user_stacks_only);
  return true;
}

}  // namespace perftest::profile
