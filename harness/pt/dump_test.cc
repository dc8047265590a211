// Unit tests of harness/pt/dump.h: the perf-script -D text layout, JSON
// Lines, resync after errors, last IP, limits.
#include "harness/pt/dump.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/pt/testing/spec.h"
#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using ::testing::HasSubstr;
using testing::Bytes;
using testing::Concat;
using testing::PsbBytes;
using testing::Spec;

std::string DumpToString(const std::vector<uint8_t>& trace, const DumpOptions& options, DumpStats* stats = nullptr) {
  std::string out;
  Result<DumpStats> r = Dump(trace, options, [&](std::string_view s) { out.append(s); });
  EXPECT_OK(r);
  if (stats != nullptr && r.ok()) *stats = *r;
  return out;
}

TEST(Dump, PerfScriptLayout) {
  Spec("pt.dump.text", "perf-intel-pt.txt 'dump option'; tools/perf/util/intel-pt.c intel_pt_dump()");
  const std::vector<uint8_t> trace = Concat({PsbBytes(), Bytes({0x4d, 0x00, 0x10, 0x40, 0x00}), Bytes({0x02, 0x23})});
  EXPECT_EQ(DumpToString(trace, {}),
            ".  00000000:  02 82 02 82 02 82 02 82 02 82 02 82 02 82 02 82 PSB\n"
            ".  00000010:  4d 00 10 40 00                                  TIP 0x401000 (upd32)\n"
            ".  00000015:  02 23                                           PSBEND\n");
  Packet tip;
  tip.type = PacketType::kTip;
  tip.offset = 16;
  tip.size = 5;
  tip.opcode = 0x4d;
  tip.payload = 0x401000;
  EXPECT_EQ(DumpLine(trace, tip), ".  00000010:  4d 00 10 40 00                                  TIP 0x401000 (upd32)");
}

TEST(Dump, ErrorThenResync) {
  Spec("pt.dump.resync", "packet_decoder.h SyncForward after an error");
  const std::vector<uint8_t> trace = Concat({Bytes({0x00, 0xc9, 0x00}), PsbBytes(), Bytes({0x02, 0x23})});
  DumpStats stats;
  const std::string out = DumpToString(trace, {}, &stats);
  EXPECT_THAT(out, HasSubstr(".  00000001:  c9                                              error: unknown opcode (EILSEQ)\n"));
  EXPECT_THAT(out, HasSubstr(".  00000003:  resync at PSB, 0x2 bytes skipped\n"));
  EXPECT_EQ(stats.packets, 3u);  // PAD; then PSB, PSBEND
  EXPECT_EQ(stats.errors, 1u);
  EXPECT_EQ(stats.skipped, 2u);
}

TEST(Dump, NoPsbToResyncAt) {
  Spec("pt.dump.resync", "packet_decoder.h SyncForward: ENODATA");
  DumpStats stats;
  const std::string out = DumpToString(Bytes({0x00, 0x4d, 0x01}), {}, &stats);
  EXPECT_THAT(out, HasSubstr("4d 01"));
  EXPECT_THAT(out, HasSubstr("error: truncated packet (EMSGSIZE)"));
  EXPECT_THAT(out, HasSubstr(".  00000001:  no PSB to resync at, 0x2 bytes skipped\n"));
  EXPECT_EQ(stats.errors, 1u);
}

TEST(Dump, Json) {
  Spec("pt.dump.json", "dump.h JSON Lines");
  const std::vector<uint8_t> trace = Concat({PsbBytes(), Bytes({0x2d, 0x34, 0x12, 0xc9})});
  DumpOptions options;
  options.format = DumpOptions::Format::kJson;
  options.last_ip = true;
  EXPECT_EQ(DumpToString(trace, options),
            "{\"offset\":0,\"size\":16,\"bytes\":\"02820282028202820282028202820282\",\"packet\":\"PSB\"}\n"
            "{\"offset\":16,\"size\":3,\"bytes\":\"2d3412\",\"packet\":\"TIP\",\"ipbytes\":1,\"payload\":\"0x1234\","
            "\"ip\":\"0x1234\"}\n"
            "{\"offset\":19,\"error\":\"EILSEQ\",\"message\":\"unknown opcode\",\"bytes\":\"c9\"}\n"
            "{\"offset\":19,\"resync\":false,\"skipped\":1}\n");
  // Resync lands on a later PSB: its offset and where the error was.
  const std::vector<uint8_t> again = Concat({Bytes({0xc9, 0x00}), PsbBytes()});
  EXPECT_THAT(DumpToString(again, options), ::testing::HasSubstr("{\"offset\":2,\"resync\":true,\"from\":0}\n"));
}

TEST(Dump, LastIpAcrossPsb) {
  Spec("pt.dump.last_ip", "SDM §33.4.2.2 'Compressed IP Payload Format'; §33.4.2.17 (PSB resets the last IP)");
  const std::vector<uint8_t> trace =
      Concat({Bytes({0xcd, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00}), Bytes({0x2d, 0x34, 0x12}),
              Bytes({0x0d}), PsbBytes(), Bytes({0x2d, 0x34, 0x12})});
  DumpOptions options;
  options.last_ip = true;
  const std::string out = DumpToString(trace, options);
  EXPECT_THAT(out, HasSubstr("TIP 0x401000 (full)  ip 0x401000\n"));
  EXPECT_THAT(out, HasSubstr("TIP 0x1234 (upd16)  ip 0x401234\n"));
  EXPECT_THAT(out, HasSubstr("TIP suppressed  ip suppressed\n"));
  EXPECT_THAT(out, HasSubstr("TIP 0x1234 (upd16)  ip 0x1234\n"));
}

TEST(Dump, OffsetSyncAndLimit) {
  Spec("pt.dump.options", "dump.h DumpOptions");
  const std::vector<uint8_t> trace = Concat({Bytes({0x00, 0x00, 0x00}), PsbBytes(), Bytes({0x00, 0x00})});
  DumpOptions options;
  options.sync = true;
  DumpStats stats;
  std::string out = DumpToString(trace, options, &stats);
  EXPECT_EQ(out.substr(0, 14), ".  00000003:  ");
  EXPECT_EQ(stats.skipped, 3u);
  options.offset = 3;
  out = DumpToString(trace, options, &stats);
  EXPECT_EQ(stats.skipped, 0u) << "already at a PSB";
  options.sync = false;
  options.offset = 19;
  options.limit = 1;
  out = DumpToString(trace, options, &stats);
  EXPECT_EQ(out, ".  00000013:  00                                              PAD\n");
  EXPECT_TRUE(stats.truncated);
  options.offset = 100;
  EXPECT_THAT(Dump(trace, options, [](std::string_view) {}), FailsWithErrno(EINVAL));
}

}  // namespace
}  // namespace perftest::pt
