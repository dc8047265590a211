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
#include "harness/syscall_matchers.h"

namespace perftest {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kProtRX = PROT_READ | PROT_EXEC;

// Little-endian byte builder for record bodies.
class Body {
 public:
  Body& U64(uint64_t v) { return Put(&v, sizeof v); }
  Body& U32(uint32_t v) { return Put(&v, sizeof v); }
  Body& U16(uint16_t v) { return Put(&v, sizeof v); }
  Body& U8(uint8_t v) { return Put(&v, sizeof v); }
  Body& Bytes(const std::vector<std::byte>& b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  // `s`, NUL, zeros up to `padded` bytes in all.
  Body& String(std::string_view s, size_t padded) {
    EXPECT_GT(padded, s.size());
    const size_t at = bytes_.size();
    bytes_.resize(at + padded, std::byte{0});
    std::memcpy(bytes_.data() + at, s.data(), s.size());
    return *this;
  }
  Body& Append(const Body& other) { return Bytes(other.bytes_); }
  const std::vector<std::byte>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  Body& Put(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  std::vector<std::byte> bytes_;
};

// header {type, misc, size = 8 + body} followed by the body.
std::vector<std::byte> Rec(uint32_t type, uint16_t misc, const Body& body) {
  Body all;
  all.U32(type).U16(misc).U16(static_cast<uint16_t>(8 + body.size())).Append(body);
  return all.bytes();
}

std::vector<std::byte> Pattern(size_t n, uint8_t first) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(first + i);
  return v;
}

SampleLayout Layout(uint64_t sample_type, bool sample_id_all = false) {
  SampleLayout l;
  l.sample_type = sample_type;
  l.sample_id_all = sample_id_all;
  return l;
}

Result<SampleRecord> ParseSampleRecord(const SampleLayout& layout, const Body& body) {
  Result<Record> r = ParseRecord(layout, Rec(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, body));
  if (!r.ok()) return Result<SampleRecord>::FailureFrom(r);
  if (r->header.type != PERF_RECORD_SAMPLE || r->header.misc != PERF_RECORD_MISC_USER ||
      r->header.size != 8 + body.size() || r->sample_id.has_value()) {
    ADD_FAILURE() << "header or sample_id wrong";
  }
  const SampleRecord* s = std::get_if<SampleRecord>(&r->body);
  if (s == nullptr) return Result<SampleRecord>::Failure(EPROTO, "not a SampleRecord");
  return Result<SampleRecord>::Ok(*s);
}

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

// --- every field together, in perf_output_sample() order ---

constexpr uint64_t kAllSampleBits =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
    PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN |
    PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT |
    PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR |
    PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_AUX;
// WEIGHT_STRUCT is the one bit left out: the kernel refuses it together with WEIGHT.
static_assert((kAllSampleBits | PERF_SAMPLE_WEIGHT_STRUCT) == PERF_SAMPLE_MAX - 1,
              "a sample_type bit this test does not know");

SampleLayout AllLayout() {
  SampleLayout l = Layout(kAllSampleBits);
  l.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED;
  l.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX;
  l.sample_regs_user = 0x7;       // 3 registers
  l.sample_regs_intr = 0x30003;   // 4 registers
  return l;
}

Body AllBody() {
  const uint64_t user = static_cast<uint64_t>(PERF_CONTEXT_USER);
  Body b;
  b.U64(0x1111);                                      // identifier
  b.U64(0x400123);                                    // ip
  b.U32(100).U32(101);                                // pid, tid
  b.U64(5000000);                                     // time
  b.U64(0x7fff0000);                                  // addr
  b.U64(0x2222);                                      // id
  b.U64(0x3333);                                      // stream_id
  b.U32(3).U32(0);                                    // cpu, res
  b.U64(4000);                                        // period
  b.U64(2).U64(777).U64(10).U64(0x2222).U64(20).U64(0x2223);  // read: nr, time_enabled, {value, id} x2
  b.U64(3).U64(user).U64(0x400100).U64(0x400200);     // callchain
  b.U32(12).Bytes(Pattern(12, 0x01));                 // raw
  b.U64(2).U64(5).U64(0x10).U64(0x20).U64(0x1).U64(0x30).U64(0x40).U64(0x2);  // branch stack: nr, hw_idx, lbr[2]
  b.U64(PERF_SAMPLE_REGS_ABI_64).U64(0xa1).U64(0xa2).U64(0xa3);                // regs_user
  b.U64(16).Bytes(Pattern(16, 0x60)).U64(8);          // stack_user: size, data, dyn_size
  b.U64(0x55);                                        // weight
  b.U64(0x66);                                        // data_src
  b.U64(0x77);                                        // transaction
  b.U64(PERF_SAMPLE_REGS_ABI_64).U64(0xb1).U64(0xb2).U64(0xb3).U64(0xb4);    // regs_intr
  b.U64(0x88);                                        // phys_addr
  b.U64(0x99);                                        // cgroup
  b.U64(4096);                                        // data_page_size
  b.U64(2 << 20);                                     // code_page_size
  b.U64(8).Bytes(Pattern(8, 0xf0));                   // aux
  return b;
}

SampleRecord AllSample() {
  const uint64_t user = static_cast<uint64_t>(PERF_CONTEXT_USER);
  SampleRecord s;
  s.identifier = 0x1111;
  s.ip = 0x400123;
  s.pid = 100;
  s.tid = 101;
  s.time = 5000000;
  s.addr = 0x7fff0000;
  s.id = 0x2222;
  s.stream_id = 0x3333;
  s.cpu = 3;
  s.res = 0;
  s.period = 4000;
  s.read = ReadValues{777, std::nullopt, {{10, 0x2222, std::nullopt}, {20, 0x2223, std::nullopt}}};
  s.callchain = std::vector<uint64_t>{user, 0x400100, 0x400200};
  s.raw = Pattern(12, 0x01);
  s.branch_stack = SampleRecord::BranchStack{5, {{0x10, 0x20, 0x1}, {0x30, 0x40, 0x2}}};
  s.regs_user = SampleRecord::Regs{PERF_SAMPLE_REGS_ABI_64, {0xa1, 0xa2, 0xa3}};
  s.stack_user = SampleRecord::StackUser{Pattern(16, 0x60), 8};
  s.weight = 0x55;
  s.data_src = 0x66;
  s.transaction = 0x77;
  s.regs_intr = SampleRecord::Regs{PERF_SAMPLE_REGS_ABI_64, {0xb1, 0xb2, 0xb3, 0xb4}};
  s.phys_addr = 0x88;
  s.cgroup = 0x99;
  s.data_page_size = 4096;
  s.code_page_size = 2 << 20;
  s.aux = Pattern(8, 0xf0);
  return s;
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

// --- non-sample records ---

// The sample_id_all trailer for sample_type TID|TIME|ID|STREAM_ID|CPU|IDENTIFIER.
constexpr uint64_t kIdBits = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                             PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;

Body Trailer() {
  Body b;
  b.U32(300).U32(301).U64(123456789).U64(0xd1).U64(0xd2).U32(2).U32(0).U64(0xd1);
  return b;
}

SampleId TrailerValues() {
  SampleId id;
  id.pid = 300;
  id.tid = 301;
  id.time = 123456789;
  id.id = 0xd1;
  id.stream_id = 0xd2;
  id.cpu = 2;
  id.res = 0;
  id.identifier = 0xd1;
  return id;
}

// Layout with IP|CALLCHAIN too: they must not count in the trailer.
SampleLayout TrailerLayout(bool on) { return Layout(kIdBits | PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, on); }

template <typename T>
const T* BodyAs(const Result<Record>& r) {
  return r.ok() ? std::get_if<T>(&r->body) : nullptr;
}

class RecordsTrailer : public ::testing::TestWithParam<bool> {
 protected:
  bool trailer_on() const { return GetParam(); }
  SampleLayout layout() const { return TrailerLayout(trailer_on()); }
  // `body`, plus the trailer when sample_id_all.
  Body WithTrailer(Body body) const {
    if (trailer_on()) body.Append(Trailer());
    return body;
  }
  void CheckTrailer(const Result<Record>& r) const {
    ASSERT_TRUE(r.ok()) << r.ToString();
    if (trailer_on()) {
      ASSERT_TRUE(r->sample_id.has_value());
      EXPECT_TRUE(*r->sample_id == TrailerValues());
      EXPECT_EQ(r->sample_id->pid, 300u);
      EXPECT_EQ(r->sample_id->time, 123456789u);
      EXPECT_EQ(r->sample_id->cpu, 2u);
      EXPECT_EQ(r->sample_id->identifier, 0xd1u);
    } else {
      EXPECT_FALSE(r->sample_id.has_value());
    }
  }
};

INSTANTIATE_TEST_SUITE_P(SampleIdAll, RecordsTrailer, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "On" : "Off"; });

TEST_P(RecordsTrailer, Mmap) {
  Body b;
  b.U32(10).U32(11).U64(0x7f0000000000).U64(0x21000).U64(0x1000).String("/usr/lib/libc.so.6", 24);
  Result<Record> r = ParseRecord(layout(), Rec(PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, WithTrailer(b)));
  CheckTrailer(r);
  const MmapRecord* m = BodyAs<MmapRecord>(r);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(r->header.type, static_cast<uint32_t>(PERF_RECORD_MMAP));
  EXPECT_EQ(r->header.misc, PERF_RECORD_MISC_USER);
  EXPECT_EQ(m->pid, 10u);
  EXPECT_EQ(m->tid, 11u);
  EXPECT_EQ(m->addr, 0x7f0000000000u);
  EXPECT_EQ(m->len, 0x21000u);
  EXPECT_EQ(m->pgoff, 0x1000u);
  EXPECT_EQ(m->filename, "/usr/lib/libc.so.6");
}

TEST_P(RecordsTrailer, Mmap2InodeForm) {
  Body b;
  b.U32(10).U32(11).U64(0x400000).U64(0x2000).U64(0);
  b.U32(8).U32(1).U64(123456).U64(7);             // maj, min, ino, ino_generation
  b.U32(kProtRX).U32(0x2);        // prot, flags (MAP_PRIVATE)
  b.String("/bin/true", 16);
  Result<Record> r = ParseRecord(layout(), Rec(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, WithTrailer(b)));
  CheckTrailer(r);
  const Mmap2Record* m = BodyAs<Mmap2Record>(r);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->pid, 10u);
  EXPECT_EQ(m->tid, 11u);
  EXPECT_EQ(m->addr, 0x400000u);
  EXPECT_EQ(m->len, 0x2000u);
  EXPECT_EQ(m->pgoff, 0u);
  EXPECT_EQ(m->maj, 8u);
  EXPECT_EQ(m->min, 1u);
  EXPECT_EQ(m->ino, 123456u);
  EXPECT_EQ(m->ino_generation, 7u);
  EXPECT_TRUE(m->build_id.empty());
  EXPECT_EQ(m->prot, kProtRX);
  EXPECT_EQ(m->flags, 0x2u);
  EXPECT_EQ(m->filename, "/bin/true");
}

TEST_P(RecordsTrailer, Mmap2BuildIdForm) {
  Body b;
  b.U32(10).U32(11).U64(0x400000).U64(0x2000).U64(0x1000);
  b.U8(16).U8(0).U16(0).Bytes(Pattern(16, 0xb0)).U32(0);  // build_id_size, reserved, build_id[20]
  b.U32(kProtRX).U32(0x2);
  b.String("/usr/bin/ls", 16);
  Result<Record> r = ParseRecord(
      layout(), Rec(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, WithTrailer(b)));
  CheckTrailer(r);
  const Mmap2Record* m = BodyAs<Mmap2Record>(r);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->pgoff, 0x1000u);
  EXPECT_EQ(m->build_id, Pattern(16, 0xb0));
  EXPECT_EQ(m->maj, 0u);
  EXPECT_EQ(m->ino, 0u);
  EXPECT_EQ(m->prot, kProtRX);
  EXPECT_EQ(m->flags, 0x2u);
  EXPECT_EQ(m->filename, "/usr/bin/ls");
}

TEST_P(RecordsTrailer, Comm) {
  Body b;
  b.U32(20).U32(21).String("perftest", 16);
  Result<Record> r = ParseRecord(layout(), Rec(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, WithTrailer(b)));
  CheckTrailer(r);
  const CommRecord* c = BodyAs<CommRecord>(r);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(r->header.misc, PERF_RECORD_MISC_COMM_EXEC);
  EXPECT_EQ(c->pid, 20u);
  EXPECT_EQ(c->tid, 21u);
  EXPECT_EQ(c->comm, "perftest");
}

TEST_P(RecordsTrailer, ForkAndExit) {
  for (uint32_t type : {uint32_t{PERF_RECORD_FORK}, uint32_t{PERF_RECORD_EXIT}}) {
    SCOPED_TRACE(RecordTypeName(type));
    Body b;
    b.U32(30).U32(31).U32(32).U32(33).U64(999);  // pid, ppid, tid, ptid, time
    Result<Record> r = ParseRecord(layout(), Rec(type, 0, WithTrailer(b)));
    CheckTrailer(r);
    const TaskRecord* t = BodyAs<TaskRecord>(r);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(r->header.type, type);
    EXPECT_EQ(t->pid, 30u);
    EXPECT_EQ(t->ppid, 31u);
    EXPECT_EQ(t->tid, 32u);
    EXPECT_EQ(t->ptid, 33u);
    EXPECT_EQ(t->time, 999u);
  }
}

TEST_P(RecordsTrailer, ThrottleAndUnthrottle) {
  for (uint32_t type : {uint32_t{PERF_RECORD_THROTTLE}, uint32_t{PERF_RECORD_UNTHROTTLE}}) {
    SCOPED_TRACE(RecordTypeName(type));
    Body b;
    b.U64(5555).U64(0x41).U64(0x42);  // time, id, stream_id
    Result<Record> r = ParseRecord(layout(), Rec(type, 0, WithTrailer(b)));
    CheckTrailer(r);
    const ThrottleRecord* t = BodyAs<ThrottleRecord>(r);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->time, 5555u);
    EXPECT_EQ(t->id, 0x41u);
    EXPECT_EQ(t->stream_id, 0x42u);
  }
}

TEST_P(RecordsTrailer, Lost) {
  Body b;
  b.U64(0x51).U64(17);  // id, lost
  Result<Record> r = ParseRecord(layout(), Rec(PERF_RECORD_LOST, 0, WithTrailer(b)));
  CheckTrailer(r);
  const LostRecord* l = BodyAs<LostRecord>(r);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->id, 0x51u);
  EXPECT_EQ(l->lost, 17u);
}

TEST_P(RecordsTrailer, TruncatedBodiesAreEbadmsg) {
  const struct {
    uint32_t type;
    uint16_t misc;
    size_t need;  // body bytes before the trailer
  } cases[] = {
      {PERF_RECORD_MMAP, 0, 32},  {PERF_RECORD_MMAP2, 0, 64},
      {PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID, 64},
      {PERF_RECORD_COMM, 0, 8},   {PERF_RECORD_FORK, 0, 24},      {PERF_RECORD_EXIT, 0, 24},
      {PERF_RECORD_THROTTLE, 0, 24}, {PERF_RECORD_UNTHROTTLE, 0, 24}, {PERF_RECORD_LOST, 0, 16},
  };
  for (const auto& c : cases) {
    for (size_t len = 0; len < c.need; len += 8) {
      Body b;
      b.Bytes(std::vector<std::byte>(len, std::byte{1}));
      Result<Record> r = ParseRecord(layout(), Rec(c.type, c.misc, WithTrailer(b)));
      EXPECT_THAT(r, FailsWithErrno(EBADMSG)) << RecordTypeName(c.type) << " misc=" << c.misc << " body " << len;
    }
    // `need` bytes are enough.
    Body b;
    b.Bytes(std::vector<std::byte>(c.need, std::byte{0}));
    EXPECT_OK(ParseRecord(layout(), Rec(c.type, c.misc, WithTrailer(b))));
  }
}

TEST(Records, TrailerLargerThanBodyIsEbadmsg) {
  // 48-byte trailer expected, 16-byte body.
  Result<Record> r = ParseRecord(TrailerLayout(true), Rec(PERF_RECORD_LOST, 0, Body().U64(1).U64(2)));
  EXPECT_THAT(r, FailsWithErrno(EBADMSG));
  EXPECT_THAT(r.call(), HasSubstr("PERF_RECORD_LOST"));
}

TEST(Records, TrailerOfPartialSampleType) {
  // TIME|CPU only: {time}, {cpu, res}.
  SampleLayout l = Layout(PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IP, true);
  Result<Record> r = ParseRecord(l, Rec(PERF_RECORD_LOST, 0, Body().U64(1).U64(2).U64(77).U32(5).U32(0)));
  ASSERT_OK(r);
  ASSERT_TRUE(r->sample_id.has_value());
  SampleId want;
  want.time = 77;
  want.cpu = 5;
  want.res = 0;
  EXPECT_TRUE(*r->sample_id == want);
  const LostRecord* lost = BodyAs<LostRecord>(r);
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->id, 1u);
  EXPECT_EQ(lost->lost, 2u);
}

TEST(Records, OtherTypesKeepTheirBody) {
  for (uint32_t type : {uint32_t{PERF_RECORD_READ}, uint32_t{PERF_RECORD_KSYMBOL}, uint32_t{PERF_RECORD_AUX},
                        uint32_t{PERF_RECORD_MAX}, uint32_t{1000}}) {
    SCOPED_TRACE(RecordTypeName(type));
    Body b;
    b.U64(1).U64(2).Append(Trailer());
    Result<Record> r = ParseRecord(TrailerLayout(true), Rec(type, 0x1234, b));
    ASSERT_OK(r);
    EXPECT_EQ(r->header.type, type);
    EXPECT_EQ(r->header.misc, 0x1234);
    const OtherRecord* o = BodyAs<OtherRecord>(r);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->body, b.bytes());
    EXPECT_FALSE(r->sample_id.has_value());
  }
}

TEST(Records, SwitchRecords) {
  // PERF_RECORD_SWITCH: no body, then the trailer.
  Body sw;
  sw.Append(Trailer());
  Result<Record> r = ParseRecord(TrailerLayout(true), Rec(PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, sw));
  ASSERT_OK(r);
  const SwitchRecord* s = BodyAs<SwitchRecord>(r);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->next_prev_pid.has_value());
  EXPECT_TRUE(r->sample_id.has_value());
  // PERF_RECORD_SWITCH_CPU_WIDE: {next_prev_pid, next_prev_tid}, then the trailer.
  Body wide;
  wide.U32(42).U32(43).Append(Trailer());
  r = ParseRecord(TrailerLayout(true), Rec(PERF_RECORD_SWITCH_CPU_WIDE, 0, wide));
  ASSERT_OK(r);
  s = BodyAs<SwitchRecord>(r);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->next_prev_pid, 42u);
  EXPECT_EQ(s->next_prev_tid, 43u);
  // Round trip through the encoder.
  std::vector<std::byte> out;
  EncodeRecord(TrailerLayout(true), *r, &out);
  EXPECT_EQ(out, Rec(PERF_RECORD_SWITCH_CPU_WIDE, 0, wide));
  // A body the layout does not account for is malformed.
  Body extra;
  extra.U64(7).Append(Trailer());
  EXPECT_THAT(ParseRecord(TrailerLayout(true), Rec(PERF_RECORD_SWITCH, 0, extra)), FailsWithErrno(EBADMSG));
}

TEST(Records, NamespacesRecord) {
  Body b;
  b.U32(10).U32(11).U64(2).U64(4).U64(0xf0000001).U64(4).U64(0xf0000002).Append(Trailer());
  Result<Record> r = ParseRecord(TrailerLayout(true), Rec(PERF_RECORD_NAMESPACES, 0, b));
  ASSERT_OK(r);
  const NamespacesRecord* n = BodyAs<NamespacesRecord>(r);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->pid, 10u);
  EXPECT_EQ(n->tid, 11u);
  ASSERT_EQ(n->namespaces.size(), 2u);
  EXPECT_EQ(n->namespaces[1].ino, 0xf0000002u);
  std::vector<std::byte> out;
  EncodeRecord(TrailerLayout(true), *r, &out);
  EXPECT_EQ(out, Rec(PERF_RECORD_NAMESPACES, 0, b));
  Body bad;
  bad.U32(10).U32(11).U64(1000).Append(Trailer());
  EXPECT_THAT(ParseRecord(TrailerLayout(true), Rec(PERF_RECORD_NAMESPACES, 0, bad)), FailsWithErrno(EBADMSG));
}

TEST(Records, SampleIdSize) {
  EXPECT_EQ(Layout(kIdBits, false).SampleIdSize(), 0u);
  EXPECT_EQ(Layout(kIdBits, true).SampleIdSize(), 48u);
  EXPECT_EQ(Layout(0, true).SampleIdSize(), 0u);
  for (uint64_t bit : {PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ID, PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
                       PERF_SAMPLE_IDENTIFIER}) {
    EXPECT_EQ(Layout(bit, true).SampleIdSize(), 8u) << DescribeSampleType(bit);
  }
  // Bits that are not in the trailer.
  const uint64_t others = (PERF_SAMPLE_MAX - 1) & ~kIdBits;
  EXPECT_EQ(Layout(others, true).SampleIdSize(), 0u);
  EXPECT_EQ(Layout(others | PERF_SAMPLE_TIME, true).SampleIdSize(), 8u);
}

TEST(Records, ParseSampleIdExact) {
  Result<SampleId> id = ParseSampleId(TrailerLayout(true), Trailer().bytes());
  ASSERT_OK(id);
  EXPECT_TRUE(*id == TrailerValues());
  const std::vector<std::byte> t = Trailer().bytes();
  EXPECT_THAT(ParseSampleId(TrailerLayout(true), std::span<const std::byte>(t).first(40)), FailsWithErrno(EBADMSG));
}

TEST(Records, FromAttrCopiesTheLayoutFields) {
  perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER;
  a.read_format = PERF_FORMAT_ID;
  a.branch_sample_type = PERF_SAMPLE_BRANCH_HW_INDEX;
  a.sample_regs_user = 0xf;
  a.sample_regs_intr = 0x3;
  a.sample_id_all = 1;
  const SampleLayout l = SampleLayout::FromAttr(a);
  EXPECT_EQ(l.sample_type, a.sample_type);
  EXPECT_EQ(l.read_format, a.read_format);
  EXPECT_EQ(l.branch_sample_type, a.branch_sample_type);
  EXPECT_EQ(l.sample_regs_user, 0xfu);
  EXPECT_EQ(l.sample_regs_intr, 0x3u);
  EXPECT_TRUE(l.sample_id_all);
  a.sample_id_all = 0;
  EXPECT_FALSE(SampleLayout::FromAttr(a).sample_id_all);
}

TEST(Records, IsKnownRecordType) {
  EXPECT_FALSE(IsKnownRecordType(0));
  EXPECT_TRUE(IsKnownRecordType(PERF_RECORD_MMAP));
  EXPECT_TRUE(IsKnownRecordType(PERF_RECORD_SAMPLE));
  EXPECT_TRUE(IsKnownRecordType(PERF_RECORD_MAX - 1));
  EXPECT_FALSE(IsKnownRecordType(PERF_RECORD_MAX));
  EXPECT_FALSE(IsKnownRecordType(0xffffffffu));
}

TEST(Records, IsCallchainContext) {
  for (auto ctx : {PERF_CONTEXT_HV, PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER, PERF_CONTEXT_GUEST,
                   PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_GUEST_USER}) {
    EXPECT_TRUE(IsCallchainContext(static_cast<uint64_t>(ctx))) << static_cast<int64_t>(ctx);
  }
  EXPECT_FALSE(IsCallchainContext(0));
  EXPECT_FALSE(IsCallchainContext(0x401000));
  EXPECT_FALSE(IsCallchainContext(0xffffffff81000000ull));  // a kernel text address
  EXPECT_FALSE(IsCallchainContext(static_cast<uint64_t>(PERF_CONTEXT_MAX) - 1));
}

// --- Encode -> Parse ---

TEST(RecordsRoundTrip, SampleAllFields) {
  std::vector<std::byte> bytes;
  EncodeSample(AllLayout(), PERF_RECORD_MISC_USER, AllSample(), &bytes);
  // The encoder's bytes are the hand-laid ones.
  EXPECT_EQ(bytes, Rec(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, AllBody()));
  Result<Record> r = ParseRecord(AllLayout(), bytes);
  ASSERT_OK(r);
  EXPECT_EQ(r->header.size, bytes.size());
  const SampleRecord* s = BodyAs<SampleRecord>(r);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(*s == AllSample());
}

TEST(RecordsRoundTrip, SampleEachBitAlone) {
  const SampleRecord all = AllSample();
  for (int bit = 0; bit < 25; ++bit) {
    const uint64_t st = uint64_t{1} << bit;
    SCOPED_TRACE(DescribeSampleType(st));
    SampleLayout l = AllLayout();
    l.sample_type = st;
    std::vector<std::byte> bytes;
    EncodeSample(l, 0, all, &bytes);
    EXPECT_EQ(bytes.size() % 8, 0u);
    Result<Record> r = ParseRecord(l, bytes);
    ASSERT_OK(r);
    // Re-encoding what was parsed gives the same bytes.
    std::vector<std::byte> again;
    EncodeRecord(l, *r, &again);
    EXPECT_EQ(again, bytes);
  }
}

TEST(RecordsRoundTrip, RawIsPaddedSoSizeFieldPlusDataEndsOn8) {
  SampleRecord s;
  s.raw = Pattern(5, 0x30);
  std::vector<std::byte> bytes;
  EncodeSample(Layout(PERF_SAMPLE_RAW), 0, s, &bytes);
  EXPECT_EQ(bytes.size(), 8u + 4 + 12);  // header, u32 size = 12, 5 bytes + 7 padding
  Result<Record> r = ParseRecord(Layout(PERF_SAMPLE_RAW), bytes);
  ASSERT_OK(r);
  std::vector<std::byte> want = Pattern(5, 0x30);
  want.resize(12, std::byte{0});
  EXPECT_EQ(std::get<SampleRecord>(r->body).raw, want);
}

class RecordsRoundTripTrailer : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(SampleIdAll, RecordsRoundTripTrailer, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "On" : "Off"; });

TEST_P(RecordsRoundTripTrailer, EveryNonSampleRecord) {
  const SampleLayout l = TrailerLayout(GetParam());
  Mmap2Record m2;
  m2.pid = 1; m2.tid = 2; m2.addr = 0x400000; m2.len = 0x1000; m2.pgoff = 0x2000;
  m2.maj = 3; m2.min = 4; m2.ino = 5; m2.ino_generation = 6; m2.prot = 5; m2.flags = 2;
  m2.filename = "12345678";  // exactly 8 characters: NUL needs another 8 bytes
  Mmap2Record m2b = m2;
  m2b.maj = m2b.min = 0;
  m2b.ino = m2b.ino_generation = 0;
  m2b.build_id = Pattern(20, 0xc0);
  const struct {
    uint32_t type;
    uint16_t misc;
    decltype(Record::body) body;
  } cases[] = {
      {PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, MmapRecord{1, 2, 0x1000, 0x2000, 0x3000, "/lib/x.so"}},
      {PERF_RECORD_MMAP, 0, MmapRecord{1, 2, 0x1000, 0x2000, 0x3000, ""}},
      {PERF_RECORD_MMAP2, 0, m2},
      {PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID, m2b},
      {PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, CommRecord{7, 7, "a-fifteen-chars"}},
      {PERF_RECORD_FORK, 0, TaskRecord{1, 2, 3, 4, 5}},
      {PERF_RECORD_EXIT, 0, TaskRecord{1, 2, 3, 4, 5}},
      {PERF_RECORD_THROTTLE, 0, ThrottleRecord{9, 8, 7}},
      {PERF_RECORD_UNTHROTTLE, 0, ThrottleRecord{9, 8, 7}},
      {PERF_RECORD_LOST, 0, LostRecord{3, 1000}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(RecordTypeName(c.type) + " misc=" + std::to_string(c.misc));
    Record rec;
    rec.header.type = c.type;
    rec.header.misc = c.misc;
    rec.body = c.body;
    if (GetParam()) rec.sample_id = TrailerValues();
    std::vector<std::byte> bytes;
    EncodeRecord(l, rec, &bytes);
    EXPECT_EQ(bytes.size() % 8, 0u);
    Result<Record> r = ParseRecord(l, bytes);
    ASSERT_OK(r);
    EXPECT_EQ(r->header.type, c.type);
    EXPECT_EQ(r->header.misc, c.misc);
    EXPECT_EQ(r->header.size, bytes.size());
    EXPECT_TRUE(r->body == rec.body);
    EXPECT_EQ(r->sample_id.has_value(), GetParam());
    if (GetParam()) {
      EXPECT_TRUE(*r->sample_id == TrailerValues());
    }
  }
}

TEST(RecordsRoundTrip, EncodedMmapMatchesHandLaidBytes) {
  Record rec;
  rec.header.type = PERF_RECORD_MMAP;
  rec.header.misc = PERF_RECORD_MISC_USER;
  rec.body = MmapRecord{10, 11, 0x7f0000000000, 0x21000, 0x1000, "/usr/lib/libc.so.6"};
  rec.sample_id = TrailerValues();
  std::vector<std::byte> bytes;
  EncodeRecord(TrailerLayout(true), rec, &bytes);
  Body b;
  b.U32(10).U32(11).U64(0x7f0000000000).U64(0x21000).U64(0x1000).String("/usr/lib/libc.so.6", 24).Append(Trailer());
  EXPECT_EQ(bytes, Rec(PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, b));
}

TEST(RecordsRoundTrip, EncodeAppends) {
  std::vector<std::byte> bytes(8, std::byte{0x5a});
  Record rec;
  rec.header.type = PERF_RECORD_LOST;
  rec.body = LostRecord{1, 2};
  EncodeRecord(Layout(0), rec, &bytes);
  ASSERT_EQ(bytes.size(), 8u + 24u);
  EXPECT_EQ(bytes[0], std::byte{0x5a});
  Result<Record> r = ParseRecord(Layout(0), std::span<const std::byte>(bytes).subspan(8));
  ASSERT_OK(r);
  EXPECT_TRUE(std::get<LostRecord>(r->body) == (LostRecord{1, 2}));
}

}  // namespace
}  // namespace perftest
