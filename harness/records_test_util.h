// Record builders shared by the harness/records.h unit tests
// (records_test.cc: PERF_RECORD_SAMPLE and headers; records_sideband_test.cc:
// the other record types, sample_id_all trailers and encode/parse round trips).
// Bodies are laid out by hand from <linux/perf_event.h> "enum perf_event_type"
// and the order of kernel/events/core.c perf_output_sample().
#pragma once

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "harness/records.h"

namespace perftest::records_test {

inline constexpr uint32_t kProtRX = PROT_READ | PROT_EXEC;

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
inline std::vector<std::byte> Rec(uint32_t type, uint16_t misc, const Body& body) {
  Body all;
  all.U32(type).U16(misc).U16(static_cast<uint16_t>(8 + body.size())).Append(body);
  return all.bytes();
}

inline std::vector<std::byte> Pattern(size_t n, uint8_t first) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(first + i);
  return v;
}

inline SampleLayout Layout(uint64_t sample_type, bool sample_id_all = false) {
  SampleLayout l;
  l.sample_type = sample_type;
  l.sample_id_all = sample_id_all;
  return l;
}

inline Result<SampleRecord> ParseSampleRecord(const SampleLayout& layout, const Body& body) {
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

// --- every field together, in perf_output_sample() order ---

inline constexpr uint64_t kAllSampleBits =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
    PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN |
    PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT |
    PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR |
    PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_AUX;
// WEIGHT_STRUCT is the one bit left out: the kernel refuses it together with WEIGHT.
static_assert((kAllSampleBits | PERF_SAMPLE_WEIGHT_STRUCT) == PERF_SAMPLE_MAX - 1,
              "a sample_type bit this test does not know");

inline SampleLayout AllLayout() {
  SampleLayout l = Layout(kAllSampleBits);
  l.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED;
  l.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX;
  l.sample_regs_user = 0x7;       // 3 registers
  l.sample_regs_intr = 0x30003;   // 4 registers
  return l;
}

inline Body AllBody() {
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

inline SampleRecord AllSample() {
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

// --- non-sample records ---

// The sample_id_all trailer for sample_type TID|TIME|ID|STREAM_ID|CPU|IDENTIFIER.
inline constexpr uint64_t kIdBits = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                             PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;

inline Body Trailer() {
  Body b;
  b.U32(300).U32(301).U64(123456789).U64(0xd1).U64(0xd2).U32(2).U32(0).U64(0xd1);
  return b;
}

inline SampleId TrailerValues() {
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
inline SampleLayout TrailerLayout(bool on) { return Layout(kIdBits | PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, on); }

template <typename T>
inline const T* BodyAs(const Result<Record>& r) {
  return r.ok() ? std::get_if<T>(&r->body) : nullptr;
}

}  // namespace perftest::records_test
