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

}  // namespace perftest
