#include "mocks/pt_sim/libipt_flow.h"

#include <fmt/format.h>
#include <intel-pt.h>

#include <cstring>

namespace perftest::pt_sim {
namespace {

int ReadMemory(uint8_t* buffer, size_t size, const pt_asid* /*asid*/, uint64_t ip, void* context) {
  const CodeImage* image = static_cast<const CodeImage*>(context);
  const std::span<const uint8_t> bytes = image->Read(ip);
  if (bytes.empty()) return -pte_nomap;
  const size_t n = std::min(size, bytes.size());
  std::memcpy(buffer, bytes.data(), n);
  return static_cast<int>(n);
}

uint64_t EventIp(const pt_event& ev) {
  if (ev.ip_suppressed) return 0;
  switch (ev.type) {
    case ptev_enabled: return ev.variant.enabled.ip;
    case ptev_disabled: return ev.variant.disabled.ip;
    case ptev_async_disabled: return ev.variant.async_disabled.at;
    case ptev_async_branch: return ev.variant.async_branch.from;
    case ptev_overflow: return ev.variant.overflow.ip;
    case ptev_exec_mode: return ev.variant.exec_mode.ip;
    case ptev_exstop: return ev.variant.exstop.ip;
    case ptev_mwait: return ev.variant.mwait.ip;
    case ptev_ptwrite: return ev.variant.ptwrite.ip;
    default: return 0;
  }
}

}  // namespace

std::string LibiptEvent::ToString() const {
  return fmt::format("event type={} after {} insns ip={:#x} payload={:#x}", type, insns_before, ip, payload);
}

size_t LibiptFlow::CountEvents(int type) const {
  size_t n = 0;
  for (const LibiptEvent& e : events) n += e.type == type;
  return n;
}

std::vector<uint64_t> LibiptFlow::PtwritePayloads() const {
  std::vector<uint64_t> out;
  for (const LibiptEvent& e : events) {
    if (e.type == ptev_ptwrite) out.push_back(e.payload);
  }
  return out;
}

LibiptFlow DecodeFlowWithLibipt(std::span<const uint8_t> trace, const GroundTruth& truth) {
  LibiptFlow flow;
  std::vector<uint8_t> buffer(trace.begin(), trace.end());
  pt_config config;
  pt_config_init(&config);
  config.begin = buffer.data();
  config.end = buffer.data() + buffer.size();
  config.mtc_freq = truth.config.mtc_period;
  config.nom_freq = truth.clock.cbr;
  config.cpuid_0x15_eax = truth.clock.ctc_eax;
  config.cpuid_0x15_ebx = truth.clock.ctc_ebx;
  pt_insn_decoder* decoder = pt_insn_alloc_decoder(&config);
  if (decoder == nullptr) {
    flow.errors.push_back("pt_insn_alloc_decoder failed");
    return flow;
  }
  pt_image* image = pt_insn_get_image(decoder);
  pt_image_set_callback(image, ReadMemory, const_cast<CodeImage*>(&truth.image));

  auto error = [&](const char* what, int status) {
    uint64_t offset = 0;
    pt_insn_get_offset(decoder, &offset);
    flow.errors.push_back(fmt::format("{}: {} ({}) at trace offset {:#x}, after {} insns (last ip {:#x})", what,
                                      pt_errstr(pt_errcode(status)), status, offset, flow.ips.size(),
                                      flow.ips.empty() ? 0 : flow.ips.back()));
  };

  for (int guard = 0; guard < 1000000; ++guard) {
    int status = pt_insn_sync_forward(decoder);
    if (status < 0) {
      if (status != -pte_eos) error("pt_insn_sync_forward", status);
      break;
    }
    ++flow.syncs;
    for (;;) {
      while (status & pts_event_pending) {
        pt_event ev;
        status = pt_insn_event(decoder, &ev, sizeof ev);
        if (status < 0) break;
        LibiptEvent e;
        e.type = ev.type;
        e.insns_before = flow.ips.size();
        e.ip = EventIp(ev);
        if (ev.type == ptev_ptwrite) e.payload = ev.variant.ptwrite.payload;
        flow.events.push_back(e);
      }
      if (status < 0) break;
      if (status & pts_eos) {
        status = -pte_eos;
        break;
      }
      pt_insn insn;
      std::memset(&insn, 0, sizeof insn);
      status = pt_insn_next(decoder, &insn, sizeof insn);
      // Even on an error the instruction may have been decoded (ptxed does the same).
      if (insn.iclass != ptic_error) {
        flow.ips.push_back(insn.ip);
        uint64_t time = 0;
        uint32_t lost_mtc = 0, lost_cyc = 0, cbr = 0;
        if (pt_insn_time(decoder, &time, &lost_mtc, &lost_cyc) < 0) time = 0;
        if (pt_insn_core_bus_ratio(decoder, &cbr) < 0) cbr = 0;
        flow.times.push_back(time);
        flow.cbrs.push_back(cbr);
      }
      if (status < 0) break;
    }
    if (status == -pte_eos) continue;  // the next sync_forward finds the end, or the next PSB
    error("pt_insn_next/pt_insn_event", status);
  }
  pt_insn_free_decoder(decoder);
  return flow;
}

}  // namespace perftest::pt_sim
