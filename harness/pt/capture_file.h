// The perftest PT capture file that `perftest pt record` writes (record.h),
// read back: its chunks, and what a decoder needs from them — the trace (the
// AUX data, in order) and the object code to walk (--image specs).
//
//   Result<Capture> c = ReadCapture("t.ptcap");                  // every chunk
//   Result<CaptureTrace> t = CaptureTraceOf(*c, "t.ptcap");      // trace + images
//   if (IsCaptureFile(bytes)) ...                                // by the magic
//
// File format ("perftest PT capture", little endian): the 8-byte magic
// "PTCAPv1\0", then chunks {u32 type; u32 source; u64 size; u8 payload[size];
// zero padding to 8}:
//   type 1 META     JSON: backend, profile, event string, the attr (type,
//                   config, exclude_*, sample_type, sample_id_all), the
//                   intel_pt PMU's sysfs type, format/ and caps/, page_size,
//                   aux_size, mode, and "timing" (CaptureTiming; absent in
//                   captures of before it: all 0).
//   type 2 RECORD   one perf record as read from a data buffer, header
//                   included; source 0 = the intel_pt event, 1 = the dummy
//                   (side-band: MMAP/MMAP2, COMM, FORK/EXIT, SWITCH).
//   type 3 AUX      the trace a PERF_RECORD_AUX describes: u64 aux_offset,
//                   u64 aux_size, u64 flags, then the bytes (follows its RECORD).
// The chunks are in the order they were read. Beside OUTPUT the recorder
// writes OUTPUT.trace.bin (the AUX bytes) and, from the mock, the simulated
// program's code as OUTPUT.image-ADDR.bin per section.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/records.h"
#include "harness/result.h"

namespace perftest::pt {

inline constexpr char kCaptureMagic[8] = {'P', 'T', 'C', 'A', 'P', 'v', '1', '\0'};
enum CaptureChunkType : uint32_t { kCaptureMeta = 1, kCaptureRecord = 2, kCaptureAux = 3 };
// RECORD chunks' sources.
enum CaptureSource : uint32_t { kCapturePtEvent = 0, kCaptureSideBand = 1 };

struct CaptureChunk {
  uint32_t type = 0;
  uint32_t source = 0;
  std::vector<uint8_t> payload;
};
struct Capture {
  std::string meta_json;
  std::vector<CaptureChunk> chunks;  // RECORD and AUX chunks, in order
};

// True if `head` (a file's first bytes) opens with the capture magic.
bool IsCaptureFile(std::span<const uint8_t> head);

// The chunks of a capture file's bytes; `name` names it in errors.
// Errors: EBADMSG not a capture, or truncated (a chunk header cut short, a
// chunk running past the end).
Result<Capture> ParseCapture(std::span<const uint8_t> bytes, const std::string& name);
// ParseCapture() of the file at `path`. Errors: ENOENT/EACCES opening; as
// ParseCapture().
Result<Capture> ReadCapture(const std::string& path);

// What a decoder needs to time MTC and to count cycles without CYC, as perf
// records it with the trace (its auxtrace info); 0 where not known.
struct CaptureTiming {
  uint32_t mtc_period = 0;          // the attr config's mtc_period field (format/mtc_period)
  uint32_t tsc_ctc_ratio_n = 0;     // CPUID.15H EBX: TSC/CTC = n/d
  uint32_t tsc_ctc_ratio_d = 0;     // CPUID.15H EAX
  uint32_t max_nonturbo_ratio = 0;  // the intel_pt PMU's sysfs max_nonturbo_ratio
  bool operator==(const CaptureTiming&) const = default;
};

// What `perftest pt decode` and `dump` take from a capture.
struct CaptureTrace {
  std::vector<uint8_t> trace;            // the AUX chunks' bytes, in order
  uint64_t aux_records = 0;              // AUX chunks
  std::vector<std::string> image_specs;  // ADDR:FILE[:OFFSET:SIZE], for Image (decode --image)
  CaptureTiming timing;                  // META's "timing"
  // The CPU the capture names: a perf.data file's HEADER_CPUID
  // ("GenuineIntel,6,142,10"; cpu.h CpuFromPerfCpuid), empty when none.
  std::string cpuid;
  // Trace offsets where data was lost before: the end of each AUX chunk
  // whose flags have PERF_AUX_FLAG_TRUNCATED (the AUX area was full; the
  // next chunk does not continue it) and that more data follows. perf
  // reports each as a "lost trace data" error (intel_pt_lost()).
  std::vector<uint64_t> data_lost;
  // Mappings that could not be used, one sentence each (an MMAP2 of a file
  // that is not on this machine, ...): for the user, not an error.
  std::vector<std::string> notes;
};

// The --image spec (ADDR:FILE:PGOFF:LEN) of an executable file mapping from
// a PERF_RECORD_MMAP or MMAP2 record (PERF_RECORD_MISC_MMAP_DATA clear; an
// absolute path, not the kernel's "//anon" nor "[vdso]"), or "".
std::string ImageSpecOf(const perftest::Record& r);

// The trace and the object code of capture `c`, read from `capture_path`:
// the mock's code files beside it (capture_path.image-ADDR.bin, whose ADDR
// is the load address), then each executable file mapping of the side-band
// (PERF_RECORD_MMAP/MMAP2 of source 1 without PERF_RECORD_MISC_MMAP_DATA, an
// absolute path that exists here: ADDR:FILE:PGOFF:LEN; "//anon", "[vdso]"
// and the like carry no file). The side-band's sample_id trailer is parsed
// with META's attr.sample_type and sample_id_all (the recorder opens its
// dummy event with the PT event's).
// Errors: EBADMSG, an AUX chunk shorter than its 24-byte header or META that
// is not JSON.
Result<CaptureTrace> CaptureTraceOf(const Capture& c, const std::string& capture_path);

}  // namespace perftest::pt
