#include "tools/exec/sysfs_view.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace perftest::exec {
namespace {

bool WriteText(const std::string& path, const std::string& text, std::string* why) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) {
    *why = "cannot write " + path;
    return false;
  }
  return true;
}

bool MakeDir(const std::string& path, std::string* why) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    *why = "mkdir " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool WriteDir(const std::string& dir, const std::map<std::string, std::string>& files, std::string* why) {
  if (!MakeDir(dir, why)) return false;
  for (const auto& [name, text] : files) {
    if (!WriteText(dir + "/" + name, text + "\n", why)) return false;
  }
  return true;
}

bool DropCapabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  return syscall(SYS_capset, &header, data) == 0;
}

}  // namespace

bool WritePmuTree(const std::string& root, const std::vector<Pmu>& pmus, std::string* why) {
  for (const Pmu& p : pmus) {
    const std::string dir = root + "/" + p.name;
    if (!MakeDir(dir, why) || !WriteText(dir + "/type", std::to_string(p.type) + "\n", why)) return false;
    if (!WriteDir(dir + "/format", p.format, why) || !WriteDir(dir + "/events", p.events, why) ||
        !WriteDir(dir + "/caps", p.caps, why)) {
      return false;
    }
  }
  return true;
}

bool EnterSysfsView(const MachineInfo& machine, std::string* why) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  const bool root = uid == 0;
  if (unshare(root ? CLONE_NEWNS : (CLONE_NEWUSER | CLONE_NEWNS)) != 0) {
    *why = std::string("unshare(") + (root ? "CLONE_NEWNS" : "CLONE_NEWUSER|CLONE_NEWNS") + "): " + std::strerror(errno);
    return false;
  }
  if (!root) {
    if (!WriteText("/proc/self/setgroups", "deny", why) ||
        !WriteText("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1\n", why) ||
        !WriteText("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1\n", why)) {
      return false;
    }
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *why = std::string("mount --make-rprivate /: ") + std::strerror(errno);
    return false;
  }
  const std::string dir = "/sys/bus/event_source/devices";
  if (mount("perftest-exec", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") != 0) {
    *why = "mount tmpfs on " + dir + ": " + std::strerror(errno);
    return false;
  }
  const bool ok = WritePmuTree(dir, machine.pmus, why);
  mount(nullptr, dir.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr);
  if (!root && !DropCapabilities()) {
    *why = std::string("capset: ") + std::strerror(errno);
    return false;
  }
  return ok;
}

}  // namespace perftest::exec
