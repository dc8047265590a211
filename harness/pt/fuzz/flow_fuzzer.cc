// libFuzzer target for the flow decoder (harness/pt/flow_decoder.h): an
// arbitrary image and an arbitrary trace from one input. Beyond "no crash,
// no out-of-bounds read" (ASan/UBSan), it traps when a contract breaks:
//   - Next() returns 0 or one of the documented errnos;
//   - every block lies in the image: its instructions tile [ip, end_ip),
//     each 1..15 bytes, and their bytes are in a section;
//   - resynchronization makes progress (sync offsets strictly increase);
//   - decoding the same input again with a shared, warm block cache gives
//     the same instructions (the cache changes nothing but speed).
//
// Input: byte 0 picks the image layout (bit 0: a second section right after
// the first; bits 2:1: the first section's address among four), bytes 1..2
// the image size (little-endian, at most the input), then the image bytes,
// then the trace.
//
//   build-fuzz/bin/pt_flow_fuzzer -max_total_time=60 -max_len=65536 CORPUS_DIR fixtures/pt
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "harness/pt/block_cache.h"
#include "harness/pt/flow_decoder.h"
#include "harness/pt/image.h"
#include "harness/pt/fuzz/fuzz_check.h"

namespace {

using namespace perftest::pt;
using perftest::Result;

bool Documented(int err) {
  switch (err) {
    case ENODATA: case ENXIO: case EILSEQ: case EBADMSG: case EMSGSIZE: case ENOTCONN:
      return true;
    default:
      return false;
  }
}

std::vector<uint64_t> Decode(std::span<const uint8_t> trace, const Image& image, BlockCache* cache) {
  FlowDecoder::Options options;
  options.max_steps_without_packet = 256;  // keep endless direct-jump loops short
  options.cache = cache;
  options.tsc_ctc_ratio_n = 3;
  options.max_nonturbo_ratio = 24;
  FlowDecoder dec(trace, &image, options);
  std::vector<uint64_t> ips;
  uint64_t last_sync = 0;
  bool first = true;
  for (;;) {
    Result<uint64_t> s = dec.SyncForward();
    if (!s.ok()) {
      if (s.error() == ENODATA) break;
      FUZZ_CHECK(Documented(s.error()));
      continue;
    }
    FUZZ_CHECK(first || *s > last_sync);
    first = false;
    last_sync = *s;
    ips.push_back(~uint64_t{0});  // a sync marker
    FlowStep step;
    int err;
    while ((err = dec.Next(&step)) == 0) {
      if (step.kind != FlowStep::kBlock) continue;
      const FlowBlock& b = step.block;
      FUZZ_CHECK(b.ninsn >= 1);
      uint64_t ip = b.ip;
      for (BlockInsns it(b); it.ok(); it.Advance()) {
        FUZZ_CHECK(it.ip() == ip);
        FUZZ_CHECK(it.length() >= 1 && it.length() <= 15);
        FUZZ_CHECK(!image.Read(ip).empty());
        ips.push_back(ip);
        ip += it.length();
      }
      FUZZ_CHECK(ip == b.end_ip);
    }
    if (!Documented(err)) fprintf(stderr, "undocumented errno %d: %s\n", err, dec.error_message().c_str());
    FUZZ_CHECK(Documented(err));
    ips.push_back(static_cast<uint64_t>(err));
  }
  return ips;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t layout = data[0];
  size_t image_size = data[1] | (size_t{data[2]} << 8);
  std::span<const uint8_t> rest(data + 3, size - 3);
  if (image_size > rest.size()) image_size = rest.size();
  std::span<const uint8_t> code = rest.first(image_size);
  std::span<const uint8_t> trace = rest.subspan(image_size);

  static constexpr uint64_t kBases[] = {0x0, 0x401000, 0x7fffffffe000, 0xffffffff81000000};
  const uint64_t base = kBases[(layout >> 1) & 3];
  Image image;
  if (!code.empty()) {
    const size_t half = (layout & 1) ? code.size() / 2 : code.size();
    if (half > 0) FUZZ_CHECK(image.AddBlob(base, code.first(half)).ok());
    if (half < code.size()) FUZZ_CHECK(image.AddBlob(base + half, code.subspan(half)).ok());
  }

  const std::vector<uint64_t> cold = Decode(trace, image, nullptr);
  BlockCache cache(&image);
  (void)Decode(trace, image, &cache);
  const std::vector<uint64_t> warm = Decode(trace, image, &cache);
  FUZZ_CHECK(cold == warm);
  return 0;
}
