#include "harness/pt/testing/differential.h"

#include <fmt/format.h>

#include <algorithm>

#include "harness/pt/packet_decoder.h"
#include "harness/result.h"

namespace perftest::pt::testing {
namespace {

PacketDecoder::Options LibiptOptions(bool portable) {
  PacketDecoder::Options o = PacketDecoder::Options::Libipt205();
  o.portable = portable;
  return o;
}

// The sync calls of our PacketDecoder in LibiptDecoder's form (0 or an errno,
// the offset through a pointer).
class OurSync {
 public:
  explicit OurSync(std::span<const uint8_t> trace, bool portable = false)
      : d_(trace, LibiptOptions(portable)) {}
  int SyncForward(uint64_t* offset) { return Sync(d_.SyncForward(), offset); }
  int SyncBackward(uint64_t* offset) { return Sync(d_.SyncBackward(), offset); }
  int SyncSet(uint64_t offset) { return d_.SyncSet(offset).error(); }
  uint64_t offset() const { return d_.offset(); }

 protected:
  PacketDecoder d_;

 private:
  static int Sync(const Result<uint64_t>& r, uint64_t* offset) {
    if (!r.ok()) return r.error();
    *offset = *r;
    return 0;
  }
};

// Our decoder behind LibiptDecoder's interface.
class OurDecoder : public OurSync {
 public:
  using OurSync::OurSync;
  int Next(RefPacket* out) {
    Packet p;
    const int err = d_.Next(p);
    if (err == 0) *out = FromOurs(p);
    return err;
  }
};

// Our decoder's bulk form, Decode(PacketBatch&), behind the same interface:
// Next() hands out the batch's records, then the error that ended it.
class OurBatchDecoder : public OurSync {
 public:
  // `batch` is reused across streams: a 64 Ki-record batch is 1 MiB to allocate and clear.
  // `portable`: Decode() held to its portable lanes (PacketDecoder::Options::portable).
  OurBatchDecoder(std::span<const uint8_t> trace, PacketBatch& batch, bool portable)
      : OurSync(trace, portable), batch_(batch) {
    batch_.clear();
  }
  int Next(RefPacket* out) {
    while (chunk_ == batch_.chunk_count()) {
      if (err_ != 0) {
        const int err = err_;
        err_ = 0;  // Decode() again after a resync (or once more at the end: the same error)
        return err;
      }
      err_ = d_.Decode(batch_);
      chunk_ = 0;
      next_ = 0;
    }
    const std::span<const PacketRecord> c = batch_.chunk(chunk_);
    *out = FromOurs(batch_.ToPacket(c[next_++]));
    if (next_ == c.size()) {
      ++chunk_;
      next_ = 0;
    }
    return 0;
  }

 private:
  PacketBatch& batch_;
  size_t chunk_ = 0, next_ = 0;  // the next record: batch_.chunk(chunk_)[next_]
  int err_ = 0;
};

enum class Start { kSyncForward, kFromZero };

DiffEvent Sync(uint64_t at) { return DiffEvent{DiffEvent::kSync, {}, 0, at}; }
DiffEvent NoSync() { return DiffEvent{DiffEvent::kNoSync, {}, 0, 0}; }

template <typename Decoder>
std::vector<DiffEvent> RunForward(Decoder& d, Start start) {
  std::vector<DiffEvent> out;
  uint64_t at = 0;
  if (start == Start::kFromZero) {
    if (d.SyncSet(0) != 0) return {NoSync()};
  } else if (d.SyncForward(&at) != 0) {
    return {NoSync()};
  } else {
    out.push_back(Sync(at));
  }
  // Every step consumes a byte or moves to a later PSB; the bound is a backstop.
  for (size_t steps = 0; steps < 100'000'000; ++steps) {
    DiffEvent e;
    const int err = d.Next(&e.packet);
    if (err == 0) {
      out.push_back(e);
      continue;
    }
    out.push_back(DiffEvent{DiffEvent::kError, {}, err, d.offset()});
    if (err == ENODATA) break;
    if (d.SyncForward(&at) != 0) {
      out.push_back(NoSync());
      break;
    }
    out.push_back(Sync(at));
  }
  return out;
}

template <typename Decoder>
std::vector<DiffEvent> RunBackward(Decoder& d) {
  std::vector<DiffEvent> out;
  uint64_t at = 0, last = ~uint64_t{0};
  for (int i = 0; i < 1'000'000; ++i) {
    if (d.SyncBackward(&at) != 0) {
      out.push_back(NoSync());
      break;
    }
    out.push_back(Sync(at));
    if (at == last) break;  // a run reaching past the sync point finds itself again (in libipt too)
    last = at;
  }
  return out;
}

std::string Compare(const std::vector<DiffEvent>& ours, const std::vector<DiffEvent>& ref) {
  const size_t n = std::min(ours.size(), ref.size());
  for (size_t i = 0; i < n; ++i) {
    if (ours[i] == ref[i]) continue;
    std::string s = fmt::format("first difference at event {}:\n  ours:   {}\n  libipt: {}\n  before:", i,
                                ToString(ours[i]), ToString(ref[i]));
    for (size_t k = i >= 3 ? i - 3 : 0; k < i; ++k) s += " " + ToString(ours[k]) + ";";
    return s;
  }
  if (ours.size() != ref.size()) {
    return fmt::format("ours has {} events, libipt {}; next: {}", ours.size(), ref.size(),
                       ToString(ours.size() > n ? ours[n] : ref[n]));
  }
  return "";
}

}  // namespace

std::string ToString(const DiffEvent& e) {
  switch (e.kind) {
    case DiffEvent::kPacket: return ToString(e.packet);
    case DiffEvent::kError: return fmt::format("error {} at {:#x}", ErrnoName(e.err), e.offset);
    case DiffEvent::kSync: return fmt::format("sync at {:#x}", e.offset);
    case DiffEvent::kNoSync: return "no sync";
  }
  return "?";
}

std::string DiffAgainstLibipt(std::span<const uint8_t> trace, DiffStats* stats) {
  DiffStats local;
  DiffStats& t = stats != nullptr ? *stats : local;
  ++t.streams;
  t.bytes += trace.size();
  for (Start start : {Start::kSyncForward, Start::kFromZero}) {
    OurDecoder ours(trace);
    LibiptDecoder ref(trace);
    const std::vector<DiffEvent> a = RunForward(ours, start);
    const std::vector<DiffEvent> want = RunForward(ref, start);
    std::string diff = Compare(a, want);
    if (!diff.empty()) return diff + (start == Start::kFromZero ? "\n  protocol: from 0" : "\n  protocol: forward");
    // The bulk form, Decode(PacketBatch&) (interleaved where the stream is
    // long enough), with the lanes it runs by default (the mapped lanes
    // where the CPU has AVX-512 VBMI) and held to its portable lanes.
    static thread_local PacketBatch batch;
    for (const bool portable : {false, true}) {
      OurBatchDecoder bulk(trace, batch, portable);
      diff = Compare(RunForward(bulk, start), want);
      if (!diff.empty()) {
        return diff + (start == Start::kFromZero ? "\n  protocol: from 0, Decode(PacketBatch&)"
                                                 : "\n  protocol: forward, Decode(PacketBatch&)") +
               (portable ? ", portable" : "");
      }
    }
    for (const DiffEvent& e : a) {
      t.packets += e.kind == DiffEvent::kPacket;
      t.errors += e.kind == DiffEvent::kError;
      t.syncs += e.kind == DiffEvent::kSync;
      if (e.kind == DiffEvent::kPacket && start == Start::kFromZero && e.packet.type == PacketType::kPwre) {
        // FromOurs() reports libipt's bit 3; look at bit 7 in the bytes.
        const bool sdm_hw = (trace[e.packet.offset + 2] & 0x80) != 0;
        t.pwre_divergent += sdm_hw != (e.packet.f[2] != 0);
      }
    }
  }
  OurDecoder ours(trace);
  LibiptDecoder ref(trace);
  const std::vector<DiffEvent> a = RunBackward(ours);
  const std::string diff = Compare(a, RunBackward(ref));
  if (!diff.empty()) return diff + "\n  protocol: backward";
  for (const DiffEvent& e : a) t.syncs += e.kind == DiffEvent::kSync;
  return "";
}

}  // namespace perftest::pt::testing
