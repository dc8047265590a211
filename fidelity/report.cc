#include "fidelity/report.h"

#include <fmt/format.h>

#include <algorithm>

#include "fidelity/compare.h"
#include "fidelity/known_disagreements.h"

namespace perftest::fidelity {
namespace {

constexpr size_t kMaxBefore = 8;

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  return fmt::format("{:.3f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

nlohmann::json TallyJson(const std::map<std::string, Tally>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, t] : m) j[k] = {{"compared", t.compared}, {"agreeing", t.agreeing}};
  return j;
}

void RenderTally(const std::string& title, const std::map<std::string, Tally>& m, std::string* out) {
  size_t width = title.size();
  for (const auto& [k, t] : m) width = std::max(width, k.size());
  *out += fmt::format("  {:<{}}  {:>9}  {:>9}  {:>9}\n", title, width, "compared", "agreeing", "");
  for (const auto& [k, t] : m) {
    *out += fmt::format("  {:<{}}  {:>9}  {:>9}  {:>9}\n", k, width, t.compared, t.agreeing, Percent(t.agreeing, t.compared));
  }
}

}  // namespace

std::string MockReason(const std::string& call) {
  const std::string marker = " [mock: ";
  const size_t at = call.rfind(marker);
  if (at == std::string::npos || call.empty() || call.back() != ']') return "";
  return call.substr(at + marker.size(), call.size() - at - marker.size() - 1);
}

void FidelityReport::Add(uint64_t index, const Sequence& seq, const SequenceOutcome& out) {
  ++sequences_;
  bool all_agree = true;
  for (const CallRecord& rec : out.calls) {
    if (rec.status == CallStatus::kDependent) {
      ++dependent_;
      all_agree = false;
      continue;
    }
    if (rec.status == CallStatus::kNoTarget) {
      ++no_target_;
      continue;
    }
    const bool agree = Agree(rec);
    const bool unmodelled = unmodelled_pmus_.count(rec.pmu) != 0;
    for (Tally* t : {unmodelled ? &unmodelled_ : &total_, &by_op_[rec.op], &by_pmu_[rec.pmu]}) {
      ++t->compared;
      t->agreeing += agree ? 1 : 0;
    }
    if (agree) continue;
    all_agree = false;
    const std::string kind = DisagreementKind(rec);
    const KnownDisagreement* known =
        ExplainDisagreement(rec.op, rec.pmu, unmodelled, MockReason(rec.mock.call), kind);
    if (known == nullptr) ++unexplained_;
    DisagreementClass& c = classes_[kind];
    if (c.count++ == 0) {
      if (known != nullptr) c.explained_by = std::string(known->id);
      c.kind = kind;
      c.op = rec.op;
      c.pmu = rec.pmu;
      c.kernel = OutcomeText(rec.kernel);
      c.mock = OutcomeText(rec.mock);
      c.unmodelled_pmu = unmodelled;
    }
    if (c.examples.size() >= max_examples_) continue;
    Example e;
    e.sequence = index;
    e.sequence_seed = seq.seed;
    e.call_index = rec.index;
    e.call = rec.description;
    const size_t first = rec.index > kMaxBefore ? rec.index - kMaxBefore : 0;
    for (size_t i = first; i < rec.index && i < out.calls.size(); ++i) e.before.push_back(out.calls[i].description);
    e.kernel = OutcomeText(rec.kernel);
    e.mock = OutcomeText(rec.mock);
    e.kernel_call = rec.kernel.call;
    e.mock_call = rec.mock.call;
    e.mock_reason = MockReason(rec.mock.call);
    c.examples.push_back(std::move(e));
  }
  sequences_agreeing_ += all_agree ? 1 : 0;
}

double FidelityReport::Agreement() const {
  if (total_.compared == 0) return 1.0;
  return static_cast<double>(total_.agreeing) / static_cast<double>(total_.compared);
}

std::vector<DisagreementClass> FidelityReport::Classes() const {
  std::vector<DisagreementClass> v;
  for (const auto& [k, c] : classes_) v.push_back(c);
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  return v;
}

DisagreementClass* FidelityReport::FindClass(const std::string& kind) {
  auto it = classes_.find(kind);
  return it == classes_.end() ? nullptr : &it->second;
}

std::string FidelityReport::RenderText(const RunInfo& info) const {
  std::string out;
  out += "perftest fidelity: the same call sequences on the kernel and on the mock\n";
  out += fmt::format("  kernel: {} (this host: the kernel side reflects this machine)\n", info.kernel);
  out += fmt::format("  mock:   profile {}\n", info.profile);
  out += fmt::format("  seed {}, {} sequences (replay one with --replay=SEED)\n\n", info.seed, info.count);
  out += fmt::format("agreement: {} / {} calls agree ({}){}\n", total_.agreeing, total_.compared,
                     Percent(total_.agreeing, total_.compared),
                     unmodelled_pmus_.empty() ? "" : " on what the profile models");
  if (!unmodelled_pmus_.empty()) {
    out += fmt::format("  apart: {} / {} calls agree ({}) on PMUs the host has and the profile does not list: {}\n",
                       unmodelled_.agreeing, unmodelled_.compared, Percent(unmodelled_.agreeing, unmodelled_.compared),
                       fmt::join(unmodelled_pmus_, ", "));
  }
  out += fmt::format("sequences fully agreeing: {} / {} ({})\n", sequences_agreeing_, sequences_,
                     Percent(sequences_agreeing_, sequences_));
  out += fmt::format("not compared: {} calls on an event only the mock has (after a disagreement), "
                     "{} calls with no event open\n\n",
                     dependent_, no_target_);
  RenderTally("by call", by_op_, &out);
  out += "\n";
  RenderTally("by PMU", by_pmu_, &out);
  const std::vector<DisagreementClass> classes = Classes();
  out += fmt::format("\ndisagreements: {} calls in {} classes{}\n",
                     total_.compared - total_.agreeing + unmodelled_.compared - unmodelled_.agreeing, classes.size(),
                     unmodelled_pmus_.empty() ? "" : " (\"unmodelled PMU\": on a PMU the profile does not list)");
  out += fmt::format("unexplained disagreements: {} calls (the others are known, fidelity/known_disagreements.cc)\n",
                     unexplained_);
  for (const KnownDisagreement& k : KnownDisagreements()) out += fmt::format("  known [{}]: {}\n", k.id, k.reason);
  size_t n = 0;
  for (const DisagreementClass& c : classes) {
    out += fmt::format("\n{:>3}. [{}] {}{}{}\n", ++n, c.count, c.kind, c.unmodelled_pmu ? " — unmodelled PMU" : "",
                       c.explained_by.empty() ? " — UNEXPLAINED" : " — known [" + c.explained_by + "]");
    for (const Example& e : c.examples) {
      out += fmt::format("     sequence {} call {} (--replay={:#x}):\n", e.sequence, e.call_index, e.sequence_seed);
      if (!e.before.empty()) out += fmt::format("       after {} earlier call(s)\n", e.call_index);
      out += fmt::format("       {}\n", e.call);
      out += fmt::format("       kernel: {}\n", e.kernel);
      out += fmt::format("       mock:   {}{}\n", e.mock, e.mock_reason.empty() ? "" : " — " + e.mock_reason);
      if (!e.minimal.empty()) {
        out += "       minimal:\n";
        for (const std::string& m : e.minimal) out += fmt::format("         {}\n", m);
      }
    }
  }
  return out;
}

nlohmann::json FidelityReport::ToJson(const RunInfo& info) const {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["tool"] = "perftest_fidelity";
  j["run"] = {{"seed", info.seed},
              {"count", info.count},
              {"profile", info.profile},
              {"kernel", info.kernel},
              {"note",
               "The mock side is a function of the seed, the profile and the host's PMU list; the kernel side "
               "reflects this host (kernel version, PMUs, sysctls, privileges)."}};
  j["calls"] = {{"compared", total_.compared},
                {"agreeing", total_.agreeing},
                {"disagreeing", total_.compared - total_.agreeing},
                {"dependent", dependent_},
                {"no_target", no_target_}};
  j["agreement"] = Agreement();
  j["unmodelled"] = {{"pmus", unmodelled_pmus_}, {"compared", unmodelled_.compared}, {"agreeing", unmodelled_.agreeing}};
  j["sequences"] = {{"total", sequences_}, {"fully_agreeing", sequences_agreeing_}};
  j["unexplained"] = unexplained_;
  nlohmann::json known = nlohmann::json::array();
  for (const KnownDisagreement& k : KnownDisagreements()) known.push_back({{"id", k.id}, {"reason", k.reason}});
  j["known_disagreements"] = known;
  j["by_op"] = TallyJson(by_op_);
  j["by_pmu"] = TallyJson(by_pmu_);
  nlohmann::json list = nlohmann::json::array();
  for (const DisagreementClass& c : Classes()) {
    nlohmann::json ex = nlohmann::json::array();
    for (const Example& e : c.examples) {
      ex.push_back({{"sequence", e.sequence},
                    {"sequence_seed", fmt::format("{:#x}", e.sequence_seed)},
                    {"call_index", e.call_index},
                    {"call", e.call},
                    {"before", e.before},
                    {"kernel", e.kernel},
                    {"mock", e.mock},
                    {"kernel_call", e.kernel_call},
                    {"mock_call", e.mock_call},
                    {"mock_reason", e.mock_reason},
                    {"minimal", e.minimal}});
    }
    list.push_back({{"kind", c.kind},
                    {"op", c.op},
                    {"pmu", c.pmu},
                    {"kernel", c.kernel},
                    {"mock", c.mock},
                    {"unmodelled_pmu", c.unmodelled_pmu},
                    {"explained_by", c.explained_by},
                    {"count", c.count},
                    {"examples", ex}});
  }
  j["disagreements"] = list;
  return j;
}

}  // namespace perftest::fidelity
