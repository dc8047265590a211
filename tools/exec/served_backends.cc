#include "tools/exec/served_backends.h"

#include <algorithm>
#include <cstdint>

#include "mocks/mock_backend.h"

namespace perftest::exec {
namespace {

// What Workload::TouchPages costs per page in the mock (mock_workloads.cc kMinTouchNs).
constexpr uint64_t kTouchNs = 1000;

}  // namespace

ServedBackends::ServedBackends(MockProfile profile, const TaskTable* tasks, std::chrono::microseconds min_interval)
    : profile_(std::move(profile)), tasks_(tasks), min_interval_(min_interval),
      machine_backend_(MakeMockBackend(profile_)) {}

int ServedBackends::ForTask(pid_t tid, pid_t tgid, const std::string& comm) {
  auto it = by_tid_.find(tid);
  if (it != by_tid_.end()) return it->second;
  Served s;
  s.tid = tid;
  s.mock = MakeMockBackendWithControl(profile_);
  if (tid != -1) {
    s.mock.control->ServeTask(tgid, tid, comm);
    if (sink_) s.mock.control->SetSignalSink(sink_);
  }
  // Counting starts now: what the task did before is not the events'.
  s.fed = FiguresOf(s);
  s.last_sync = std::chrono::steady_clock::now();
  s.exits_seen = exits_;
  backends_.push_back(std::move(s));
  const int id = static_cast<int>(backends_.size() - 1);
  by_tid_[tid] = id;
  return id;
}

void ServedBackends::Feed(Served& s, const TaskFigures& now) {
  auto delta = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  const uint64_t cpu = delta(now.cpu_ns, s.fed.cpu_ns);
  const uint64_t faults = delta(now.faults, s.fed.faults);
  const uint64_t switches = delta(now.switches, s.fed.switches);
  s.fed = TaskFigures{std::max(now.cpu_ns, s.fed.cpu_ns), std::max(now.faults, s.fed.faults),
                      std::max(now.switches, s.fed.switches), std::max(now.migrations, s.fed.migrations)};
  Backend& b = *s.mock.backend;
  const uint64_t fault_ns = faults * kTouchNs;
  if (cpu > fault_ns) (void)b.RunWorkload(Workload::Spin(std::chrono::nanoseconds(cpu - fault_ns)));
  if (faults > 0) (void)b.RunWorkload(Workload::TouchPages(faults));
  if (switches > 0) (void)b.RunWorkload(Workload::Sleep(switches, std::chrono::nanoseconds(0)));
}

bool ServedBackends::Counts(int id, pid_t tid) const {
  const pid_t t = TaskOf(id);
  return t == -1 || tasks_->InSubtree(tid, t);
}

void ServedBackends::Sync(int id, bool force) {
  Served& s = backends_.at(static_cast<size_t>(id));
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - s.last_sync < min_interval_ && s.exits_seen == exits_) return;
  s.last_sync = now;
  s.exits_seen = exits_;
  Feed(s, FiguresOf(s));
}

TaskFigures ServedBackends::FiguresOf(const Served& s) const {
  return s.tid == -1 ? tasks_->AllFigures() : tasks_->SubtreeFigures(s.tid, s.inherit_after);
}

void ServedBackends::Inherit(int id) {
  Served& s = backends_.at(static_cast<size_t>(id));
  if (s.inherit_events++ > 0) return;
  Sync(id, /*force=*/true);
  s.inherit_after = tasks_->Seq();
  s.fed = FiguresOf(s);  // the tasks counted from now on start from what they have done
}

void ServedBackends::Uninherit(int id) {
  Served& s = backends_.at(static_cast<size_t>(id));
  if (s.inherit_events == 0 || --s.inherit_events > 0) return;
  Sync(id, /*force=*/true);
  s.inherit_after = UINT64_MAX;
  s.fed = FiguresOf(s);
}

void ServedBackends::Exec(pid_t tid, const std::string& path) {
  for (size_t i = 0; i < backends_.size(); ++i) {
    if (backends_[i].tid == -1 || tasks_->InSubtree(tid, backends_[i].tid)) {
      backends_[i].last_sync = {};
      Sync(static_cast<int>(i));
    }
  }
  auto it = by_tid_.find(tid);
  if (it != by_tid_.end()) backends_[static_cast<size_t>(it->second)].mock.control->ServedExec(path);
}

}  // namespace perftest::exec
