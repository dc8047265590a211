// Packets in bulk: PacketDecoder::Decode(PacketBatch&) fills a PacketBatch
// with compact 16-byte PacketRecords, the packets Next() would return, in
// order — the fast way through a long trace (packet_decoder.h "Speed").
//
//   pt::PacketDecoder decoder(trace);
//   pt::PacketBatch batch;                         // 64 Ki records, allocated once
//   if (!decoder.SyncForward().ok()) return;
//   for (int err = 0; err == 0;) {
//     err = decoder.Decode(batch);                 // 0: more may follow
//     batch.ForEach([&](const pt::PacketRecord& r) { Use(r.type, batch.offset(r), r.payload); });
//     // err != 0: as Next() — ENODATA at the end, else the error at decoder.offset()
//   }
//
// A PacketRecord holds what a Packet holds (packet.h: type, size, opcode, ext,
// payload), with the offset as a 32-bit distance from the batch's base(), the
// offset of its first packet; ToPacket() gives back the full Packet. The
// records come in chunks (the stretches the decoder decoded side by side,
// left where they were written): ForEach() visits them all in order, as does
// a loop over chunks() and each chunk's records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "harness/pt/packet.h"

namespace perftest::pt {

struct PacketRecord {
  uint64_t payload = 0;  // Packet::payload
  uint32_t offset = 0;   // bytes from PacketBatch::base()
  PacketType type = PacketType::kInvalid;
  uint8_t size = 0;      // bytes, opcode included (1..16)
  uint8_t opcode = 0;    // byte 0
  uint8_t ext = 0;       // byte 1 of 02h-prefixed packets, else 0

  bool operator==(const PacketRecord&) const = default;
};
static_assert(sizeof(PacketRecord) == 16);
// The second 8 bytes: the offset, then type, size, opcode, ext — the same
// 4-byte word as in Packet; the decoder writes them as one 8-byte word.
static_assert(offsetof(PacketRecord, offset) == 8 && offsetof(PacketRecord, type) == 12 &&
              offsetof(PacketRecord, ext) == 15);

class PacketBatch {
 public:
  static constexpr size_t kDefaultCapacity = 64 * 1024;
  static constexpr size_t kMaxChunks = 64;

  // Room for `capacity` records (at least 1). Decode() fills at most that
  // many; it takes the interleaved path only with 4 Ki or more (see Decode()).
  // Where it runs the mapped lanes (PacketDecoder::BatchLanes()), Decode()
  // also keeps its 256 KiB map of the trace here, allocated on first use.
  explicit PacketBatch(size_t capacity = kDefaultCapacity) : records_(capacity == 0 ? 1 : capacity) {}

  // Records in all chunks.
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return records_.size(); }
  // Forgets the records (keeps the room).
  void clear() {
    size_ = 0;
    nchunks_ = 0;
  }
  // The trace offset of the first record (records' offsets count from it).
  uint64_t base() const { return base_; }
  uint64_t offset(const PacketRecord& r) const { return base_ + r.offset; }

  // The records, in order: chunk 0's, then chunk 1's, ... (none empty).
  size_t chunk_count() const { return nchunks_; }
  std::span<const PacketRecord> chunk(size_t i) const { return {records_.data() + chunks_[i].start, chunks_[i].count}; }
  // Calls f(const PacketRecord&) for every record, in order.
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t c = 0; c < nchunks_; ++c) {
      for (const PacketRecord& r : chunk(c)) f(r);
    }
  }

  // A record as a Packet.
  Packet ToPacket(const PacketRecord& r) const {
    Packet p;
    p.offset = offset(r);
    p.payload = r.payload;
    std::memcpy(&p.type, &r.type, 4);  // type, size, opcode, ext
    return p;
  }
  std::vector<Packet> Packets() const {
    std::vector<Packet> v;
    v.reserve(size_);
    ForEach([&](const PacketRecord& r) { v.push_back(ToPacket(r)); });
    return v;
  }

  struct Chunk {
    size_t start = 0, count = 0;  // records_[start, start + count)
  };

 private:
  friend class PacketDecoder;
  std::vector<PacketRecord> records_;
  std::vector<uint8_t> map_;  // the mapped lanes' map (packet_decoder.cc), allocated on first use
  Chunk chunks_[kMaxChunks];
  size_t nchunks_ = 0;
  size_t size_ = 0;
  uint64_t base_ = 0;
};

}  // namespace perftest::pt
