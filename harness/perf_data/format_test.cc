// perf.data file header and names (format.h). Layout from
// tools/perf/Documentation/perf.data-file-format.txt "struct perf_header".
#include "harness/perf_data/format.h"

#include <gmock/gmock.h>
#include <linux/perf_event.h>
#include <gtest/gtest.h>

#include <cstring>

namespace perftest::perf_data {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> Bytes(std::string_view s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

TEST(PerfDataFormat, FileHeaderRoundTripsAtPerfsOffsets) {
  FileHeader h;
  h.attr_size = 152;
  h.attrs = {120, 152};
  h.data = {272, 4096};
  h.features.set(HEADER_HOSTNAME).set(HEADER_AUXTRACE).set(HEADER_CLOCK_DATA).set(200);
  std::vector<std::byte> out;
  EncodeFileHeader(h, &out);
  ASSERT_EQ(out.size(), kFileHeaderSize);
  EXPECT_EQ(std::memcmp(out.data(), "PERFILE2", 8), 0);
  uint64_t attr_size, data_offset, flags0, flags3;
  std::memcpy(&attr_size, out.data() + 16, 8);
  std::memcpy(&data_offset, out.data() + 40, 8);
  std::memcpy(&flags0, out.data() + 72, 8);
  std::memcpy(&flags3, out.data() + 96, 8);
  EXPECT_EQ(attr_size, 152u);
  EXPECT_EQ(data_offset, 272u);
  EXPECT_EQ(flags0, (1u << 3) | (1u << 18) | (1u << 29));
  EXPECT_EQ(flags3, uint64_t{1} << (200 - 192));
  Result<FileHeader> back = ParseFileHeader(out);
  ASSERT_TRUE(back.ok()) << back.ToString();
  EXPECT_EQ(*back, h);
}

TEST(PerfDataFormat, PipeHeaderIsMagicAndSize16) {
  FileHeader h;
  h.pipe = true;
  std::vector<std::byte> out;
  EncodeFileHeader(h, &out);
  ASSERT_EQ(out.size(), kPipeHeaderSize);
  Result<FileHeader> back = ParseFileHeader(out);
  ASSERT_TRUE(back.ok()) << back.ToString();
  EXPECT_TRUE(back->pipe);
}

TEST(PerfDataFormat, BadMagicNamesOffsetZero) {
  std::vector<std::byte> b = Bytes(std::string("NOTPERF!") + std::string(96, '\0'));
  Result<FileHeader> h = ParseFileHeader(b);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), EBADMSG);
  EXPECT_THAT(h.call(), HasSubstr("offset 0x0"));
}

TEST(PerfDataFormat, ByteSwappedAndVersion1AreNotSupported) {
  std::vector<std::byte> swapped = Bytes(std::string("2ELIFREP") + std::string(96, '\0'));
  EXPECT_EQ(ParseFileHeader(swapped).error(), ENOTSUP);
  std::vector<std::byte> v1 = Bytes(std::string("PERFFILE") + std::string(96, '\0'));
  EXPECT_EQ(ParseFileHeader(v1).error(), ENOTSUP);
}

TEST(PerfDataFormat, TruncatedHeaderIsEbadmsg) {
  FileHeader h;
  h.attr_size = 144;
  std::vector<std::byte> out;
  EncodeFileHeader(h, &out);
  for (size_t n : {0, 7, 15, 50, 103}) {
    Result<FileHeader> r = ParseFileHeader(std::span(out).first(n));
    EXPECT_EQ(r.error(), EBADMSG) << n;
  }
}

TEST(PerfDataFormat, BadSizeAndAttrSizeAreEbadmsg) {
  FileHeader h;
  h.attr_size = 144;
  std::vector<std::byte> out;
  EncodeFileHeader(h, &out);
  std::vector<std::byte> bad_size = out;
  bad_size[8] = std::byte{50};
  EXPECT_THAT(ParseFileHeader(bad_size).call(), HasSubstr("offset 0x8: perf.data header: size is 50"));
  std::vector<std::byte> bad_attr = out;
  bad_attr[16] = std::byte{12};
  EXPECT_THAT(ParseFileHeader(bad_attr).call(), HasSubstr("offset 0x10: perf.data header: attr_size is 12"));
}

TEST(PerfDataFormat, NamesPerfsAndKernelsRecordTypes) {
  EXPECT_EQ(RecordTypeName(PERF_RECORD_SAMPLE), "PERF_RECORD_SAMPLE");
  EXPECT_EQ(RecordTypeName(PERF_RECORD_AUXTRACE), "PERF_RECORD_AUXTRACE");
  EXPECT_EQ(RecordTypeName(PERF_RECORD_FINISHED_INIT), "PERF_RECORD_FINISHED_INIT");
  EXPECT_EQ(RecordTypeName(99), "PERF_RECORD_99");
  EXPECT_TRUE(IsKnownRecordType(PERF_RECORD_MMAP2));
  EXPECT_TRUE(IsKnownRecordType(PERF_RECORD_TIME_CONV));
  EXPECT_FALSE(IsKnownRecordType(PERF_RECORD_HEADER_MAX));
  EXPECT_FALSE(IsKnownRecordType(50));
}

TEST(PerfDataFormat, NamesFeatures) {
  EXPECT_EQ(FeatureName(HEADER_HOSTNAME), "HOSTNAME");
  EXPECT_EQ(FeatureName(HEADER_CLOCK_DATA), "CLOCK_DATA");
  EXPECT_EQ(FeatureName(HEADER_PMU_CAPS), "PMU_CAPS");
  EXPECT_EQ(FeatureName(77), "FEATURE_77");
}

}  // namespace
}  // namespace perftest::perf_data
