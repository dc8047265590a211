#include "harness/pmu.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace perftest {
namespace {

namespace fs = std::filesystem;

bool ReadSmallFile(const fs::path& p, std::string* out) {
  std::ifstream in(p);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  return true;
}

// Every regular file of `dir` (missing dir: empty map).
std::map<std::string, std::string> ReadDir(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string value;
    if (it->is_regular_file(ec) && ReadSmallFile(it->path(), &value)) {
      out.emplace(it->path().filename().string(), std::move(value));
    }
  }
  return out;
}

}  // namespace

Result<std::vector<Pmu>> DiscoverPmus(std::string_view root) {
  const std::string call = fmt::format("discover_pmus(\"{}\")", root);
  std::error_code ec;
  fs::directory_iterator it(fs::path(root), ec);
  if (ec) return Result<std::vector<Pmu>>::Failure(ec.value(), call);

  std::vector<Pmu> pmus;
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return Result<std::vector<Pmu>>::Failure(ec.value(), call);
    // Entries are symlinks to the device directories.
    const fs::path dir = it->path();
    std::string type_text;
    if (!ReadSmallFile(dir / "type", &type_text)) continue;
    uint32_t type = 0;
    auto [ptr, perr] = std::from_chars(type_text.data(), type_text.data() + type_text.size(), type);
    if (perr != std::errc() || ptr != type_text.data() + type_text.size()) continue;
    Pmu pmu;
    pmu.name = dir.filename().string();
    pmu.type = type;
    pmu.format = ReadDir(dir / "format");
    pmu.caps = ReadDir(dir / "caps");
    pmu.events = ReadDir(dir / "events");
    pmus.push_back(std::move(pmu));
  }
  if (ec) return Result<std::vector<Pmu>>::Failure(ec.value(), call);  // the listing stopped early
  std::sort(pmus.begin(), pmus.end(), [](const Pmu& a, const Pmu& b) { return a.name < b.name; });
  return Result<std::vector<Pmu>>::Ok(std::move(pmus), call);
}

const Pmu* FindPmu(const std::vector<Pmu>& pmus, std::string_view name) {
  for (const Pmu& p : pmus) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

namespace {

bool ParseUnsigned(std::string_view s, uint64_t* out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return false;
  auto [ptr, err] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return err == std::errc() && ptr == s.data() + s.size();
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

uint64_t* FieldOf(EventConfig& c, std::string_view field) {
  if (field == "config") return &c.config;
  if (field == "config1") return &c.config1;
  if (field == "config2") return &c.config2;
  if (field == "config3") return &c.config3;
  return nullptr;
}

}  // namespace

uint64_t PmuFormat::Mask() const {
  uint64_t mask = 0;
  for (auto [lo, hi] : ranges) {
    for (int b = lo; b <= hi; ++b) mask |= uint64_t{1} << b;
  }
  return mask;
}

Result<PmuFormat> ParseFormat(std::string_view text) {
  const std::string call = fmt::format("parse_format(\"{}\")", text);
  auto bad = [&](std::string_view why) { return Result<PmuFormat>::Failure(EINVAL, fmt::format("{}: {}", call, why)); };
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return bad("no ':'");
  PmuFormat f;
  f.field = std::string(text.substr(0, colon));
  EventConfig probe;
  if (FieldOf(probe, f.field) == nullptr) return bad("the field is not config, config1, config2 or config3");
  for (std::string_view part : Split(text.substr(colon + 1), ',')) {
    const size_t dash = part.find('-');
    uint64_t lo = 0, hi = 0;
    if (!ParseUnsigned(part.substr(0, dash), &lo)) return bad("a bit is not a number");
    hi = lo;
    if (dash != std::string_view::npos && !ParseUnsigned(part.substr(dash + 1), &hi)) return bad("a bit is not a number");
    if (lo > hi || hi > 63) return bad("bits must satisfy lo <= hi <= 63");
    f.ranges.emplace_back(static_cast<int>(lo), static_cast<int>(hi));
  }
  return Result<PmuFormat>::Ok(std::move(f), call);
}

Result<EventConfig> ResolveEventAlias(const Pmu& pmu, std::string_view alias) {
  const std::string call = fmt::format("resolve_event_alias({}, \"{}\")", pmu.name, alias);
  auto fail = [&](int err, std::string why) { return Result<EventConfig>::Failure(err, call + ": " + why); };
  EventConfig c;
  for (std::string_view term : Split(alias, ',')) {
    while (!term.empty() && (term.front() == ' ' || term.front() == '\n')) term.remove_prefix(1);
    while (!term.empty() && (term.back() == ' ' || term.back() == '\n')) term.remove_suffix(1);
    if (term.empty()) return fail(EINVAL, "an empty term");
    const size_t eq = term.find('=');
    const std::string_view name = term.substr(0, eq);
    uint64_t value = 1;
    if (eq != std::string_view::npos && !ParseUnsigned(term.substr(eq + 1), &value)) {
      return fail(EINVAL, fmt::format("the value of {} is not a number", name));
    }
    if (uint64_t* direct = FieldOf(c, name)) {  // "config=0x..." names the field itself
      *direct = value;
      continue;
    }
    auto it = pmu.format.find(std::string(name));
    if (it == pmu.format.end()) return fail(ENOENT, fmt::format("{} has no format/{}", pmu.name, name));
    Result<PmuFormat> f = ParseFormat(it->second);
    if (!f.ok()) return fail(EINVAL, f.call());
    uint64_t* field = FieldOf(c, f->field);
    uint64_t rest = value;
    for (auto [lo, hi] : f->ranges) {
      for (int b = lo; b <= hi; ++b, rest >>= 1) {
        if (rest & 1) *field |= uint64_t{1} << b;
      }
    }
    if (rest != 0) return fail(ERANGE, fmt::format("{}={:#x} does not fit {}", name, value, it->second));
  }
  return Result<EventConfig>::Ok(c, call);
}

bool IsEventAliasName(std::string_view name) {
  for (std::string_view suffix : {".scale", ".unit", ".per-pkg", ".snapshot"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) return false;
  }
  return true;
}

}  // namespace perftest
