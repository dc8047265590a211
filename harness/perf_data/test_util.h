// A small perf.data model for the reader and writer tests: two events
// (cpu-clock and a dummy, PERF_SAMPLE_IDENTIFIER so records name their
// event), a COMM, two SAMPLEs, Intel PT's AUXTRACE_INFO, an AUXTRACE with 16
// bytes of data, TIME_CONV, FINISHED_ROUND, one record of an unknown type,
// and HOSTNAME, NRCPUS and one unknown feature.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "harness/perf_data/features.h"
#include "harness/perf_data/reader.h"
#include "harness/perf_data/user_records.h"
#include "harness/records.h"

namespace perftest::perf_data::testing {

inline DataRecord MakeRecord(std::vector<std::byte> bytes, std::vector<std::byte> payload = {}) {
  DataRecord r;
  std::memcpy(&r.header, bytes.data(), sizeof r.header);
  r.bytes = std::move(bytes);
  r.payload = std::move(payload);
  return r;
}

inline perf_event_attr ModelAttr(uint64_t config) {
  perf_event_attr a{};
  a.type = PERF_TYPE_SOFTWARE;
  a.size = sizeof a;
  a.config = config;
  a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  a.sample_id_all = 1;
  return a;
}

inline PerfData ModelPerfData() {
  PerfData d;
  d.header.attr_size = sizeof(perf_event_attr) + sizeof(FileSection);
  for (auto [config, id] : {std::pair{PERF_COUNT_SW_CPU_CLOCK, 8}, std::pair{PERF_COUNT_SW_DUMMY, 10}}) {
    Attr a;
    a.attr = ModelAttr(config);
    a.bytes.resize(sizeof a.attr);
    std::memcpy(a.bytes.data(), &a.attr, sizeof a.attr);
    a.ids = {static_cast<uint64_t>(id), static_cast<uint64_t>(id + 1)};
    d.attrs.push_back(std::move(a));
  }
  const SampleLayout layout = SampleLayout::FromAttr(d.attrs[0].attr);
  std::vector<std::byte> b;
  Record comm;
  comm.header.type = PERF_RECORD_COMM;
  comm.body = CommRecord{42, 42, "workload"};
  comm.sample_id = SampleId{.pid = 42, .tid = 42, .time = 1000, .identifier = 10};
  EncodeRecord(layout, comm, &b);
  d.records.push_back(MakeRecord(std::exchange(b, {})));
  for (uint64_t id : {8, 10}) {
    SampleRecord s{.identifier = id, .ip = 0x401000 + id, .pid = 42, .tid = 42, .time = 2000 + id};
    EncodeSample(layout, PERF_RECORD_MISC_USER, s, &b);
    d.records.push_back(MakeRecord(std::exchange(b, {})));
  }
  IntelPtInfo pt;
  pt.pmu_type = 10;
  pt.tsc_ctc_ratio_n = 200;
  pt.tsc_ctc_ratio_d = 2;
  EncodeAuxtraceInfo(EncodeIntelPtInfo(pt), &b);
  d.records.push_back(MakeRecord(std::exchange(b, {})));
  EncodeTimeConv(TimeConvRecord{31, 555, 1000}, &b);
  d.records.push_back(MakeRecord(std::exchange(b, {})));
  EncodeAuxtrace(AuxtraceRecord{16, 0, 7, 0, 42, 1}, &b);
  std::vector<std::byte> aux(16);
  for (size_t i = 0; i < aux.size(); ++i) aux[i] = static_cast<std::byte>(0x80 + i);
  d.records.push_back(MakeRecord(std::exchange(b, {}), aux));
  EncodeFinishedRound(&b);
  d.records.push_back(MakeRecord(std::exchange(b, {})));
  std::vector<std::byte> unknown(16, std::byte{0});
  perf_event_header uh{200, 0, 16};
  std::memcpy(unknown.data(), &uh, sizeof uh);
  d.records.push_back(MakeRecord(unknown));
  d.features[HEADER_HOSTNAME] = EncodeStringFeature("model-host");
  d.features[HEADER_NRCPUS] = EncodeNrCpus({2, 2});
  d.features[100] = std::vector<std::byte>(8, std::byte{0x5a});
  for (const auto& [bit, bytes] : d.features) d.header.features.set(bit);
  return d;
}

}  // namespace perftest::perf_data::testing
