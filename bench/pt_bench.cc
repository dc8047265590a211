// Intel PT packet decoding throughput (harness/pt/packet_decoder.h) against
// libipt 2.0.5's pt_pkt_next on the same bytes, in the same run.
//
//   build/bin/bench_pt --benchmark_min_time=0.5
//   ./perftest bench pt        # bytes/s of each benchmark / BM_Baseline_LibiptPktNext
//
// The trace: 8 MiB from testing/trace_generator.h RealisticTrace() — what
// perf records from a user program with intel_pt/cyc,mtc/: PSB+ (PSB, TSC,
// TMA, CBR, MODE.Exec, FUP, PSBEND) every 4 KiB, then mostly TNT-8 and TIP
// (last-IP compressed), a CYC before ~60% of packets, MTC every ~15 packets,
// and now and then FUP+TIP, TIP.PGD/TIP.PGE, MODE.TSX, PAD and long TNT.
// Both decoders sync at the first PSB and decode every packet to the end;
// each packet's type and payload feed a checksum so that nothing is skipped.
//
//   BM_PtPacketDecode           PacketDecoder::Decode() into a 16 Ki-packet batch
//                               (PSB-delimited stretches decoded interleaved)
//   BM_PtPacketNext             PacketDecoder::Next(Packet&) in a loop (one packet at a time)
//   BM_PtPacketDecodeResult     PacketDecoder::Next() returning Result<Packet>
//   BM_Baseline_LibiptPktNext   pt_pkt_next
//   BM_Memcpy                   memcpy of the trace (the ceiling)
#include <benchmark/benchmark.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/libipt_reference.h"
#include "harness/pt/testing/trace_generator.h"

namespace perftest::pt {
namespace {

constexpr size_t kTraceSize = 8 << 20;

const std::vector<uint8_t>& Trace() {
  static const std::vector<uint8_t> trace = testing::RealisticTrace({.seed = 1, .size = kTraceSize});
  return trace;
}

void SetCounters(benchmark::State& state, uint64_t packets) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Trace().size()));
  state.counters["packets"] = static_cast<double>(packets);
  state.counters["bytes/packet"] = static_cast<double>(Trace().size()) / static_cast<double>(packets);
}

void BM_PtPacketDecode(benchmark::State& state) {
  const std::vector<uint8_t>& trace = Trace();
  std::vector<Packet> batch(16 * 1024);  // room for four PSB periods of 1-byte packets
  uint64_t packets = 0;
  for (auto _ : state) {
    PacketDecoder decoder(trace);
    if (!decoder.SyncForward().ok()) state.SkipWithError("no PSB");
    uint64_t sum = 0;
    packets = 0;
    int err = 0;
    while (err == 0) {
      const size_t n = decoder.Decode(batch, err);
      for (size_t i = 0; i < n; ++i) sum += batch[i].payload + static_cast<uint64_t>(batch[i].type);
      packets += n;
    }
    if (err != ENODATA) state.SkipWithError("decode error");
    benchmark::DoNotOptimize(sum);
  }
  SetCounters(state, packets);
}
BENCHMARK(BM_PtPacketDecode)->Unit(benchmark::kMillisecond);

void BM_PtPacketNext(benchmark::State& state) {
  const std::vector<uint8_t>& trace = Trace();
  uint64_t packets = 0;
  for (auto _ : state) {
    PacketDecoder decoder(trace);
    if (!decoder.SyncForward().ok()) state.SkipWithError("no PSB");
    Packet p;
    uint64_t sum = 0;
    packets = 0;
    while (decoder.Next(p) == 0) {
      sum += p.payload + static_cast<uint64_t>(p.type);
      ++packets;
    }
    if (decoder.offset() != trace.size()) state.SkipWithError("decode error");
    benchmark::DoNotOptimize(sum);
  }
  SetCounters(state, packets);
}
BENCHMARK(BM_PtPacketNext)->Unit(benchmark::kMillisecond);

void BM_PtPacketDecodeResult(benchmark::State& state) {
  const std::vector<uint8_t>& trace = Trace();
  uint64_t packets = 0;
  for (auto _ : state) {
    PacketDecoder decoder(trace);
    if (!decoder.SyncForward().ok()) state.SkipWithError("no PSB");
    uint64_t sum = 0;
    packets = 0;
    for (Result<Packet> p = decoder.Next(); p.ok(); p = decoder.Next()) {
      sum += p->payload + static_cast<uint64_t>(p->type);
      ++packets;
    }
    if (decoder.offset() != trace.size()) state.SkipWithError("decode error");
    benchmark::DoNotOptimize(sum);
  }
  SetCounters(state, packets);
}
BENCHMARK(BM_PtPacketDecodeResult)->Unit(benchmark::kMillisecond);

void BM_Baseline_LibiptPktNext(benchmark::State& state) {
  const std::vector<uint8_t>& trace = Trace();
  testing::LibiptDecoder decoder(trace);  // decodes its own (aligned) copy of the trace
  uint64_t first_psb = 0;
  if (decoder.SyncForward(&first_psb) != 0) state.SkipWithError("no PSB");
  uint64_t packets = 0;
  for (auto _ : state) {
    decoder.SyncSet(first_psb);
    pt_packet p;
    uint64_t sum = 0;
    packets = 0;
    while (decoder.NextRaw(&p) > 0) {
      sum += p.payload.tnt.payload + static_cast<uint64_t>(p.type);
      ++packets;
    }
    if (decoder.offset() != trace.size()) state.SkipWithError("decode error");
    benchmark::DoNotOptimize(sum);
  }
  SetCounters(state, packets);
}
BENCHMARK(BM_Baseline_LibiptPktNext)->Unit(benchmark::kMillisecond);

void BM_Memcpy(benchmark::State& state) {
  const std::vector<uint8_t>& trace = Trace();
  std::vector<uint8_t> out(trace.size());
  for (auto _ : state) {
    std::memcpy(out.data(), trace.data(), trace.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace.size()));
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perftest::pt

BENCHMARK_MAIN();
