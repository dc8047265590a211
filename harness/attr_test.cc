// Unit tests of harness/attr.h: MakeAttr defaults and the stable description
// strings used in call strings (STYLE.md 3) — suites and reports compare them.
#include "harness/attr.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <string>

namespace perftest {
namespace {

const std::string kSize = "size=" + std::to_string(sizeof(perf_event_attr));

TEST(Attr, MakeAttrSetsTypeConfigSizeDisabledOnly) {
  const perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, 0x1234567890ull);
  EXPECT_EQ(a.type, static_cast<uint32_t>(PERF_TYPE_HARDWARE));
  EXPECT_EQ(a.config, 0x1234567890ull);
  EXPECT_EQ(a.size, sizeof(perf_event_attr));
  EXPECT_EQ(a.disabled, 1u);

  // Everything else is zero: compare to an attr built by hand.
  perf_event_attr want;
  std::memset(&want, 0, sizeof want);
  want.type = PERF_TYPE_HARDWARE;
  want.config = 0x1234567890ull;
  want.size = sizeof want;
  want.disabled = 1;
  EXPECT_EQ(std::memcmp(&a, &want, sizeof a), 0);
}

TEST(Attr, SoftwareAttrIsTypeSoftware) {
  const perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  EXPECT_EQ(a.type, static_cast<uint32_t>(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(a.config, static_cast<uint64_t>(PERF_COUNT_SW_PAGE_FAULTS));
  EXPECT_EQ(a.disabled, 1u);
  EXPECT_EQ(a.sample_period, 0u);
  EXPECT_EQ(a.sample_type, 0u);
}

TEST(Attr, DescribeAttrOfDefaults) {
  EXPECT_EQ(DescribeAttr(SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS)), "type=1, config=0x2, " + kSize + ", disabled");
  perf_event_attr zero;
  std::memset(&zero, 0, sizeof zero);
  EXPECT_EQ(DescribeAttr(zero), "type=0, config=0x0, size=0");
}

TEST(Attr, DescribeAttrOfSamplingAttr) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID;
  a.exclude_kernel = 1;
  a.sample_id_all = 1;
  EXPECT_EQ(DescribeAttr(a), "type=1, config=0x2, " + kSize +
                                 ", sample_period=1, sample_type=IP|TID, read_format=TOTAL_TIME_ENABLED|ID, "
                                 "disabled, exclude_kernel, sample_id_all");
}

TEST(Attr, DescribeAttrFreqAndWatermarkRenameTheirUnions) {
  perf_event_attr a = MakeAttr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  a.disabled = 0;
  a.freq = 1;
  a.sample_freq = 4000;
  a.watermark = 1;
  a.wakeup_watermark = 8192;
  EXPECT_EQ(DescribeAttr(a), "type=0, config=0x0, " + kSize + ", sample_freq=4000, freq, watermark, wakeup_watermark=8192");
  a.freq = 0;
  a.watermark = 0;
  EXPECT_EQ(DescribeAttr(a), "type=0, config=0x0, " + kSize + ", sample_period=4000, wakeup_events=8192");
}

TEST(Attr, DescribeAttrFlagsInUapiOrder) {
  perf_event_attr a = MakeAttr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
  a.sigtrap = 1;  // last in the UAPI
  a.inherit = 1;
  a.write_backward = 1;
  a.mmap2 = 1;
  a.precise_ip = 2;
  EXPECT_EQ(DescribeAttr(a),
            "type=1, config=0x9, " + kSize + ", disabled, inherit, mmap2, write_backward, sigtrap, precise_ip=2");
}

TEST(Attr, DescribeAttrConfigTermsAsHex) {
  perf_event_attr a = MakeAttr(8, 0x300);
  a.disabled = 0;
  a.config1 = 0x10;
  a.config2 = 0xff00;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER;
  a.sample_regs_user = 0xff;
  a.sample_stack_user = 8192;
  a.clockid = 1;
  a.use_clockid = 1;
  a.sample_regs_intr = 0x3;
  a.aux_watermark = 4096;
  a.sample_max_stack = 64;
  a.aux_sample_size = 256;
  a.sig_data = 0xabc;
  EXPECT_EQ(DescribeAttr(a), "type=8, config=0x300, " + kSize +
                                 ", use_clockid, config1=0x10, config2=0xff00, branch_sample_type=0x9, "
                                 "sample_regs_user=0xff, sample_stack_user=8192, clockid=1, sample_regs_intr=0x3, "
                                 "aux_watermark=4096, sample_max_stack=64, aux_sample_size=256, sig_data=0xabc");
}

TEST(Attr, DescribeSampleType) {
  EXPECT_EQ(DescribeSampleType(0), "0");
  EXPECT_EQ(DescribeSampleType(PERF_SAMPLE_IP), "IP");
  EXPECT_EQ(DescribeSampleType(PERF_SAMPLE_TIME | PERF_SAMPLE_IP | PERF_SAMPLE_TID), "IP|TID|TIME");
  EXPECT_EQ(DescribeSampleType(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_CALLCHAIN), "CALLCHAIN|IDENTIFIER");
}

TEST(Attr, DescribeSampleTypeEveryBitInBitOrder) {
  EXPECT_EQ(DescribeSampleType(PERF_SAMPLE_MAX - 1),
            "IP|TID|TIME|ADDR|READ|CALLCHAIN|ID|CPU|PERIOD|STREAM_ID|RAW|BRANCH_STACK|REGS_USER|STACK_USER|"
            "WEIGHT|DATA_SRC|IDENTIFIER|TRANSACTION|REGS_INTR|PHYS_ADDR|AUX|CGROUP|DATA_PAGE_SIZE|"
            "CODE_PAGE_SIZE|WEIGHT_STRUCT");
}

TEST(Attr, DescribeSampleTypeUnknownBitsAsHex) {
  EXPECT_EQ(DescribeSampleType(1ull << 40), "0x10000000000");
  EXPECT_EQ(DescribeSampleType(PERF_SAMPLE_IP | (1ull << 40) | (1ull << 25)), "IP|0x10002000000");
}

TEST(Attr, DescribeReadFormat) {
  EXPECT_EQ(DescribeReadFormat(0), "0");
  EXPECT_EQ(DescribeReadFormat(PERF_FORMAT_GROUP | PERF_FORMAT_ID), "ID|GROUP");
  EXPECT_EQ(DescribeReadFormat(PERF_FORMAT_MAX - 1), "TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID|GROUP|LOST");
  EXPECT_EQ(DescribeReadFormat(PERF_FORMAT_MAX), "0x20");
  EXPECT_EQ(DescribeReadFormat(PERF_FORMAT_LOST | (1ull << 63)), "LOST|0x8000000000000000");
}

TEST(Attr, RecordTypeNameKnown) {
  EXPECT_EQ(RecordTypeName(PERF_RECORD_MMAP), "PERF_RECORD_MMAP");
  EXPECT_EQ(RecordTypeName(2), "PERF_RECORD_LOST");
  EXPECT_EQ(RecordTypeName(3), "PERF_RECORD_COMM");
  EXPECT_EQ(RecordTypeName(4), "PERF_RECORD_EXIT");
  EXPECT_EQ(RecordTypeName(5), "PERF_RECORD_THROTTLE");
  EXPECT_EQ(RecordTypeName(6), "PERF_RECORD_UNTHROTTLE");
  EXPECT_EQ(RecordTypeName(7), "PERF_RECORD_FORK");
  EXPECT_EQ(RecordTypeName(8), "PERF_RECORD_READ");
  EXPECT_EQ(RecordTypeName(9), "PERF_RECORD_SAMPLE");
  EXPECT_EQ(RecordTypeName(10), "PERF_RECORD_MMAP2");
  EXPECT_EQ(RecordTypeName(11), "PERF_RECORD_AUX");
  EXPECT_EQ(RecordTypeName(12), "PERF_RECORD_ITRACE_START");
  EXPECT_EQ(RecordTypeName(13), "PERF_RECORD_LOST_SAMPLES");
  EXPECT_EQ(RecordTypeName(14), "PERF_RECORD_SWITCH");
  EXPECT_EQ(RecordTypeName(15), "PERF_RECORD_SWITCH_CPU_WIDE");
  EXPECT_EQ(RecordTypeName(16), "PERF_RECORD_NAMESPACES");
  EXPECT_EQ(RecordTypeName(17), "PERF_RECORD_KSYMBOL");
  EXPECT_EQ(RecordTypeName(18), "PERF_RECORD_BPF_EVENT");
  EXPECT_EQ(RecordTypeName(19), "PERF_RECORD_CGROUP");
  EXPECT_EQ(RecordTypeName(20), "PERF_RECORD_TEXT_POKE");
  EXPECT_EQ(RecordTypeName(21), "PERF_RECORD_AUX_OUTPUT_HW_ID");
}

TEST(Attr, RecordTypeNameUnknown) {
  EXPECT_EQ(RecordTypeName(0), "PERF_RECORD_0");
  EXPECT_EQ(RecordTypeName(PERF_RECORD_MAX), "PERF_RECORD_" + std::to_string(PERF_RECORD_MAX));
  EXPECT_EQ(RecordTypeName(0xffffffffu), "PERF_RECORD_4294967295");
}

}  // namespace
}  // namespace perftest
