#include "tools/profile/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <gelf.h>
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

const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = nullptr,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = nullptr,
};

}  // namespace

struct Symbolizer::Process {
  Dwfl* dwfl = nullptr;
  bool reported = false;
  ~Process() {
    if (dwfl) dwfl_end(dwfl);
  }
};

Symbolizer::FileModule::~FileModule() {
  if (dwfl) dwfl_end(dwfl);
}

Symbolizer::Symbolizer() = default;
Symbolizer::Symbolizer(Table table) : host_(false), table_(std::move(table)) {}
Symbolizer::~Symbolizer() = default;

void Symbolizer::LoadKallsyms() const {
  if (kallsyms_loaded_) return;
  kallsyms_loaded_ = true;
  std::ifstream in("/proc/kallsyms");
  if (!in) {
    kernel_note_ = "kernel frames are [unknown]: /proc/kallsyms cannot be read";
    return;
  }
  // "ADDR TYPE NAME[\t[MODULE]]" per line, parsed by hand: /proc/kallsyms has
  // some 200,000 lines and an istringstream per line was a tenth of a
  // profile's own CPU time.
  std::string line;
  bool all_zero = true;
  while (std::getline(in, line)) {
    char* end = nullptr;
    const uint64_t a = std::strtoull(line.c_str(), &end, 16);
    if (a != 0) all_zero = false;
    if (!end || end[0] != ' ' || end[1] == 0 || end[2] != ' ') continue;
    const char type = end[1];
    if (a == 0 || (type != 't' && type != 'T' && type != 'W' && type != 'w')) continue;
    const char* name = end + 3;
    const char* stop = name;
    while (*stop && *stop != '\t' && *stop != ' ') ++stop;
    kallsyms_.emplace(a, std::string(name, stop));  // first name at an address wins
  }
  if (all_zero) {
    kallsyms_.clear();
    kernel_note_ = "kernel frames are [unknown]: /proc/kallsyms shows every address as 0 "
                   "(kernel.kptr_restrict hides them from this user; needs CAP_SYSLOG and "
                   "kptr_restrict <= 1)";
  }
}

const std::string& Symbolizer::kernel_note() const {
  if (host_) LoadKallsyms();
  return kernel_note_;
}

size_t Symbolizer::kallsyms_size() const {
  if (host_) LoadKallsyms();
  return kallsyms_.size();
}

Frame Symbolizer::Kernel(uint64_t ip) const {
  if (host_) LoadKallsyms();
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

// The frames at module address `addr` (inlined ones first), `ret_adjust` 1
// when addr is a return address - 1 (the offset printed is from the return address).
std::vector<Frame> Symbolizer::FramesAt(Dwfl_Module* mod, uint64_t addr, uint64_t ret_adjust,
                                        const std::vector<Sym>* syms) {
  std::vector<Frame> frames;
  const char* modname = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  std::string build_id;
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int len = dwfl_module_build_id(mod, &bits, &vaddr);
  if (len > 0) build_id = Hex(bits, len);

  // Inlined frames at the address, innermost first (DWARF, when present).
  Dwarf_Addr bias = 0;
  if (Dwarf_Die* cu = dwfl_module_addrdie(mod, addr, &bias)) {
    Dwarf_Die* scopes = nullptr;
    int n = dwarf_getscopes(cu, addr - bias, &scopes);
    for (int i = 0; i < n; ++i) {
      if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
      const char* name = dwarf_diename(&scopes[i]);
      frames.push_back(Frame{Demangle(name), 0, modname ? modname : "", build_id, true});
    }
    std::free(scopes);
  }
  GElf_Off off = 0;
  const char* name = nullptr;
  if (syms) {
    // The last symbol starting at or below addr; it holds addr when addr is
    // inside its size, or when it has no size and the next one starts later.
    auto it = std::upper_bound(syms->begin(), syms->end(), addr, [](uint64_t a, const Sym& s) { return a < s.addr; });
    if (it != syms->begin()) {
      const Sym& s = *std::prev(it);
      if (addr < s.addr + s.size || (s.size == 0 && (it == syms->end() || addr < it->addr))) {
        name = s.name;
        off = addr - s.addr;
      }
    }
  } else {
    GElf_Sym sym;
    name = dwfl_module_addrinfo(mod, addr, &off, &sym, nullptr, nullptr, nullptr);
  }
  frames.push_back(Frame{Demangle(name), name ? off + ret_adjust : 0, modname ? modname : "", build_id, false});
  return frames;
}

void Symbolizer::NotePid(pid_t pid) {
  if (!host_ || maps_.count(pid)) return;
  std::vector<Mapping>& maps = maps_[pid];
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    // start-end perms offset dev inode path
    std::istringstream ls(line);
    std::string range, perms, offset, dev, inode, path;
    if (!(ls >> range >> perms >> offset >> dev >> inode)) continue;
    std::getline(ls >> std::ws, path);
    if (perms.size() < 3 || perms[2] != 'x') continue;
    size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    maps.push_back(Mapping{std::strtoull(range.c_str(), nullptr, 16), std::strtoull(range.c_str() + dash + 1, nullptr, 16),
                           std::strtoull(offset.c_str(), nullptr, 16), path});
  }
}

Symbolizer::FileModule* Symbolizer::ForFile(const std::string& path) {
  auto& f = files_[path];
  if (f) return f->mod ? f.get() : nullptr;
  f = std::make_unique<FileModule>();
  f->dwfl = dwfl_begin(&kOfflineCallbacks);
  if (!f->dwfl) return nullptr;
  dwfl_report_begin(f->dwfl);
  f->mod = dwfl_report_offline(f->dwfl, path.c_str(), path.c_str(), -1);
  dwfl_report_end(f->dwfl, nullptr, nullptr);
  if (!f->mod) return nullptr;
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(f->mod, &bias);
  size_t phnum = 0;
  if (!elf || elf_getphdrnum(elf, &phnum) != 0) {
    f->mod = nullptr;
    return nullptr;
  }
  f->bias = bias;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
      f->loads.push_back(Load{ph.p_offset, ph.p_vaddr, ph.p_filesz});
  }
  const int nsyms = dwfl_module_getsymtab(f->mod);
  for (int i = 1; i < nsyms; ++i) {
    GElf_Sym sym;
    GElf_Addr addr = 0;
    const char* name = dwfl_module_getsym_info(f->mod, i, &sym, &addr, nullptr, nullptr, nullptr);
    const int type = GELF_ST_TYPE(sym.st_info);
    if (!name || !*name || sym.st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
    f->syms.push_back(Sym{addr, sym.st_size, name});
  }
  // Sorted by address; at one address the sized, then global symbol first.
  std::stable_sort(f->syms.begin(), f->syms.end(), [](const Sym& a, const Sym& b) {
    return a.addr != b.addr ? a.addr < b.addr : a.size > b.size;
  });
  f->syms.erase(std::unique(f->syms.begin(), f->syms.end(), [](const Sym& a, const Sym& b) { return a.addr == b.addr; }),
                f->syms.end());
  return f.get();
}

std::vector<Frame> Symbolizer::User(pid_t pid, uint64_t ip, bool return_address) {
  const uint64_t lookup = return_address && ip > 0 ? ip - 1 : ip;
  const uint64_t adjust = lookup != ip ? 1 : 0;
  auto key = std::make_pair(pid, lookup);
  if (auto it = user_cache_.find(key); it != user_cache_.end()) return it->second;

  std::vector<Frame> frames;
  if (table_) {
    frames.push_back(table_(lookup).value_or(Frame{"[unknown]", 0, "", "", false}));
    frames.back().offset += frames.back().name == "[unknown]" ? 0 : adjust;
    return frames;
  }
  // A file mapping: symbolize in the file, shared by every process mapping it.
  NotePid(pid);
  for (const Mapping& m : maps_[pid]) {
    if (lookup < m.start || lookup >= m.end) continue;
    if (m.path.empty() || m.path[0] != '/' || m.path.ends_with(" (deleted)")) break;
    FileModule* f = ForFile(m.path);
    if (!f) break;
    const uint64_t file_off = lookup - m.start + m.offset;
    for (const Load& l : f->loads) {
      if (file_off < l.offset || file_off >= l.offset + l.filesz) continue;
      frames = FramesAt(f->mod, l.vaddr + (file_off - l.offset) + f->bias, adjust, &f->syms);
      user_cache_.emplace(key, frames);
      return frames;
    }
    break;
  }
  // Anything else ([vdso], deleted files): the live process, if it still runs.
  Process& p = ForPid(pid);
  Dwfl_Module* mod = p.dwfl ? dwfl_addrmodule(p.dwfl, lookup) : nullptr;
  if (mod) {
    frames = FramesAt(mod, lookup, adjust);
  } else {
    frames.push_back(Frame{"[unknown]", 0, "", "", false});
  }
  user_cache_.emplace(key, frames);
  return frames;
}

}  // namespace perftest::profile
