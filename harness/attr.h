// perf_event_attr helpers: construction and the one-line description used in
// Result call strings and failure messages.
//
//   perf_event_attr a = SoftwareAttr(PERF_COUNT_SW_PAGE_FAULTS);
//   a.sample_period = 1; a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
//   DescribeAttr(a);  // "type=1, config=0x2, sample_period=1, sample_type=IP|TID, ..."
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <string>

namespace perftest {

// A zeroed attr with size = sizeof(perf_event_attr) (the UAPI's size), the given
// type and config, disabled = 1 (enable explicitly) and nothing else set.
perf_event_attr MakeAttr(uint32_t type, uint64_t config);
inline perf_event_attr SoftwareAttr(uint64_t config) { return MakeAttr(PERF_TYPE_SOFTWARE, config); }

// Non-default fields only, e.g. "type=1, config=0x2, size=128, sample_period=1,
// sample_type=IP|TID, disabled". Stable: tests compare against it.
std::string DescribeAttr(const perf_event_attr& attr);

// "IP|TID|TIME" for a sample_type mask; unknown bits as hex.
std::string DescribeSampleType(uint64_t sample_type);
// "TOTAL_TIME_ENABLED|ID" for a read_format mask; unknown bits as hex.
std::string DescribeReadFormat(uint64_t read_format);
// "PERF_RECORD_SAMPLE" for 9; "PERF_RECORD_<n>" when unknown.
std::string RecordTypeName(uint32_t type);

}  // namespace perftest
