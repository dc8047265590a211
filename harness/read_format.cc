#include "harness/read_format.h"

#include <fmt/format.h>
#include <linux/perf_event.h>

#include <cstring>

namespace perftest {
namespace {

void Put(uint64_t v, std::vector<std::byte>* out) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

}  // namespace

Result<ReadValues> DecodeReadFormat(uint64_t rf, std::span<const std::byte> bytes) {
  const size_t nwords = bytes.size() / 8;
  size_t i = 0;
  auto word = [&](uint64_t* v) {
    if (i >= nwords) return false;
    std::memcpy(v, bytes.data() + 8 * i++, 8);
    return true;
  };
  auto short_read = [&](std::string_view what) {
    return Result<ReadValues>::Failure(
        EMSGSIZE, fmt::format("decode_read_format(read_format={:#x}, {} bytes): short at {}", rf,
                              bytes.size(), what));
  };

  ReadValues out;
  uint64_t nr = 1;
  if ((rf & PERF_FORMAT_GROUP) && !word(&nr)) return short_read("nr");
  // time_enabled, time_running: once after nr with PERF_FORMAT_GROUP, else after the value.
  // Returns the field that ran short, or nullptr.
  auto times = [&]() -> const char* {
    uint64_t v;
    if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) {
      if (!word(&v)) return "time_enabled";
      out.time_enabled = v;
    }
    if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) {
      if (!word(&v)) return "time_running";
      out.time_running = v;
    }
    return nullptr;
  };
  if (rf & PERF_FORMAT_GROUP) {
    if (const char* field = times()) return short_read(field);
  }
  if (nr > nwords) return short_read("cntr[]");  // bounds the allocation below
  out.counters.reserve(nr);
  for (uint64_t c = 0; c < nr; ++c) {
    CounterValue cv;
    uint64_t v;
    if (!word(&cv.value)) return short_read("value");
    if (!(rf & PERF_FORMAT_GROUP)) {
      if (const char* field = times()) return short_read(field);
    }
    if (rf & PERF_FORMAT_ID) {
      if (!word(&v)) return short_read("id");
      cv.id = v;
    }
    if (rf & PERF_FORMAT_LOST) {
      if (!word(&v)) return short_read("lost");
      cv.lost = v;
    }
    out.counters.push_back(cv);
  }
  return Result<ReadValues>::Ok(std::move(out));
}

void EncodeReadFormat(uint64_t rf, const ReadValues& values, std::vector<std::byte>* out) {
  const bool group = rf & PERF_FORMAT_GROUP;
  const size_t nr = group ? values.counters.size() : 1;
  auto counter = [&](size_t i) { return i < values.counters.size() ? values.counters[i] : CounterValue{}; };
  if (group) Put(nr, out);
  auto times = [&] {
    if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED) Put(values.time_enabled.value_or(0), out);
    if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING) Put(values.time_running.value_or(0), out);
  };
  if (group) times();
  for (size_t i = 0; i < nr; ++i) {
    const CounterValue c = counter(i);
    Put(c.value, out);
    if (!group) times();
    if (rf & PERF_FORMAT_ID) Put(c.id.value_or(0), out);
    if (rf & PERF_FORMAT_LOST) Put(c.lost.value_or(0), out);
  }
}

}  // namespace perftest
