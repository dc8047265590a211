#include "harness/pt/cpu.h"

#include <charconv>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

namespace perftest::pt {
namespace {

// One number, decimal or 0x-hex, the whole of `s`.
std::optional<uint32_t> ParseNumber(std::string_view s) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t start = 0;;) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// A group of CPUs sharing one set of errata (the facts of libipt's
// pt_cpu_errata(), libipt/src/pt_config.c; model numbers per family).
struct ErrataGroup {
  uint32_t family;
  std::initializer_list<uint32_t> models;
  Errata errata;
};

constexpr Errata kBroadwell{.bdm70 = true, .bdm64 = true};
constexpr Errata kSkylakeClient{.bdm70 = true, .skd007 = true, .skd022 = true, .skd010 = true,
                                .skl014 = true, .skl168 = true};
constexpr Errata kSkylakeServer{.bdm70 = true, .skd022 = true, .skl014 = true, .skz84 = true};
constexpr Errata kSapphireRapids{.bdm70 = true, .skd022 = true, .skz84 = true};
constexpr Errata kIceLakeClient{.bdm70 = true, .skd022 = true, .skl014 = true};
constexpr Errata kAlderLake{.bdm70 = true, .skd022 = true, .apl11 = true};
constexpr Errata kGoldmont{.apl12 = true, .apl11 = true};
constexpr Errata kGoldmontPlusOn{.apl11 = true};

const ErrataGroup kGroups[] = {
    {0x6, {0x3d, 0x47, 0x4f, 0x56}, kBroadwell},
    {0x6, {0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6}, kSkylakeClient},
    {0x6, {0x55, 0x6a, 0x6c}, kSkylakeServer},
    {0x6, {0x8f, 0xcf, 0xad, 0xae}, kSapphireRapids},
    {0x6, {0x66, 0x7d, 0x7e, 0x8c, 0x8d, 0xa7, 0xa8}, kIceLakeClient},
    {0x6, {0x97, 0x9a, 0xba, 0xb7, 0xbf, 0xc5, 0xc6, 0xb5, 0xaa, 0xac, 0xbd, 0xcc, 0xd5}, kAlderLake},
    {0x6, {0x5c, 0x5f}, kGoldmont},
    {0x6, {0x7a, 0x86, 0x96, 0x9c, 0xb6, 0xaf, 0xdd}, kGoldmontPlusOn},
    {0x12, {0x01, 0x03}, kAlderLake},
    {0x13, {0x01}, kSapphireRapids},
};

}  // namespace

std::optional<Cpu> ParseCpu(std::string_view text, std::string* error) {
  const std::vector<std::string_view> parts = Split(text, '/');
  Cpu cpu;
  uint32_t* fields[] = {&cpu.family, &cpu.model, &cpu.stepping};
  if (parts.size() < 2 || parts.size() > 3) {
    if (error != nullptr) *error = fmt::format("'{}': expected FAMILY/MODEL[/STEPPING]", text);
    return std::nullopt;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::optional<uint32_t> v = ParseNumber(parts[i]);
    if (!v || *v > 0xff) {
      if (error != nullptr) {
        *error = fmt::format("'{}': {} '{}' is not a number 0..255 (decimal or 0x-hex)", text,
                             i == 0 ? "family" : i == 1 ? "model" : "stepping", parts[i]);
      }
      return std::nullopt;
    }
    *fields[i] = *v;
  }
  return cpu;
}

std::optional<Cpu> CpuFromPerfCpuid(std::string_view cpuid) {
  const std::vector<std::string_view> parts = Split(cpuid, ',');
  if (parts.size() < 4 || parts[0] != "GenuineIntel") return std::nullopt;
  Cpu cpu;
  uint32_t* fields[] = {&cpu.family, &cpu.model, &cpu.stepping};
  for (size_t i = 0; i < 3; ++i) {
    const std::optional<uint32_t> v = ParseNumber(parts[i + 1]);
    if (!v) return std::nullopt;
    *fields[i] = *v;
  }
  return cpu;
}

Errata ErrataFor(const Cpu& cpu, bool* known) {
  for (const ErrataGroup& g : kGroups) {
    if (g.family != cpu.family) continue;
    for (const uint32_t m : g.models) {
      if (m == cpu.model) {
        if (known != nullptr) *known = true;
        return g.errata;
      }
    }
  }
  if (known != nullptr) *known = false;
  return Errata{};
}

std::string ErrataNames(const Errata& e) {
  std::string out;
  const auto add = [&](bool on, std::string_view name) {
    if (!on) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(e.bdm70, "bdm70");
  add(e.bdm64, "bdm64");
  add(e.skd007, "skd007");
  add(e.skd022, "skd022");
  add(e.skd010, "skd010");
  add(e.skl014, "skl014");
  add(e.apl12, "apl12");
  add(e.apl11, "apl11");
  add(e.skl168, "skl168");
  add(e.skz84, "skz84");
  return out;
}

}  // namespace perftest::pt
