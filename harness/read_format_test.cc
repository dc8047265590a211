// Unit tests of harness/read_format.h. Expected layouts are computed here from
// the UAPI comment on "struct read_format" (<linux/perf_event.h>), independently
// of read_format.cc:
//
//   { u64 value; [time_enabled]; [time_running]; [id]; [lost]; }      && !PERF_FORMAT_GROUP
//   { u64 nr; [time_enabled]; [time_running];
//     { u64 value; [id]; [lost]; } cntr[nr]; }                          && PERF_FORMAT_GROUP
#include "harness/read_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <cstring>
#include <string>
#include <vector>

#include "harness/attr.h"
#include "harness/syscall_matchers.h"

namespace perftest {
namespace {

constexpr uint64_t kAllBits = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID |
                              PERF_FORMAT_GROUP | PERF_FORMAT_LOST;
static_assert(kAllBits == PERF_FORMAT_MAX - 1, "a read_format bit this test does not know");

// One u64 word of the layout: its name ("value", "id", ...) and counter index (-1 for header words).
struct Field {
  std::string name;
  int counter = -1;
};

// The UAPI layout, word by word.
std::vector<Field> Layout(uint64_t rf, int nr) {
  std::vector<Field> f;
  if (!(rf & PERF_FORMAT_GROUP)) {
    f.push_back({"value", 0});
    if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) f.push_back({"time_enabled"});
    if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) f.push_back({"time_running"});
    if (rf & PERF_FORMAT_ID) f.push_back({"id", 0});
    if (rf & PERF_FORMAT_LOST) f.push_back({"lost", 0});
    return f;
  }
  f.push_back({"nr"});
  if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) f.push_back({"time_enabled"});
  if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) f.push_back({"time_running"});
  for (int i = 0; i < nr; ++i) {
    f.push_back({"value", i});
    if (rf & PERF_FORMAT_ID) f.push_back({"id", i});
    if (rf & PERF_FORMAT_LOST) f.push_back({"lost", i});
  }
  return f;
}

// A distinct value for each field, so a decoder that swaps two is caught.
uint64_t ValueOf(const Field& f, int nr) {
  if (f.name == "nr") return static_cast<uint64_t>(nr);
  if (f.name == "time_enabled") return 0x1000000001ull;
  if (f.name == "time_running") return 0x2000000002ull;
  const uint64_t base = f.name == "value" ? 0xa000 : f.name == "id" ? 0xb000 : 0xc000;
  return base + static_cast<uint64_t>(f.counter);
}

std::vector<std::byte> Words(const std::vector<uint64_t>& words) {
  std::vector<std::byte> out(words.size() * 8);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

std::vector<std::byte> Build(uint64_t rf, int nr) {
  std::vector<uint64_t> words;
  for (const Field& f : Layout(rf, nr)) words.push_back(ValueOf(f, nr));
  return Words(words);
}

std::string Name(uint64_t rf) { return DescribeReadFormat(rf); }

TEST(ReadFormat, SizeOfEveryCombination) {
  for (uint64_t rf = 0; rf <= kAllBits; ++rf) {
    for (int nr : {0, 1, 2, 3, 8, 100}) {
      const size_t want = 8 * Layout(rf, nr).size();
      const size_t n = static_cast<size_t>(nr);
      if (rf & PERF_FORMAT_GROUP) {
        EXPECT_EQ(ReadFormatSize(rf, n), want) << Name(rf) << " nr=" << nr;
      } else {
        // Without GROUP the record holds one counter whatever nr says.
        EXPECT_EQ(ReadFormatSize(rf, n), 8 * Layout(rf, 1).size()) << Name(rf) << " nr=" << nr;
      }
    }
    // The default is one counter.
    EXPECT_EQ(ReadFormatSize(rf), 8 * Layout(rf, 1).size()) << Name(rf);
  }
}

TEST(ReadFormat, SizeExamples) {
  EXPECT_EQ(ReadFormatSize(0), 8u);
  EXPECT_EQ(ReadFormatSize(PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING), 24u);
  EXPECT_EQ(ReadFormatSize(PERF_FORMAT_GROUP | PERF_FORMAT_ID, 3), 8u + 3 * 16);
  EXPECT_EQ(ReadFormatSize(kAllBits, 2), 24u + 2 * 24);
  EXPECT_EQ(ReadFormatSize(PERF_FORMAT_GROUP, 0), 8u);
}

TEST(ReadFormat, SizeIgnoresUnknownBits) {
  EXPECT_EQ(ReadFormatSize(PERF_FORMAT_ID | PERF_FORMAT_MAX | (1ull << 63)), ReadFormatSize(PERF_FORMAT_ID));
}

TEST(ReadFormat, DecodeValueOnly) {
  const std::vector<std::byte> b = Words({12345});
  Result<ReadValues> v = DecodeReadFormat(0, b);
  ASSERT_OK(v);
  ASSERT_EQ(v->counters.size(), 1u);
  EXPECT_EQ(v->counters[0].value, 12345u);
  EXPECT_FALSE(v->counters[0].id.has_value());
  EXPECT_FALSE(v->counters[0].lost.has_value());
  EXPECT_FALSE(v->time_enabled.has_value());
  EXPECT_FALSE(v->time_running.has_value());
}

TEST(ReadFormat, DecodeNonGroupAllFields) {
  // value, time_enabled, time_running, id, lost — in that order.
  const std::vector<std::byte> b = Words({100, 2000, 1500, 77, 3});
  Result<ReadValues> v = DecodeReadFormat(
      PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID | PERF_FORMAT_LOST, b);
  ASSERT_OK(v);
  ASSERT_EQ(v->counters.size(), 1u);
  EXPECT_EQ(v->counters[0].value, 100u);
  EXPECT_EQ(v->time_enabled, 2000u);
  EXPECT_EQ(v->time_running, 1500u);
  EXPECT_EQ(v->counters[0].id, 77u);
  EXPECT_EQ(v->counters[0].lost, 3u);
}

TEST(ReadFormat, DecodeGroupAllFields) {
  // nr, time_enabled, time_running, {value, id, lost} x 3.
  const std::vector<std::byte> b = Words({3, 900, 800, 10, 101, 0, 20, 102, 1, 30, 103, 2});
  Result<ReadValues> v = DecodeReadFormat(kAllBits, b);
  ASSERT_OK(v);
  EXPECT_EQ(v->time_enabled, 900u);
  EXPECT_EQ(v->time_running, 800u);
  ASSERT_EQ(v->counters.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(v->counters[i].value, 10 * (i + 1)) << i;
    EXPECT_EQ(v->counters[i].id, 101 + i) << i;
    EXPECT_EQ(v->counters[i].lost, i) << i;
  }
}

TEST(ReadFormat, DecodeGroupWithoutTimesOrIds) {
  const std::vector<std::byte> b = Words({2, 5, 6});
  Result<ReadValues> v = DecodeReadFormat(PERF_FORMAT_GROUP, b);
  ASSERT_OK(v);
  EXPECT_FALSE(v->time_enabled.has_value());
  ASSERT_EQ(v->counters.size(), 2u);
  EXPECT_EQ(v->counters[0], (CounterValue{5, std::nullopt, std::nullopt}));
  EXPECT_EQ(v->counters[1], (CounterValue{6, std::nullopt, std::nullopt}));
}

TEST(ReadFormat, DecodeGroupOfZero) {
  Result<ReadValues> v = DecodeReadFormat(PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED, Words({0, 55}));
  ASSERT_OK(v);
  EXPECT_EQ(v->time_enabled, 55u);
  EXPECT_TRUE(v->counters.empty());
}

// Every combination and several group sizes, hand-laid words with distinct values.
TEST(ReadFormat, DecodeEveryCombinationFieldByField) {
  for (uint64_t rf = 0; rf <= kAllBits; ++rf) {
    const bool group = rf & PERF_FORMAT_GROUP;
    for (int nr : group ? std::vector<int>{0, 1, 2, 5} : std::vector<int>{1}) {
      SCOPED_TRACE(Name(rf) + " nr=" + std::to_string(nr));
      Result<ReadValues> v = DecodeReadFormat(rf, Build(rf, nr));
      ASSERT_OK(v);
      ASSERT_EQ(v->counters.size(), static_cast<size_t>(nr));
      EXPECT_EQ(v->time_enabled.has_value(), (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) != 0);
      EXPECT_EQ(v->time_running.has_value(), (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) != 0);
      for (const Field& f : Layout(rf, nr)) {
        const uint64_t want = ValueOf(f, nr);
        if (f.name == "time_enabled") {
          EXPECT_EQ(v->time_enabled, want);
        }
        if (f.name == "time_running") {
          EXPECT_EQ(v->time_running, want);
        }
        if (f.name == "value") {
          EXPECT_EQ(v->counters[f.counter].value, want) << f.counter;
        }
        if (f.name == "id") {
          EXPECT_EQ(v->counters[f.counter].id, want) << f.counter;
        }
        if (f.name == "lost") {
          EXPECT_EQ(v->counters[f.counter].lost, want) << f.counter;
        }
      }
      for (const CounterValue& c : v->counters) {
        EXPECT_EQ(c.id.has_value(), (rf & PERF_FORMAT_ID) != 0);
        EXPECT_EQ(c.lost.has_value(), (rf & PERF_FORMAT_LOST) != 0);
      }
    }
  }
}

TEST(ReadFormat, DecodeIgnoresTrailingBytes) {
  std::vector<std::byte> b = Words({7, 8, 9});
  b.resize(b.size() + 5, std::byte{0xee});
  Result<ReadValues> v = DecodeReadFormat(PERF_FORMAT_ID, b);
  ASSERT_OK(v);
  EXPECT_EQ(v->counters.at(0).value, 7u);
  EXPECT_EQ(v->counters.at(0).id, 8u);
}

TEST(ReadFormat, DecodeShortInputIsEmsgsize) {
  for (uint64_t rf = 0; rf <= kAllBits; ++rf) {
    const int nr = (rf & PERF_FORMAT_GROUP) ? 3 : 1;
    const std::vector<std::byte> full = Build(rf, nr);
    for (size_t len = 0; len < full.size(); ++len) {
      Result<ReadValues> v = DecodeReadFormat(rf, std::span<const std::byte>(full).first(len));
      EXPECT_THAT(v, FailsWithErrno(EMSGSIZE)) << Name(rf) << " len=" << len << " of " << full.size();
    }
    EXPECT_OK(DecodeReadFormat(rf, full));
  }
}

TEST(ReadFormat, DecodeShortInputNamesTheField) {
  Result<ReadValues> v = DecodeReadFormat(PERF_FORMAT_ID, Words({1}));
  ASSERT_THAT(v, FailsWithErrno(EMSGSIZE));
  EXPECT_THAT(v.call(), testing::HasSubstr("id"));
  EXPECT_THAT(v.ToString(), testing::HasSubstr("-EMSGSIZE"));
}

TEST(ReadFormat, AbsurdGroupNrDoesNotAllocate) {
  // nr claims 2^60 (and 2^40) counters in a 4-word buffer. A decoder that
  // reserves nr entries up front throws std::length_error / std::bad_alloc here.
  for (uint64_t nr : {uint64_t{1} << 60, uint64_t{1} << 40, ~uint64_t{0}, uint64_t{4}}) {
    const std::vector<std::byte> b = Words({nr, 1, 2, 3});
    Result<ReadValues> v = DecodeReadFormat(PERF_FORMAT_GROUP, b);
    EXPECT_THAT(v, FailsWithErrno(EMSGSIZE)) << "nr=" << nr;
    Result<ReadValues> w = DecodeReadFormat(PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST, b);
    EXPECT_THAT(w, FailsWithErrno(EMSGSIZE)) << "nr=" << nr;
  }
}

ReadValues Sample(uint64_t rf, size_t nr) {
  ReadValues v;
  if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) v.time_enabled = 123456789;
  if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) v.time_running = 12345678;
  for (size_t i = 0; i < nr; ++i) {
    CounterValue c;
    c.value = 1000 + i * 17;
    if (rf & PERF_FORMAT_ID) c.id = 40 + i;
    if (rf & PERF_FORMAT_LOST) c.lost = i * 3;
    v.counters.push_back(c);
  }
  return v;
}

TEST(ReadFormat, EncodeDecodeRoundTripAllCombinations) {
  for (uint64_t rf = 0; rf <= kAllBits; ++rf) {
    const bool group = rf & PERF_FORMAT_GROUP;
    for (size_t nr : group ? std::vector<size_t>{0, 1, 4} : std::vector<size_t>{1}) {
      SCOPED_TRACE(Name(rf) + " nr=" + std::to_string(nr));
      const ReadValues want = Sample(rf, nr);
      std::vector<std::byte> bytes;
      EncodeReadFormat(rf, want, &bytes);
      EXPECT_EQ(bytes.size(), ReadFormatSize(rf, nr));
      // The encoder writes the UAPI layout: same bytes as the hand-laid words.
      if (nr >= 1) {
        std::vector<uint64_t> words(bytes.size() / 8);
        std::memcpy(words.data(), bytes.data(), bytes.size());
        const std::vector<Field> layout = Layout(rf, static_cast<int>(nr));
        ASSERT_EQ(words.size(), layout.size());
        for (size_t i = 0; i < layout.size(); ++i) {
          const Field& f = layout[i];
          uint64_t expect = 0;
          if (f.name == "nr") expect = nr;
          if (f.name == "time_enabled") expect = *want.time_enabled;
          if (f.name == "time_running") expect = *want.time_running;
          if (f.name == "value") expect = want.counters[f.counter].value;
          if (f.name == "id") expect = *want.counters[f.counter].id;
          if (f.name == "lost") expect = *want.counters[f.counter].lost;
          EXPECT_EQ(words[i], expect) << "word " << i << " (" << f.name << ")";
        }
      }
      Result<ReadValues> got = DecodeReadFormat(rf, bytes);
      ASSERT_OK(got);
      EXPECT_EQ(*got, want);
    }
  }
}

TEST(ReadFormat, EncodeAppendsAndZeroFillsMissingFields) {
  std::vector<std::byte> out = Words({0xdead});
  ReadValues v;  // no times, no counters
  EncodeReadFormat(PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID, v, &out);
  // Appended after the existing word: value=0, time_enabled=0, id=0.
  ASSERT_EQ(out.size(), 8u + 24u);
  EXPECT_EQ(out, Words({0xdead, 0, 0, 0}));
}

TEST(ReadFormat, EncodeNonGroupLayoutOrder) {
  ReadValues v;
  v.time_enabled = 2;
  v.time_running = 3;
  v.counters.push_back({1, 4, 5});
  std::vector<std::byte> out;
  EncodeReadFormat(kAllBits & ~uint64_t{PERF_FORMAT_GROUP}, v, &out);
  EXPECT_EQ(out, Words({1, 2, 3, 4, 5}));
}

TEST(ReadFormat, EncodeGroupLayoutOrder) {
  ReadValues v;
  v.time_enabled = 2;
  v.time_running = 3;
  v.counters.push_back({10, 11, 12});
  v.counters.push_back({20, 21, 22});
  std::vector<std::byte> out;
  EncodeReadFormat(kAllBits, v, &out);
  EXPECT_EQ(out, Words({2, 2, 3, 10, 11, 12, 20, 21, 22}));
}

}  // namespace
}  // namespace perftest
