#include "fidelity/minimize.h"

#include <cstring>
#include <functional>
#include <variant>

#include "fidelity/compare.h"
#include "fidelity/executor.h"

namespace perftest::fidelity {
namespace {

constexpr size_t kFlagsOffset = offsetof(perf_event_attr, read_format) + sizeof(uint64_t);

// A scalar field of perf_event_attr: where and how wide.
struct Field {
  size_t offset;
  unsigned bytes;
  bool mask;  // try clearing its bits one at a time too
};

constexpr Field kFields[] = {
    {offsetof(perf_event_attr, config), 8, false},
    {offsetof(perf_event_attr, sample_period), 8, false},
    {offsetof(perf_event_attr, sample_type), 8, true},
    {offsetof(perf_event_attr, read_format), 8, true},
    {kFlagsOffset, 8, true},
    {offsetof(perf_event_attr, wakeup_events), 4, false},
    {offsetof(perf_event_attr, bp_type), 4, false},
    {offsetof(perf_event_attr, config1), 8, false},
    {offsetof(perf_event_attr, config2), 8, false},
    {offsetof(perf_event_attr, branch_sample_type), 8, true},
    {offsetof(perf_event_attr, sample_regs_user), 8, true},
    {offsetof(perf_event_attr, sample_stack_user), 4, false},
    {offsetof(perf_event_attr, clockid), 4, false},
    {offsetof(perf_event_attr, sample_regs_intr), 8, true},
    {offsetof(perf_event_attr, aux_watermark), 4, false},
    {offsetof(perf_event_attr, sample_max_stack), 2, false},
    {offsetof(perf_event_attr, __reserved_2), 2, false},
    {offsetof(perf_event_attr, aux_sample_size), 4, false},
    {offsetof(perf_event_attr, __reserved_3), 4, true},
    {offsetof(perf_event_attr, sig_data), 8, false},
};

uint64_t Get(const perf_event_attr& a, const Field& f) {
  uint64_t v = 0;
  std::memcpy(&v, reinterpret_cast<const char*>(&a) + f.offset, f.bytes);
  return v;
}
void Set(perf_event_attr* a, const Field& f, uint64_t v) {
  std::memcpy(reinterpret_cast<char*>(a) + f.offset, &v, f.bytes);
}

using Change = std::function<void(OpenCall&)>;

// Every single-step simplification of an OpenCall, as changes to apply to the
// call as it then is.
std::vector<Change> Simplifications(const OpenCall& c) {
  std::vector<Change> out;
  out.push_back([](OpenCall& n) { n.group = {}; });
  out.push_back([](OpenCall& n) { n.flags = 0; });
  for (unsigned bit = 0; bit < 64; ++bit) {
    if (c.flags & (uint64_t{1} << bit)) out.push_back([bit](OpenCall& n) { n.flags &= ~(uint64_t{1} << bit); });
  }
  out.push_back([](OpenCall& n) { n.pid = PidArg::kSelf; });
  out.push_back([](OpenCall& n) { n.cpu = CpuArg::kAny; });
  out.push_back([](OpenCall& n) {
    n.tail.clear();
    n.attr.size = sizeof(perf_event_attr);
  });
  out.push_back([](OpenCall& n) { n.tail.assign(n.tail.size(), 0); });
  for (const Field& f : kFields) {
    const uint64_t v = Get(c.attr, f);
    if (v == 0) continue;
    out.push_back([f](OpenCall& n) { Set(&n.attr, f, 0); });
    if (!f.mask) continue;
    for (unsigned bit = 0; bit < f.bytes * 8; ++bit) {
      if (v & (uint64_t{1} << bit)) {
        out.push_back([f, bit](OpenCall& n) { Set(&n.attr, f, Get(n.attr, f) & ~(uint64_t{1} << bit)); });
      }
    }
  }
  return out;
}

bool SameCall(const OpenCall& a, const OpenCall& b) {
  return std::memcmp(&a.attr, &b.attr, sizeof a.attr) == 0 && a.tail == b.tail && a.pid == b.pid && a.cpu == b.cpu &&
         a.group == b.group && a.flags == b.flags;
}

}  // namespace

Minimized Minimize(const Sequence& seq, size_t call_index, const std::string& kind, Backend& kernel,
                   const std::function<std::unique_ptr<Backend>()>& make_mock, const GeneratorParams& params,
                   size_t max_tries) {
  Minimized m;
  if (call_index >= seq.calls.size()) return m;
  Sequence cur{seq.seed, std::vector<Call>(seq.calls.begin(), seq.calls.begin() + static_cast<long>(call_index) + 1)};

  auto same = [&](const Sequence& s) {
    ++m.tries;
    std::unique_ptr<Backend> mock = make_mock();
    const SequenceOutcome out = RunSequence(s, kernel, *mock, params);
    const CallRecord& last = out.calls.back();
    return last.status == CallStatus::kCompared && !Agree(last) && DisagreementKind(last) == kind;
  };
  m.reproduced = same(cur);
  if (!m.reproduced) {
    m.calls = cur.calls;
    return m;
  }
  // Earlier calls, last first (later calls more often depend on earlier ones).
  for (size_t j = cur.calls.size() - 1; j-- > 0 && m.tries < max_tries;) {
    Sequence next = cur;
    next.calls.erase(next.calls.begin() + static_cast<long>(j));
    if (same(next)) cur = std::move(next);
  }
  // The arguments of each open, until nothing more can go.
  for (bool changed = true; changed && m.tries < max_tries;) {
    changed = false;
    for (size_t i = 0; i < cur.calls.size() && m.tries < max_tries; ++i) {
      auto* open = std::get_if<OpenCall>(&cur.calls[i]);
      if (open == nullptr) continue;
      for (const Change& change : Simplifications(*open)) {
        if (m.tries >= max_tries) break;
        OpenCall simpler = std::get<OpenCall>(cur.calls[i]);
        change(simpler);
        if (SameCall(simpler, std::get<OpenCall>(cur.calls[i]))) continue;
        Sequence next = cur;
        next.calls[i] = std::move(simpler);
        if (same(next)) {
          cur = std::move(next);
          changed = true;
        }
      }
    }
  }
  m.calls = std::move(cur.calls);
  return m;
}

}  // namespace perftest::fidelity
