// Reading a `perftest pt record` capture back for decoding (capture_file.h):
// the trace is the AUX data in order, the code is the mock's code files
// beside the capture or the side-band's file mappings, and `perftest pt
// decode CAPTURE` decodes what `decode CAPTURE.trace.bin --image ...` does.
#include "harness/pt/capture_file.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <algorithm>

#include "harness/records.h"
#include "harness/syscall_matchers.h"
#include "tools/pt/decode_command.h"
#include "tools/pt/record.h"

namespace perftest::pt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A fresh directory under TempDir (mkdtemp(3): its template ends in
// XXXXXX), removed with its files at the end.
class TempDir {
 public:
  TempDir() {
    std::string templ = ::testing::TempDir() + "/perftest-capture-XXXXXX";
    path_ = ::mkdtemp(templ.data()) != nullptr ? templ : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes a capture by hand: the magic, then `chunks` (type, source, payload).
void WriteCapture(const std::string& path, const std::vector<CaptureChunk>& chunks) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(kCaptureMagic, sizeof kCaptureMagic);
  for (const CaptureChunk& c : chunks) {
    const uint64_t size = c.payload.size();
    out.write(reinterpret_cast<const char*>(&c.type), 4);
    out.write(reinterpret_cast<const char*>(&c.source), 4);
    out.write(reinterpret_cast<const char*>(&size), 8);
    out.write(reinterpret_cast<const char*>(c.payload.data()), static_cast<std::streamsize>(size));
    static const char zeros[8] = {};
    out.write(zeros, static_cast<std::streamsize>((8 - size % 8) % 8));
  }
}

CaptureChunk Meta(const std::string& json) { return {kCaptureMeta, 0, std::vector<uint8_t>(json.begin(), json.end())}; }

// An AUX chunk: aux_offset, aux_size, flags, then `bytes`.
CaptureChunk Aux(uint64_t offset, const std::vector<uint8_t>& bytes) {
  CaptureChunk c{kCaptureAux, kCapturePtEvent, std::vector<uint8_t>(24 + bytes.size())};
  const uint64_t head[3] = {offset, bytes.size(), 0};
  std::memcpy(c.payload.data(), head, sizeof head);
  std::copy(bytes.begin(), bytes.end(), c.payload.begin() + 24);
  return c;
}

// A side-band MMAP2 of `file` at `addr`, with the sample_id trailer of `layout`.
CaptureChunk SideBandMmap2(const SampleLayout& layout, const std::string& file, uint64_t addr, uint16_t misc = 0) {
  perftest::Record r;
  r.header.type = PERF_RECORD_MMAP2;
  r.header.misc = PERF_RECORD_MISC_USER | misc;
  Mmap2Record m;
  m.pid = m.tid = 42;
  m.addr = addr;
  m.len = 0x2000;
  m.pgoff = 0x1000;
  m.prot = PROT_READ | PROT_EXEC;
  m.flags = MAP_PRIVATE;
  m.filename = file;
  r.body = m;
  SampleId id;
  id.pid = id.tid = 42;
  id.time = 1;
  id.cpu = id.res = 0;
  id.identifier = 7;
  r.sample_id = id;
  std::vector<std::byte> bytes;
  EncodeRecord(layout, r, &bytes);
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  return {kCaptureRecord, kCaptureSideBand, std::vector<uint8_t>(p, p + bytes.size())};
}

// A mock recording in `dir` and what CaptureTraceOf() makes of it.
struct MockCapture {
  std::string path;
  CaptureSummary summary;
  CaptureTrace trace;
};
MockCapture RecordMock(const TempDir& dir, const char* name, uint64_t instructions, size_t aux_pages = 64) {
  MockCapture m;
  RecordOptions o;
  o.backend = "mock";
  o.output = m.path = dir.path() + "/" + name;
  o.format = "ptcap";
  o.instructions = instructions;
  o.aux_pages = aux_pages;
  Result<CaptureSummary> s = Record(o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return m;
  m.summary = *s;
  Result<Capture> c = ReadCapture(o.output);
  Result<CaptureTrace> t = c.ok() ? CaptureTraceOf(*c, o.output) : Result<CaptureTrace>::FailureFrom(c);
  EXPECT_TRUE(t.ok()) << t.ToString();
  if (t.ok()) m.trace = std::move(*t);
  return m;
}

TEST(CaptureFile, MagicTellsACaptureFromRawTrace) {
  const std::vector<uint8_t> capture(std::begin(kCaptureMagic), std::end(kCaptureMagic));
  EXPECT_TRUE(IsCaptureFile(capture));
  const std::vector<uint8_t> psb = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};
  EXPECT_FALSE(IsCaptureFile(psb));
  EXPECT_FALSE(IsCaptureFile(std::span<const uint8_t>(capture.data(), 7)));
}

// The mock's capture: the trace is OUTPUT.trace.bin's bytes, the code the
// files the recorder wrote beside it (CaptureSummary::image_specs).
TEST(CaptureFile, MockCaptureGivesTheTraceAndTheCodeBesideIt) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const auto [path, s, t] = RecordMock(dir, "run.ptcap", 200000);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(t.trace, ReadAll(s.trace_file));
  EXPECT_EQ(t.trace.size(), s.aux_bytes);
  EXPECT_EQ(t.aux_records, s.aux_records);
  ASSERT_FALSE(s.image_specs.empty());
  EXPECT_EQ(t.image_specs, s.image_specs);
  EXPECT_TRUE(t.notes.empty()) << t.notes.front();  // the mock's MMAP2 is //anon: no file, no note
}

// The side-band's executable file mappings become image specs (ADDR:FILE:
// PGOFF:LEN) where the file exists here; a missing one is a note; a data
// mapping (PERF_RECORD_MISC_MMAP_DATA), "//anon" and "[vdso]" nothing. The sample_id trailer is
// parsed with META's attr.
TEST(CaptureFile, SideBandFileMappingsBecomeImages) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string lib = dir.path() + "/libx.so";
  std::ofstream(lib) << std::string(0x3000, '\x90');
  SampleLayout layout;
  layout.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  layout.sample_id_all = true;
  const std::string path = dir.path() + "/k.ptcap";
  WriteCapture(path, {Meta(fmt::format(R"({{"attr":{{"sample_type":{},"sample_id_all":1}}}})", layout.sample_type)),
                      SideBandMmap2(layout, lib, 0x7f0000001000),
                      SideBandMmap2(layout, dir.path() + "/gone.so", 0x7f0000100000),
                      SideBandMmap2(layout, lib, 0x7f0000200000, PERF_RECORD_MISC_MMAP_DATA),
                      SideBandMmap2(layout, "//anon", 0x7f0000300000), SideBandMmap2(layout, "[vdso]", 0x7fff0000),
                      Aux(0, {0x02, 0x82}), Aux(2, {0x02, 0x82, 0x00})});
  ASSERT_OK_AND_ASSIGN(Capture c, ReadCapture(path));
  ASSERT_OK_AND_ASSIGN(CaptureTrace t, CaptureTraceOf(c, path));
  EXPECT_THAT(t.trace, ElementsAre(0x02, 0x82, 0x02, 0x82, 0x00));
  EXPECT_EQ(t.aux_records, 2u);
  EXPECT_THAT(t.image_specs, ElementsAre(fmt::format("0x7f0000001000:{}:0x1000:0x2000", lib)));
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_THAT(t.notes[0], StartsWith(dir.path() + "/gone.so (mapped at 0x7f0000100000) is not on this machine"));
}

TEST(CaptureFile, MalformedCapturesAreEBADMSG) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/bad.ptcap";
  WriteCapture(path, {{kCaptureAux, kCapturePtEvent, std::vector<uint8_t>(8)}});
  ASSERT_OK_AND_ASSIGN(Capture c, ReadCapture(path));
  Result<CaptureTrace> t = CaptureTraceOf(c, path);
  EXPECT_THAT(t, FailsWithErrno(EBADMSG));
  EXPECT_THAT(t.call(), HasSubstr("an AUX chunk of 8 bytes (its header is 24)"));

  WriteCapture(path, {Meta("{not json")});
  ASSERT_OK_AND_ASSIGN(c, ReadCapture(path));
  EXPECT_THAT(CaptureTraceOf(c, path), FailsWithErrno(EBADMSG));

  // A chunk header cut short, and a chunk running past the end.
  std::vector<uint8_t> bytes(std::begin(kCaptureMagic), std::end(kCaptureMagic));
  bytes.resize(bytes.size() + 10);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_THAT(ReadCapture(path), FailsWithErrno(EBADMSG));
  WriteCapture(path, {{kCaptureRecord, 1, std::vector<uint8_t>(16)}});
  bytes = ReadAll(path);
  bytes.resize(bytes.size() - 8);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_THAT(ReadCapture(path), FailsWithErrno(EBADMSG));
}

// `perftest pt decode CAPTURE` (no --image) prints what `perftest pt decode
// CAPTURE.trace.bin --image ...` does — the command the recorder suggests —
// given the timing the capture carries (META "timing": the default
// intel_pt//u has MTC, and the mock's clock): MTC time and IPC from MTC.
TEST(CaptureFile, DecodeCommandReadsACapture) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const auto [path, s, t] = RecordMock(dir, "run.ptcap", 20000);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(t.timing, (CaptureTiming{.mtc_period = 3, .tsc_ctc_ratio_n = 32, .tsc_ctc_ratio_d = 1,
                                     .max_nonturbo_ratio = 0x20}))
      << "perf's default mtc_period; pt_sim's clock (CPUID.15H 32/1, nominal CBR 0x20)";
  auto decode = [](DecodeCommand cmd) {
    cmd.itrace = "i1000ibe";
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int rc = RunDecode(cmd);
    std::string out = ::testing::internal::GetCapturedStdout();
    std::string err = ::testing::internal::GetCapturedStderr();
    return std::make_tuple(rc, out, err);
  };
  const auto [rc_raw, raw, raw_err] = decode(DecodeCommand{.file = s.trace_file,
                                                           .images = s.image_specs,
                                                           .max_nonturbo_ratio = 0x20,
                                                           .mtc_period = 3,
                                                           .tsc_ctc_ratio = "32/1"});
  ASSERT_EQ(rc_raw, 0) << raw_err;
  const auto [rc, out, err] = decode(DecodeCommand{.file = path});
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(out, raw);
  EXPECT_THAT(out, HasSubstr(", 0 errors"));
  EXPECT_THAT(out, HasSubstr(" IPC: ")) << "cycles from MTC (no CYC in intel_pt//u)";
  EXPECT_THAT(out, ::testing::Not(HasSubstr("# 0 instructions")));
  EXPECT_THAT(err, HasSubstr(fmt::format("{} is a perftest PT capture: {} trace bytes from {} AUX records; code: {}",
                                         path, s.aux_bytes, s.aux_records, s.image_specs.front())));
  // Without the timing the raw trace has no MTC time and no IPC.
  const auto [rc_plain, plain, plain_err] = decode(DecodeCommand{.file = s.trace_file, .images = s.image_specs});
  ASSERT_EQ(rc_plain, 0) << plain_err;
  EXPECT_THAT(plain, ::testing::Not(HasSubstr(" IPC: ")));
  // --image given: the capture's own code is not added.
  const auto [rc_img, out_img, err_img] =
      decode(DecodeCommand{.file = path, .images = {fmt::format("0x1000:{}", s.trace_file)}});
  ASSERT_EQ(rc_img, 0) << err_img;
  EXPECT_THAT(out_img, ::testing::Not(HasSubstr(", 0 errors"))) << "decoded the capture's own code";
  EXPECT_THAT(err_img, ::testing::Not(HasSubstr("; code:")));
  // A malformed ratio is bad input, named.
  const auto [rc_bad, out_bad, err_bad] = decode(DecodeCommand{.file = path, .tsc_ctc_ratio = "32"});
  EXPECT_EQ(rc_bad, 2);
  EXPECT_THAT(err_bad, HasSubstr("--tsc-ctc-ratio 32: expected N/D"));
}

// A small AUX area that fills (TRUNCATED, the event stopped, drained and
// enabled again): the capture's data_lost are where the data after each
// truncation begins, `e` reports each as "Lost trace data" there and `e-l`
// leaves just those out (perf's intel_pt_lost(), AUXTRACE_ERR_FLG_DATA_LOST).
TEST(CaptureFile, TruncatedAuxDataIsLostTraceData) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const auto [path, s, t] = RecordMock(dir, "small.ptcap", 400000, /*aux_pages=*/2);
  ASSERT_FALSE(HasFailure());
  ASSERT_GE(s.truncated, 2u);
  ASSERT_FALSE(t.data_lost.empty());
  EXPECT_LE(t.data_lost.size(), s.truncated);
  for (uint64_t at : t.data_lost) {
    ASSERT_LT(at, t.trace.size());
    EXPECT_TRUE(std::equal(t.trace.begin() + static_cast<long>(at), t.trace.begin() + static_cast<long>(at) + 2,
                           std::begin({uint8_t{0x02}, uint8_t{0x82}})))
        << "the data after a truncation starts with a PSB (the event enabled again), at " << at;
  }
  auto decode = [&](const char* itrace) {
    DecodeCommand cmd{.file = path, .itrace = itrace, .format = "json"};
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(RunDecode(cmd), 0);
    (void)::testing::internal::GetCapturedStderr();
    std::vector<std::string> lines;
    std::istringstream in(::testing::internal::GetCapturedStdout());
    for (std::string line; std::getline(in, line);)
      if (line.find(R"({"summary")") != 0) lines.push_back(line);  // (its sample count differs)
    return lines;
  };
  const std::vector<std::string> e = decode("e"), quiet = decode("e-l");
  std::vector<std::string> lost, rest;
  for (const std::string& line : e) (line.find(R"("errno":"ENOSPC")") != std::string::npos ? lost : rest).push_back(line);
  ASSERT_EQ(lost.size(), t.data_lost.size());
  for (size_t i = 0; i < lost.size(); ++i) {
    EXPECT_THAT(lost[i], HasSubstr(fmt::format(R"("offset":{},"message":"Lost trace data")", t.data_lost[i])));
  }
  EXPECT_EQ(rest, quiet);
}

}  // namespace
}  // namespace perftest::pt
