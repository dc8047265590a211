// Unit tests of the zero-copy record views of harness/records.h
// (ParseSampleView, ParseRecordView, RecordViewParser, U64Array). The owned
// parsers are the reference: a view must carry the same fields (ToRecord()
// equals ParseSample()), point into the input rather than copy it, and fail
// where they fail, with the same message. Inputs are laid out by hand as in
// records_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/records.h"
#include "harness/records_test_util.h"
#include "harness/syscall_matchers.h"

namespace perftest::records_test {
namespace {

using ::testing::HasSubstr;

const uint64_t kUser = static_cast<uint64_t>(PERF_CONTEXT_USER);
const uint64_t kKernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);

// A profiler's sample: IP|TID|TIME|CPU|CALLCHAIN (the parser's direct path).
SampleLayout ProfileLayout() { return Layout(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                             PERF_SAMPLE_CALLCHAIN); }
Body ProfileBody(uint64_t ip, uint32_t tid, size_t depth) {
  Body b;
  b.U64(ip).U32(100).U32(tid).U64(5'000'000'000).U32(3).U32(0).U64(depth);
  for (size_t i = 0; i < depth; ++i) b.U64(i == 0 ? kKernel : 0xffffffff81000000ull + i);
  return b;
}

TEST(RecordView, ProfileSampleFieldsPointIntoTheRecord) {
  const std::vector<std::byte> rec = Rec(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL, ProfileBody(0x401234, 101, 4));
  Result<RecordView> v = ParseRecordView(ProfileLayout(), rec);
  ASSERT_OK(v);
  ASSERT_TRUE(v->is_sample());
  EXPECT_EQ(v->header.misc, PERF_RECORD_MISC_KERNEL);
  EXPECT_EQ(v->bytes.data(), rec.data());
  const SampleView& s = v->sample;
  EXPECT_EQ(s.ip, 0x401234u);
  EXPECT_EQ(s.pid, 100u);
  EXPECT_EQ(s.tid, 101u);
  EXPECT_EQ(s.time, 5'000'000'000u);
  EXPECT_EQ(s.cpu, 3u);
  EXPECT_TRUE(s.has(PERF_SAMPLE_CALLCHAIN));
  EXPECT_FALSE(s.has(PERF_SAMPLE_PERIOD));
  ASSERT_EQ(s.callchain.size(), 4u);
  EXPECT_EQ(s.callchain.front(), kKernel);
  EXPECT_EQ(s.callchain[3], 0xffffffff81000003ull);
  // In place: the ips are the record's bytes 8 (header) + 40 (fields + nr) on.
  EXPECT_EQ(s.callchain.bytes().data(), rec.data() + 8 + 40);
  EXPECT_EQ(s.callchain.ToVector(),
            (std::vector<uint64_t>{kKernel, 0xffffffff81000001ull, 0xffffffff81000002ull, 0xffffffff81000003ull}));
}

// ToRecord() of the view equals the owned parse for every layout the tests
// of records_test.cc build: the direct path (head + CALLCHAIN) and the
// general one (everything else).
TEST(RecordView, ToRecordEqualsParseSample) {
  struct Case {
    SampleLayout layout;
    Body body;
  };
  std::vector<Case> cases;
  cases.push_back({ProfileLayout(), ProfileBody(0x1000, 7, 0)});
  cases.push_back({ProfileLayout(), ProfileBody(0x1000, 7, 127)});
  cases.push_back({Layout(0), Body()});
  cases.push_back({Layout(PERF_SAMPLE_CALLCHAIN), Body().U64(2).U64(kUser).U64(0x401000)});
  cases.push_back({Layout(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_PERIOD | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_ADDR |
                          PERF_SAMPLE_ID),
                   Body().U64(1).U64(2).U64(3).U64(4).U64(5)});
  cases.push_back({Layout(PERF_SAMPLE_TID | PERF_SAMPLE_RAW), Body().U32(1).U32(2).U32(4).U32(0xabcd)});
  cases.push_back({AllLayout(), AllBody()});
  for (const Case& c : cases) {
    SCOPED_TRACE(DescribeSampleType(c.layout.sample_type));
    Result<SampleView> v = ParseSampleView(c.layout, c.body.bytes());
    ASSERT_OK(v);
    Result<SampleRecord> owned = ParseSample(c.layout, c.body.bytes());
    ASSERT_OK(owned);
    Result<SampleRecord> copy = v->ToRecord(c.layout);
    ASSERT_OK(copy);
    EXPECT_TRUE(*copy == *owned);
  }
  const Body all_body = AllBody();  // a view points into its bytes: they must outlive it
  Result<SampleView> all = ParseSampleView(AllLayout(), all_body.bytes());
  ASSERT_OK(all);
  Result<SampleRecord> all_copy = all->ToRecord(AllLayout());
  ASSERT_OK(all_copy);
  EXPECT_TRUE(*all_copy == AllSample());
}

TEST(RecordView, AllFieldsInPlace) {
  const Body body = AllBody();
  const std::vector<std::byte>& b = body.bytes();
  Result<SampleView> v = ParseSampleView(AllLayout(), b);
  ASSERT_OK(v);
  const SampleRecord want = AllSample();
  auto inside = [&b](std::span<const std::byte> s) {
    return s.empty() || (s.data() >= b.data() && s.data() + s.size() <= b.data() + b.size());
  };
  EXPECT_TRUE(inside(v->read));
  EXPECT_TRUE(inside(v->callchain.bytes()));
  EXPECT_TRUE(inside(v->raw));
  EXPECT_TRUE(inside(v->branch_stack.entries));
  EXPECT_TRUE(inside(v->regs_user.regs.bytes()));
  EXPECT_TRUE(inside(v->stack_user.data));
  EXPECT_TRUE(inside(v->aux));
  EXPECT_EQ(v->callchain.ToVector(), *want.callchain);
  ASSERT_EQ(v->branch_stack.size(), want.branch_stack->entries.size());
  for (size_t i = 0; i < v->branch_stack.size(); ++i) EXPECT_EQ(v->branch_stack[i], want.branch_stack->entries[i]);
  EXPECT_EQ(v->branch_stack.hw_idx, want.branch_stack->hw_idx);
  EXPECT_EQ(v->regs_user.abi, want.regs_user->abi);
  EXPECT_EQ(v->regs_user.regs.ToVector(), want.regs_user->regs);
  EXPECT_EQ(v->regs_intr.regs.ToVector(), want.regs_intr->regs);
  EXPECT_EQ(v->stack_user.dyn_size, want.stack_user->dyn_size);
  EXPECT_EQ(std::vector<std::byte>(v->stack_user.data.begin(), v->stack_user.data.end()), want.stack_user->data);
}

// Both paths fail where the owned parser fails, with its message.
TEST(RecordView, EveryTruncationFailsAsParseRecordDoes) {
  for (const auto& [layout, body] : {std::pair{ProfileLayout(), ProfileBody(0x1, 2, 3)}, std::pair{AllLayout(), AllBody()}}) {
    SCOPED_TRACE(DescribeSampleType(layout.sample_type));
    const std::vector<std::byte>& full = body.bytes();
    for (size_t len = 0; len < full.size(); len += 8) {
      Body cut;
      cut.Bytes(std::vector<std::byte>(full.begin(), full.begin() + len));
      const std::vector<std::byte> rec = Rec(PERF_RECORD_SAMPLE, 0, cut);
      Result<Record> owned = ParseRecord(layout, rec);
      Result<RecordView> view = ParseRecordView(layout, rec);
      ASSERT_THAT(owned, FailsWithErrno(EBADMSG)) << len;
      ASSERT_THAT(view, FailsWithErrno(EBADMSG)) << len;
      EXPECT_EQ(view.call(), owned.call()) << len;
    }
  }
}

TEST(RecordView, DirectPathNamesTheFieldThatDidNotFit) {
  Result<RecordView> r = ParseRecordView(ProfileLayout(), Rec(PERF_RECORD_SAMPLE, 0, Body().U64(1).U32(2).U32(3)));
  ASSERT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_THAT(r.call(), HasSubstr("PERF_RECORD_SAMPLE"));
  EXPECT_THAT(r.call(), HasSubstr("time needs 8 bytes at offset 16"));
}

TEST(RecordView, CallchainNrOffByOneEitherWayIsEbadmsg) {
  // nr one more than the ips present, and one less (8 bytes left over).
  const Body more = Body().U64(3).U64(kUser).U64(0x401000);
  const Body fewer = Body().U64(1).U64(kUser).U64(0x401000);
  EXPECT_THAT(ParseRecordView(Layout(PERF_SAMPLE_CALLCHAIN), Rec(PERF_RECORD_SAMPLE, 0, more)),
              FailsWithErrno(EBADMSG));
  Result<RecordView> r = ParseRecordView(Layout(PERF_SAMPLE_CALLCHAIN), Rec(PERF_RECORD_SAMPLE, 0, fewer));
  ASSERT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_THAT(r.call(), HasSubstr("8 bytes left after the last field"));
}

TEST(RecordView, HeaderChecksAreParseRecords) {
  std::vector<std::byte> rec = Rec(PERF_RECORD_LOST, 0, Body().U64(1).U64(2));
  const uint16_t wrong = 32;
  std::memcpy(rec.data() + 6, &wrong, 2);
  Result<RecordView> r = ParseRecordView(Layout(0), rec);
  ASSERT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_EQ(r.call(), ParseRecord(Layout(0), rec).call());
  EXPECT_THAT(ParseRecordView(Layout(0), std::vector<std::byte>(4)), FailsWithErrno(EBADMSG));
}

TEST(RecordView, OtherRecordsAreFramedOnly) {
  const std::vector<std::byte> rec = Rec(PERF_RECORD_COMM, 0, Body().U32(5).U32(6).String("hog", 8));
  Result<RecordView> v = ParseRecordView(Layout(PERF_SAMPLE_IP), rec);
  ASSERT_OK(v);
  EXPECT_FALSE(v->is_sample());
  EXPECT_EQ(v->header.type, static_cast<uint32_t>(PERF_RECORD_COMM));
  EXPECT_EQ(v->bytes.size(), rec.size());
  Result<Record> owned = ParseRecord(Layout(PERF_SAMPLE_IP), v->bytes);
  ASSERT_OK(owned);
  EXPECT_EQ(std::get<CommRecord>(owned->body).comm, "hog");
}

TEST(RecordViewParser, ReusesItsViewAndReportsErrors) {
  RecordViewParser p(ProfileLayout());
  const std::vector<std::byte> a = Rec(PERF_RECORD_SAMPLE, 0, ProfileBody(0xa, 1, 5));
  const std::vector<std::byte> b = Rec(PERF_RECORD_SAMPLE, 0, ProfileBody(0xb, 2, 1));
  const RecordView* va = p.Parse(a);
  ASSERT_NE(va, nullptr) << p.error();
  EXPECT_EQ(va->sample.callchain.size(), 5u);
  const RecordView* vb = p.Parse(b);
  ASSERT_NE(vb, nullptr) << p.error();
  EXPECT_EQ(vb, va) << "one view, reused";
  EXPECT_EQ(vb->sample.ip, 0xbu);
  EXPECT_EQ(vb->sample.tid, 2u);
  EXPECT_EQ(vb->sample.callchain.size(), 1u);
  EXPECT_EQ(p.Parse(std::vector<std::byte>(4)), nullptr);
  EXPECT_THAT(p.error(), HasSubstr("shorter than a header"));
  const std::vector<std::byte> cut = Rec(PERF_RECORD_SAMPLE, 0, Body().U64(0xc));
  EXPECT_EQ(p.Parse(cut), nullptr);
  EXPECT_EQ(p.error(), ParseRecord(ProfileLayout(), cut).call());
}

TEST(U64Array, ReadsAnyAlignment) {
  std::vector<std::byte> bytes(8 * 3 + 1);
  const uint64_t values[3] = {1, 0x8000000000000000ull, 0x0123456789abcdefull};
  std::memcpy(bytes.data() + 1, values, sizeof values);  // misaligned by one
  U64Array a(std::span<const std::byte>(bytes).subspan(1));
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[1], values[1]);
  EXPECT_EQ(a.back(), values[2]);
  EXPECT_EQ(std::vector<uint64_t>(a.begin(), a.end()), (std::vector<uint64_t>{values[0], values[1], values[2]}));
  EXPECT_EQ(a.end() - a.begin(), 3);
  EXPECT_EQ(*(a.end() - 1), values[2]);
  EXPECT_TRUE(U64Array().empty());
  EXPECT_EQ(U64Array(std::span<const std::byte>(bytes).first(12)).size(), 1u) << "a partial value is ignored";
}

}  // namespace
}  // namespace perftest::records_test
