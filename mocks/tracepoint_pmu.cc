#include "mocks/tracepoint_pmu.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace perftest::mock {
namespace {

// The tracepoints the model fires, with their formats as Linux 6.18 x86_64
// shows them in tracefs events/<sys>/<name>/format.
const std::vector<TracepointModel>& Models() {
  static const std::vector<TracepointModel> models = {
      // struct syscall_trace_enter { struct trace_entry ent; int nr; unsigned long args[]; }: 16 bytes.
      {"syscalls:sys_enter_getpid", 16, true, {{"__syscall_nr", 8, 4}}},
      // struct syscall_trace_exit { struct trace_entry ent; int nr; long ret; }: 24 bytes.
      {"syscalls:sys_exit_getpid", 24, true, {{"__syscall_nr", 8, 4}, {"ret", 16, 8}}},
      {"sched:sched_switch",
       64,
       false,
       {{"prev_comm", 8, 16, true},
        {"prev_pid", 24, 4},
        {"prev_prio", 28, 4},
        {"prev_state", 32, 8},
        {"next_comm", 40, 16, true},
        {"next_pid", 56, 4},
        {"next_prio", 60, 4}}},
      // __data_loc strings follow the fixed part: 24 bytes + both comms.
      {"sched:sched_process_fork",
       24,
       false,
       {{"parent_comm", 8, 4, true, true},
        {"parent_pid", 12, 4},
        {"child_comm", 16, 4, true, true},
        {"child_pid", 20, 4}}},
      // update_curr() -> trace_sched_stat_runtime(curr, delta_exec): the
      // perf count is the runtime in ns (__perf_count(runtime)).
      {"sched:sched_stat_runtime", 24, false, {{"comm", 8, 4, true, true}, {"pid", 12, 4}, {"runtime", 16, 8}}},
  };
  return models;
}

// The common_* header every entry starts with (struct trace_entry).
const std::vector<TraceField>& CommonFields() {
  static const std::vector<TraceField> f = {
      {"common_type", 0, 2}, {"common_flags", 2, 1}, {"common_preempt_count", 3, 1}, {"common_pid", 4, 4}};
  return f;
}

void Put(std::vector<std::byte>* out, uint32_t offset, uint64_t v, uint32_t size) {
  std::memcpy(out->data() + offset, &v, size);  // little-endian hosts
}

}  // namespace

const TracepointModel* FindTracepointModel(std::string_view name) {
  for (const TracepointModel& m : Models()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::vector<std::string> ModelledTracepoints() {
  std::vector<std::string> out;
  for (const TracepointModel& m : Models()) out.push_back(m.name);
  return out;
}

std::vector<std::byte> TraceRawData(const TracepointModel& tp, uint16_t id, const TraceValues& values) {
  // __data_loc strings: appended after the fixed part, NUL-terminated; the
  // locator is (length << 16) | offset.
  std::vector<std::byte> entry(tp.entry_size, std::byte{0});
  Put(&entry, 0, id, 2);
  Put(&entry, 3, 1, 1);  // common_preempt_count: 1 inside the perf buffer (preemption off)
  auto num = [&](const std::string& name) {
    auto it = values.numbers.find(name);
    return it == values.numbers.end() ? int64_t{0} : it->second;
  };
  Put(&entry, 4, static_cast<uint64_t>(num("common_pid")), 4);
  for (const TraceField& f : tp.fields) {
    if (!f.is_string) {
      Put(&entry, f.offset, static_cast<uint64_t>(num(f.name)), f.size);
      continue;
    }
    auto it = values.strings.find(f.name);
    const std::string s = it == values.strings.end() ? std::string() : it->second;
    if (f.data_loc) {
      const uint32_t off = static_cast<uint32_t>(entry.size());
      const uint32_t len = static_cast<uint32_t>(s.size() + 1);
      entry.resize(entry.size() + len, std::byte{0});
      std::memcpy(entry.data() + off, s.data(), s.size());
      Put(&entry, f.offset, (uint64_t{len} << 16) | off, 4);
    } else {
      std::memcpy(entry.data() + f.offset, s.data(), std::min<size_t>(s.size(), f.size - 1));
    }
  }
  // perf_trace_buf_alloc() callers: size = ALIGN(size + sizeof(u32), sizeof(u64)) - sizeof(u32).
  const size_t padded = (entry.size() + 4 + 7) / 8 * 8 - 4;
  entry.resize(padded, std::byte{0});
  return entry;
}

// --- filters ---

struct TraceFilter::Node {
  enum class Kind { kAnd, kOr, kNot, kTerm } kind = Kind::kTerm;
  std::unique_ptr<Node> a, b;
  std::string field;
  std::string op;
  int64_t value = 0;
};

TraceFilter::~TraceFilter() = default;

namespace {

using Node = TraceFilter::Node;

struct Parser {
  const TracepointModel& tp;
  std::string_view s;
  size_t i = 0;
  std::string why;
  int err = EINVAL;  // the errno of the first failure

  void Skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool Eat(std::string_view tok) {
    Skip();
    if (s.substr(i, tok.size()) == tok) {
      i += tok.size();
      return true;
    }
    return false;
  }
  // predicate_parse() stops at the end of the text after "&&" or "||": a
  // trailing connective is accepted and ignored (Linux 6.18).
  bool AtEnd() {
    Skip();
    return i == s.size();
  }
  std::unique_ptr<Node> Fail(std::string text) {
    if (why.empty()) why = std::move(text);
    return nullptr;
  }

  std::unique_ptr<Node> Or() {
    std::unique_ptr<Node> left = And();
    while (left != nullptr && Eat("||") && !AtEnd()) {
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kOr;
      n->a = std::move(left);
      n->b = And();
      if (n->b == nullptr) return nullptr;
      left = std::move(n);
    }
    return left;
  }
  std::unique_ptr<Node> And() {
    std::unique_ptr<Node> left = Unary();
    while (left != nullptr && Eat("&&") && !AtEnd()) {
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kAnd;
      n->a = std::move(left);
      n->b = Unary();
      if (n->b == nullptr) return nullptr;
      left = std::move(n);
    }
    return left;
  }
  std::unique_ptr<Node> Unary() {
    if (Eat("!")) {
      auto n = std::make_unique<Node>();
      n->kind = Node::Kind::kNot;
      n->a = Unary();
      return n->a == nullptr ? nullptr : std::move(n);
    }
    if (Eat("(")) {
      std::unique_ptr<Node> inner = Or();
      if (inner == nullptr) return nullptr;
      if (!Eat(")")) return Fail("missing ')'");
      return inner;
    }
    return Term();
  }
  std::unique_ptr<Node> Term() {
    Skip();
    const size_t start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    const std::string field(s.substr(start, i - start));
    if (field.empty()) {
      // parse_pred() returns -1 when no field name starts the predicate: -EPERM.
      if (why.empty()) err = EPERM;
      return Fail(fmt::format("expected a field at offset {}", start));
    }
    const TraceField* f = nullptr;
    for (const TraceField& c : CommonFields()) {
      if (c.name == field) f = &c;
    }
    for (const TraceField& c : tp.fields) {
      if (c.name == field) f = &c;
    }
    if (f == nullptr) return Fail(fmt::format("no field '{}' in {}", field, tp.name));
    if (f->is_string) return Fail(fmt::format("string field '{}': string filters are not modelled", field));
    auto n = std::make_unique<Node>();
    n->field = field;
    for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">", "&"}) {
      if (Eat(op)) {
        n->op = std::string(op);
        break;
      }
    }
    if (n->op.empty() || (n->op == "&" && s.substr(i, 1) == "&")) return Fail("expected an operator");
    Skip();
    const std::string rest(s.substr(i));
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(rest.c_str(), &end, 0);
    if (end == rest.c_str() || errno != 0) return Fail(fmt::format("expected a number after '{} {}'", field, n->op));
    i += static_cast<size_t>(end - rest.c_str());
    n->value = v;
    return n;
  }
};

bool Eval(const Node& n, const TraceValues& v) {
  switch (n.kind) {
    case Node::Kind::kAnd: return Eval(*n.a, v) && Eval(*n.b, v);
    case Node::Kind::kOr: return Eval(*n.a, v) || Eval(*n.b, v);
    case Node::Kind::kNot: return !Eval(*n.a, v);
    case Node::Kind::kTerm: break;
  }
  auto it = v.numbers.find(n.field);
  const int64_t x = it == v.numbers.end() ? 0 : it->second;
  if (n.op == "==") return x == n.value;
  if (n.op == "!=") return x != n.value;
  if (n.op == "<") return x < n.value;
  if (n.op == "<=") return x <= n.value;
  if (n.op == ">") return x > n.value;
  if (n.op == ">=") return x >= n.value;
  return (x & n.value) != 0;  // "&"
}

}  // namespace

int TraceFilter::Parse(const TracepointModel& tp, std::string_view text, std::unique_ptr<TraceFilter>* out,
                       std::string* why) {
  // trace_events_filter.c predicate_parse(): parenthesis errors come out as
  // ENOENT (too many '(') and EPERM (a ')' without its '(') on Linux 6.18.
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) {
      if (why) *why = "unmatched ')'";
      return EPERM;
    }
  }
  if (depth > 0) {
    if (why) *why = "unmatched '('";
    return ENOENT;
  }
  Parser p{tp, text};
  // No predicate at all: predicate_parse() builds an empty program, -EINVAL.
  std::unique_ptr<Node> root = p.AtEnd() ? nullptr : p.Or();
  p.Skip();
  if (root != nullptr && p.i != text.size()) root = p.Fail(fmt::format("unexpected text at offset {}", p.i));
  if (root == nullptr) {
    if (why) *why = p.why.empty() ? "not a filter" : p.why;
    return p.why.empty() ? EINVAL : p.err;
  }
  std::unique_ptr<TraceFilter> f(new TraceFilter);
  f->root_ = std::move(root);
  *out = std::move(f);
  return 0;
}

bool TraceFilter::Match(const TraceValues& values) const { return Eval(*root_, values); }

}  // namespace perftest::mock
