#include "suites/common/records_util.h"

#include <fmt/format.h>

namespace perftest {

Result<std::vector<ParsedRecord>> DrainRecords(RingBuffer& rb, const SampleLayout& layout, bool consume) {
  std::vector<ParsedRecord> out;
  rb.Begin();
  while (std::optional<RawRecord> raw = rb.Next()) {
    Result<Record> r = ParseRecord(layout, raw->bytes);
    if (!r.ok()) {
      return Result<std::vector<ParsedRecord>>::Failure(
          r.error(), fmt::format("{} (record at position {}{})", r.call(), raw->position,
                                 raw->wrapped ? ", wrapped" : ""));
    }
    out.push_back({std::move(*r), raw->position, raw->wrapped});
  }
  if (rb.error()) return Result<std::vector<ParsedRecord>>::Failure(EBADMSG, *rb.error());
  if (consume) rb.Consume();
  return Result<std::vector<ParsedRecord>>::Ok(std::move(out));
}

std::vector<const SampleRecord*> SamplesOf(const std::vector<ParsedRecord>& records) {
  std::vector<const SampleRecord*> out;
  for (const ParsedRecord& r : records) {
    if (const auto* s = std::get_if<SampleRecord>(&r.record.body)) out.push_back(s);
  }
  return out;
}

std::vector<const ParsedRecord*> OfType(const std::vector<ParsedRecord>& records, uint32_t type) {
  std::vector<const ParsedRecord*> out;
  for (const ParsedRecord& r : records) {
    if (r.record.header.type == type) out.push_back(&r);
  }
  return out;
}

}  // namespace perftest
