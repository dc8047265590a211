#include "harness/event_string.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "harness/attr.h"

namespace perftest {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

// "config:24-27" -> word 0, ranges [(24,27)]. False when malformed.
struct Range {
  unsigned lo, hi;
};
bool ParseFormat(std::string_view format, int* word, std::vector<Range>* ranges) {
  const size_t colon = format.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view w = format.substr(0, colon);
  if (w == "config") *word = 0;
  else if (w == "config1") *word = 1;
  else if (w == "config2") *word = 2;
  else return false;
  std::string_view rest = format.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const size_t dash = part.find('-');
    uint64_t lo = 0, hi = 0;
    if (!ParseU64(part.substr(0, dash), &lo)) return false;
    hi = lo;
    if (dash != std::string_view::npos && !ParseU64(part.substr(dash + 1), &hi)) return false;
    if (hi < lo || hi > 63) return false;
    ranges->push_back({static_cast<unsigned>(lo), static_cast<unsigned>(hi)});
  }
  return !ranges->empty();
}

__u64* Word(perf_event_attr* a, int word) {
  return word == 0 ? &a->config : word == 1 ? &a->config1 : &a->config2;
}

// intel_pt_pick_bit(): the valid value nearest `target` from below (else the lowest).
int PickBit(uint64_t bits, int target) {
  int pick = -1;
  for (int pos = 0; bits; bits >>= 1, ++pos) {
    if (bits & 1) {
      if (pos <= target || pick < 0) pick = pos;
      if (pos >= target) break;
    }
  }
  return pick;
}

// A caps/ or format/ file's value as perf scans it ("%x" or "%d"); `found` says whether it exists.
uint64_t Cap(const Pmu& pmu, const std::string& name, int base, bool* found = nullptr) {
  auto it = pmu.caps.find(name);
  if (found != nullptr) *found = it != pmu.caps.end();
  if (it == pmu.caps.end()) return 0;
  return std::strtoull(it->second.c_str(), nullptr, base);
}

template <typename T>
Result<T> Invalid(int err, std::string_view spec, const std::string& message) {
  return Result<T>::Failure(err, fmt::format("parse_event(\"{}\"): {}", spec, message));
}

}  // namespace

uint64_t FormatBits(std::string_view format, int* word) {
  int w = 0;
  std::vector<Range> ranges;
  if (!ParseFormat(format, &w, &ranges)) return 0;
  if (word != nullptr) *word = w;
  uint64_t bits = 0;
  for (const Range& r : ranges) {
    for (unsigned b = r.lo; b <= r.hi; ++b) bits |= uint64_t{1} << b;
  }
  return bits;
}

Result<void> ApplyFormat(std::string_view name, std::string_view format, uint64_t value, perf_event_attr* attr) {
  const std::string call = fmt::format("apply format {} ({}) = {:#x}", name, format, value);
  int word = 0;
  std::vector<Range> ranges;
  if (!ParseFormat(format, &word, &ranges)) return Result<void>::Failure(EINVAL, call + ": malformed format");
  unsigned width = 0;
  for (const Range& r : ranges) width += r.hi - r.lo + 1;
  const uint64_t max = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  if (value > max) {
    return Result<void>::Failure(EINVAL,
                                 fmt::format("{}: value too big for format ({}), maximum is {}", call, name, max));
  }
  __u64* w = Word(attr, word);
  unsigned vbit = 0;
  for (const Range& r : ranges) {
    for (unsigned b = r.lo; b <= r.hi; ++b, ++vbit) {
      const uint64_t mask = uint64_t{1} << b;
      *w = (*w & ~mask) | (((value >> vbit) & 1) ? mask : 0);
    }
  }
  return Result<void>::Ok({}, call);
}

std::string ValidValuesString(uint64_t valid) {
  std::string s;
  unsigned last = 0;
  int state = 1;
  for (unsigned val = 0; val <= 64; ++val, valid >>= 1) {
    if (val < 64 && (valid & 1)) {
      last = val;
      switch (state) {
        case 0:
          s += ",";
          [[fallthrough]];
        case 1:
          s += std::to_string(val);
          state = 2;
          break;
        case 2:
          state = 3;
          break;
        case 3:
          state = 4;
          break;
        default:
          break;
      }
    } else {
      if (state == 3) {
        s += "," + std::to_string(last);
        state = 0;
      } else if (state == 4) {
        s += "-" + std::to_string(last);
        state = 0;
      }
      if (state != 1) state = 0;
    }
    if (val == 63) valid = 0;  // no bits past 63
  }
  return s;
}

uint64_t IntelPtDefaultConfig(const Pmu& pt) {
  perf_event_attr a{};
  auto apply = [&](const char* name, uint64_t v) {
    auto it = pt.format.find(name);
    if (it != pt.format.end()) (void)ApplyFormat(name, it->second, v, &a);
  };
  apply("tsc", 1);
  bool found = false;
  const uint64_t mtc = Cap(pt, "mtc", 10, &found);
  uint64_t mtc_periods = 0;
  if (mtc != 0 || !found) {  // perf assumes mtc when caps/mtc cannot be read
    mtc_periods = Cap(pt, "mtc_periods", 16);
    if (mtc_periods != 0) {
      apply("mtc", 1);
      apply("mtc_period", static_cast<uint64_t>(PickBit(mtc_periods, 3)));
    }
  }
  const uint64_t psb_cyc = Cap(pt, "psb_cyc", 10, &found);
  if ((psb_cyc != 0 || !found) && mtc_periods != 0) {
    const uint64_t psb_periods = Cap(pt, "psb_periods", 16);
    if (psb_periods != 0) apply("psb_period", static_cast<uint64_t>(PickBit(psb_periods, 3)));
  }
  if (pt.format.count("pt") && pt.format.count("branch")) {
    apply("pt", 1);
    apply("branch", 1);
  }
  return a.config;
}

Result<void> ValidateIntelPtConfig(const Pmu& pt, perf_event_attr* attr) {
  // "pt=0 doesn't make sense, forcing pt=1".
  if (pt.format.count("pt")) {
    const uint64_t bits = FormatBits(pt.format.at("pt"));
    attr->config |= bits;
  }
  struct Term {
    const char* caps;
    const char* name;
    const char* supported;
  };
  for (const Term& t : {Term{"cycle_thresholds", "cyc_thresh", "psb_cyc"}, Term{"mtc_periods", "mtc_period", "mtc"},
                        Term{"psb_periods", "psb_period", "psb_cyc"}}) {
    uint64_t valid = Cap(pt, t.caps, 16);
    bool found = false;
    const uint64_t ok = Cap(pt, t.supported, 10, &found);
    if (found && ok == 0) valid = 0;
    valid |= 1;
    auto f = pt.format.find(t.name);
    uint64_t bits = f == pt.format.end() ? 0 : FormatBits(f->second);
    uint64_t value = attr->config & bits;
    unsigned shift = 0;
    for (; bits != 0 && !(bits & 1); ++shift) bits >>= 1;
    value >>= shift;
    if (value <= 63 && (valid & (uint64_t{1} << value))) continue;
    return Result<void>::Failure(EINVAL, fmt::format("Invalid {} for intel_pt. Valid values are: {}", t.name,
                                                     ValidValuesString(valid)));
  }
  return Result<void>::Ok({}, "intel_pt_validate_config");
}

Result<perf_event_attr> ParseEventString(std::string_view spec, const std::vector<Pmu>& pmus) {
  using R = Result<perf_event_attr>;
  const size_t s1 = spec.find('/');
  const size_t s2 = s1 == std::string_view::npos ? s1 : spec.find('/', s1 + 1);
  if (s1 == std::string_view::npos || s2 == std::string_view::npos) {
    return Invalid<perf_event_attr>(EINVAL, spec, "expected PMU/terms/modifiers");
  }
  const std::string pmu_name(Trim(spec.substr(0, s1)));
  const Pmu* pmu = FindPmu(pmus, pmu_name);
  if (pmu == nullptr) {
    return Invalid<perf_event_attr>(ENOENT, spec, fmt::format("Cannot find PMU `{}'. Missing kernel support?", pmu_name));
  }
  const bool intel_pt = pmu_name == "intel_pt";
  perf_event_attr a = MakeAttr(pmu->type, intel_pt ? IntelPtDefaultConfig(*pmu) : 0);

  std::string_view terms = spec.substr(s1 + 1, s2 - s1 - 1);
  while (!terms.empty()) {
    const size_t comma = terms.find(',');
    const std::string_view term = Trim(terms.substr(0, comma));
    terms = comma == std::string_view::npos ? std::string_view{} : terms.substr(comma + 1);
    if (term.empty()) return Invalid<perf_event_attr>(EINVAL, spec, "empty term");
    const size_t eq = term.find('=');
    const std::string name(Trim(term.substr(0, eq)));
    uint64_t value = 1;
    if (eq != std::string_view::npos && !ParseU64(Trim(term.substr(eq + 1)), &value)) {
      return Invalid<perf_event_attr>(EINVAL, spec, fmt::format("bad value for term '{}'", name));
    }
    if (name == "config") {
      a.config = value;
    } else if (name == "config1") {
      a.config1 = value;
    } else if (name == "config2") {
      a.config2 = value;
    } else if (auto f = pmu->format.find(name); f != pmu->format.end()) {
      Result<void> r = ApplyFormat(name, f->second, value, &a);
      if (!r.ok()) return Invalid<perf_event_attr>(EINVAL, spec, r.call().substr(r.call().find(": ") + 2));
    } else {
      return Invalid<perf_event_attr>(EINVAL, spec, fmt::format("unknown term '{}' for pmu '{}'", name, pmu_name));
    }
  }

  bool excluding = false;
  for (char c : Trim(spec.substr(s2 + 1))) {
    if (c == 'u' || c == 'k' || c == 'h') {
      if (!excluding) a.exclude_user = a.exclude_kernel = a.exclude_hv = 1;
      excluding = true;
      if (c == 'u') a.exclude_user = 0;
      if (c == 'k') a.exclude_kernel = 0;
      if (c == 'h') a.exclude_hv = 0;
    } else if (c == 'p') {
      ++a.precise_ip;
    } else {
      return Invalid<perf_event_attr>(EINVAL, spec, fmt::format("bad modifier '{}'", c));
    }
  }
  if (intel_pt) {
    Result<void> v = ValidateIntelPtConfig(*pmu, &a);
    if (!v.ok()) return Invalid<perf_event_attr>(EINVAL, spec, v.call());
  }
  return R::Ok(a, fmt::format("parse_event(\"{}\") = {}", spec, DescribeAttr(a)));
}

}  // namespace perftest
