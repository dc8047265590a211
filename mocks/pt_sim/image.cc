#include "mocks/pt_sim/image.h"

#include <fmt/format.h>

#include <algorithm>

namespace perftest::pt_sim {

Result<void> CodeImage::Add(uint64_t address, std::vector<uint8_t> bytes, std::string name) {
  const std::string call = fmt::format("CodeImage::Add(address={:#x}, size={}, name={})", address, bytes.size(), name);
  if (bytes.empty() || address + bytes.size() < address) return Result<void>::Failure(EINVAL, call);
  const uint64_t end = address + bytes.size();
  for (const CodeSection& s : sections_) {
    if (address < s.end() && s.address < end) return Result<void>::Failure(EEXIST, call);
  }
  CodeSection section{address, std::move(bytes), std::move(name)};
  auto pos = std::lower_bound(sections_.begin(), sections_.end(), address,
                              [](const CodeSection& s, uint64_t a) { return s.address < a; });
  sections_.insert(pos, std::move(section));
  return Result<void>::Ok();
}

std::span<const uint8_t> CodeImage::Read(uint64_t address) const {
  auto it = std::upper_bound(sections_.begin(), sections_.end(), address,
                             [](uint64_t a, const CodeSection& s) { return a < s.address; });
  if (it == sections_.begin()) return {};
  --it;
  if (address >= it->end()) return {};
  return std::span<const uint8_t>(it->bytes).subspan(address - it->address);
}

}  // namespace perftest::pt_sim
