// Unit tests of harness/records.h. Inputs are byte arrays laid out here by hand
// from <linux/perf_event.h> "enum perf_event_type" and the order in which
// kernel/events/core.c perf_output_sample() writes the sample fields (which puts
// CGROUP after PHYS_ADDR and AUX last — the UAPI comment lags behind on both);
// the encoders are checked against the parsers only in the round-trip tests.
#include "harness/records.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "harness/attr.h"
#include "harness/records_test_util.h"
#include "harness/syscall_matchers.h"

namespace perftest::records_test {
namespace {

using ::testing::HasSubstr;

// --- PERF_RECORD_SAMPLE, one sample_type bit at a time ---

struct U64Field {
  uint64_t bit;
  std::optional<uint64_t> SampleRecord::*field;
};

TEST(RecordsSample, EachU64FieldAlone) {
  const U64Field fields[] = {
      {PERF_SAMPLE_IDENTIFIER, &SampleRecord::identifier},
      {PERF_SAMPLE_IP, &SampleRecord::ip},
      {PERF_SAMPLE_TIME, &SampleRecord::time},
      {PERF_SAMPLE_ADDR, &SampleRecord::addr},
      {PERF_SAMPLE_ID, &SampleRecord::id},
      {PERF_SAMPLE_STREAM_ID, &SampleRecord::stream_id},
      {PERF_SAMPLE_PERIOD, &SampleRecord::period},
      {PERF_SAMPLE_WEIGHT, &SampleRecord::weight},
      {PERF_SAMPLE_WEIGHT_STRUCT, &SampleRecord::weight},
      {PERF_SAMPLE_DATA_SRC, &SampleRecord::data_src},
      {PERF_SAMPLE_TRANSACTION, &SampleRecord::transaction},
      {PERF_SAMPLE_PHYS_ADDR, &SampleRecord::phys_addr},
      {PERF_SAMPLE_CGROUP, &SampleRecord::cgroup},
      {PERF_SAMPLE_DATA_PAGE_SIZE, &SampleRecord::data_page_size},
      {PERF_SAMPLE_CODE_PAGE_SIZE, &SampleRecord::code_page_size},
  };
  for (const U64Field& f : fields) {
    SCOPED_TRACE(DescribeSampleType(f.bit));
    const uint64_t v = 0x0123456789abcdefull ^ f.bit;
    Result<SampleRecord> s = ParseSampleRecord(Layout(f.bit), Body().U64(v));
    ASSERT_OK(s);
    SampleRecord want;
    want.*f.field = v;
    EXPECT_TRUE(*s == want);
    EXPECT_EQ((*s).*f.field, v);
  }
}

TEST(RecordsSample, EmptySampleType) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(0), Body());
  ASSERT_OK(s);
  EXPECT_TRUE(*s == SampleRecord{});
}

TEST(RecordsSample, Tid) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_TID), Body().U32(1234).U32(1240));
  ASSERT_OK(s);
  EXPECT_EQ(s->pid, 1234u);
  EXPECT_EQ(s->tid, 1240u);
  EXPECT_FALSE(s->ip.has_value());
}

TEST(RecordsSample, Cpu) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_CPU), Body().U32(7).U32(0));
  ASSERT_OK(s);
  EXPECT_EQ(s->cpu, 7u);
  EXPECT_EQ(s->res, 0u);
}

TEST(RecordsSample, ReadNonGroup) {
  SampleLayout l = Layout(PERF_SAMPLE_READ);
  l.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
  Result<SampleRecord> s = ParseSampleRecord(l, Body().U64(42).U64(1000).U64(900).U64(0x77));
  ASSERT_OK(s);
  ASSERT_TRUE(s->read.has_value());
  EXPECT_EQ(s->read->time_enabled, 1000u);
  EXPECT_EQ(s->read->time_running, 900u);
  ASSERT_EQ(s->read->counters.size(), 1u);
  EXPECT_EQ(s->read->counters[0].value, 42u);
  EXPECT_EQ(s->read->counters[0].id, 0x77u);
}

TEST(RecordsSample, ReadGroupFollowedByNextField) {
  SampleLayout l = Layout(PERF_SAMPLE_READ | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN);
  l.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST;
  // period, read {nr=2, {v, id, lost} x2}, callchain {nr=1, ip}
  Result<SampleRecord> s = ParseSampleRecord(
      l, Body().U64(100).U64(2).U64(5).U64(50).U64(0).U64(6).U64(51).U64(1).U64(1).U64(0x4000));
  ASSERT_OK(s);
  EXPECT_EQ(s->period, 100u);
  ASSERT_TRUE(s->read.has_value());
  ASSERT_EQ(s->read->counters.size(), 2u);
  EXPECT_EQ(s->read->counters[0], (CounterValue{5, 50, 0}));
  EXPECT_EQ(s->read->counters[1], (CounterValue{6, 51, 1}));
  EXPECT_EQ(s->callchain, (std::vector<uint64_t>{0x4000}));
}

TEST(RecordsSample, Callchain) {
  const uint64_t user = static_cast<uint64_t>(PERF_CONTEXT_USER);
  const uint64_t kernel = static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_CALLCHAIN),
                                             Body().U64(4).U64(kernel).U64(0xffffffff81000010ull).U64(user).U64(0x401000));
  ASSERT_OK(s);
  EXPECT_EQ(s->callchain, (std::vector<uint64_t>{kernel, 0xffffffff81000010ull, user, 0x401000}));
}

TEST(RecordsSample, CallchainEmpty) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_CALLCHAIN), Body().U64(0));
  ASSERT_OK(s);
  ASSERT_TRUE(s->callchain.has_value());
  EXPECT_TRUE(s->callchain->empty());
}

TEST(RecordsSample, RawWithSizeAndPadding) {
  // u32 size + data ends on 8 bytes; the kernel counts the padding in size.
  Result<SampleRecord> s =
      ParseSampleRecord(Layout(PERF_SAMPLE_RAW), Body().U32(12).Bytes(Pattern(10, 0x41)).U16(0));
  ASSERT_OK(s);
  std::vector<std::byte> want = Pattern(10, 0x41);
  want.resize(12, std::byte{0});
  EXPECT_EQ(s->raw, want);
}

TEST(RecordsSample, RawSmallest) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_RAW), Body().U32(4).U32(0xdeadbeef));
  ASSERT_OK(s);
  ASSERT_TRUE(s->raw.has_value());
  ASSERT_EQ(s->raw->size(), 4u);
  uint32_t v;
  std::memcpy(&v, s->raw->data(), 4);
  EXPECT_EQ(v, 0xdeadbeefu);
}

TEST(RecordsSample, RawFollowedByNextField) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK),
                                             Body().U32(4).U32(1).U64(1).U64(0xa).U64(0xb).U64(0xc));
  ASSERT_OK(s);
  ASSERT_TRUE(s->branch_stack.has_value());
  EXPECT_EQ(s->branch_stack->entries, (std::vector<BranchEntry>{{0xa, 0xb, 0xc}}));
}

TEST(RecordsSample, BranchStackWithoutHwIndex) {
  Result<SampleRecord> s = ParseSampleRecord(
      Layout(PERF_SAMPLE_BRANCH_STACK), Body().U64(2).U64(0x100).U64(0x200).U64(0x3).U64(0x300).U64(0x400).U64(0x5));
  ASSERT_OK(s);
  ASSERT_TRUE(s->branch_stack.has_value());
  EXPECT_FALSE(s->branch_stack->hw_idx.has_value());
  EXPECT_EQ(s->branch_stack->entries, (std::vector<BranchEntry>{{0x100, 0x200, 0x3}, {0x300, 0x400, 0x5}}));
}

TEST(RecordsSample, BranchStackWithHwIndex) {
  SampleLayout l = Layout(PERF_SAMPLE_BRANCH_STACK);
  l.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX;
  // nr, hw_idx, entries
  Result<SampleRecord> s = ParseSampleRecord(l, Body().U64(1).U64(7).U64(0x100).U64(0x200).U64(0x3));
  ASSERT_OK(s);
  ASSERT_TRUE(s->branch_stack.has_value());
  EXPECT_EQ(s->branch_stack->hw_idx, 7u);
  EXPECT_EQ(s->branch_stack->entries, (std::vector<BranchEntry>{{0x100, 0x200, 0x3}}));
}

TEST(RecordsSample, BranchStackEmpty) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_BRANCH_STACK), Body().U64(0));
  ASSERT_OK(s);
  ASSERT_TRUE(s->branch_stack.has_value());
  EXPECT_TRUE(s->branch_stack->entries.empty());
}

TEST(RecordsSample, RegsUserAbiNone) {
  SampleLayout l = Layout(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_PERIOD);
  l.sample_regs_user = 0xff;  // no regs follow abi NONE (a kernel thread has no user regs), whatever the mask
  // period (which precedes REGS_USER), then abi = NONE and nothing else.
  Result<SampleRecord> s = ParseSampleRecord(l, Body().U64(99).U64(PERF_SAMPLE_REGS_ABI_NONE));
  ASSERT_OK(s);
  ASSERT_TRUE(s->regs_user.has_value());
  EXPECT_EQ(s->regs_user->abi, static_cast<uint64_t>(PERF_SAMPLE_REGS_ABI_NONE));
  EXPECT_TRUE(s->regs_user->regs.empty());
  EXPECT_EQ(s->period, 99u);
}

TEST(RecordsSample, RegsUserWithMask) {
  SampleLayout l = Layout(PERF_SAMPLE_REGS_USER);
  l.sample_regs_user = (1ull << 0) | (1ull << 3) | (1ull << 63);  // three registers
  Result<SampleRecord> s = ParseSampleRecord(l, Body().U64(PERF_SAMPLE_REGS_ABI_64).U64(0xa0).U64(0xa3).U64(0xaf));
  ASSERT_OK(s);
  ASSERT_TRUE(s->regs_user.has_value());
  EXPECT_EQ(s->regs_user->abi, static_cast<uint64_t>(PERF_SAMPLE_REGS_ABI_64));
  EXPECT_EQ(s->regs_user->regs, (std::vector<uint64_t>{0xa0, 0xa3, 0xaf}));
}

TEST(RecordsSample, RegsIntrWithMask) {
  SampleLayout l = Layout(PERF_SAMPLE_REGS_INTR);
  l.sample_regs_intr = 0x3;
  l.sample_regs_user = 0xff;  // must not be used for REGS_INTR
  Result<SampleRecord> s = ParseSampleRecord(l, Body().U64(PERF_SAMPLE_REGS_ABI_32).U64(0xb0).U64(0xb1));
  ASSERT_OK(s);
  ASSERT_TRUE(s->regs_intr.has_value());
  EXPECT_EQ(s->regs_intr->abi, static_cast<uint64_t>(PERF_SAMPLE_REGS_ABI_32));
  EXPECT_EQ(s->regs_intr->regs, (std::vector<uint64_t>{0xb0, 0xb1}));
  EXPECT_FALSE(s->regs_user.has_value());
}

TEST(RecordsSample, StackUserSizeZeroHasNoDynSize) {
  // "dyn_size is omitted if size is 0": the next field follows the size at once.
  Result<SampleRecord> s =
      ParseSampleRecord(Layout(PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT), Body().U64(0).U64(0x5151));
  ASSERT_OK(s);
  ASSERT_TRUE(s->stack_user.has_value());
  EXPECT_TRUE(s->stack_user->data.empty());
  EXPECT_EQ(s->stack_user->dyn_size, 0u);
  EXPECT_EQ(s->weight, 0x5151u);
}

TEST(RecordsSample, StackUserWithDynSize) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT),
                                             Body().U64(16).Bytes(Pattern(16, 0x10)).U64(12).U64(0x5151));
  ASSERT_OK(s);
  ASSERT_TRUE(s->stack_user.has_value());
  EXPECT_EQ(s->stack_user->data, Pattern(16, 0x10));
  EXPECT_EQ(s->stack_user->dyn_size, 12u);
  EXPECT_EQ(s->weight, 0x5151u);
}

TEST(RecordsSample, Aux) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_AUX), Body().U64(16).Bytes(Pattern(16, 0x80)));
  ASSERT_OK(s);
  EXPECT_EQ(s->aux, Pattern(16, 0x80));
}

TEST(RecordsSample, AuxEmpty) {
  Result<SampleRecord> s = ParseSampleRecord(Layout(PERF_SAMPLE_AUX), Body().U64(0));
  ASSERT_OK(s);
  ASSERT_TRUE(s->aux.has_value());
  EXPECT_TRUE(s->aux->empty());
}

TEST(RecordsSample, AllFieldsFieldByField) {
  Result<SampleRecord> r = ParseSampleRecord(AllLayout(), AllBody());
  ASSERT_OK(r);
  const SampleRecord& s = *r;
  const SampleRecord want = AllSample();
  EXPECT_EQ(s.identifier, want.identifier);
  EXPECT_EQ(s.ip, want.ip);
  EXPECT_EQ(s.pid, want.pid);
  EXPECT_EQ(s.tid, want.tid);
  EXPECT_EQ(s.time, want.time);
  EXPECT_EQ(s.addr, want.addr);
  EXPECT_EQ(s.id, want.id);
  EXPECT_EQ(s.stream_id, want.stream_id);
  EXPECT_EQ(s.cpu, want.cpu);
  EXPECT_EQ(s.res, want.res);
  EXPECT_EQ(s.period, want.period);
  EXPECT_TRUE(s.read == want.read);
  EXPECT_EQ(s.callchain, want.callchain);
  EXPECT_EQ(s.raw, want.raw);
  EXPECT_TRUE(s.branch_stack == want.branch_stack);
  EXPECT_TRUE(s.regs_user == want.regs_user);
  EXPECT_TRUE(s.stack_user == want.stack_user);
  EXPECT_EQ(s.weight, want.weight);
  EXPECT_EQ(s.data_src, want.data_src);
  EXPECT_EQ(s.transaction, want.transaction);
  EXPECT_TRUE(s.regs_intr == want.regs_intr);
  EXPECT_EQ(s.phys_addr, want.phys_addr);
  EXPECT_EQ(s.cgroup, want.cgroup);
  EXPECT_EQ(s.data_page_size, want.data_page_size);
  EXPECT_EQ(s.code_page_size, want.code_page_size);
  EXPECT_EQ(s.aux, want.aux);
  EXPECT_TRUE(s == want);
}

TEST(RecordsSample, ParseSampleTakesTheBodyOnly) {
  Result<SampleRecord> s = ParseSample(AllLayout(), AllBody().bytes());
  ASSERT_OK(s);
  EXPECT_TRUE(*s == AllSample());
}

TEST(RecordsSample, EveryTruncationIsEbadmsg) {
  const std::vector<std::byte> body = AllBody().bytes();
  for (size_t len = 0; len < body.size(); len += 8) {
    Body cut;
    cut.Bytes(std::vector<std::byte>(body.begin(), body.begin() + len));
    Result<Record> r = ParseRecord(AllLayout(), Rec(PERF_RECORD_SAMPLE, 0, cut));
    EXPECT_THAT(r, FailsWithErrno(EBADMSG)) << "body cut to " << len << " of " << body.size() << " bytes";
    EXPECT_THAT(ParseSample(AllLayout(), cut.bytes()), FailsWithErrno(EBADMSG)) << len;
  }
}

TEST(RecordsSample, TruncatedBodyNamesTheRecordAndField) {
  Result<Record> r = ParseRecord(Layout(PERF_SAMPLE_IP | PERF_SAMPLE_TIME), Rec(PERF_RECORD_SAMPLE, 0, Body().U64(1)));
  ASSERT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_THAT(r.call(), HasSubstr("PERF_RECORD_SAMPLE"));
  EXPECT_THAT(r.call(), HasSubstr("time"));
  EXPECT_THAT(r.call(), HasSubstr("offset 8"));
}

TEST(RecordsSample, CallchainNrLargerThanRecordIsEbadmsg) {
  for (uint64_t nr : {uint64_t{3}, uint64_t{1000}, uint64_t{1} << 61, ~uint64_t{0}}) {
    Result<Record> r = ParseRecord(Layout(PERF_SAMPLE_CALLCHAIN),
                                   Rec(PERF_RECORD_SAMPLE, 0, Body().U64(nr).U64(0x1).U64(0x2)));
    EXPECT_THAT(r, FailsWithErrno(EBADMSG)) << "nr=" << nr;
    EXPECT_THAT(r.call(), HasSubstr("callchain")) << "nr=" << nr;
  }
}

TEST(RecordsSample, BranchNrLargerThanRecordIsEbadmsg) {
  for (uint64_t nr : {uint64_t{2}, uint64_t{1} << 60, ~uint64_t{0}}) {
    Result<Record> r = ParseRecord(Layout(PERF_SAMPLE_BRANCH_STACK),
                                   Rec(PERF_RECORD_SAMPLE, 0, Body().U64(nr).U64(1).U64(2).U64(3)));
    EXPECT_THAT(r, FailsWithErrno(EBADMSG)) << "nr=" << nr;
  }
}

TEST(RecordsSample, OversizedLengthFieldsAreEbadmsg) {
  // raw.size, stack_user.size, aux.size beyond the record.
  EXPECT_THAT(ParseRecord(Layout(PERF_SAMPLE_RAW), Rec(PERF_RECORD_SAMPLE, 0, Body().U32(0xfffffff0).U32(0))),
              FailsWithErrno(EBADMSG));
  EXPECT_THAT(ParseRecord(Layout(PERF_SAMPLE_STACK_USER),
                          Rec(PERF_RECORD_SAMPLE, 0, Body().U64(~uint64_t{0} - 7).U64(0))),
              FailsWithErrno(EBADMSG));
  // stack_user with size > 0 needs dyn_size after the data.
  EXPECT_THAT(ParseRecord(Layout(PERF_SAMPLE_STACK_USER), Rec(PERF_RECORD_SAMPLE, 0, Body().U64(8).U64(0))),
              FailsWithErrno(EBADMSG));
  EXPECT_THAT(ParseRecord(Layout(PERF_SAMPLE_AUX), Rec(PERF_RECORD_SAMPLE, 0, Body().U64(1ull << 40).U64(0))),
              FailsWithErrno(EBADMSG));
  // A read_format group whose nr runs past the record.
  SampleLayout l = Layout(PERF_SAMPLE_READ);
  l.read_format = PERF_FORMAT_GROUP;
  EXPECT_THAT(ParseRecord(l, Rec(PERF_RECORD_SAMPLE, 0, Body().U64(1ull << 50).U64(1))), FailsWithErrno(EBADMSG));
}

// The brief of ParseRecord: "the call string names the record type, field and
// offset". AUX with an oversized size is reported with an empty detail
// (records.cc checks size > remaining() before Cursor::Bytes can say why).
TEST(RecordsSample, OversizedAuxSizeNamesTheField) {
  Result<Record> r = ParseRecord(Layout(PERF_SAMPLE_AUX), Rec(PERF_RECORD_SAMPLE, 0, Body().U64(64).U64(0)));
  ASSERT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_THAT(r.call(), HasSubstr("aux"));
}

// --- header checks ---

TEST(RecordsHeader, ShorterThanAHeaderIsEbadmsg) {
  const std::vector<std::byte> four(4);
  EXPECT_THAT(ParseRecord(Layout(0), four), FailsWithErrno(EBADMSG));
  EXPECT_THAT(ParseRecord(Layout(0), {}), FailsWithErrno(EBADMSG));
}

TEST(RecordsHeader, SizeNotAMultipleOf8IsEbadmsg) {
  // header.size = 12 and 12 bytes given: the sizes agree, the alignment does not.
  Body b;
  b.U32(PERF_RECORD_SAMPLE).U16(0).U16(12).U32(0);
  Result<Record> r = ParseRecord(Layout(0), b.bytes());
  EXPECT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_THAT(r.call(), HasSubstr("multiple of 8"));
  Body m;
  m.U32(PERF_RECORD_LOST).U16(0).U16(20).U64(1).U32(2);
  EXPECT_THAT(ParseRecord(Layout(0), m.bytes()), FailsWithErrno(EBADMSG));
}

TEST(RecordsHeader, SizeMismatchIsEbadmsg) {
  std::vector<std::byte> rec = Rec(PERF_RECORD_LOST, 0, Body().U64(1).U64(2));
  // Bytes beyond header.size.
  std::vector<std::byte> longer = rec;
  longer.resize(rec.size() + 8);
  Result<Record> r = ParseRecord(Layout(0), longer);
  EXPECT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_THAT(r.call(), HasSubstr("PERF_RECORD_LOST"));
  EXPECT_THAT(r.call(), HasSubstr("header.size=24"));
  // Fewer bytes than header.size.
  EXPECT_THAT(ParseRecord(Layout(0), std::span<const std::byte>(rec).first(16)), FailsWithErrno(EBADMSG));
  // header.size 0.
  Body zero;
  zero.U32(PERF_RECORD_LOST).U16(0).U16(0).U64(1).U64(2);
  EXPECT_THAT(ParseRecord(Layout(0), zero.bytes()), FailsWithErrno(EBADMSG));
}

}  // namespace
}  // namespace perftest::records_test
