// The hand-built traces and code the FlowDecoder tests share
// (flow_decoder_test.cc, flow_decoder_libipt_rules_test.cc,
// flow_decoder_event_query_test.cc): a tiny code image at kBase, a PSB+ that
// starts the flow, a walk of the decoder collecting IPs, events and the
// error that ended it, and the comparisons with libipt's pt_insn_next.
#ifndef PERFTEST_HARNESS_PT_FLOW_DECODER_TEST_SUPPORT_H_
#define PERFTEST_HARNESS_PT_FLOW_DECODER_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/image.h"
#include "harness/pt/packet_encoder.h"
#include "harness/pt/testing/libipt_flow.h"

namespace perftest::pt::flow_test {

inline constexpr uint64_t kBase = 0x401000;

struct Walk {
  std::vector<uint64_t> ips;
  std::vector<FlowEvent::Type> events;
  int err = 0;
};

inline Walk Decode(const std::vector<uint8_t>& trace, const Image& image) {
  Walk w;
  // (libipt 2.0.5's rules: its sync fails at a packet error after the PSB+.)
  FlowDecoder dec(trace, &image, FlowDecoder::Options{.libipt_errors = true});
  Result<uint64_t> s = dec.SyncForward();
  if (!s.ok()) {
    w.err = s.error();
    return w;
  }
  FlowStep step;
  while ((w.err = dec.Next(&step)) == 0) {
    if (step.kind == FlowStep::kEvent) {
      w.events.push_back(step.event.type);
      continue;
    }
    for (BlockInsns it(step.block); it.ok(); it.Advance()) w.ips.push_back(it.ip());
  }
  return w;
}

inline void PsbPlus(PacketEncoder& enc, std::optional<uint64_t> fup) {
  (void)enc.Next(make::Psb());
  (void)enc.Next(make::ModeExec(ExecMode::k64Bit));
  if (fup) (void)enc.NextIp(PacketType::kFup, *fup);
  (void)enc.Next(make::PsbEnd());
}

// 0x401000: nop; jz +1 (to 0x401005); nop; ret
//   0x401000 90          nop
//   0x401001 74 01       jz 0x401004
//   0x401003 90          nop
//   0x401004 c3          ret
inline const std::vector<uint8_t> kCondRet = {0x90, 0x74, 0x01, 0x90, 0xc3};

// Minimal traces for libipt's event binding (issue 7, corpus divergences):
// our flow and pt_insn_next's are identical, errors included (the first
// error the same by SameFlowError), and libipt does report an error there.
inline void ExpectSameFlowAsLibipt(const std::vector<uint8_t>& trace, const Image& image, int want_libipt_error) {
  testing::FlowLog ours = testing::OurInsnFlow(trace, image);
  testing::FlowLog ref = testing::LibiptInsnFlow(trace, image);
  EXPECT_EQ(testing::DiffFlowThroughFirstError(ours, ref), "");
  EXPECT_EQ(testing::DiffFlow(ours, ref), "");
  bool found = false;
  for (const testing::FlowEntry& e : ref.entries) {
    if (e.kind == testing::FlowEntry::kError) {
      EXPECT_EQ(e.code, want_libipt_error) << testing::ToString(e);
      found = true;
      break;
    }
  }
  EXPECT_TRUE(found) << "libipt reported no error";
}

// ExpectSameFlowAsLibipt(), and our decoder fails with `err` after the
// instructions at `ips`; returns our walk, for its events.
inline Walk ExpectFailsAsLibipt(const std::vector<uint8_t>& trace, const Image& image, int want_libipt_error,
                                int err, const std::vector<uint64_t>& ips) {
  ExpectSameFlowAsLibipt(trace, image, want_libipt_error);
  const Walk w = Decode(trace, image);
  EXPECT_EQ(w.err, err);
  EXPECT_EQ(w.ips, ips);
  return w;
}

// kBase: nop; jmp *%rax — an indirect branch after one instruction.
inline Image NopJmpRax() {
  Image image;
  EXPECT_TRUE(image.AddBlob(kBase, std::vector<uint8_t>{0x90, 0xff, 0xe0}).ok());
  return image;
}

// The encoder's bytes, then 0xe9: no packet starts with it (EILSEQ, -pte_bad_opc).
inline std::vector<uint8_t> WithBadOpcode(const PacketEncoder& enc) {
  std::vector<uint8_t> trace = enc.bytes();
  trace.push_back(0xe9);
  return trace;
}

// kCondRet with a jz whose TNT bit comes after an event bound to an IP: if
// the flow reaches that IP (`reached`), the jz takes its bit (taken: to the
// ret, which has no packet and ends the flow, -pte_eos); if not, libipt
// holds the event and the jz's query meets the one behind it
// (-pte_bad_query), and the jz is not reported.
inline void ExpectHeldEventFlow(const std::vector<uint8_t>& trace, const Image& image, bool reached) {
  ExpectSameFlowAsLibipt(trace, image, reached ? -pte_eos : -pte_bad_query);
  Walk w = Decode(trace, image);
  EXPECT_EQ(w.err, reached ? ENODATA : EBADMSG);
  const std::vector<uint64_t> want = reached ? std::vector<uint64_t>{kBase, kBase + 1} : std::vector<uint64_t>{kBase};
  EXPECT_EQ(w.ips, want);
}


// The events libipt's instruction decoder reports on `trace` (pt_insn_event,
// by the LibiptInsnFlow protocol: sync, events and instructions up to an
// error, the next sync), as our event types; ptev_tick has none and is left
// out.
inline std::vector<FlowEvent::Type> LibiptEvents(const std::vector<uint8_t>& trace, const Image& image) {
  using T = FlowEvent::Type;
  std::vector<T> out;
  std::vector<uint8_t> bytes = trace;
  pt_config config;
  pt_config_init(&config);
  config.begin = bytes.data();
  config.end = bytes.data() + bytes.size();
  pt_insn_decoder* dec = pt_insn_alloc_decoder(&config);
  testing::LibiptImage img(image);
  pt_insn_set_image(dec, img.get());
  for (int status; (status = pt_insn_sync_forward(dec)) != -pte_eos;) {
    while (status >= 0) {
      while (status >= 0 && (status & pts_event_pending)) {
        pt_event ev;
        status = pt_insn_event(dec, &ev, sizeof ev);
        if (status < 0) break;
        switch (ev.type) {
          case ptev_enabled: out.push_back(T::kEnabled); break;
          case ptev_disabled: out.push_back(T::kDisabled); break;
          case ptev_async_disabled: out.push_back(T::kAsyncDisabled); break;
          case ptev_async_branch: out.push_back(T::kAsyncBranch); break;
          case ptev_paging: case ptev_async_paging: out.push_back(T::kPaging); break;
          case ptev_overflow: out.push_back(T::kOverflow); break;
          case ptev_exec_mode: out.push_back(T::kExecMode); break;
          case ptev_tsx: out.push_back(T::kTsx); break;
          case ptev_stop: out.push_back(T::kStop); break;
          case ptev_vmcs: case ptev_async_vmcs: out.push_back(T::kVmcs); break;
          case ptev_exstop: out.push_back(T::kExStop); break;
          case ptev_mwait: out.push_back(T::kMwait); break;
          case ptev_pwre: out.push_back(T::kPwre); break;
          case ptev_pwrx: out.push_back(T::kPwrx); break;
          case ptev_ptwrite: out.push_back(T::kPtwrite); break;
          case ptev_cbr: out.push_back(T::kCbr); break;
          case ptev_mnt: out.push_back(T::kMnt); break;
          default: break;  // ptev_tick
        }
      }
      if (status < 0) break;
      pt_insn insn;
      status = pt_insn_next(dec, &insn, sizeof insn);
    }
  }
  pt_insn_free_decoder(dec);
  return out;
}

// Our events on `trace` (Decode()) and libipt's (LibiptEvents()), each
// reduced to the types in `types`, are the same sequence; returns ours.
inline std::vector<FlowEvent::Type> ExpectSameEventsAsLibipt(const std::vector<uint8_t>& trace, const Image& image,
                                                             const std::vector<FlowEvent::Type>& types) {
  auto only = [&](const std::vector<FlowEvent::Type>& v) {
    std::vector<std::string> names;
    for (FlowEvent::Type t : v)
      if (std::find(types.begin(), types.end(), t) != types.end()) names.emplace_back(FlowEventName(t));
    return names;
  };
  const std::vector<FlowEvent::Type> ours = Decode(trace, image).events;
  EXPECT_EQ(only(ours), only(LibiptEvents(trace, image)));
  return ours;
}

// `insns` one after another at kBase, then a ret, and a trace of a PSB+
// whose FUP is kBase and nothing else: libipt walks every instruction and
// meets the end at the ret (-pte_eos), and so must we (ENODATA). For the
// length decoder's encodings libipt sizes where a stricter decoder fails.
// Returns the trace.
inline std::vector<uint8_t> ExpectInsnsWalkedAsLibipt(const std::vector<std::vector<uint8_t>>& insns) {
  std::vector<uint8_t> code;
  std::vector<uint64_t> ips;
  for (const std::vector<uint8_t>& insn : insns) {
    ips.push_back(kBase + code.size());
    code.insert(code.end(), insn.begin(), insn.end());
  }
  code.push_back(0xc3);
  Image image;
  EXPECT_TRUE(image.AddBlob(kBase, code).ok());
  PacketEncoder enc;
  PsbPlus(enc, kBase);
  ExpectFailsAsLibipt(enc.bytes(), image, -pte_eos, ENODATA, ips);
  return enc.bytes();
}

}  // namespace perftest::pt::flow_test

#endif  // PERFTEST_HARNESS_PT_FLOW_DECODER_TEST_SUPPORT_H_
