// `perftest pt record` from the mock's simulated task: the capture file holds
// the PT event's records, the AUX data they describe and the side-band.
#include "tools/pt/record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "harness/pmu.h"
#include "harness/syscall_matchers.h"
#include "mocks/pt_sim/generator.h"
#include "mocks/pt_sim/libipt_flow.h"

namespace perftest::pt {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string TempPath(const char* name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(::getpid()) + ".ptcap";
}

uint32_t TypeOf(const CaptureChunk& c) {
  perf_event_header h;
  std::memcpy(&h, c.payload.data(), sizeof h);
  return h.type;
}

TEST(PtRecord, MockCaptureHoldsRecordsAuxDataAndSideBand) {
  RecordOptions o;
  o.backend = "mock";
  o.output = TempPath("mock");
  o.format = "ptcap";
  o.instructions = 200000;  // 25000 trace bytes on the mock
  ASSERT_OK_AND_ASSIGN(CaptureSummary s, Record(o));
  EXPECT_GE(s.aux_bytes, 25000u);
  EXPECT_EQ(s.truncated, 0u);
  ASSERT_OK_AND_ASSIGN(Capture c, ReadCapture(o.output));
  EXPECT_THAT(c.meta_json, HasSubstr("\"mode\":\"full-trace\""));
  EXPECT_THAT(c.meta_json, HasSubstr("\"psb_periods\""));
  bool itrace = false, mmap = false, comm = false;
  uint64_t aux_bytes = 0;
  bool first_aux = true;
  for (size_t i = 0; i < c.chunks.size(); ++i) {
    const CaptureChunk& ch = c.chunks[i];
    if (ch.type == 2) {
      const uint32_t t = TypeOf(ch);
      itrace |= ch.source == 0 && t == PERF_RECORD_ITRACE_START;
      mmap |= ch.source == 1 && (t == PERF_RECORD_MMAP || t == PERF_RECORD_MMAP2);
      comm |= ch.source == 1 && t == PERF_RECORD_COMM;
      if (t == PERF_RECORD_AUX) {
        ASSERT_LT(i + 1, c.chunks.size());
        EXPECT_EQ(c.chunks[i + 1].type, 3u) << "AUX data follows its record";
      }
    } else if (ch.type == 3) {
      aux_bytes += ch.payload.size() - 24;
      if (first_aux) {
        // The trace starts with a PSB.
        ASSERT_GE(ch.payload.size(), 24u + 16);
        EXPECT_EQ(ch.payload[24], 0x02);
        EXPECT_EQ(ch.payload[25], 0x82);
        first_aux = false;
      }
    }
  }
  EXPECT_TRUE(itrace);
  EXPECT_TRUE(mmap);
  EXPECT_TRUE(comm);
  EXPECT_EQ(aux_bytes, s.aux_bytes);
  ::unlink(o.output.c_str());
}

// `perftest pt record --backend=mock` writes the AUX bytes and the ground
// truth beside the capture (tools/pt/record.h); they read back as a
// pt_sim GeneratedTrace and libipt decodes the recording into the truth.
TEST(PtRecord, MockRecordingDecodesToTheGroundTruth) {
  char dir[] = "/tmp/mock_pt_record_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  RecordOptions o;
  o.backend = "mock";
  o.event = "intel_pt/tsc,mtc,cyc,noretcomp/u";
  o.output = std::string(dir) + "/t.ptcap";
  o.format = "ptcap";
  o.instructions = 30000;
  o.aux_pages = 64;
  ASSERT_OK_AND_ASSIGN(CaptureSummary sum, Record(o));
  EXPECT_TRUE(sum.truth_complete);
  EXPECT_EQ(sum.truncated, 0u);
  EXPECT_EQ(sum.trace_file, o.output + ".trace.bin");
  ASSERT_EQ(sum.image_specs.size(), 1u);
  ASSERT_OK_AND_ASSIGN(pt_sim::GeneratedTrace t, pt_sim::ReadGeneratedTrace(o.output + ".trace"));
  EXPECT_EQ(t.bytes.size(), sum.aux_bytes);
  EXPECT_TRUE(t.truth.config.noretcomp && t.truth.config.cyc && t.truth.config.mtc);
  EXPECT_GE(t.truth.insns.size(), 30000u);  // and the way through the SYSCALL stub
  EXPECT_EQ(t.truth.CountTracedEvents(pt_sim::EventKind::kSyscall), 4u);
  const pt_sim::LibiptFlow flow = pt_sim::DecodeFlowWithLibipt(t.bytes, t.truth);
  EXPECT_THAT(flow.errors, IsEmpty());
  EXPECT_EQ(flow.ips, t.truth.TracedIps());
  std::filesystem::remove_all(dir);
}

TEST(PtRecord, NoIntelPtIsENOENT) {
  RecordOptions o;
  o.backend = "mock";
  o.profile = "software-only";
  o.output = TempPath("none");
  EXPECT_THAT(Record(o), FailsWithErrno(ENOENT));
}

// The kernel path on a machine without intel_pt (this VM): a clear ENOENT
// naming the sysfs directory, before any command runs.
TEST(PtRecord, KernelWithoutIntelPtNamesTheSysfsDirectory) {
  const std::string dir = std::string(kSysfsPmuRoot) + "/intel_pt";
  if (::access(dir.c_str(), F_OK) == 0) GTEST_SKIP() << dir << " exists: this machine has intel_pt";
  RecordOptions o;
  o.backend = "kernel";
  o.output = TempPath("kernel");
  o.command = {"/bin/sh", "-c", "touch " + o.output + ".ran"};
  Result<CaptureSummary> r = Record(o);
  EXPECT_THAT(r, FailsWithErrno(ENOENT));
  EXPECT_THAT(r.call(), HasSubstr(dir + " does not exist"));
  EXPECT_NE(::access((o.output + ".ran").c_str(), F_OK), 0) << "the command ran";
  EXPECT_NE(::access(o.output.c_str(), F_OK), 0) << "a capture was written";
}

TEST(PtRecord, BadOptions) {
  RecordOptions o;
  o.backend = "mock";
  o.aux_pages = 3;
  EXPECT_THAT(Record(o), FailsWithErrno(EINVAL));
  o.aux_pages = 4;
  o.event = "intel_pt/psb_period=15/u";
  Result<CaptureSummary> r = Record(o);
  EXPECT_THAT(r, FailsWithErrno(EINVAL));
  EXPECT_THAT(r.call(), HasSubstr("Invalid psb_period for intel_pt"));
  o.event = "intel_pt//u";
  o.backend = "kernel";  // without a command
  EXPECT_THAT(Record(o), FailsWithErrno(EINVAL));
  o.backend = "nope";
  EXPECT_THAT(Record(o), FailsWithErrno(EINVAL));
}

TEST(PtRecord, ReadCaptureRejectsOtherFiles) {
  const std::string path = TempPath("bad");
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("not a capture", f);
  std::fclose(f);
  EXPECT_THAT(ReadCapture(path), FailsWithErrno(EBADMSG));
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace perftest::pt
