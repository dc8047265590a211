#include "mocks/pt_sim/ground_truth.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace perftest::pt_sim {
namespace {

constexpr std::string_view kFormat = "perftest-pt-sim-ground-truth";
constexpr int kVersion = 1;

std::string Hex(const std::vector<uint8_t>& bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) s += fmt::format("{:02x}", b);
  return s;
}

bool Unhex(const std::string& s, std::vector<uint8_t>* out) {
  if (s.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    unsigned v = 0;
    for (size_t j = 0; j < 2; ++j) {
      const char c = s[i + j];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else return false;
    }
    out->push_back(static_cast<uint8_t>(v));
  }
  return true;
}

constexpr pt::BranchClass kClasses[] = {
    pt::BranchClass::kNone,         pt::BranchClass::kCondJump,     pt::BranchClass::kDirectJump,
    pt::BranchClass::kDirectCall,   pt::BranchClass::kIndirectJump, pt::BranchClass::kIndirectCall,
    pt::BranchClass::kReturn,       pt::BranchClass::kFarTransfer,  pt::BranchClass::kPtwrite,
};
constexpr EventKind kKinds[] = {EventKind::kEnable,        EventKind::kDisable,  EventKind::kInterrupt,
                                EventKind::kSyscall,       EventKind::kOverflowBegin, EventKind::kOverflow,
                                EventKind::kPower,         EventKind::kPsb,      EventKind::kCbr,
                                EventKind::kCfe,           EventKind::kEvd,      EventKind::kTrig};

}  // namespace

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kEnable: return "enable";
    case EventKind::kDisable: return "disable";
    case EventKind::kInterrupt: return "interrupt";
    case EventKind::kSyscall: return "syscall";
    case EventKind::kOverflowBegin: return "overflow-begin";
    case EventKind::kOverflow: return "overflow";
    case EventKind::kPower: return "power";
    case EventKind::kPsb: return "psb";
    case EventKind::kCbr: return "cbr";
    case EventKind::kCfe: return "cfe";
    case EventKind::kEvd: return "evd";
    case EventKind::kTrig: return "trig";
  }
  return "unknown";
}

std::vector<uint64_t> GroundTruth::TracedIps() const {
  std::vector<uint64_t> ips;
  for (const InsnRecord& r : insns) {
    if (r.traced) ips.push_back(r.ip);
  }
  return ips;
}

size_t GroundTruth::CountTraced() const {
  size_t n = 0;
  for (const InsnRecord& r : insns) n += r.traced;
  return n;
}

size_t GroundTruth::CountEvents(EventKind kind) const {
  size_t n = 0;
  for (const EventRecord& e : events) n += e.kind == kind;
  return n;
}

size_t GroundTruth::CountTracedEvents(EventKind kind) const {
  size_t n = 0;
  for (const EventRecord& e : events) n += e.kind == kind && e.traced;
  return n;
}

nlohmann::json ToJson(const GroundTruth& t) {
  using nlohmann::json;
  const PtConfig& c = t.config;
  json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["program"] = t.program;
  j["config"] = {{"attr_config", c.ToAttrConfig()}, {"pt", c.pt},           {"cyc", c.cyc},
                 {"pwr_evt", c.pwr_evt},            {"fup_on_ptw", c.fup_on_ptw}, {"mtc", c.mtc},
                 {"tsc", c.tsc},                    {"noretcomp", c.noretcomp}, {"ptw", c.ptw},
                 {"branch", c.branch},              {"mtc_period", c.mtc_period}, {"cyc_thresh", c.cyc_thresh},
                 {"psb_period", c.psb_period}};
  j["clock"] = {{"cbr", t.clock.cbr},
                {"ctc_eax", t.clock.ctc_eax},
                {"ctc_ebx", t.clock.ctc_ebx},
                {"tsc_start", t.clock.tsc_start},
                {"tsc_end", t.clock.tsc_end}};
  j["cr3"] = t.cr3;
  json image = json::array();
  for (const CodeSection& s : t.image.sections()) {
    image.push_back({{"address", s.address}, {"name", s.name}, {"bytes", Hex(s.bytes)}});
  }
  j["image"] = std::move(image);
  j["trace_size"] = t.trace_size;
  json insns = json::array();
  for (const InsnRecord& r : t.insns) {
    insns.push_back(json::array({r.ip, r.length, r.traced ? 1 : 0, pt::BranchClassName(r.branch), r.tsc, r.cycles}));
  }
  j["insns"] = std::move(insns);
  json branches = json::array();
  for (const BranchRecord& b : t.branches) branches.push_back(json::array({b.insn, b.taken ? 1 : 0, b.target}));
  j["branches"] = std::move(branches);
  json ptw = json::array();
  for (const PtwriteRecord& p : t.ptwrites) ptw.push_back(json::array({p.insn, p.payload, p.bytes, p.traced ? 1 : 0}));
  j["ptwrites"] = std::move(ptw);
  json events = json::array();
  for (const EventRecord& e : t.events) {
    json a = json::array({EventKindName(e.kind), e.insn, e.ip, e.trace_offset, e.traced ? 1 : 0});
    if (e.payload != 0) a.push_back(e.payload);  // (a 6th element only where there is one)
    events.push_back(std::move(a));
  }
  j["events"] = std::move(events);
  return j;
}

Result<GroundTruth> GroundTruthFromJson(const nlohmann::json& j) {
  const std::string call = "pt_sim::GroundTruthFromJson";
  std::string field = "format";
  try {
    if (j.at("format").get<std::string>() != kFormat) {
      return Result<GroundTruth>::Failure(EINVAL, call + ": \"format\" is not " + std::string(kFormat));
    }
    field = "version";
    if (j.at("version").get<int>() != kVersion) {
      return Result<GroundTruth>::Failure(EINVAL, fmt::format("{}: \"version\" is not {}", call, kVersion));
    }
    GroundTruth t;
    field = "program";
    t.program = j.at("program").get<std::string>();
    field = "config";
    t.config = PtConfig::FromAttrConfig(j.at("config").at("attr_config").get<uint64_t>());
    field = "clock";
    const auto& clock = j.at("clock");
    t.clock.cbr = clock.at("cbr").get<uint8_t>();
    t.clock.ctc_eax = clock.at("ctc_eax").get<uint32_t>();
    t.clock.ctc_ebx = clock.at("ctc_ebx").get<uint32_t>();
    t.clock.tsc_start = clock.at("tsc_start").get<uint64_t>();
    t.clock.tsc_end = clock.at("tsc_end").get<uint64_t>();
    field = "cr3";
    t.cr3 = j.at("cr3").get<uint64_t>();
    field = "image";
    for (const auto& s : j.at("image")) {
      std::vector<uint8_t> bytes;
      if (!Unhex(s.at("bytes").get<std::string>(), &bytes)) {
        return Result<GroundTruth>::Failure(EINVAL, call + ": \"image\" bytes are not lowercase hex");
      }
      Result<void> added = t.image.Add(s.at("address").get<uint64_t>(), std::move(bytes), s.at("name").get<std::string>());
      if (!added.ok()) return Result<GroundTruth>::Failure(EINVAL, call + ": \"image\": " + added.ToString());
    }
    field = "trace_size";
    t.trace_size = j.at("trace_size").get<uint64_t>();
    field = "insns";
    for (const auto& r : j.at("insns")) {
      InsnRecord rec;
      rec.ip = r.at(0).get<uint64_t>();
      rec.length = r.at(1).get<uint8_t>();
      rec.traced = r.at(2).get<int>() != 0;
      rec.tsc = r.at(4).get<uint64_t>();
      rec.cycles = r.at(5).get<uint64_t>();
      const std::string name = r.at(3).get<std::string>();
      bool found = false;
      for (pt::BranchClass c : kClasses) {
        if (pt::BranchClassName(c) == name) {
          rec.branch = c;
          found = true;
        }
      }
      if (!found) return Result<GroundTruth>::Failure(EINVAL, call + ": \"insns\": unknown branch class " + name);
      t.insns.push_back(rec);
    }
    field = "branches";
    for (const auto& b : j.at("branches")) {
      t.branches.push_back(
          BranchRecord{b.at(0).get<uint64_t>(), b.at(1).get<int>() != 0, b.at(2).get<uint64_t>()});
    }
    field = "ptwrites";
    for (const auto& p : j.at("ptwrites")) {
      t.ptwrites.push_back(PtwriteRecord{p.at(0).get<uint64_t>(), p.at(1).get<uint64_t>(), p.at(2).get<uint8_t>(),
                                        p.at(3).get<int>() != 0});
    }
    field = "events";
    for (const auto& e : j.at("events")) {
      EventRecord rec;
      const std::string name = e.at(0).get<std::string>();
      bool found = false;
      for (EventKind k : kKinds) {
        if (EventKindName(k) == name) {
          rec.kind = k;
          found = true;
        }
      }
      if (!found) return Result<GroundTruth>::Failure(EINVAL, call + ": \"events\": unknown kind " + name);
      rec.insn = e.at(1).get<uint64_t>();
      rec.ip = e.at(2).get<uint64_t>();
      rec.trace_offset = e.at(3).get<uint64_t>();
      rec.traced = e.at(4).get<int>() != 0;
      if (e.size() > 5) rec.payload = e.at(5).get<uint64_t>();
      t.events.push_back(rec);
    }
    return Result<GroundTruth>::Ok(std::move(t), call);
  } catch (const nlohmann::json::exception& e) {
    return Result<GroundTruth>::Failure(EINVAL, fmt::format("{}: field \"{}\": {}", call, field, e.what()));
  }
}

Result<void> WriteGroundTruthFile(const GroundTruth& truth, const std::string& path) {
  const std::string call = fmt::format("pt_sim::WriteGroundTruthFile({})", path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Result<void>::Failure(EIO, call + ": cannot open for writing");
  out << ToJson(truth).dump() << '\n';
  out.close();
  if (!out) return Result<void>::Failure(EIO, call + ": write failed");
  return Result<void>::Ok();
}

Result<GroundTruth> ReadGroundTruthFile(const std::string& path) {
  const std::string call = fmt::format("pt_sim::ReadGroundTruthFile({})", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Result<GroundTruth>::Failure(EIO, call + ": cannot open");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Result<GroundTruth>::Failure(EINVAL, call + ": not JSON");
  Result<GroundTruth> t = GroundTruthFromJson(j);
  if (!t.ok()) return Result<GroundTruth>::Failure(t.error(), call + ": " + t.call());
  return t;
}

}  // namespace perftest::pt_sim
