#include "tools/exec/fd_table.h"

namespace perftest::exec {

const PerfFd* FdTable::Find(pid_t tgid, int fd) const {
  auto p = procs_.find(tgid);
  if (p == procs_.end()) return nullptr;
  auto f = p->second.find(fd);
  return f == p->second.end() ? nullptr : &f->second;
}

PerfFd* FdTable::Find(pid_t tgid, int fd) {
  return const_cast<PerfFd*>(static_cast<const FdTable*>(this)->Find(tgid, fd));
}

int FdTable::Allocate(pid_t tgid) const {
  auto p = procs_.find(tgid);
  for (int fd = range_.base; fd < range_.base + range_.size; ++fd) {
    if (p == procs_.end() || p->second.count(fd) == 0) return fd;
  }
  return -1;
}

void FdTable::Insert(pid_t tgid, int fd, PerfFd e) { procs_[tgid][fd] = e; }

PerfFd FdTable::Erase(pid_t tgid, int fd) {
  PerfFd out;
  auto p = procs_.find(tgid);
  if (p == procs_.end()) return out;
  auto f = p->second.find(fd);
  if (f == p->second.end()) return out;
  out = f->second;
  p->second.erase(f);
  if (p->second.empty()) procs_.erase(p);
  return out;
}

int FdTable::References(int backend, int tracer_fd) const {
  int n = 0;
  for (const auto& [tgid, fds] : procs_) {
    for (const auto& [fd, e] : fds) n += e.backend == backend && e.tracer_fd == tracer_fd;
  }
  return n;
}

void FdTable::Fork(pid_t parent, pid_t child) {
  auto p = procs_.find(parent);
  if (p == procs_.end() || parent == child) return;
  procs_[child] = p->second;
}

std::vector<PerfFd> FdTable::Exec(pid_t tgid) {
  std::vector<PerfFd> out;
  auto p = procs_.find(tgid);
  if (p == procs_.end()) return out;
  for (auto it = p->second.begin(); it != p->second.end();) {
    if (it->second.cloexec) {
      out.push_back(it->second);
      it = p->second.erase(it);
    } else {
      ++it;
    }
  }
  if (p->second.empty()) procs_.erase(p);
  return out;
}

std::vector<PerfFd> FdTable::ReleaseProcess(pid_t tgid) {
  std::vector<PerfFd> out;
  auto p = procs_.find(tgid);
  if (p == procs_.end()) return out;
  for (const auto& [fd, e] : p->second) out.push_back(e);
  procs_.erase(p);
  return out;
}

std::vector<PerfFd> FdTable::CloseRange(pid_t tgid, unsigned first, unsigned last) {
  std::vector<PerfFd> out;
  auto p = procs_.find(tgid);
  if (p == procs_.end()) return out;
  for (auto it = p->second.begin(); it != p->second.end();) {
    const auto fd = static_cast<unsigned>(it->first);
    if (fd >= first && fd <= last) {
      out.push_back(it->second);
      it = p->second.erase(it);
    } else {
      ++it;
    }
  }
  if (p->second.empty()) procs_.erase(p);
  return out;
}

const std::map<int, PerfFd>* FdTable::Process(pid_t tgid) const {
  auto p = procs_.find(tgid);
  return p == procs_.end() ? nullptr : &p->second;
}

}  // namespace perftest::exec
