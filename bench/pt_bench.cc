// Intel PT packet decoding throughput (harness/pt/packet_decoder.h) against
// libipt 2.0.5's pt_pkt_next on the same bytes, in the same run.
//
//   build/bin/bench_pt --benchmark_min_time=0.5
//   ./perftest bench pt        # bytes/s of each benchmark / BM_Baseline_LibiptPktNext
//
// On a shared (loaded) machine the two decoders' speeds drift with the load
// between benchmarks; take medians of interleaved repetitions, so that both
// see the same load:
//   ./perftest bench pt -- --benchmark_repetitions=7 --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true   (one command line)
//
// The trace: 8 MiB from testing/trace_generator.h RealisticTrace() — what
// perf records from a user program with intel_pt/cyc,mtc/: PSB+ (PSB, TSC,
// TMA, CBR, MODE.Exec, FUP, PSBEND) every 4 KiB, then mostly TNT-8 and TIP
// (last-IP compressed), a CYC before ~60% of packets, MTC every ~15 packets,
// and now and then FUP+TIP, TIP.PGD/TIP.PGE, MODE.TSX, PAD and long TNT.
// Both decoders sync at the first PSB and decode every packet to the end;
// each packet's type and payload (and for ours its offset) feed a checksum so
// that nothing is skipped (for Decode(PacketBatch&), every field of every record).
//
//   BM_PtPacketDecode           PacketDecoder::Decode(PacketBatch&), 64 Ki records a batch
//                               (PSB-delimited segments, 4 decoded interleaved); the
//                               checksum takes every record's two words (all its fields);
//                               the label names the lanes that ran (BatchLanes())
//   BM_PtPacketDecodePortable   the same, held to the portable lanes (Options::portable)
//   BM_PtPacketDecodeSpan       PacketDecoder::Decode(std::span<Packet>) into 16 Ki Packets
//   BM_PtPacketNext             PacketDecoder::Next(Packet&) in a loop (one packet at a time)
//   BM_PtPacketDecodeResult     PacketDecoder::Next() returning Result<Packet>
//   BM_Baseline_LibiptPktNext   pt_pkt_next
//   BM_Memcpy                   memcpy of the trace (the ceiling)
#include <benchmark/benchmark.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <memory>
#include <vector>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/image.h"
#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/flow_trace.h"
#include "harness/pt/testing/libipt_flow.h"
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

// What a pass over the trace saw: packets, and the checksum of their fields.
struct PassSum {
  uint64_t packets = 0, sum = 0;
};

// The packet benchmarks' frame: each iteration syncs a PacketDecoder at the
// trace's first PSB and runs `pass`(decoder), which decodes every packet to
// the end and returns a PassSum (each accumulated in a local, not through
// memory); a pass that stops short of the end is a decode error.
template <typename Pass>
void PacketBench(benchmark::State& state, Pass pass, PacketDecoder::Options options = {}) {
  const std::vector<uint8_t>& trace = Trace();
  uint64_t packets = 0;
  for (auto _ : state) {
    PacketDecoder decoder(trace, options);
    if (!decoder.SyncForward().ok()) state.SkipWithError("no PSB");
    const PassSum s = pass(decoder);
    if (decoder.offset() != trace.size()) state.SkipWithError("decode error");
    packets = s.packets;
    benchmark::DoNotOptimize(s.sum);
  }
  SetCounters(state, packets);
}

// The checksum of a batch: each record's two 8-byte words, the payload and
// the offset/type/size/opcode/ext word — every field, read as the record
// holds them, one 16-byte load and add a record. (Summing payload, type and
// offset one by one took 8 instructions a record, half as many as decoding
// it.) A function of its own, so that the sum is a register here rather
// than a stack slot that lives across Decode() calls.
uint64_t BatchSum(const PacketBatch& batch) {
  using Words = uint64_t __attribute__((vector_size(16)));  // a record as its two words
  Words sum = {0, 0};
  for (size_t c = 0; c < batch.chunk_count(); ++c) {
#pragma GCC unroll 4
    for (const PacketRecord& r : batch.chunk(c)) {
      Words w;
      std::memcpy(&w, &r, sizeof w);
      sum += w;
    }
  }
  return sum[0] + sum[1];
}

void PacketBatchBench(benchmark::State& state, PacketDecoder::Options options) {
  PacketBatch batch;  // 64 Ki records: 16 PSB periods of 1-byte packets
  PacketBench(
      state,
      [&](PacketDecoder& decoder) {
        uint64_t packets = 0, sum = 0;
        for (int err = 0; err == 0; packets += batch.size()) {
          err = decoder.Decode(batch);
          sum += BatchSum(batch);
        }
        return PassSum{packets, sum};
      },
      options);
  state.SetLabel(std::string(PacketDecoder::BatchLanes(options)));  // which lanes ran
}

// Decode(PacketBatch&): the interleaved lanes into 16-byte PacketRecords.
void BM_PtPacketDecode(benchmark::State& state) { PacketBatchBench(state, {}); }
BENCHMARK(BM_PtPacketDecode)->Unit(benchmark::kMillisecond);

// The same held to the portable lanes (the same where the CPU has no AVX-512 VBMI).
void BM_PtPacketDecodePortable(benchmark::State& state) { PacketBatchBench(state, {.portable = true}); }
BENCHMARK(BM_PtPacketDecodePortable)->Unit(benchmark::kMillisecond);

void BM_PtPacketDecodeSpan(benchmark::State& state) {
  std::vector<Packet> batch(16 * 1024);  // room for four PSB periods of 1-byte packets
  PacketBench(state, [&](PacketDecoder& decoder) {
    uint64_t packets = 0, sum = 0;
    for (int err = 0; err == 0;) {
      const size_t n = decoder.Decode(batch, err);
      for (size_t i = 0; i < n; ++i) sum += batch[i].payload + static_cast<uint64_t>(batch[i].type);
      packets += n;
    }
    return PassSum{packets, sum};
  });
}
BENCHMARK(BM_PtPacketDecodeSpan)->Unit(benchmark::kMillisecond);

void BM_PtPacketNext(benchmark::State& state) {
  PacketBench(state, [](PacketDecoder& decoder) {
    uint64_t packets = 0, sum = 0;
    for (Packet p; decoder.Next(p) == 0; ++packets) sum += p.payload + static_cast<uint64_t>(p.type);
    return PassSum{packets, sum};
  });
}
BENCHMARK(BM_PtPacketNext)->Unit(benchmark::kMillisecond);

void BM_PtPacketDecodeResult(benchmark::State& state) {
  PacketBench(state, [](PacketDecoder& decoder) {
    uint64_t packets = 0, sum = 0;
    for (Result<Packet> p = decoder.Next(); p.ok(); p = decoder.Next(), ++packets) {
      sum += p->payload + static_cast<uint64_t>(p->type);
    }
    return PassSum{packets, sum};
  });
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

// ---------------------------------------------------------------------------
// Flow decoding: instructions/s of FlowDecoder against libipt's block decoder
// (pt_blk_next, the faster of libipt's two flow decoders) with the image
// loaded through its section cache (pt_iscache_add_file, pt_image_add_cached),
// on the same trace and image. Both keep their decoded blocks across
// decoders (libipt in the section cache's block cache, ours in a BlockCache
// shared through FlowDecoder::Options::cache). The argument is the trace length in millions
// of executed instructions; the run aborts unless both decoders count the
// same instructions.
//
// Two regimes, each side in the same one:
//   steady state (BM_PtFlowDecode/4, BM_Baseline_LibiptBlkNext/4): both
//     caches are filled by one untimed pass first, so every timed pass finds
//     its blocks decoded, as over a long trace whose code repeats;
//   cold (.../cold/4): every timed pass starts with an empty cache (a new
//     BlockCache; a new section cache and image for libipt, built untimed),
//     so it includes decoding each block once.
//
// The program: testing/flow_trace.h, 2000 functions of ~60 instructions
// (~0.6 MB of x86-64 code): Jcc, direct/indirect calls and jumps, returns
// (compressed), SYSCALLs (TIP.PGD/TIP.PGE), interrupts (FUP+TIP,
// FUP+TIP.PGD), OVF; PSB+ every 4 KiB, MTC and CYC on.
//
//   BM_PtFlowDecode/N             FlowDecoder::Next(), blocks (as pt_blk_next); counters: blocks
//                                 and events per pass, cached blocks, cache lookups per pass
//   BM_PtFlowInsns/N              the same, visiting every instruction (BlockInsns)
//   BM_Baseline_LibiptBlkNext/N   pt_blk_next + pt_blk_event
//   BM_PtFlowDecode/cold/N, BM_Baseline_LibiptBlkNext/cold/N   the same from an empty cache

struct FlowInput {
  testing::FlowTrace trace;
  Image image;
};

const FlowInput& Flow(uint64_t millions) {
  static std::map<uint64_t, FlowInput> inputs;
  auto it = inputs.find(millions);
  if (it != inputs.end()) return it->second;
  FlowInput& in = inputs[millions];
  in.trace = testing::MakeFlowTrace(
      {.seed = 1, .insns = millions * 1000000, .functions = 2000, .function_insns = 60});
  if (!in.image.AddBlob(in.trace.code_base, in.trace.code).ok()) std::abort();
  return in;
}

struct FlowStats {
  uint64_t blocks = 0, events = 0, syncs = 0;
};

uint64_t OurFlowInsns(const FlowInput& in, BlockCache* cache, bool per_insn, uint64_t* checksum,
                      FlowStats* stats = nullptr) {
  FlowDecoder decoder(in.trace.trace, &in.image,
                      FlowDecoder::Options{.packets = PacketDecoder::Options::Libipt205(), .cache = cache});
  uint64_t insns = 0, sum = 0;
  FlowStats st;
  while (decoder.SyncForward().ok()) {
    ++st.syncs;
    FlowStep step;
    while (decoder.Next(&step) == 0) {
      if (step.kind != FlowStep::kBlock) {
        ++st.events;
        continue;
      }
      ++st.blocks;
      insns += step.block.ninsn;
      if (per_insn) {
        for (BlockInsns it(step.block); it.ok(); it.Advance()) sum += it.ip();
      } else {
        sum += step.block.ip;
      }
    }
  }
  *checksum = sum;
  if (stats != nullptr) *stats = st;
  return insns;
}

uint64_t LibiptBlkInsns(const FlowInput& in, pt_image* image) {
  pt_config config;
  pt_config_init(&config);
  config.begin = const_cast<uint8_t*>(in.trace.trace.data());
  config.end = config.begin + in.trace.trace.size();
  pt_block_decoder* decoder = pt_blk_alloc_decoder(&config);
  pt_blk_set_image(decoder, image);
  uint64_t insns = 0;
  for (;;) {
    int status = pt_blk_sync_forward(decoder);
    if (status < 0) break;
    for (;;) {
      while (status >= 0 && (status & pts_event_pending)) {
        pt_event ev;
        status = pt_blk_event(decoder, &ev, sizeof ev);
      }
      if (status < 0) break;
      pt_block block;
      status = pt_blk_next(decoder, &block, sizeof block);
      if (status < 0) {
        // The block that ends in an error also holds the instruction whose
        // successor is unknown (the branch that found no packet);
        // FlowDecoder and pt_insn_next do not report that one.
        if (block.ninsn > 0) insns += block.ninsn - 1;
        break;
      }
      insns += block.ninsn;
    }
  }
  pt_blk_free_decoder(decoder);
  return insns;
}

// Both decoders' instruction counts for trace N, checked equal once.
void CheckFlowCounts(benchmark::State& state, const FlowInput& in) {
  static std::map<uint64_t, bool> checked;
  if (checked[static_cast<uint64_t>(state.range(0))]) return;
  checked[static_cast<uint64_t>(state.range(0))] = true;
  uint64_t sum = 0;
  const uint64_t ours = OurFlowInsns(in, nullptr, false, &sum);
  testing::LibiptCachedImage image(in.image);
  const uint64_t ref = LibiptBlkInsns(in, image.get());
  if (ours != ref || ours == 0) {
    std::fprintf(stderr, "flow instruction counts differ: FlowDecoder %llu, pt_blk_next %llu\n",
                 static_cast<unsigned long long>(ours), static_cast<unsigned long long>(ref));
    std::abort();
  }
}

void BM_PtFlowDecode(benchmark::State& state) {
  const FlowInput& in = Flow(static_cast<uint64_t>(state.range(0)));
  CheckFlowCounts(state, in);
  // Like libipt's, the block cache lives with the image, across decoders.
  BlockCache cache(&in.image);
  uint64_t sum = 0;
  FlowStats stats;
  uint64_t insns = OurFlowInsns(in, &cache, false, &sum, &stats);  // (untimed: fills the cache)
  const uint64_t finds_before = cache.hits() + cache.decoded();
  for (auto _ : state) {
    insns = OurFlowInsns(in, &cache, false, &sum, &stats);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * insns));
  state.counters["insns"] = static_cast<double>(insns);
  state.counters["blocks"] = static_cast<double>(stats.blocks);
  state.counters["events"] = static_cast<double>(stats.events);
  state.counters["trace_bytes"] = static_cast<double>(in.trace.trace.size());
  state.counters["cached_blocks"] = static_cast<double>(cache.size());
  state.counters["finds/iter"] =
      static_cast<double>(cache.hits() + cache.decoded() - finds_before) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PtFlowDecode)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_PtFlowInsns(benchmark::State& state) {
  const FlowInput& in = Flow(static_cast<uint64_t>(state.range(0)));
  CheckFlowCounts(state, in);
  // Like libipt's, the block cache lives with the image, across decoders.
  BlockCache cache(&in.image);
  uint64_t sum = 0;
  uint64_t insns = OurFlowInsns(in, &cache, true, &sum);  // (untimed: fills the cache)
  for (auto _ : state) {
    insns = OurFlowInsns(in, &cache, true, &sum);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * insns));
  state.counters["insns"] = static_cast<double>(insns);
}
BENCHMARK(BM_PtFlowInsns)->Arg(4)->Unit(benchmark::kMillisecond);

void BM_Baseline_LibiptBlkNext(benchmark::State& state) {
  const FlowInput& in = Flow(static_cast<uint64_t>(state.range(0)));
  CheckFlowCounts(state, in);
  testing::LibiptCachedImage image(in.image);
  if (!image.ok()) {
    state.SkipWithError("libipt section cache");
    return;
  }
  uint64_t insns = LibiptBlkInsns(in, image.get());  // (untimed: fills the section cache's block cache)
  for (auto _ : state) {
    insns = LibiptBlkInsns(in, image.get());
    benchmark::DoNotOptimize(insns);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * insns));
  state.counters["insns"] = static_cast<double>(insns);
}
BENCHMARK(BM_Baseline_LibiptBlkNext)->Arg(4)->Unit(benchmark::kMillisecond);

// The cold benchmarks' frame: each timed pass gets a cache of its own,
// made by `make`() and freed untimed; `decode`(cache) returns the pass's
// instruction count.
template <typename Make, typename Decode>
void ColdFlowBench(benchmark::State& state, Make make, Decode decode) {
  const FlowInput& in = Flow(static_cast<uint64_t>(state.range(0)));
  CheckFlowCounts(state, in);
  uint64_t insns = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto cache = make(in);
    state.ResumeTiming();
    insns = decode(in, cache.get());
    benchmark::DoNotOptimize(insns);
    state.PauseTiming();
    cache.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * insns));
  state.counters["insns"] = static_cast<double>(insns);
}

void BM_PtFlowDecodeCold(benchmark::State& state) {
  ColdFlowBench(
      state, [](const FlowInput& in) { return std::make_unique<BlockCache>(&in.image); },
      [](const FlowInput& in, BlockCache* cache) {
        uint64_t sum = 0;
        const uint64_t insns = OurFlowInsns(in, cache, false, &sum);
        benchmark::DoNotOptimize(sum);
        return insns;
      });
}
BENCHMARK(BM_PtFlowDecodeCold)->Name("BM_PtFlowDecode/cold")->Arg(4)->Unit(benchmark::kMillisecond);

void BM_Baseline_LibiptBlkNextCold(benchmark::State& state) {
  ColdFlowBench(
      state,
      [&](const FlowInput& in) {
        auto image = std::make_unique<testing::LibiptCachedImage>(in.image);
        if (!image->ok()) state.SkipWithError("libipt section cache");
        return image;
      },
      [](const FlowInput& in, testing::LibiptCachedImage* image) {
        return image->ok() ? LibiptBlkInsns(in, image->get()) : uint64_t{0};
      });
}
BENCHMARK(BM_Baseline_LibiptBlkNextCold)->Name("BM_Baseline_LibiptBlkNext/cold")->Arg(4)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace perftest::pt

BENCHMARK_MAIN();
