// Ring-buffer read throughput (harness/ring_buffer.h, harness/records.h).
//
//   build/bin/bench_ringbuffer --benchmark_min_time=0.2
//   ./perftest bench ringbuffer        # bytes/s of each benchmark / BM_Baseline_Memcpy
//
// An 8 MiB data area in a (1 + 2048)-page aligned allocation with a real
// struct perf_event_mmap_page, served by a minimal Backend whose Mmap() returns
// it. The area is filled with PERF_RECORD_SAMPLE records of sample_type
// IP|TID|TIME|CALLCHAIN with a 16-entry callchain (PERF_CONTEXT_USER + 15 user
// ips) — 168 bytes each, as a `perf record -g` style profiler sees them —
// starting mid-area on the fourth lap, so data_tail/data_head are free-running
// values past data_size and one record straddles the end of the area.
//
//   BM_RingBufferParse       Begin, Next, RecordViewParser::Parse, Consume: the full read
//                            protocol, every sample field in a typed view over the ring's bytes
//                            (zero-copy; only the wrapping record is copied, by Next())
//   BM_RingBufferParseOwned  the same with ParseRecord: an owned SampleRecord (a vector per callchain)
//   BM_RingBufferNext        Begin, Next: framing only
//   BM_Baseline_Memcpy   memcpy of the same bytes out of the same area (the wrap in two pieces)
//
// data_tail is reset after each iteration so every iteration reads the whole buffer.
#include <benchmark/benchmark.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness/backend.h"
#include "harness/records.h"
#include "harness/ring_buffer.h"

namespace perftest {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kDataPages = 2048;  // 8 MiB
constexpr size_t kDataSize = kDataPages * kPage;
constexpr size_t kCallchainDepth = 16;
constexpr uint64_t kSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
// Where the unread data begins: mid-area, three laps in.
constexpr uint64_t kStart = 3 * kDataSize + kDataSize / 2 + 8;

// The metadata page and data area, as the kernel lays them out (perf_mmap()).
class Buffer {
 public:
  Buffer() : length_((1 + kDataPages) * kPage) {
    mem_ = static_cast<std::byte*>(std::aligned_alloc(kPage, length_));
    std::memset(mem_, 0, length_);
    page()->data_offset = kPage;
    page()->data_size = kDataSize;
  }
  ~Buffer() { std::free(mem_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* mem() const { return mem_; }
  size_t length() const { return length_; }
  perf_event_mmap_page* page() const { return reinterpret_cast<perf_event_mmap_page*>(mem_); }
  std::byte* data() const { return mem_ + kPage; }

  void Write(uint64_t pos, const std::vector<std::byte>& bytes) {
    const size_t off = pos & (kDataSize - 1);
    const size_t first = std::min(bytes.size(), kDataSize - off);
    std::memcpy(data() + off, bytes.data(), first);
    std::memcpy(data(), bytes.data() + first, bytes.size() - first);
  }

 private:
  std::byte* mem_;
  size_t length_;
};

// Only what RingBuffer::Map needs: Mmap returns the buffer, Munmap succeeds.
class BufferBackend final : public Backend {
 public:
  explicit BufferBackend(Buffer& buffer) : buffer_(buffer) { machine_.page_size = kPage; }
  std::string_view kind() const override { return "bench"; }
  Result<int> PerfEventOpen(perf_event_attr*, pid_t, int, int, unsigned long) override { return Fail<int>(); }
  Result<size_t> Read(int, void*, size_t) override { return Fail<size_t>(); }
  Result<int> Ioctl(int, unsigned long, uintptr_t) override { return Fail<int>(); }
  Result<void*> Mmap(size_t length, int, int, int, off_t offset) override {
    if (length != buffer_.length() || offset != 0) return Result<void*>::Failure(EINVAL, "mmap");
    return Result<void*>::Ok(buffer_.mem(), "mmap");
  }
  Result<void> Munmap(void*, size_t) override { return Result<void>::Ok(); }
  Result<void> Close(int) override { return Result<void>::Ok(); }
  Result<int> Prctl(int) override { return Fail<int>(); }
  Result<int> Poll(std::span<pollfd>, int) override { return Fail<int>(); }
  Result<int> Fcntl(int, int, long) override { return Fail<int>(); }
  const MachineInfo& Machine() override { return machine_; }
  TaskId CurrentTask() override { return {1, 1}; }
  Result<WorkloadResult> RunWorkload(const Workload&) override { return Fail<WorkloadResult>(); }

 private:
  template <typename T>
  static Result<T> Fail() {
    return Result<T>::Failure(ENOSYS, "bench backend");
  }
  Buffer& buffer_;
  MachineInfo machine_;
};

SampleLayout Layout() {
  SampleLayout l;
  l.sample_type = kSampleType;
  return l;
}

// The shared fixture: a full buffer, mapped once.
struct Fixture {
  Buffer buffer;
  BufferBackend backend{buffer};
  std::optional<RingBuffer> ring;
  uint64_t head = kStart;
  size_t records = 0;
  std::string error;

  Fixture() {
    const SampleLayout layout = Layout();
    std::vector<std::byte> rec;
    for (;;) {
      SampleRecord s;
      s.ip = 0x401000 + records * 16;
      s.pid = 4242;
      s.tid = 4243 + static_cast<uint32_t>(records % 4);
      s.time = 1'000'000'000 + records * 250'000;
      std::vector<uint64_t> chain{static_cast<uint64_t>(PERF_CONTEXT_USER)};
      for (size_t i = 1; i < kCallchainDepth; ++i) chain.push_back(0x400000 + (records * 31 + i * 977) % 0x100000);
      s.callchain = std::move(chain);
      rec.clear();
      EncodeSample(layout, PERF_RECORD_MISC_USER, s, &rec);
      if (head + rec.size() - kStart > kDataSize) break;  // full: the kernel would stop here
      buffer.Write(head, rec);
      head += rec.size();
      ++records;
    }
    buffer.page()->data_tail = kStart;
    buffer.page()->data_head = head;
    Result<RingBuffer> rb = RingBuffer::Map(backend, /*fd=*/3, kDataPages);
    if (!rb.ok()) {
      error = rb.ToString();
      return;
    }
    ring.emplace(std::move(rb).value());
  }

  uint64_t bytes() const { return head - kStart; }
  void ResetTail() { ring->WriteTail(kStart); }
};

Fixture& Shared() {
  static Fixture* f = new Fixture();
  return *f;
}

void BM_RingBufferParse(benchmark::State& state) {
  Fixture& f = Shared();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  RecordViewParser parser(Layout());
  RingBuffer& rb = *f.ring;
  f.ResetTail();
  for (auto _ : state) {
    rb.Begin();
    size_t n = 0;
    while (std::optional<RawRecord> raw = rb.Next()) {
      const RecordView* r = parser.Parse(raw->bytes);
      if (r == nullptr || !r->is_sample()) return state.SkipWithError(parser.error().c_str());
      const SampleView& s = r->sample;
      benchmark::DoNotOptimize(s.ip);
      benchmark::DoNotOptimize(s.tid);
      benchmark::DoNotOptimize(s.time);
      benchmark::DoNotOptimize(s.callchain.back());
      ++n;
    }
    rb.Consume();
    if (n != f.records || rb.error()) return state.SkipWithError("did not read every record");
    f.ResetTail();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.bytes()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.records));
  state.counters["records"] = static_cast<double>(f.records);
}
BENCHMARK(BM_RingBufferParse)->Unit(benchmark::kMillisecond);

void BM_RingBufferParseOwned(benchmark::State& state) {
  Fixture& f = Shared();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  const SampleLayout layout = Layout();
  RingBuffer& rb = *f.ring;
  f.ResetTail();
  for (auto _ : state) {
    rb.Begin();
    size_t n = 0;
    while (std::optional<RawRecord> raw = rb.Next()) {
      Result<Record> r = ParseRecord(layout, raw->bytes);
      if (!r.ok()) return state.SkipWithError(r.ToString().c_str());
      const SampleRecord& s = std::get<SampleRecord>(r->body);
      benchmark::DoNotOptimize(s.ip);
      benchmark::DoNotOptimize(s.tid);
      benchmark::DoNotOptimize(s.time);
      benchmark::DoNotOptimize(s.callchain->back());
      ++n;
    }
    rb.Consume();
    if (n != f.records || rb.error()) return state.SkipWithError("did not read every record");
    f.ResetTail();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.bytes()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.records));
}
BENCHMARK(BM_RingBufferParseOwned)->Unit(benchmark::kMillisecond);

void BM_RingBufferNext(benchmark::State& state) {
  Fixture& f = Shared();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  RingBuffer& rb = *f.ring;
  f.ResetTail();
  for (auto _ : state) {
    rb.Begin();
    size_t n = 0;
    while (std::optional<RawRecord> raw = rb.Next()) {
      benchmark::DoNotOptimize(raw->header.size);
      benchmark::DoNotOptimize(raw->bytes.data());
      ++n;
    }
    if (n != f.records || rb.error()) return state.SkipWithError("did not read every record");
    f.ResetTail();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.bytes()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.records));
}
BENCHMARK(BM_RingBufferNext)->Unit(benchmark::kMillisecond);

void BM_Baseline_Memcpy(benchmark::State& state) {
  Fixture& f = Shared();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  const std::byte* data = f.buffer.data();
  const size_t len = f.bytes();
  const size_t off = kStart & (kDataSize - 1);
  const size_t first = std::min(len, kDataSize - off);
  std::vector<std::byte> out(len);
  for (auto _ : state) {
    std::memcpy(out.data(), data + off, first);
    std::memcpy(out.data() + first, data, len - first);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.records));
}
BENCHMARK(BM_Baseline_Memcpy)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perftest

BENCHMARK_MAIN();
