// pt_sim's Event Trace (config:31 `event`: CFE, EVD) and TRIG packets, and
// the flow decoder's events for them against the ground truth: the same
// events, with the same payload and IP, at the same place in the stream of
// traced instructions (SDM Vol. 3C §33.4.2.29 "CFE", §33.4.2.30 "EVD", "TRIG").
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/image.h"
#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/spec.h"
#include "mocks/pt_sim/generator.h"
#include "mocks/pt_sim/test_programs.h"

namespace perftest::pt_sim {
namespace {

using pt::FlowEvent;

pt::Image ToImage(const CodeImage& code) {
  pt::Image image;
  for (const CodeSection& s : code.sections()) EXPECT_TRUE(image.AddBlob(s.address, s.bytes).ok());
  return image;
}

// "kind payload ip @position" per event, position = traced instructions before it.
std::vector<std::string> TruthEvents(const GroundTruth& t) {
  std::vector<uint64_t> traced_before(t.insns.size() + 1, 0);
  for (size_t i = 0; i < t.insns.size(); ++i) traced_before[i + 1] = traced_before[i] + (t.insns[i].traced ? 1 : 0);
  std::vector<std::string> out;
  for (const EventRecord& e : t.events) {
    if (e.kind == EventKind::kCfe) {
      // (Type | Vector << 8, the IP bit in bit 16: the event's IP is the FUP's.)
      out.push_back(fmt::format("cfe {:#x} {:#x} @{}", e.payload & 0xffff, e.ip, traced_before[e.insn]));
    } else if (e.kind == EventKind::kEvd) {
      out.push_back(fmt::format("evd {:#x} - @{}", e.payload, traced_before[e.insn]));
    } else if (e.kind == EventKind::kTrig) {
      out.push_back(fmt::format("trig {:#x} - @{}", e.payload, traced_before[e.insn]));
    }
  }
  return out;
}

std::vector<std::string> DecodedEvents(const std::vector<uint8_t>& trace, const pt::Image& image, uint64_t* errors) {
  std::vector<std::string> out;
  pt::FlowDecoder dec(trace, &image);
  uint64_t insns = 0;
  for (auto s = dec.SyncForward(); s.ok(); s = dec.SyncForward()) {
    pt::FlowStep step;
    int err;
    while ((err = dec.Next(&step)) == 0) {
      if (step.kind == pt::FlowStep::kBlock) {
        insns += step.block.ninsn;
        continue;
      }
      const FlowEvent& e = step.event;
      if (e.type == FlowEvent::Type::kCfe) {
        out.push_back(fmt::format("cfe {:#x} {:#x} @{}", e.payload, e.ip_suppressed ? 0 : e.ip, insns));
      } else if (e.type == FlowEvent::Type::kEvd) {
        EXPECT_EQ(e.evd_type, 0);  // CR2
        out.push_back(fmt::format("evd {:#x} - @{}", e.payload, insns));
      } else if (e.type == FlowEvent::Type::kTrig) {
        out.push_back(fmt::format("trig {:#x} - @{}", e.payload & 0xff, insns));
      }
    }
    if (err == ENODATA) break;
    ++*errors;
  }
  return out;
}

size_t CountKind(const GroundTruth& t, EventKind k) {
  size_t n = 0;
  for (const EventRecord& e : t.events) n += e.kind == k;
  return n;
}

TEST(EventTrace, ConfigBit31) {
  pt::testing::Spec("pt_sim.config.event", "arch/x86/events/intel/pt.c format 'event' config:31 (RTIT_CTL.EventEn)");
  PtConfig c;
  c.event = true;
  EXPECT_EQ(c.ToAttrConfig() & (uint64_t{1} << 31), uint64_t{1} << 31);
  EXPECT_TRUE(PtConfig::FromAttrConfig(uint64_t{1} << 31).event);
  EXPECT_FALSE(PtConfig::FromAttrConfig(0).event);
  EXPECT_NE(c.ToString().find("event=1"), std::string::npos);
  EXPECT_EQ(PtConfig{}.ToString().find("event"), std::string::npos);
}

TEST(EventTrace, InterruptsWriteCfeAndEvdOnlyWithTheConfigBit) {
  pt::testing::Spec("pt_sim.event_trace", "SDM §33.4.2.29-30; the decoder's events against the ground truth");
  for (const bool event : {false, true}) {
    SCOPED_TRACE(event);
    PtConfig config;
    config.event = event;
    RunOptions options;
    options.max_insns = 20000;
    options.interrupt_every = 300;
    Result<GeneratedTrace> t = Generate(pt_sim::testing::LoopsProgram(), config, options);
    ASSERT_TRUE(t.ok()) << t.ToString();
    const size_t interrupts = t->truth.CountTracedEvents(EventKind::kInterrupt);
    ASSERT_GT(interrupts, 10u);
    // The packets: one CFE per interrupt, one EVD per page fault (before its CFE).
    pt::PacketDecoder packets(t->bytes);
    ASSERT_TRUE(packets.SyncForward().ok());
    size_t cfe = 0, evd = 0;
    pt::Packet p;
    while (packets.Next(p) == 0) {
      cfe += p.type == pt::PacketType::kCfe;
      evd += p.type == pt::PacketType::kEvd;
    }
    EXPECT_EQ(cfe, event ? interrupts : 0u);
    EXPECT_EQ(cfe, CountKind(t->truth, EventKind::kCfe));
    EXPECT_EQ(evd, CountKind(t->truth, EventKind::kEvd));
    if (event) {
      EXPECT_GT(evd, 0u);
    }
    // The decoder's events: the truth's, in order, at their instructions.
    uint64_t errors = 0;
    const std::vector<std::string> decoded = DecodedEvents(t->bytes, ToImage(t->truth.image), &errors);
    EXPECT_EQ(errors, 0u);
    EXPECT_EQ(decoded, TruthEvents(t->truth));
  }
}

TEST(EventTrace, TrigAfterItsBranch) {
  pt::testing::Spec("pt_sim.trig", "SDM §33.4.2 TRIG; the decoder's events against the ground truth");
  for (const bool tnt64 : {false, true}) {
    PtConfig config;
    RunOptions options;
    options.max_insns = 20000;
    options.trigger_every = 50;
    options.tnt64 = tnt64;
    Result<GeneratedTrace> t = Generate(pt_sim::testing::DispatchProgram(), config, options);
    ASSERT_TRUE(t.ok()) << t.ToString();
    ASSERT_GT(CountKind(t->truth, EventKind::kTrig), 10u);
    uint64_t errors = 0;
    const std::vector<std::string> decoded = DecodedEvents(t->bytes, ToImage(t->truth.image), &errors);
    EXPECT_EQ(errors, 0u);
    EXPECT_EQ(decoded, TruthEvents(t->truth));
  }
}

}  // namespace
}  // namespace perftest::pt_sim
