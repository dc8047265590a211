// The simulated program's code: byte ranges ("sections") at virtual
// addresses, as a loader would map them. The generator fetches instructions
// from it; the decoder under test gets the same bytes (libipt: the image).
//
//   pt_sim::CodeImage image;
//   RETURN_IF_ERROR(image.Add(0x401000, bytes, "main.text"));
//   std::span<const uint8_t> code = image.Read(0x401010);  // up to the section's end
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/result.h"

namespace perftest::pt_sim {

struct CodeSection {
  uint64_t address = 0;
  std::vector<uint8_t> bytes;
  std::string name;  // for messages and the ground-truth file

  uint64_t end() const { return address + bytes.size(); }
  bool operator==(const CodeSection&) const = default;
};

class CodeImage {
 public:
  // Maps `bytes` at `address`. Errors: EINVAL, empty `bytes` or a range that
  // wraps past 2^64; EEXIST, the range overlaps a section already added.
  Result<void> Add(uint64_t address, std::vector<uint8_t> bytes, std::string name = {});

  // The bytes from `address` to the end of its section; empty if `address` is unmapped.
  std::span<const uint8_t> Read(uint64_t address) const;
  bool Contains(uint64_t address) const { return !Read(address).empty(); }

  const std::vector<CodeSection>& sections() const { return sections_; }
  bool operator==(const CodeImage&) const = default;

 private:
  std::vector<CodeSection> sections_;  // sorted by address, disjoint
};

}  // namespace perftest::pt_sim
