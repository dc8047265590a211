#include "harness/file_mapping.h"

#include <fmt/format.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

namespace perftest {
namespace {

// The next field of `s` (split at spaces), consumed with the spaces before it.
std::string_view NextField(std::string_view* s) {
  while (!s->empty() && s->front() == ' ') s->remove_prefix(1);
  const size_t n = std::min(s->find(' '), s->size());
  std::string_view f = s->substr(0, n);
  s->remove_prefix(n);
  return f;
}

bool Hex(std::string_view f, uint64_t* out) {
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), *out, 16);
  return ec == std::errc() && p == f.data() + f.size() && !f.empty();
}

}  // namespace

std::optional<MapsLine> ParseMapsLine(std::string_view line) {
  MapsLine m;
  std::string_view range = NextField(&line);
  const size_t dash = range.find('-');
  if (dash == std::string_view::npos || !Hex(range.substr(0, dash), &m.start) ||
      !Hex(range.substr(dash + 1), &m.end)) {
    return std::nullopt;
  }
  m.perms = std::string(NextField(&line));
  if (m.perms.size() != 4 || !Hex(NextField(&line), &m.offset)) return std::nullopt;
  std::string_view dev = NextField(&line);
  const size_t colon = dev.find(':');
  uint64_t major = 0, minor = 0, inode = 0;
  if (colon == std::string_view::npos || !Hex(dev.substr(0, colon), &major) || !Hex(dev.substr(colon + 1), &minor)) {
    return std::nullopt;
  }
  m.dev = makedev(major, minor);
  std::string_view ino = NextField(&line);
  auto [p, ec] = std::from_chars(ino.data(), ino.data() + ino.size(), inode);
  if (ec != std::errc() || p != ino.data() + ino.size() || ino.empty()) return std::nullopt;
  m.inode = static_cast<ino_t>(inode);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  m.path = std::string(line);
  return m;
}

Result<FileLocation> FileLocationIn(std::string_view maps, uint64_t addr) {
  const std::string call = fmt::format("file_location({:#x})", addr);
  while (!maps.empty()) {
    const size_t nl = std::min(maps.find('\n'), maps.size());
    std::optional<MapsLine> m = ParseMapsLine(maps.substr(0, nl));
    maps.remove_prefix(std::min(nl + 1, maps.size()));
    if (!m || addr < m->start || addr >= m->end) continue;
    if (m->inode == 0) return Result<FileLocation>::Failure(ENXIO, call + " [maps no file: " + m->path + "]");
    return Result<FileLocation>::Ok(FileLocation{m->path, m->dev, m->inode, addr - m->start + m->offset}, call);
  }
  return Result<FileLocation>::Failure(ENOENT, call + " [no mapping holds it]");
}

Result<FileLocation> FileLocationOf(uint64_t addr) {
  std::ifstream in("/proc/self/maps");
  if (!in) return Result<FileLocation>::Failure(errno != 0 ? errno : ENOENT, "open(/proc/self/maps)");
  std::stringstream text;
  text << in.rdbuf();
  return FileLocationIn(text.str(), addr);
}

}  // namespace perftest
