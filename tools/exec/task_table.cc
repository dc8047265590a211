#include "tools/exec/task_table.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace perftest::exec {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

uint64_t StatusField(const std::string& text, const char* key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + std::strlen(key), nullptr, 10);
}

}  // namespace

std::optional<TaskFigures> ReadFigures(pid_t tid) {
  TaskFigures f;
  std::string schedstat, stat, status, sched;
  const std::string dir = fmt::format("/proc/{}/task/{}/", tid, tid);
  if (!ReadFile(dir + "schedstat", &schedstat) || !ReadFile(dir + "stat", &stat)) return std::nullopt;
  f.cpu_ns = std::strtoull(schedstat.c_str(), nullptr, 10);
  // stat: "pid (comm) state ppid ..." — comm may hold spaces and parentheses:
  // fields count from the last ')'. minflt is field 10, majflt field 12.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; fields >> field; ++i) {
    if (i == 10) f.faults += std::strtoull(field.c_str(), nullptr, 10);
    if (i == 12) {
      f.faults += std::strtoull(field.c_str(), nullptr, 10);
      break;
    }
  }
  if (ReadFile(dir + "status", &status)) {
    f.switches = StatusField(status, "\nvoluntary_ctxt_switches:") + StatusField(status, "\nnonvoluntary_ctxt_switches:");
  }
  if (ReadFile(dir + "sched", &sched)) {
    const size_t at = sched.find("se.nr_migrations");
    if (at != std::string::npos) {
      const size_t colon = sched.find(':', at);
      if (colon != std::string::npos) f.migrations = std::strtoull(sched.c_str() + colon + 1, nullptr, 10);
    }
  }
  return f;
}

void TaskTable::Add(pid_t tid, pid_t tgid, pid_t parent) {
  TrackedTask& t = tasks_[tid];
  const bool seen = t.tid == tid && t.seen_stop;  // its SIGSTOP may come before the parent's event
  t = TrackedTask{tid, tgid, parent, true, seen, {}};
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

TaskFigures TaskTable::SubtreeFigures(pid_t root, std::optional<TaskFigures> (*read)(pid_t)) const {
  TaskFigures sum;
  for (const auto& [tid, t] : tasks_) {
    if (!InSubtree(tid, root)) continue;
    if (!t.alive) {
      sum += t.final_figures;
    } else if (std::optional<TaskFigures> f = read(tid)) {
      sum += *f;
    }
  }
  return sum;
}

TaskFigures TaskTable::AllFigures() const {
  TaskFigures sum;
  for (const auto& [tid, t] : tasks_) {
    if (!t.alive) {
      sum += t.final_figures;
    } else if (std::optional<TaskFigures> f = ReadFigures(tid)) {
      sum += *f;
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
