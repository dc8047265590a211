// libFuzzer target for the packet layer (harness/pt): arbitrary bytes through
// every verb of PacketDecoder, with and without PEBS block packets, plus
// LastIp, the encoder and the dump. Beyond "no crash, no out-of-bounds read"
// (ASan/UBSan), it checks the layer's contracts and traps when one breaks:
//   - packets tile the trace: each starts where the last ended, inside it;
//   - re-encoding a decoded packet gives back its bytes exactly;
//   - an error leaves offset() unchanged and is one of the documented errnos;
//   - a sync point is a complete PSB, and resynchronization makes progress;
//   - the IP of an IP packet updates LastIp without error;
//   - Decode() in bulk, into Packets or a PacketBatch, gives the packets and
//     errors of Next().
//
//   build-fuzz/bin/pt_packet_fuzzer -max_total_time=60 -max_len=65536 CORPUS_DIR fixtures/pt
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "harness/pt/dump.h"
#include "harness/pt/last_ip.h"
#include "harness/pt/packet_decoder.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/sync.h"
#include "harness/pt/fuzz/fuzz_check.h"

namespace {

using namespace perftest::pt;

void DecodeForward(std::span<const uint8_t> trace, bool blocks, bool from_zero) {
  PacketDecoder d(trace, PacketDecoder::Options{.block_packets = blocks});
  if (from_zero) {
    FUZZ_CHECK(d.SyncSet(0).ok());
  } else if (!d.SyncForward().ok()) {
    return;
  }
  LastIp last_ip;
  uint64_t expect_at = d.offset();
  uint64_t last_sync = d.offset();
  for (;;) {
    Packet p;
    const int err = d.Next(p);
    if (err == 0) {
      FUZZ_CHECK(p.offset == expect_at);
      FUZZ_CHECK(p.size >= 1 && p.size <= kMaxPacketSize);
      FUZZ_CHECK(p.offset + p.size <= trace.size());
      FUZZ_CHECK(d.offset() == p.offset + p.size);
      uint8_t buf[kMaxPacketSize];
      const auto n = EncodePacket(p, buf);
      FUZZ_CHECK(n.ok() && *n == p.size);
      for (size_t i = 0; i < p.size; ++i) FUZZ_CHECK(buf[i] == trace[p.offset + i]);
      if (p.type == PacketType::kPsb) last_ip.Reset();
      if (p.is_ip()) FUZZ_CHECK(last_ip.Update(p).ok());
      expect_at = d.offset();
      continue;
    }
    FUZZ_CHECK(d.offset() == expect_at);
    if (err == ENODATA) {
      FUZZ_CHECK(expect_at == trace.size());
      return;
    }
    FUZZ_CHECK(err == EILSEQ || err == EBADMSG || err == EMSGSIZE);
    const auto psb = d.SyncForward();
    if (!psb.ok()) return;
    FUZZ_CHECK(IsPsbAt(trace, *psb));
    // Progress: a PSB after the last sync point, and at most 15 bytes before the error.
    FUZZ_CHECK(*psb + 15 >= expect_at);
    FUZZ_CHECK(*psb > last_sync);
    last_sync = *psb;
    expect_at = *psb;
  }
}

// After a bulk decode of `b` ended with `err` (non-zero): Next() of `a` gives
// the same error, and both resync to the same PSB. False when decoding is over
// (ENODATA, or no PSB left).
bool SameErrorThenResync(PacketDecoder& a, PacketDecoder& b, int err) {
  Packet p;
  FUZZ_CHECK(a.Next(p) == err);
  if (err == ENODATA) return false;
  const auto sa = a.SyncForward();
  const auto sb = b.SyncForward();
  FUZZ_CHECK(sa.ok() == sb.ok());
  if (!sa.ok()) return false;
  FUZZ_CHECK(*sa == *sb);
  return true;
}

// PacketDecoder::Decode() gives what Next() gives, packets and errors, through
// the same resync protocol, for a batch size taken from the input.
void DecodeInBulk(std::span<const uint8_t> trace, size_t batch) {
  PacketDecoder a(trace);
  PacketDecoder b(trace);
  FUZZ_CHECK(a.SyncSet(0).ok() && b.SyncSet(0).ok());
  static std::vector<Packet> storage(8192);  // reused: allocation would dominate the run time
  if (storage.size() < batch) storage.resize(batch);
  const std::span<Packet> buf(storage.data(), batch);
  for (int rounds = 0; rounds < 1000000; ++rounds) {
    int err = 0;
    const size_t n = b.Decode(buf, err);
    for (size_t i = 0; i < n; ++i) {
      Packet p;
      FUZZ_CHECK(a.Next(p) == 0);
      FUZZ_CHECK(p == buf[i]);
    }
    FUZZ_CHECK(a.offset() == b.offset());
    if (err != 0 && !SameErrorThenResync(a, b, err)) return;
  }
}

// The same for Decode(PacketBatch&), with and without PEBS block packets,
// with the lanes it picks by default (the mapped lanes where the CPU has
// AVX-512 VBMI) or held to its portable lanes.
void DecodeBatchInBulk(std::span<const uint8_t> trace, size_t capacity, bool blocks, bool portable) {
  const PacketDecoder::Options options{.block_packets = blocks, .portable = portable};
  PacketDecoder a(trace, options);
  PacketDecoder b(trace, options);
  FUZZ_CHECK(a.SyncSet(0).ok() && b.SyncSet(0).ok());
  static PacketBatch big;  // reused: allocation would dominate the run time
  PacketBatch small(capacity);
  PacketBatch& batch = capacity >= PacketBatch::kDefaultCapacity ? big : small;
  for (int rounds = 0; rounds < 1000000; ++rounds) {
    const uint64_t base = b.offset();
    const int err = b.Decode(batch);
    FUZZ_CHECK(batch.base() == base && batch.size() <= batch.capacity());
    size_t n = 0;
    batch.ForEach([&](const PacketRecord& r) {
      Packet p;
      FUZZ_CHECK(a.Next(p) == 0);
      FUZZ_CHECK(p == batch.ToPacket(r));
      ++n;
    });
    FUZZ_CHECK(n == batch.size());
    FUZZ_CHECK(a.offset() == b.offset());
    if (err != 0 && !SameErrorThenResync(a, b, err)) return;
  }
}

void DecodeBackward(std::span<const uint8_t> trace) {
  PacketDecoder d(trace);
  uint64_t previous = trace.size() + 1;
  for (int i = 0; i < 100000; ++i) {
    const auto psb = d.SyncBackward();
    if (!psb.ok()) return;
    FUZZ_CHECK(IsPsbAt(trace, *psb));
    if (*psb == previous) return;
    previous = *psb;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> trace(data, size);
  for (bool blocks : {true, false}) {
    DecodeForward(trace, blocks, /*from_zero=*/true);
    DecodeForward(trace, blocks, /*from_zero=*/false);
  }
  DecodeBackward(trace);
  // A batch that takes the interleaved path (4 Ki packets or more; it also
  // needs 4 KiB of trace ahead: run with -max_len=65536), and a small one.
  DecodeInBulk(trace, 4096 + (size > 0 ? data[0] * 16 : 0));
  DecodeInBulk(trace, 1 + (size > 1 ? data[1] : 0));
  DecodeBatchInBulk(trace, PacketBatch::kDefaultCapacity, size % 3 != 0, /*portable=*/size % 2 == 0);
  DecodeBatchInBulk(trace, 4096 + (size > 2 ? data[2] * 16 : 0), size % 3 == 0, /*portable=*/size % 2 != 0);
  if (size < 4096) {
    DumpOptions options;
    options.last_ip = true;
    options.format = size % 2 ? DumpOptions::Format::kJson : DumpOptions::Format::kText;
    size_t out = 0;
    FUZZ_CHECK(Dump(trace, options, [&](std::string_view s) { out += s.size(); }).ok());
  }
  return 0;
}
