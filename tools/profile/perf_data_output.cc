#include "tools/profile/perf_data_output.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness/perf_data/features.h"
#include "harness/perf_data/writer.h"

namespace perftest::profile {
namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::vector<pid_t> Threads(pid_t pid) {
  std::vector<pid_t> tids;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
    }
    closedir(d);
  }
  return tids;
}

}  // namespace

PerfDataOutput::PerfDataOutput(const perf_event_attr& attr, std::string event_name)
    : attr_(attr), layout_(SampleLayout::FromAttr(attr)), event_name_(std::move(event_name)) {}

void PerfDataOutput::Add(std::span<const std::byte> record) {
  perf_data::DataRecord r;
  std::memcpy(&r.header, record.data(), sizeof r.header);
  r.bytes.assign(record.begin(), record.end());
  if (r.header.type == PERF_RECORD_SAMPLE) ++samples_;
  records_.push_back(std::move(r));
}

void PerfDataOutput::AddSynthesized(Record r, pid_t pid, pid_t tid) {
  // The attr's sample_id_all trailer, time 0: before every sample.
  r.sample_id = SampleId{.pid = static_cast<uint32_t>(pid), .tid = static_cast<uint32_t>(tid), .time = 0,
                         .id = 0, .stream_id = 0, .cpu = 0, .res = 0, .identifier = 0};
  std::vector<std::byte> bytes;
  EncodeRecord(layout_, r, &bytes);
  Add(bytes);
}

void PerfDataOutput::SynthesizeProcess(pid_t pid) {
  for (pid_t tid : Threads(pid)) {
    const std::string comm = FirstLine("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
    if (comm.empty()) continue;
    Record r;
    r.header.type = PERF_RECORD_COMM;
    r.body = CommRecord{static_cast<uint32_t>(pid), static_cast<uint32_t>(tid), comm};
    AddSynthesized(std::move(r), pid, tid);
  }
  // "start-end perms offset maj:min inode   path" (proc(5)); executable ones.
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long start = 0, end = 0, pgoff = 0, ino = 0;
    unsigned maj = 0, min = 0;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %4s %lx %x:%x %lu %n", &start, &end, perms, &pgoff, &maj, &min, &ino,
                    &path_at) < 7) {
      continue;
    }
    // Readable data mappings too when the attr asks for them (attr.mmap_data,
    // set for --call-graph=dwarf): an unwinder reading the file's
    // .eh_frame_hdr through the process's address space (perf's libunwind)
    // finds it in the read-only segment, not the executable one.
    const bool exec = perms[2] == 'x';
    if (!exec && !(attr_.mmap_data && perms[0] == 'r' && ino != 0)) continue;
    std::string path = path_at > 0 ? line.substr(static_cast<size_t>(path_at)) : "";
    if (path.empty()) path = "//anon";  // perf's name for an anonymous executable mapping
    Mmap2Record m;
    m.pid = m.tid = static_cast<uint32_t>(pid);
    m.addr = start;
    m.len = end - start;
    m.pgoff = pgoff;
    m.maj = maj;
    m.min = min;
    m.ino = ino;
    m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | (exec ? PROT_EXEC : 0);
    m.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
    m.filename = path;
    Record r;
    r.header.type = PERF_RECORD_MMAP2;
    r.header.misc = PERF_RECORD_MISC_USER | (exec ? 0 : PERF_RECORD_MISC_MMAP_DATA);
    r.body = std::move(m);
    AddSynthesized(std::move(r), pid, pid);
  }
}

bool PerfDataOutput::SynthesizeKernel() {
  std::ifstream in("/proc/kallsyms");
  uint64_t text = 0, etext = 0;
  for (std::string line; std::getline(in, line) && (text == 0 || etext == 0);) {
    std::istringstream f(line);
    std::string addr, type, name;
    f >> addr >> type >> name;
    if (name == "_text") text = std::stoull(addr, nullptr, 16);
    if (name == "_etext") etext = std::stoull(addr, nullptr, 16);
  }
  if (text == 0 || etext <= text) return false;  // kptr_restrict: every address reads 0
  Record r;
  r.header.type = PERF_RECORD_MMAP;
  r.header.misc = PERF_RECORD_MISC_KERNEL;
  r.body = MmapRecord{static_cast<uint32_t>(-1), 0, text, etext - text, text, "[kernel.kallsyms]_text"};
  AddSynthesized(std::move(r), -1, 0);
  return true;
}

perf_data::PerfData PerfDataOutput::Build(const std::vector<uint64_t>& ids,
                                          const std::vector<std::string>& cmdline) const {
  using namespace perf_data;
  PerfData d;
  d.header.attr_size = sizeof(perf_event_attr) + sizeof(FileSection);
  Attr a;
  a.attr = attr_;
  a.attr.size = sizeof(perf_event_attr);
  a.bytes.resize(sizeof a.attr);
  std::memcpy(a.bytes.data(), &a.attr, sizeof a.attr);
  a.ids = ids;
  d.attrs.push_back(a);
  d.records = records_;
  utsname u{};
  uname(&u);
  d.features[HEADER_HOSTNAME] = EncodeStringFeature(u.nodename);
  d.features[HEADER_OSRELEASE] = EncodeStringFeature(u.release);
  d.features[HEADER_ARCH] = EncodeStringFeature(u.machine);
  d.features[HEADER_NRCPUS] = EncodeNrCpus({static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)),
                                            static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF))});
  d.features[HEADER_CMDLINE] = EncodeStringListFeature(cmdline);
  EventDesc desc;
  desc.attr = a.attr;
  desc.name = event_name_;
  desc.ids = ids;
  d.features[HEADER_EVENT_DESC] = EncodeEventDesc(std::span<const EventDesc>(&desc, 1));
  for (const auto& [bit, bytes] : d.features) d.header.features.set(bit);
  return d;
}

Result<void> PerfDataOutput::Write(const std::string& path, const std::vector<uint64_t>& ids,
                                   const std::vector<std::string>& cmdline) const {
  return perf_data::WritePerfDataFile(Build(ids, cmdline), path);
}

}  // namespace perftest::profile
