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
// address (DW_TAG_inlined_subroutine scopes, dwarf_getscopes()). An address
// is found in the process's executable mappings (/proc/PID/maps, read by
// NotePid() when the process is first sampled) and looked up in that file,
// reported once for all processes that map it (dwfl_report_offline()); so a
// process that has exited by the end still gets names, and a hundred
// compilers cost one symbol table. Other mappings ([vdso]) go through the
// live process (dwfl_linux_proc_report()).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct Dwfl;
struct Dwfl_Module;

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
  // /proc/kallsyms is read on the first call of these three (a -U profile
  // never pays for it).
  const std::string& kernel_note() const;
  size_t kallsyms_size() const;
  // Reads /proc/PID/maps now (once per pid), so the process's user frames can
  // be named from its files after it has exited. Cheap: call it on the first
  // sample of each process.
  void NotePid(pid_t pid);

 private:
  struct Process;
  struct Mapping {
    uint64_t start = 0, end = 0, offset = 0;
    std::string path;
  };
  struct Load {
    uint64_t offset = 0, vaddr = 0, filesz = 0;  // a PT_LOAD program header
  };
  struct Sym {
    uint64_t addr = 0, size = 0;  // module addresses (bias applied)
    const char* name = nullptr;   // owned by libelf (the module's string table)
  };
  // One ELF file, reported once (dwfl_report_offline) for every process mapping it.
  struct FileModule {
    Dwfl* dwfl = nullptr;
    Dwfl_Module* mod = nullptr;
    uint64_t bias = 0;
    std::vector<Load> loads;
    // Function symbols sorted by address: dwfl_module_addrinfo() scans the
    // whole symbol table per call, which a profile of large binaries
    // (compilers, emulators) cannot afford; a binary search can.
    std::vector<Sym> syms;
    ~FileModule();
  };
  void LoadKallsyms() const;
  Process& ForPid(pid_t pid);
  FileModule* ForFile(const std::string& path);
  std::vector<Frame> FramesAt(Dwfl_Module* mod, uint64_t addr, uint64_t ret_adjust,
                              const std::vector<Sym>* syms = nullptr);

  mutable bool kallsyms_loaded_ = false;
  mutable std::map<uint64_t, std::string> kallsyms_;  // start address -> name
  mutable std::string kernel_note_;
  bool host_ = true;
  Table table_;
  std::map<pid_t, std::unique_ptr<Process>> processes_;
  std::map<pid_t, std::vector<Mapping>> maps_;             // executable mappings per process
  std::map<std::string, std::unique_ptr<FileModule>> files_;  // by path
  std::map<std::pair<pid_t, uint64_t>, std::vector<Frame>> user_cache_;
};

}  // namespace perftest::profile
