// The hand-built traces and code the FlowDecoder tests share
// (flow_decoder_test.cc, flow_decoder_libipt_rules_test.cc): a tiny code
// image at kBase, a PSB+ that starts the flow, and a walk of the decoder
// collecting IPs, events and the error that ended it.
#ifndef PERFTEST_HARNESS_PT_FLOW_DECODER_TEST_SUPPORT_H_
#define PERFTEST_HARNESS_PT_FLOW_DECODER_TEST_SUPPORT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/image.h"
#include "harness/pt/packet_encoder.h"

namespace perftest::pt::flow_test {

inline constexpr uint64_t kBase = 0x401000;

struct Walk {
  std::vector<uint64_t> ips;
  std::vector<FlowEvent::Type> events;
  int err = 0;
};

inline Walk Decode(const std::vector<uint8_t>& trace, const Image& image) {
  Walk w;
  FlowDecoder dec(trace, &image);
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

}  // namespace perftest::pt::flow_test

#endif  // PERFTEST_HARNESS_PT_FLOW_DECODER_TEST_SUPPORT_H_
