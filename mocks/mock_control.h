// MockControl: the controls of a MockBackend that no call of the Backend seam
// reaches — machine state that on a real system belongs to someone else than
// perf (KVM's VMX operation), and the simulated hardware's own record of what
// it did (the PT ground truth). Only the mock has them, so only the mock's own
// unit tests (mocks/*_test.cc) and the tools that drive the mock (tools/pt)
// use them; a conformance case (suites/) never does, as it must run unchanged
// on a kernel. A behaviour that needs a control is a mock unit test.
//
// A test gets the control together with the backend, from the factory; there
// is no way from a `Backend&` to it:
//
//   MockWithControl m = MakeMockBackendWithControl(*LoadProfile("x86_64-intel"),
//                                                  {.pt_trace = mock::PtSimTraceModel()});
//   Backend& b = *m.backend;
//   ... open an intel_pt event, map its AUX area, enable, run ...
//   m.control->SetVmxOperation(true);              // PERF_AUX_FLAG_PARTIAL from here
//   const pt_sim::GroundTruth* t = m.control->PtGroundTruth(pt_fd);
#pragma once

#include <sys/types.h>

#include <signal.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "mocks/mock_backend.h"
#include "mocks/profile.h"

namespace perftest::pt_sim {
struct GroundTruth;
}  // namespace perftest::pt_sim

namespace perftest {

class MockControl {
 public:
  virtual ~MockControl() = default;

  // KVM turning VMX operation on or off on every CPU, as
  // arch/x86/events/intel/pt.c intel_pt_handle_vmx() sees it on a CPU whose PT
  // cannot trace in VMX operation (pt_pmu.vmx clear: VMXON clears
  // RTIT_CTL.TraceEn): the running intel_pt events' open AUX transactions get
  // PERF_AUX_FLAG_PARTIAL and no trace is written while it is on; an event
  // enabled meanwhile writes nothing (pt_config_start()). On a kernel this is
  // KVM's doing (creating a VM), never a perf call.
  virtual void SetVmxOperation(bool on) = 0;

  // The ground truth of intel_pt event `fd`'s simulated trace (every
  // instruction, event and packet the simulated hardware produced:
  // mocks/pt_sim/ground_truth.h), valid while the event is open; nullptr for
  // another fd, another PMU, or a trace source that keeps none (the
  // PtTraceFiller of a backend without the PT model, mocks/intel_pt_pmu.h).
  virtual const pt_sim::GroundTruth* PtGroundTruth(int fd) = 0;

  // tools/exec (`perftest exec`) serves a real task with this backend: the
  // simulated current task takes that task's pid, tid and comm, so
  // perf_event_open(pid = tid) finds it and records carry the real ids.
  // Call before the first perf_event_open() for it. The user page then says
  // cap_user_rdpmc = 0 and no cap_user_time*: the real task's RDPMC and
  // RDTSC would read the host's counters, not the model's.
  virtual void ServeTask(pid_t pid, pid_t tid, std::string comm) = 0;
  // The served task called execve(2) of `path`: perf_event_exec()
  // (enable_on_exec, remove_on_exec) and perf_event_comm(exec = true), without
  // the simulated program's page faults and text MMAP that
  // Workload::Exec adds (the real program's are counted from its figures).
  virtual void ServedExec(const std::string& path) = 0;
  // Where an interrupt finds the served task now: its user-mode ip and the
  // return addresses of its frame-pointer chain, innermost first. Samples
  // from here on carry them (ip, and the user part of PERF_SAMPLE_CALLCHAIN
  // as perf_callchain_user() walks it), instead of the simulated addresses.
  virtual void SetServedContext(uint64_t ip, std::vector<uint64_t> callers) = 0;
  // The served task mapped a file (or anonymous memory, filename "//anon"):
  // perf_event_mmap() writes MMAP/MMAP2 records to the events that ask.
  struct ServedMapping {
    uint64_t addr = 0, len = 0, pgoff = 0;
    bool exec = true;
    uint32_t maj = 0, min = 0;
    uint64_t ino = 0;
    std::string filename;
  };
  virtual void ServedMmap(const ServedMapping& m) = 0;
  // The served task forked (or cloned a thread): perf_event_fork()'s FORK
  // (and NAMESPACES) records naming the child.
  virtual void ServedFork(pid_t child_pid, pid_t child_tid) = 0;
  // The served task exited: perf_event_exit_task()'s EXIT record.
  virtual void ServedExit() = 0;
  // The served task renamed itself (prctl(PR_SET_NAME)): COMM, exec = false.
  virtual void ServedComm(const std::string& comm) = 0;
  // Where the served task's overflow signals go (SIGIO/F_SETSIG to an owner
  // that is the served task, and perf_sigtrap()'s SIGTRAP): `sink` gets the
  // target (pid, tid) and the kernel's siginfo, which only a tracer can
  // deliver as is (PTRACE_SETSIGINFO: a process may not queue si_code >= 0
  // to another). Without a sink a served task gets none.
  using SignalSink = std::function<void(pid_t pid, pid_t tid, const siginfo_t& info)>;
  virtual void SetSignalSink(SignalSink sink) = 0;
};

// A MockBackend and its controls; `control` belongs to `backend` and is valid
// while it lives.
struct MockWithControl {
  std::unique_ptr<Backend> backend;
  MockControl* control = nullptr;
};

// MakeMockBackend() with the controls (mocks/mock_backend.h).
MockWithControl MakeMockBackendWithControl(MockProfile profile, MockModels models = {});

}  // namespace perftest
