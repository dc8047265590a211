#include "tools/profile/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace perftest::profile {
namespace {

const Dwfl_Callbacks kProcCallbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

std::string Hex(const unsigned char* bytes, int len) {
  std::string s;
  char b[3];
  for (int i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", bytes[i]);
    s += b;
  }
  return s;
}

// C++ names demangled (abi::__cxa_demangle), as perf script prints them.
std::string Demangle(const char* name) {
  if (!name) return "[unknown]";
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string s(d);
  std::free(d);
  return s;
}

}  // namespace

struct Symbolizer::Process {
  Dwfl* dwfl = nullptr;
  bool reported = false;
  ~Process() {
    if (dwfl) dwfl_end(dwfl);
  }
};

Symbolizer::Symbolizer() { LoadKallsyms(); }
Symbolizer::Symbolizer(Table table) : host_(false), table_(std::move(table)) {}
Symbolizer::~Symbolizer() = default;

void Symbolizer::LoadKallsyms() {
  std::ifstream in("/proc/kallsyms");
  if (!in) {
    kernel_note_ = "kernel frames are [unknown]: /proc/kallsyms cannot be read";
    return;
  }
  std::string line;
  bool all_zero = true;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string addr, type, name;
    if (!(ls >> addr >> type >> name)) continue;
    uint64_t a = std::strtoull(addr.c_str(), nullptr, 16);
    if (a != 0) all_zero = false;
    if (type != "t" && type != "T" && type != "W" && type != "w") continue;
    if (a == 0) continue;
    kallsyms_.emplace(a, name);  // first name at an address wins
  }
  if (all_zero) {
    kallsyms_.clear();
    kernel_note_ = "kernel frames are [unknown]: /proc/kallsyms shows every address as 0 "
                   "(kernel.kptr_restrict hides them from this user; needs CAP_SYSLOG and "
                   "kptr_restrict <= 1)";
  }
}

Frame Symbolizer::Kernel(uint64_t ip) const {
  if (table_) return table_(ip).value_or(Frame{"[unknown]", 0, "", "", false});
  Frame f;
  auto it = kallsyms_.upper_bound(ip);
  if (it == kallsyms_.begin()) {
    f.name = "[unknown]";
    return f;
  }
  --it;
  f.name = it->second;
  f.offset = ip - it->first;
  f.module = "[kernel.kallsyms]";
  return f;
}

Symbolizer::Process& Symbolizer::ForPid(pid_t pid) {
  auto& p = processes_[pid];
  if (!p) p = std::make_unique<Process>();
  if (!p->reported && host_) {
    p->reported = true;
    p->dwfl = dwfl_begin(&kProcCallbacks);
    if (p->dwfl) {
      dwfl_report_begin(p->dwfl);
      if (dwfl_linux_proc_report(p->dwfl, pid) != 0) {
        dwfl_end(p->dwfl);
        p->dwfl = nullptr;
      } else {
        dwfl_report_end(p->dwfl, nullptr, nullptr);
      }
    }
  }
  return *p;
}

std::vector<Frame> Symbolizer::User(pid_t pid, uint64_t ip, bool return_address) {
  const uint64_t lookup = return_address && ip > 0 ? ip - 1 : ip;
  auto key = std::make_pair(pid, lookup);
  if (auto it = user_cache_.find(key); it != user_cache_.end()) return it->second;

  std::vector<Frame> frames;
  if (table_) {
    frames.push_back(table_(lookup).value_or(Frame{"[unknown]", 0, "", "", false}));
    if (lookup != ip) frames.back().offset += 1;
    return frames;
  }
  Process& p = ForPid(pid);
  Dwfl_Module* mod = p.dwfl ? dwfl_addrmodule(p.dwfl, lookup) : nullptr;
  if (!mod) {
    frames.push_back(Frame{"[unknown]", 0, "", "", false});
    user_cache_.emplace(key, frames);
    return frames;
  }
  const char* modname = nullptr;
  modname = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  std::string build_id;
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int len = dwfl_module_build_id(mod, &bits, &vaddr);
  if (len > 0) build_id = Hex(bits, len);

  // Inlined frames at the address, innermost first (DWARF, when present).
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* cu = dwfl_module_addrdie(mod, lookup, &bias)) {
    Dwarf_Die* scopes = nullptr;
    int n = dwarf_getscopes(cu, lookup - bias, &scopes);
    for (int i = 0; i < n; ++i) {
      if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
      const char* name = dwarf_diename(&scopes[i]);
      frames.push_back(Frame{Demangle(name), 0, modname ? modname : "", build_id, true});
    }
    std::free(scopes);
  }
  GElf_Off off = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, lookup, &off, &sym, nullptr, nullptr, nullptr);
  Frame f{Demangle(name), name ? off + (lookup != ip ? 1 : 0) : 0, modname ? modname : "", build_id,
          false};
  frames.push_back(f);
  user_cache_.emplace(key, frames);
  return frames;
}

}  // namespace perftest::profile
