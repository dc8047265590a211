#include "fidelity/report.h"

#include "fidelity/known_disagreements.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace perftest::fidelity {
namespace {

using ::testing::HasSubstr;

Outcome Ok(std::string value = "") { return {true, true, 0, std::move(value), "call = ok"}; }
Outcome Err(int err, std::string call = "call") { return {true, false, err, "", std::move(call)}; }

CallRecord Record(size_t index, std::string op, Outcome k, Outcome m, CallStatus status = CallStatus::kCompared) {
  CallRecord r;
  r.index = index;
  r.op = std::move(op);
  r.pmu = "software";
  r.description = "call " + std::to_string(index);
  r.kernel = std::move(k);
  r.mock = std::move(m);
  r.status = status;
  return r;
}

// Sequence 0 agrees throughout; sequence 1 has one open disagreement, a dependent read and a skipped call.
FidelityReport TwoSequences(size_t max_examples = 3) {
  FidelityReport report(max_examples);
  Sequence s0{0x10, {}};
  SequenceOutcome o0{0x10, {Record(0, "perf_event_open", Ok(), Ok()), Record(1, "read", Ok("8 bytes"), Ok("8 bytes"))}};
  report.Add(0, s0, o0);
  Sequence s1{0x11, {}};
  SequenceOutcome o1{0x11,
                     {Record(0, "perf_event_open", Ok(), Ok()),
                      Record(1, "perf_event_open", Err(EINVAL), Err(ENOENT, "perf_event_open(...) [mock: no PMU]")),
                      Record(2, "read", Outcome{}, Ok("8 bytes"), CallStatus::kDependent),
                      Record(3, "munmap", Outcome{}, Outcome{}, CallStatus::kNoTarget)}};
  report.Add(1, s1, o1);
  return report;
}

TEST(Report, CountsAgreementOverComparedCallsOnly) {
  const FidelityReport r = TwoSequences();
  EXPECT_EQ(r.calls_compared(), 4u);
  EXPECT_EQ(r.calls_agreeing(), 3u);
  EXPECT_EQ(r.calls_dependent(), 1u);
  EXPECT_EQ(r.calls_no_target(), 1u);
  EXPECT_DOUBLE_EQ(r.Agreement(), 0.75);
  EXPECT_EQ(r.sequences(), 2u);
  EXPECT_EQ(r.sequences_agreeing(), 1u);
  EXPECT_EQ(r.by_op().at("perf_event_open").compared, 3u);
  EXPECT_EQ(r.by_op().at("perf_event_open").agreeing, 2u);
  EXPECT_EQ(r.by_pmu().at("software").compared, 4u);
}

TEST(Report, NothingComparedIsFullAgreement) { EXPECT_DOUBLE_EQ(FidelityReport().Agreement(), 1.0); }

TEST(Report, GroupsDisagreementsByKindWithAReplayableExample) {
  const FidelityReport r = TwoSequences();
  const std::vector<DisagreementClass> classes = r.Classes();
  ASSERT_EQ(classes.size(), 1u);
  const DisagreementClass& c = classes[0];
  EXPECT_EQ(c.kind, "perf_event_open [software]: kernel EINVAL, mock ENOENT");
  EXPECT_EQ(c.count, 1u);
  ASSERT_EQ(c.examples.size(), 1u);
  EXPECT_EQ(c.examples[0].sequence, 1u);
  EXPECT_EQ(c.examples[0].sequence_seed, 0x11u);
  EXPECT_EQ(c.examples[0].call_index, 1u);
  EXPECT_EQ(c.examples[0].before, std::vector<std::string>{"call 0"});
  EXPECT_EQ(c.examples[0].mock_reason, "no PMU");
}

TEST(Report, KeepsAtMostMaxExamplesButCountsAll) {
  FidelityReport r(/*max_examples=*/2);
  for (uint64_t i = 0; i < 5; ++i) {
    r.Add(i, Sequence{i, {}}, SequenceOutcome{i, {Record(0, "close", Err(EBADF), Ok())}});
  }
  r.Add(9, Sequence{9, {}}, SequenceOutcome{9, {Record(0, "poll", Err(EBADF), Ok())}});
  const auto classes = r.Classes();
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].op, "close");  // most frequent first
  EXPECT_EQ(classes[0].count, 5u);
  EXPECT_EQ(classes[0].examples.size(), 2u);
  EXPECT_EQ(classes[1].count, 1u);
}

TEST(Report, TextShowsFigureClassesAndReplaySeed) {
  FidelityReport r = TwoSequences();
  r.FindClass("perf_event_open [software]: kernel EINVAL, mock ENOENT")->examples[0].minimal = {"perf_event_open(min)"};
  const std::string text = r.RenderText(RunInfo{1, 2, "software-only", "Linux test"});
  EXPECT_THAT(text, HasSubstr("agreement: 3 / 4 calls agree (75.000%)"));
  EXPECT_THAT(text, HasSubstr("sequences fully agreeing: 1 / 2"));
  EXPECT_THAT(text, HasSubstr("[1] perf_event_open [software]: kernel EINVAL, mock ENOENT"));
  EXPECT_THAT(text, HasSubstr("--replay=0x11"));
  EXPECT_THAT(text, HasSubstr("mock:   ENOENT — no PMU"));
  EXPECT_THAT(text, HasSubstr("perf_event_open(min)"));
  EXPECT_THAT(text, HasSubstr("profile software-only"));
}

TEST(Report, JsonHasTheStableKeys) {
  const nlohmann::json j = TwoSequences().ToJson(RunInfo{1, 2, "software-only", "Linux test"});
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["run"]["seed"], 1);
  EXPECT_EQ(j["run"]["profile"], "software-only");
  EXPECT_EQ(j["calls"]["compared"], 4);
  EXPECT_EQ(j["calls"]["disagreeing"], 1);
  EXPECT_EQ(j["calls"]["dependent"], 1);
  EXPECT_DOUBLE_EQ(j["agreement"].get<double>(), 0.75);
  EXPECT_EQ(j["sequences"]["fully_agreeing"], 1);
  EXPECT_EQ(j["by_op"]["read"]["compared"], 1);
  ASSERT_EQ(j["disagreements"].size(), 1u);
  const auto& d = j["disagreements"][0];
  EXPECT_EQ(d["kernel"], "EINVAL");
  EXPECT_EQ(d["mock"], "ENOENT");
  EXPECT_EQ(d["count"], 1);
  EXPECT_EQ(d["examples"][0]["sequence_seed"], "0x11");
  EXPECT_EQ(d["examples"][0]["mock_reason"], "no PMU");
}

// Calls on a PMU the profile does not list are tallied apart from the figure.
TEST(Report, UnmodelledPmusAreTalliedApart) {
  FidelityReport r;
  r.SetUnmodelledPmus({"msr"});
  CallRecord on_msr = Record(0, "perf_event_open", Err(EINVAL), Err(ENOENT));
  on_msr.pmu = "msr";
  r.Add(0, Sequence{1, {}}, SequenceOutcome{1, {on_msr, Record(1, "perf_event_open", Ok(), Ok())}});
  EXPECT_EQ(r.calls_compared(), 1u);
  EXPECT_EQ(r.calls_agreeing(), 1u);
  EXPECT_EQ(r.unmodelled().compared, 1u);
  EXPECT_EQ(r.unmodelled().agreeing, 0u);
  EXPECT_DOUBLE_EQ(r.Agreement(), 1.0);
  ASSERT_EQ(r.Classes().size(), 1u);
  EXPECT_TRUE(r.Classes()[0].unmodelled_pmu);
  const std::string text = r.RenderText(RunInfo{1, 1, "p", "k"});
  EXPECT_THAT(text, HasSubstr("1 / 1 calls agree (100.000%) on what the profile models"));
  EXPECT_THAT(text, HasSubstr("0 / 1 calls agree (0.000%) on PMUs the host has and the profile does not list: msr"));
  EXPECT_THAT(text, HasSubstr("— unmodelled PMU"));
  const nlohmann::json j = r.ToJson(RunInfo{1, 1, "p", "k"});
  EXPECT_EQ(j["unmodelled"]["compared"], 1);
  EXPECT_EQ(j["unmodelled"]["pmus"][0], "msr");
  EXPECT_EQ(j["disagreements"][0]["unmodelled_pmu"], true);
}

TEST(Report, MockReasonIsTheTrailingBracket) {
  EXPECT_EQ(MockReason("read(fd=3, len=8) [mock: read_format needs 24 bytes]"), "read_format needs 24 bytes");
  EXPECT_EQ(MockReason("read(fd=3, len=8)"), "");
  EXPECT_EQ(MockReason(""), "");
}

}  // namespace
}  // namespace perftest::fidelity

namespace perftest::fidelity {
namespace {

// Known disagreements (known_disagreements.h) are marked; the rest are counted
// as unexplained, in the text and in the JSON.
TEST(Report, KnownDisagreementsAreMarkedAndTheRestCounted) {
  FidelityReport r;
  r.SetUnmodelledPmus({"msr"});
  CallRecord on_msr = Record(0, "perf_event_open", Err(EINVAL), Err(ENOENT));
  on_msr.pmu = "msr";
  CallRecord tracepoint = Record(1, "perf_event_open", Ok("3"), Err(EINVAL));
  tracepoint.pmu = "tracepoint";
  tracepoint.mock.call = "perf_event_open(type=2, config=0x1bb) [mock: no tracepoint has id 443 (perf_trace_init())]";
  CallRecord bug = Record(2, "read", Ok("8 bytes"), Err(EINVAL));
  bug.pmu = "software";
  SequenceOutcome out;
  out.calls = {on_msr, tracepoint, bug};
  r.Add(0, Sequence{}, out);
  EXPECT_EQ(r.calls_unexplained(), 1u);
  std::map<std::string, std::string> by_op;
  for (const DisagreementClass& c : r.Classes()) by_op[c.pmu] = c.explained_by;
  EXPECT_EQ(by_op["msr"], "fidelity.unmodelled_pmu");
  EXPECT_EQ(by_op["tracepoint"], "fidelity.unmodelled_tracepoint");
  EXPECT_EQ(by_op["software"], "");
  const std::string text = r.RenderText(RunInfo{1, 1, "sw-only", "Linux test"});
  EXPECT_THAT(text, ::testing::HasSubstr("unexplained disagreements: 1 calls"));
  EXPECT_THAT(text, ::testing::HasSubstr("— UNEXPLAINED"));
  EXPECT_THAT(text, ::testing::HasSubstr("known [fidelity.unmodelled_tracepoint]"));
  const nlohmann::json j = r.ToJson(RunInfo{1, 1, "sw-only", "Linux test"});
  EXPECT_EQ(j["unexplained"], 1);
  EXPECT_EQ(j["known_disagreements"].size(), KnownDisagreements().size());
}

// An entry may match the class's kind (both results ok, fields differ): the
// arm64 hrtimer overlay is explained, another user-page difference is not.
TEST(Report, KnownDisagreementMatchesTheKind) {
  FidelityReport r;
  CallRecord overlay = Record(0, "mmap", Ok("version=0, capabilities=0x3e, pmc_width=32"),
                              Ok("version=0, capabilities=0x3a, pmc_width=0"));
  overlay.pmu = "software";
  CallRecord other = Record(1, "mmap", Ok("version=0, capabilities=0x3a, pmc_width=0"),
                            Ok("version=0, capabilities=0x3a, pmc_width=32"));
  other.pmu = "software";
  SequenceOutcome out;
  out.calls = {overlay, other};
  r.Add(0, Sequence{}, out);
  EXPECT_EQ(r.calls_unexplained(), 1u);
  std::map<std::string, std::string> by_kind;
  for (const DisagreementClass& c : r.Classes()) by_kind[c.kind] = c.explained_by;
  ASSERT_EQ(by_kind.size(), 2u);
  for (const auto& [kind, id] : by_kind) {
    EXPECT_EQ(id, kind.find("capabilities=0x3e") != std::string::npos ? "fidelity.arm64_hrtimer_user_read" : "")
        << kind;
  }
}

}  // namespace
}  // namespace perftest::fidelity
