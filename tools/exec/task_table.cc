#include "tools/exec/task_table.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace perftest::exec {
namespace {

uint64_t StatusField(const std::string& text, const char* key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + std::strlen(key), nullptr, 10);
}

}  // namespace

namespace {

// The open /proc files of a task, re-read with pread(2) at offset 0 (a seq
// file regenerates its text): a read costs one syscall per file, not three.
struct ProcFiles {
  int schedstat = -1, stat = -1, status = -1;
  void Close() {
    for (int* fd : {&schedstat, &stat, &status}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }
};

bool ReadAt(int fd, std::string* out) {
  char buf[4096];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  out->assign(buf, static_cast<size_t>(n));
  return true;
}

}  // namespace

std::optional<TaskFigures> ReadFigures(pid_t tid) {
  static std::map<pid_t, ProcFiles> files;
  ProcFiles& f = files[tid];
  const std::string dir = fmt::format("/proc/{}/task/{}/", tid, tid);
  if (f.schedstat < 0) {
    f.schedstat = open((dir + "schedstat").c_str(), O_RDONLY | O_CLOEXEC);
    f.stat = open((dir + "stat").c_str(), O_RDONLY | O_CLOEXEC);
    f.status = open((dir + "status").c_str(), O_RDONLY | O_CLOEXEC);
  }
  TaskFigures out;
  std::string schedstat, stat, status;
  if (f.schedstat < 0 || f.stat < 0 || !ReadAt(f.schedstat, &schedstat) || !ReadAt(f.stat, &stat)) {
    f.Close();
    files.erase(tid);  // gone (or its pid reused: the next read opens afresh)
    return std::nullopt;
  }
  out.cpu_ns = std::strtoull(schedstat.c_str(), nullptr, 10);
  // stat: "pid (comm) state ppid ..." — comm may hold spaces and parentheses:
  // fields count from the last ')'. minflt is field 10, majflt field 12.
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return std::nullopt;
  const char* p = stat.c_str() + close_paren + 2;  // field 3, state
  for (int field = 3; field <= 12 && *p != '\0'; ++field) {
    if (field == 10 || field == 12) out.faults += std::strtoull(p, nullptr, 10);
    while (*p != '\0' && *p != ' ') ++p;  // the next space-separated field
    while (*p == ' ') ++p;
  }
  if (f.status >= 0 && ReadAt(f.status, &status)) {
    out.switches = StatusField(status, "\nvoluntary_ctxt_switches:") + StatusField(status, "\nnonvoluntary_ctxt_switches:");
  }
  return out;
}

void TaskTable::Add(pid_t tid, pid_t tgid, pid_t parent) {
  TrackedTask& t = tasks_[tid];
  const bool seen = t.tid == tid && t.seen_stop;  // its SIGSTOP may come before the parent's event
  t = TrackedTask{tid, tgid, parent, true, seen, 0, ++seq_, {}};
}

TrackedTask* TaskTable::Find(pid_t tid) {
  auto it = tasks_.find(tid);
  return it == tasks_.end() ? nullptr : &it->second;
}

const TrackedTask* TaskTable::Find(pid_t tid) const {
  auto it = tasks_.find(tid);
  return it == tasks_.end() ? nullptr : &it->second;
}

void TaskTable::Exited(pid_t tid, const TaskFigures& final_figures) {
  TrackedTask* t = Find(tid);
  if (t == nullptr || !t->alive) return;
  t->alive = false;
  t->final_figures = final_figures;
}

void TaskTable::ExecFromThread(pid_t old_tid, pid_t tgid) {
  if (old_tid == tgid) return;
  TrackedTask* t = Find(old_tid);
  if (t != nullptr) t->alive = false;
}

bool TaskTable::InSubtree(pid_t tid, pid_t ancestor) const {
  for (int depth = 0; tid != 0 && depth < 4096; ++depth) {
    if (tid == ancestor) return true;
    const TrackedTask* t = Find(tid);
    if (t == nullptr) return false;
    tid = t->parent;
  }
  return false;
}

TaskFigures TaskTable::SubtreeFigures(pid_t root) const { return SubtreeFigures(root, &ReadFigures); }

namespace {

// The program's own figures: the switches the tracer's stops caused taken out.
TaskFigures WithoutStops(TaskFigures f, uint64_t stops) {
  f.switches = f.switches > stops ? f.switches - stops : 0;
  return f;
}

}  // namespace

TaskFigures TaskTable::SubtreeFigures(pid_t root, std::optional<TaskFigures> (*read)(pid_t)) const {
  return SubtreeFigures(root, 0, read);
}

TaskFigures TaskTable::SubtreeFigures(pid_t root, uint64_t after, std::optional<TaskFigures> (*read)(pid_t)) const {
  if (read == nullptr) read = &ReadFigures;
  TaskFigures sum;
  for (const auto& [tid, t] : tasks_) {
    if (!InSubtree(tid, root) || (tid != root && t.seq <= after)) continue;
    if (!t.alive) {
      sum += WithoutStops(t.final_figures, t.stops);
    } else if (std::optional<TaskFigures> f = read(tid)) {
      sum += WithoutStops(*f, t.stops);
    }
  }
  return sum;
}

TaskFigures TaskTable::AllFigures() const {
  TaskFigures sum;
  for (const auto& [tid, t] : tasks_) {
    if (!t.alive) {
      sum += WithoutStops(t.final_figures, t.stops);
    } else if (std::optional<TaskFigures> f = ReadFigures(tid)) {
      sum += WithoutStops(*f, t.stops);
    }
  }
  return sum;
}

std::vector<pid_t> TaskTable::Live() const {
  std::vector<pid_t> out;
  for (const auto& [tid, t] : tasks_) {
    if (t.alive) out.push_back(tid);
  }
  return out;
}

}  // namespace perftest::exec
