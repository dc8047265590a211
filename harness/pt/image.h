// The memory image a flow decoder walks: object code at linear addresses,
// from raw blobs, from files at an offset, or from perf MMAP/MMAP2 records
// (UAPI PERF_RECORD_MMAP/PERF_RECORD_MMAP2: addr, len, pgoff, filename).
//
//   pt::Image image;
//   image.AddBlob(0x401000, code);                                // bytes at an address
//   image.AddFile("/usr/bin/true", 0x2000, 0x3000, 0x402000);     // file range at an address
//   image.AddMmap("/usr/lib/libc.so.6", 0x7f0000000000, 0x1000, 0);  // an MMAP record
//   std::span<const uint8_t> code = image.Read(0x401010);          // up to the section end
//
// A section added later shadows what it overlaps (the newest mapping of an
// address wins, as with mmap(2) over an existing mapping). Files are read
// into memory when added; the Image owns every byte it returns, and spans
// stay valid until the next Add*/Clear (which bump generation(), so that a
// decoder can drop what it cached about the old contents).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "harness/result.h"

namespace perftest::pt {

class Image {
 public:
  struct Section {
    uint64_t vaddr = 0;   // first linear address
    uint64_t size = 0;    // bytes
    std::string name;     // the file name, or "blob@0x..." for AddBlob
    std::shared_ptr<const std::vector<uint8_t>> data;
    uint64_t data_offset = 0;  // of vaddr's byte in *data
    uint64_t end() const { return vaddr + size; }
  };

  // Copies `bytes` to `vaddr`. Errors: EINVAL, empty or wrapping past 2^64.
  Result<void> AddBlob(uint64_t vaddr, std::span<const uint8_t> bytes, std::string name = {});

  // Maps `size` bytes of `path` from `offset` at `vaddr` (size 0: to the end
  // of the file; a range past the end of the file is cut to it). Errors:
  // the errno of open/read (ENOENT, EACCES, ...), EINVAL for offset past the
  // end of the file or a range wrapping past 2^64.
  Result<void> AddFile(const std::string& path, uint64_t offset, uint64_t size, uint64_t vaddr);

  // An MMAP/MMAP2 record: `len` bytes of `filename` from page offset
  // `pgoff` (bytes) at `addr`. Names that are not files ("[vdso]", "//anon",
  // "[heap]", ...) give ENOENT, as does a missing file; the image is then
  // unchanged and decoding there reports no image (ENXIO).
  Result<void> AddMmap(const std::string& filename, uint64_t addr, uint64_t len, uint64_t pgoff);

  void Clear();

  // The bytes from `ip` to the end of the section that holds it, or an
  // empty span if no section holds `ip`.
  std::span<const uint8_t> Read(uint64_t ip) const;

  const std::vector<Section>& sections() const { return sections_; }  // sorted by vaddr, disjoint
  uint64_t generation() const { return generation_; }

 private:
  void Insert(Section s);

  std::vector<Section> sections_;
  uint64_t generation_ = 0;
  mutable size_t last_ = 0;  // the section of the last Read(), tried first
};

}  // namespace perftest::pt
