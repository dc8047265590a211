// The program's view of the machine under a profile: the PMUs it discovers
// in /sys/bus/event_source/devices (type, format/*, events/*, caps/*) are
// the profile's, without privilege and without changing the host.
//
//   std::string why;
//   if (!EnterSysfsView(backend.Machine(), &why)) warn(why);   // then fork the program
//
// How: the tracer enters a mount namespace of its own before it forks the
// program (unshare(CLONE_NEWNS); an unprivileged tracer first enters a user
// namespace that maps its own uid and gid, and drops the capabilities it got
// there once the mounts are made, so the program, which inherits both
// namespaces, may still pidfd_getfd(2) from it: cap_ptrace_access_check()).
// Mount propagation is made private, then a tmpfs is mounted on
// /sys/bus/event_source/devices and filled with the profile's PMU
// directories (WritePmuTree). The host's mounts are untouched.
#pragma once

#include <string>
#include <vector>

#include "harness/backend.h"

namespace perftest::exec {

// Writes one directory per PMU under `root` (which exists): <pmu>/type,
// <pmu>/format/<term>, <pmu>/events/<alias>, <pmu>/caps/<name>, each
// holding the profile's text and a newline, as sysfs shows them
// (Documentation/ABI/testing/sysfs-bus-event_source-devices-*). Returns
// false with `why` on the first file that cannot be written.
bool WritePmuTree(const std::string& root, const std::vector<Pmu>& pmus, std::string* why);

// Enters the view (see above). False with `why` when a namespace or mount
// cannot be made (e.g. EPERM: user namespaces disabled); the caller goes on
// with the host's view.
bool EnterSysfsView(const MachineInfo& machine, std::string* why);

}  // namespace perftest::exec
