#include "tools/pt/elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "harness/pt/insn.h"

namespace perftest::pt {
namespace {

constexpr uint64_t kPage = 0x1000;
constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string Identifier(const std::string& name) {
  std::string out = name.empty() ? std::string("program") : name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  return out;
}

uint64_t Fnv1a(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

// The file descriptor and the Elf handle of a file being written or read.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
  ~ElfFile() {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }
};

template <typename T>
Result<T> ElfError(const std::string& what) {
  return Result<T>::Failure(EIO, fmt::format("{}: libelf: {}", what, elf_errmsg(-1)));
}

// Appends the NT_GNU_BUILD_ID note ({namesz, descsz, type, "GNU\0", id}).
std::vector<uint8_t> BuildIdNote(const std::vector<uint8_t>& id) {
  std::vector<uint8_t> note(12 + 4 + AlignUp(id.size(), 4), 0);
  const uint32_t words[3] = {4, static_cast<uint32_t>(id.size()), NT_GNU_BUILD_ID};
  std::memcpy(note.data(), words, 12);
  std::memcpy(note.data() + 12, "GNU", 4);
  std::memcpy(note.data() + 16, id.data(), id.size());
  return note;
}

// The build id in a note section's bytes, or empty.
std::vector<uint8_t> FindBuildId(const uint8_t* p, size_t n) {
  size_t at = 0;
  while (at + 12 <= n) {
    uint32_t w[3];
    std::memcpy(w, p + at, 12);
    const size_t name_at = at + 12, desc_at = name_at + AlignUp(w[0], 4);
    if (desc_at + w[1] > n) break;
    if (w[2] == NT_GNU_BUILD_ID && w[0] == 4 && std::memcmp(p + name_at, "GNU", 4) == 0) {
      return std::vector<uint8_t>(p + desc_at, p + desc_at + w[1]);
    }
    at = desc_at + AlignUp(w[1], 4);
  }
  return {};
}

}  // namespace

std::vector<ElfSymbol> FunctionSymbols(std::span<const ElfCodeSection> sections, const std::string& name) {
  if (sections.empty()) return {};
  std::set<uint64_t> starts = {sections[0].address};
  auto inside = [&](uint64_t a) {
    return std::any_of(sections.begin(), sections.end(),
                       [&](const ElfCodeSection& s) { return a >= s.address && a < s.address + s.bytes.size(); });
  };
  const InsnClassifier classifier;
  for (const ElfCodeSection& s : sections) {
    for (size_t at = 0; at < s.bytes.size();) {
      Insn insn;
      const std::span<const uint8_t> rest(s.bytes.data() + at, s.bytes.size() - at);
      if (classifier.Classify(rest, s.address + at, ExecMode::k64Bit, &insn) != 0) break;
      if (insn.branch == BranchClass::kDirectCall && inside(insn.target)) starts.insert(insn.target);
      at += insn.length;
    }
  }
  const std::string base = Identifier(name);
  std::vector<ElfSymbol> out;
  for (auto it = starts.begin(); it != starts.end(); ++it) {
    const ElfCodeSection* sec = nullptr;
    for (const ElfCodeSection& s : sections) {
      if (*it >= s.address && *it < s.address + s.bytes.size()) sec = &s;
    }
    const uint64_t section_end = sec->address + sec->bytes.size();
    const auto next = std::next(it);
    const uint64_t end = next != starts.end() && *next < section_end ? *next : section_end;
    out.push_back({*it == sections[0].address ? base : fmt::format("{}_sub_{:x}", base, *it - sections[0].address),
                   *it, end - *it});
  }
  return out;
}

std::vector<uint8_t> ContentBuildId(std::span<const ElfCodeSection> sections, std::span<const ElfSymbol> symbols) {
  std::vector<uint8_t> id(20);
  for (uint64_t pass = 0; pass < 3; ++pass) {
    uint64_t h = 0xcbf29ce484222325ULL ^ (pass * 0x9e3779b97f4a7c15ULL);
    for (const ElfCodeSection& s : sections) {
      h = Fnv1a(h, &s.address, sizeof s.address);
      h = Fnv1a(h, s.bytes.data(), s.bytes.size());
    }
    for (const ElfSymbol& y : symbols) {
      h = Fnv1a(h, y.name.data(), y.name.size());
      h = Fnv1a(h, &y.address, sizeof y.address);
      h = Fnv1a(h, &y.size, sizeof y.size);
    }
    std::memcpy(id.data() + pass * 8, &h, std::min<size_t>(8, 20 - pass * 8));
  }
  return id;
}

uint64_t ElfCodeOffset(std::span<const ElfCodeSection> sections, size_t index) {
  uint64_t cursor = kPage;  // page 0: the ELF header, program headers and the note
  for (size_t i = 0;; ++i) {
    const uint64_t off = cursor + sections[i].address % kPage;
    if (i == index) return off;
    cursor = AlignUp(off + sections[i].bytes.size(), kPage);
  }
}

Result<std::vector<uint8_t>> WriteElfImage(const std::string& path, std::span<const ElfCodeSection> sections,
                                           std::span<const ElfSymbol> symbols) {
  using R = Result<std::vector<uint8_t>>;
  if (sections.empty()) return R::Failure(EINVAL, fmt::format("WriteElfImage({}): no code sections", path));
  for (size_t i = 0; i < sections.size(); ++i) {
    for (size_t j = i + 1; j < sections.size(); ++j) {
      const ElfCodeSection &a = sections[i], &b = sections[j];
      if (a.address < b.address + b.bytes.size() && b.address < a.address + a.bytes.size()) {
        return R::Failure(EINVAL, fmt::format("WriteElfImage({}): sections at {:#x} and {:#x} overlap", path,
                                              a.address, b.address));
      }
    }
  }
  if (elf_version(EV_CURRENT) == EV_NONE) return ElfError<std::vector<uint8_t>>("elf_version");
  std::vector<uint8_t> id = ContentBuildId(sections, symbols);
  const std::vector<uint8_t> note = BuildIdNote(id);

  ElfFile f;
  f.fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f.fd < 0) return R::Failure(errno, fmt::format("open({}, O_WRONLY|O_CREAT|O_TRUNC)", path));
  f.elf = elf_begin(f.fd, ELF_C_WRITE, nullptr);
  if (f.elf == nullptr) return ElfError<std::vector<uint8_t>>(path);
  // Our layout (offsets below), not libelf's: the code must sit at offsets
  // congruent to its addresses modulo the page.
  elf_flagelf(f.elf, ELF_C_SET, ELF_F_LAYOUT);
  Elf64_Ehdr* eh = elf64_newehdr(f.elf);
  if (eh == nullptr) return ElfError<std::vector<uint8_t>>(path);
  eh->e_ident[EI_DATA] = ELFDATA2LSB;
  eh->e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh->e_type = ET_EXEC;
  eh->e_machine = EM_X86_64;
  eh->e_version = EV_CURRENT;
  eh->e_entry = sections[0].address;
  eh->e_phoff = sizeof(Elf64_Ehdr);
  const size_t nphdr = sections.size() + 1;
  Elf64_Phdr* ph = elf64_newphdr(f.elf, nphdr);
  if (ph == nullptr) return ElfError<std::vector<uint8_t>>(path);

  // Strings: section names, symbol names.
  std::string shstr(1, '\0'), str(1, '\0');
  auto add = [](std::string& table, const std::string& s) {
    const size_t at = table.size();
    table += s;
    table += '\0';
    return static_cast<uint32_t>(at);
  };
  // Keeps every Elf_Data buffer alive until elf_update().
  std::vector<std::vector<uint8_t>> buffers;
  auto new_section = [&](const std::string& name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t offset,
                         std::vector<uint8_t> bytes, uint64_t align, uint64_t entsize = 0) -> Elf_Scn* {
    Elf_Scn* scn = elf_newscn(f.elf);
    if (scn == nullptr) return nullptr;
    buffers.push_back(std::move(bytes));
    Elf_Data* d = elf_newdata(scn);
    if (d == nullptr) return nullptr;
    d->d_buf = buffers.back().data();
    d->d_size = buffers.back().size();
    d->d_type = ELF_T_BYTE;
    d->d_align = 1;
    d->d_off = 0;
    d->d_version = EV_CURRENT;
    Elf64_Shdr* sh = elf64_getshdr(scn);
    sh->sh_name = add(shstr, name);
    sh->sh_type = type;
    sh->sh_flags = flags;
    sh->sh_addr = addr;
    sh->sh_offset = offset;
    sh->sh_size = d->d_size;
    sh->sh_addralign = align;
    sh->sh_entsize = entsize;
    return scn;
  };

  const uint64_t note_offset = AlignUp(sizeof(Elf64_Ehdr) + nphdr * sizeof(Elf64_Phdr), 8);
  if (note_offset + note.size() > kPage) return R::Failure(EINVAL, fmt::format("WriteElfImage({}): too many sections", path));
  if (new_section(".note.gnu.build-id", SHT_NOTE, SHF_ALLOC, 0, note_offset, note, 4) == nullptr) {
    return ElfError<std::vector<uint8_t>>(path);
  }
  ph[0] = Elf64_Phdr{PT_NOTE, PF_R, note_offset, 0, 0, note.size(), note.size(), 4};
  std::vector<size_t> text_index;
  uint64_t end = kPage;
  for (size_t i = 0; i < sections.size(); ++i) {
    const ElfCodeSection& s = sections[i];
    const uint64_t off = ElfCodeOffset(sections, i);
    Elf_Scn* scn = new_section(i == 0 ? ".text" : fmt::format(".text.{}", i), SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
                               s.address, off, s.bytes, 16);
    if (scn == nullptr) return ElfError<std::vector<uint8_t>>(path);
    text_index.push_back(elf_ndxscn(scn));
    ph[i + 1] = Elf64_Phdr{PT_LOAD, PF_R | PF_X, off - s.address % kPage, s.address - s.address % kPage,
                           s.address - s.address % kPage, s.bytes.size() + s.address % kPage,
                           s.bytes.size() + s.address % kPage, kPage};
    end = off + s.bytes.size();
  }

  // .symtab: the null symbol, then one global STT_FUNC per symbol.
  std::vector<Elf64_Sym> syms(1);
  for (const ElfSymbol& y : symbols) {
    Elf64_Sym s{};
    s.st_name = add(str, y.name);
    s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    s.st_value = y.address;
    s.st_size = y.size;
    s.st_shndx = SHN_ABS;
    for (size_t i = 0; i < sections.size(); ++i) {
      if (y.address >= sections[i].address && y.address < sections[i].address + sections[i].bytes.size()) {
        s.st_shndx = static_cast<uint16_t>(text_index[i]);
      }
    }
    syms.push_back(s);
  }
  std::vector<uint8_t> symbytes(syms.size() * sizeof(Elf64_Sym));
  std::memcpy(symbytes.data(), syms.data(), symbytes.size());
  const uint64_t symtab_offset = AlignUp(end, 8);
  Elf_Scn* symtab = new_section(".symtab", SHT_SYMTAB, 0, 0, symtab_offset, std::move(symbytes), 8, sizeof(Elf64_Sym));
  if (symtab == nullptr) return ElfError<std::vector<uint8_t>>(path);
  const uint64_t strtab_offset = symtab_offset + syms.size() * sizeof(Elf64_Sym);
  Elf_Scn* strtab = new_section(".strtab", SHT_STRTAB, 0, 0, strtab_offset, std::vector<uint8_t>(str.begin(), str.end()), 1);
  if (strtab == nullptr) return ElfError<std::vector<uint8_t>>(path);
  Elf64_Shdr* symsh = elf64_getshdr(symtab);
  symsh->sh_link = static_cast<uint32_t>(elf_ndxscn(strtab));
  symsh->sh_info = 1;  // the first global symbol
  // .shstrtab names itself: add its name before its bytes are taken.
  const uint32_t shstrtab_name = add(shstr, ".shstrtab");
  const uint64_t shstrtab_offset = strtab_offset + str.size();
  Elf_Scn* shstrtab = elf_newscn(f.elf);
  if (shstrtab == nullptr) return ElfError<std::vector<uint8_t>>(path);
  buffers.emplace_back(shstr.begin(), shstr.end());
  Elf_Data* d = elf_newdata(shstrtab);
  d->d_buf = buffers.back().data();
  d->d_size = buffers.back().size();
  d->d_type = ELF_T_BYTE;
  d->d_align = 1;
  d->d_version = EV_CURRENT;
  Elf64_Shdr* sh = elf64_getshdr(shstrtab);
  sh->sh_name = shstrtab_name;
  sh->sh_type = SHT_STRTAB;
  sh->sh_offset = shstrtab_offset;
  sh->sh_size = d->d_size;
  sh->sh_addralign = 1;
  eh->e_shstrndx = static_cast<uint16_t>(elf_ndxscn(shstrtab));
  eh->e_shoff = AlignUp(shstrtab_offset + shstr.size(), 8);
  elf_flagphdr(f.elf, ELF_C_SET, ELF_F_DIRTY);
  if (elf_update(f.elf, ELF_C_WRITE) < 0) return ElfError<std::vector<uint8_t>>(path);
  return R::Ok(std::move(id));
}

Result<std::vector<uint8_t>> ReadBuildId(const std::string& path) {
  using R = Result<std::vector<uint8_t>>;
  if (elf_version(EV_CURRENT) == EV_NONE) return ElfError<std::vector<uint8_t>>("elf_version");
  ElfFile f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) return R::Failure(errno, fmt::format("open({}, O_RDONLY)", path));
  f.elf = elf_begin(f.fd, ELF_C_READ, nullptr);
  if (f.elf == nullptr || elf_kind(f.elf) != ELF_K_ELF) {
    return R::Failure(ENOEXEC, fmt::format("ReadBuildId({}): not an ELF file", path));
  }
  for (Elf_Scn* scn = elf_nextscn(f.elf, nullptr); scn != nullptr; scn = elf_nextscn(f.elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* d = elf_rawdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) continue;
    std::vector<uint8_t> id = FindBuildId(static_cast<const uint8_t*>(d->d_buf), d->d_size);
    if (!id.empty()) return R::Ok(std::move(id));
  }
  size_t nph = 0;
  if (elf_getphdrnum(f.elf, &nph) == 0) {
    size_t size = 0;
    const char* raw = elf_rawfile(f.elf, &size);
    for (size_t i = 0; raw != nullptr && i < nph; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(f.elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_NOTE) continue;
      if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset) continue;
      std::vector<uint8_t> id = FindBuildId(reinterpret_cast<const uint8_t*>(raw) + ph.p_offset, ph.p_filesz);
      if (!id.empty()) return R::Ok(std::move(id));
    }
  }
  return R::Failure(ENOENT, fmt::format("ReadBuildId({}): no NT_GNU_BUILD_ID note", path));
}

}  // namespace perftest::pt
