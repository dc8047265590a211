// Symbolizer: addresses of a callchain to function names, as profile.py's
// b.sym()/b.ksym() give them.
//
//   Symbolizer sym;
//   sym.Kernel(0xffffffff81234567)            // {"do_syscall_64", 0x27, "[kernel.kallsyms]"}
//   sym.User(pid, ip, /*return_address=*/true) // frames, innermost (inlined) first
//
// Kernel frames come from /proc/kallsyms (text symbols, sorted by address).
// When kptr_restrict hides the addresses (every address reads 0) kallsyms()
// is empty and kernel_note() says so. User frames come from elfutils libdwfl
// (dwfl_linux_proc_report() over /proc/PID/maps): the symbol from .symtab or
// .dynsym, the module's build id, and the inlined frames DWARF records at the
// address (DW_TAG_inlined_subroutine scopes, dwarf_getscopes()). A process is
// reported on first use, so its symbols must be resolved while it runs: the
// profiler symbolizes at the end, as profile.py does, and a process that has
// exited by then shows "[unknown]" user frames, as in profile.py.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace perftest::profile {

struct Frame {
  std::string name;    // function, or "[unknown]"
  uint64_t offset = 0; // address - symbol start (0 for inlined frames and unknown ones)
  std::string module;  // "[kernel.kallsyms]", a file path, or "" when unknown
  std::string build_id;  // hex, when the module has an NT_GNU_BUILD_ID note
  bool inlined = false;  // an inlined call inside the next frame
};

class Symbolizer {
 public:
  // A symbol table standing in for the machine's (the mock's simulated one):
  // the frame for an ip, or nullopt.
  using Table = std::function<std::optional<Frame>(uint64_t ip)>;

  // Resolves against this machine (/proc/kallsyms, /proc/PID/maps).
  Symbolizer();
  // Resolves against `table` only: for a simulated machine (the mock), whose
  // addresses mean nothing here.
  explicit Symbolizer(Table table);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // One frame for a kernel address.
  Frame Kernel(uint64_t ip) const;
  // Frames for a user address of process `pid`, innermost first (inlined ones
  // before their caller). `return_address`: ip is a return address (a caller
  // frame), looked up at ip-1 so a call at a function's end stays in it.
  std::vector<Frame> User(pid_t pid, uint64_t ip, bool return_address);
  // Why kernel frames are "[unknown]", or "" when /proc/kallsyms gave addresses.
  const std::string& kernel_note() const { return kernel_note_; }
  size_t kallsyms_size() const { return kallsyms_.size(); }

 private:
  struct Process;
  void LoadKallsyms();
  Process& ForPid(pid_t pid);

  std::map<uint64_t, std::string> kallsyms_;  // start address -> name
  std::string kernel_note_;
  bool host_ = true;
  Table table_;
  std::map<pid_t, std::unique_ptr<Process>> processes_;
  std::map<std::pair<pid_t, uint64_t>, std::vector<Frame>> user_cache_;
};

}  // namespace perftest::profile
