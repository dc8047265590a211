// Unit tests of harness/records.h beyond PERF_RECORD_SAMPLE: the other record
// types with and without the sample_id_all trailer, and encode -> parse round
// trips (the only place the encoders meet the parsers). Builders:
// records_test_util.h.
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
}  // namespace perftest::records_test
