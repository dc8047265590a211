// The annotated fixtures in fixtures/pt/ (CMake passes their names): each
// NAME.bin dumps to exactly NAME.txt (lines not starting with '#'; a
// "# options:" line gives the dump options), and libipt 2.0.5 decodes the
// same packets and errors (with block packets off, see
// testing/libipt_reference.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "harness/pt/dump.h"
#include "harness/pt/packet_decoder.h"
#include "harness/pt/testing/libipt_reference.h"
#include "harness/pt/testing/spec.h"
#include "harness/syscall_matchers.h"

namespace perftest::pt {
namespace {

using testing::Spec;

std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  std::stringstream list(PERFTEST_PT_FIXTURES);
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

// PERFTEST_PT_FIXTURE_DIR/NAME, built by appending (GCC 12 warns
// -Warray-bounds, a false positive, on std::string(dir) + "/" + name once
// inlined).
std::string FixturePath(const std::string& name) {
  std::string path(PERFTEST_PT_FIXTURE_DIR);
  path.append("/").append(name);
  return path;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Expected {
  DumpOptions options;
  std::string text;  // the lines that are not comments
  bool has_provenance = false;
};

Expected ParseExpected(const std::string& txt) {
  Expected e;
  std::stringstream in(txt);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# provenance:", 0) == 0) e.has_provenance = true;
    if (line.rfind("# options:", 0) == 0) {
      std::stringstream words(line.substr(10));
      for (std::string w; words >> w;) {
        if (w == "--lastip") e.options.last_ip = true;
        if (w == "--sync") e.options.sync = true;
        if (w == "--no-blocks") e.options.block_packets = false;
        if (w == "--format=json") e.options.format = DumpOptions::Format::kJson;
        if (w.rfind("--offset=", 0) == 0) e.options.offset = std::stoull(w.substr(9), nullptr, 0);
      }
    }
    if (!line.empty() && line[0] == '#') continue;
    e.text += line + "\n";
  }
  return e;
}

class Fixture : public ::testing::TestWithParam<std::string> {};

TEST_P(Fixture, DumpsAsExpected) {
  Spec("pt.fixture.dump", "fixtures/pt/README.md; perf-intel-pt.txt 'dump option'");
  const std::string base = FixturePath(GetParam());
  const std::string bin = ReadText(base + ".bin");
  const std::string txt = ReadText(base + ".txt");
  ASSERT_FALSE(bin.empty()) << base << ".bin";
  ASSERT_FALSE(txt.empty()) << base << ".txt";
  const Expected expected = ParseExpected(txt);
  EXPECT_TRUE(expected.has_provenance) << base << ".txt needs a '# provenance:' line";
  const std::vector<uint8_t> trace(bin.begin(), bin.end());
  std::string out;
  ASSERT_OK(Dump(trace, expected.options, [&](std::string_view s) { out.append(s); }));
  EXPECT_EQ(out, expected.text);
}

TEST_P(Fixture, LibiptAgrees) {
  Spec("pt.fixture.libipt", "libipt 2.0.5 pt_pkt_next on the fixture");
  const std::string bin = ReadText(FixturePath(GetParam()) + ".bin");
  const std::vector<uint8_t> trace(bin.begin(), bin.end());
  PacketDecoder ours(trace, PacketDecoder::Options::Libipt205());
  testing::LibiptDecoder ref(trace);
  ASSERT_OK(ours.SyncSet(0));
  ASSERT_EQ(ref.SyncSet(0), 0);
  for (int steps = 0; steps < 1000000; ++steps) {
    Packet p;
    testing::RefPacket r;
    const int a = ours.Next(p);
    const int b = ref.Next(&r);
    ASSERT_EQ(a, b) << "at " << ours.offset() << ": " << ErrnoName(a) << " vs " << ErrnoName(b);
    if (a == 0) {
      ASSERT_EQ(testing::FromOurs(p), r);
      continue;
    }
    ASSERT_EQ(ours.offset(), ref.offset());
    if (a == ENODATA) break;
    uint64_t x = 0, y = 0;
    const Result<uint64_t> sync = ours.SyncForward();
    const int sync_ref = ref.SyncForward(&y);
    ASSERT_EQ(sync.ok(), sync_ref == 0);
    if (!sync.ok()) break;
    x = *sync;
    ASSERT_EQ(x, y);
  }
}

INSTANTIATE_TEST_SUITE_P(Pt, Fixture, ::testing::ValuesIn(FixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(Fixtures, AreRegistered) {
  Spec("pt.fixture.registered", "STYLE.md 9: CMake registers each fixture for every consumer");
  EXPECT_GE(FixtureNames().size(), 3u);
}

}  // namespace
}  // namespace perftest::pt
