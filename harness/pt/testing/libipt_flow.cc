#include "harness/pt/testing/libipt_flow.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace perftest::pt::testing {

std::string ToString(const FlowEntry& e) {
  switch (e.kind) {
    case FlowEntry::kInsn: return fmt::format("insn {:#x} size={} class={}", e.ip, e.size, e.iclass);
    case FlowEntry::kError: return fmt::format("error {} @{:#x}", e.code, e.offset);
    case FlowEntry::kSync: return fmt::format("sync @{:#x}", e.ip);
    case FlowEntry::kEvent: {
      std::string s = fmt::format("event {}", FlowEventName(static_cast<FlowEvent::Type>(e.code)));
      if (e.has_ip) s += fmt::format(" ip={:#x}", e.ip);
      if (e.payload != 0) s += fmt::format(" payload={:#x}", e.payload);
      return s;
    }
  }
  return "?";
}

pt_insn_class LibiptClass(const Insn& insn) {
  switch (insn.branch) {
    case BranchClass::kNone: return ptic_other;
    case BranchClass::kCondJump: return ptic_cond_jump;
    case BranchClass::kDirectJump:
    case BranchClass::kIndirectJump: return ptic_jump;
    case BranchClass::kDirectCall:
    case BranchClass::kIndirectCall: return ptic_call;
    case BranchClass::kReturn: return ptic_return;
    case BranchClass::kPtwrite: return ptic_ptwrite;
    case BranchClass::kFarTransfer:
      if (IsFarCall(insn.far)) return ptic_far_call;
      if (IsFarReturn(insn.far)) return ptic_far_return;
      return ptic_far_jump;
  }
  return ptic_error;
}

bool EventHasIp(FlowEvent::Type type) {
  using T = FlowEvent::Type;
  switch (type) {
    case T::kEnabled: case T::kDisabled: case T::kAsyncDisabled: case T::kAsyncBranch: case T::kOverflow:
    case T::kExecMode: case T::kTsx: case T::kPtwrite: case T::kExStop: case T::kMwait:
      return true;
    default:
      return false;
  }
}

uint64_t EventPayload(const FlowEvent& e) {
  using T = FlowEvent::Type;
  switch (e.type) {
    case T::kAsyncBranch: case T::kAsyncDisabled: return e.from;
    case T::kExecMode: return static_cast<uint64_t>(e.mode);
    case T::kTsx: return e.payload & 3;
    case T::kPaging: case T::kVmcs: case T::kMwait: case T::kPtwrite: case T::kCbr: case T::kMnt: return e.payload;
    case T::kPwre: return ((e.payload >> 12) & 0xf) | (((e.payload >> 8) & 0xf) << 8);
    case T::kPwrx: {
      const uint64_t wake = (e.payload >> 8) & 0xf;
      return ((e.payload >> 4) & 0xf) | ((e.payload & 0xf) << 4) | ((wake & 1) << 8) | (((wake >> 2) & 1) << 9) |
             (((wake >> 3) & 1) << 10);
    }
    default: return 0;
  }
}

namespace {

// A libipt event as our FlowEvent (for EventPayload); false for ptev_tick
// and types we have none of.
bool FromLibipt(const pt_event& ev, FlowEvent* e) {
  using T = FlowEvent::Type;
  e->ip_suppressed = ev.ip_suppressed != 0;
  switch (ev.type) {
    case ptev_enabled: e->type = T::kEnabled; e->ip = ev.variant.enabled.ip; break;
    case ptev_disabled: e->type = T::kDisabled; e->ip = ev.variant.disabled.ip; break;
    case ptev_async_disabled:
      e->type = T::kAsyncDisabled;
      e->ip = ev.variant.async_disabled.ip;
      e->from = ev.variant.async_disabled.at;
      break;
    case ptev_async_branch:
      e->type = T::kAsyncBranch;
      e->ip = ev.variant.async_branch.to;
      e->from = ev.variant.async_branch.from;
      break;
    case ptev_paging: e->type = T::kPaging; e->payload = ev.variant.paging.cr3; break;
    case ptev_async_paging: e->type = T::kPaging; e->payload = ev.variant.async_paging.cr3; break;
    case ptev_overflow: e->type = T::kOverflow; e->ip = ev.variant.overflow.ip; break;
    case ptev_exec_mode:
      e->type = T::kExecMode;
      e->ip = ev.variant.exec_mode.ip;
      switch (ev.variant.exec_mode.mode) {
        case ptem_16bit: e->mode = ExecMode::k16Bit; break;
        case ptem_32bit: e->mode = ExecMode::k32Bit; break;
        case ptem_64bit: e->mode = ExecMode::k64Bit; break;
        default: e->mode = ExecMode::kInvalid; break;
      }
      break;
    case ptev_tsx:
      e->type = T::kTsx;
      e->ip = ev.variant.tsx.ip;
      e->payload = (ev.variant.tsx.speculative ? 1 : 0) | (ev.variant.tsx.aborted ? 2 : 0);
      break;
    case ptev_stop: e->type = T::kStop; break;
    case ptev_vmcs: e->type = T::kVmcs; e->payload = ev.variant.vmcs.base; break;
    case ptev_async_vmcs: e->type = T::kVmcs; e->payload = ev.variant.async_vmcs.base; break;
    case ptev_exstop: e->type = T::kExStop; e->ip = ev.variant.exstop.ip; break;
    case ptev_mwait:
      e->type = T::kMwait;
      e->ip = ev.variant.mwait.ip;
      e->payload = ev.variant.mwait.hints | (uint64_t{ev.variant.mwait.ext} << 32);
      break;
    case ptev_pwre:
      e->type = T::kPwre;
      e->payload = (uint64_t{ev.variant.pwre.state & 0xfu} << 12) | (uint64_t{ev.variant.pwre.sub_state & 0xfu} << 8);
      break;
    case ptev_pwrx:
      e->type = T::kPwrx;
      e->payload = (uint64_t{ev.variant.pwrx.last & 0xfu} << 4) | (ev.variant.pwrx.deepest & 0xfu) |
                   (uint64_t{ev.variant.pwrx.interrupt ? 1u : 0u} << 8) | (uint64_t{ev.variant.pwrx.store ? 1u : 0u} << 10) |
                   (uint64_t{ev.variant.pwrx.autonomous ? 1u : 0u} << 11);
      break;
    case ptev_ptwrite: e->type = T::kPtwrite; e->ip = ev.variant.ptwrite.ip; e->payload = ev.variant.ptwrite.payload; break;
    case ptev_cbr: e->type = T::kCbr; e->payload = ev.variant.cbr.ratio; break;
    case ptev_mnt: e->type = T::kMnt; e->payload = ev.variant.mnt.payload; break;
    default: return false;  // ptev_tick
  }
  return true;
}

FlowEntry EventEntry(const FlowEvent& e) {
  FlowEntry x{.kind = FlowEntry::kEvent, .code = static_cast<int>(e.type), .payload = EventPayload(e)};
  x.has_ip = EventHasIp(e.type) && !e.ip_suppressed;
  x.ip = x.has_ip ? e.ip : 0;
  return x;
}

int ReadImage(uint8_t* buffer, size_t size, const pt_asid*, uint64_t ip, void* context) {
  const Image& image = *static_cast<const Image*>(context);
  std::span<const uint8_t> bytes = image.Read(ip);
  if (bytes.empty()) return -pte_nomap;
  const size_t n = std::min(size, bytes.size());
  std::memcpy(buffer, bytes.data(), n);
  return static_cast<int>(n);
}

pt_config Config(std::span<const uint8_t> trace) {
  pt_config config;
  pt_config_init(&config);
  config.begin = const_cast<uint8_t*>(trace.data());
  config.end = const_cast<uint8_t*>(trace.data() + trace.size());
  return config;
}

}  // namespace

LibiptImage::LibiptImage(const Image& image) : ours_(image), image_(pt_image_alloc("perftest")) {
  pt_image_set_callback(image_, ReadImage, const_cast<Image*>(&ours_));
}
LibiptImage::~LibiptImage() { pt_image_free(image_); }

LibiptCachedImage::LibiptCachedImage(const Image& image) {
  iscache_ = pt_iscache_alloc("perftest");
  image_ = pt_image_alloc("perftest");
  char path[] = "/tmp/perftest-pt-image-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return;
  path_ = path;
  uint64_t offset = 0;
  ok_ = true;
  for (const Image::Section& s : image.sections()) {
    const uint8_t* p = s.data->data() + s.data_offset;
    if (write(fd, p, s.size) != static_cast<ssize_t>(s.size)) ok_ = false;
    const int isid = pt_iscache_add_file(iscache_, path, offset, s.size, s.vaddr);
    if (isid < 0 || pt_image_add_cached(image_, iscache_, isid, nullptr) < 0) ok_ = false;
    offset += s.size;
  }
  close(fd);
}
LibiptCachedImage::~LibiptCachedImage() {
  pt_image_free(image_);
  pt_iscache_free(iscache_);
  if (!path_.empty()) unlink(path_.c_str());
}

FlowLog LibiptInsnFlow(std::span<const uint8_t> trace, const Image& image, bool events) {
  FlowLog log;
  // A 64-byte-aligned copy, as libipt_reference.h does for its PSB search.
  const size_t padded = (trace.size() + 63) & ~size_t{63};
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(64, padded == 0 ? 64 : padded));
  if (!trace.empty()) std::memcpy(buf, trace.data(), trace.size());
  pt_config config = Config(std::span<const uint8_t>(buf, trace.size()));
  pt_insn_decoder* dec = pt_insn_alloc_decoder(&config);
  LibiptImage img(image);
  pt_insn_set_image(dec, img.get());
  for (;;) {
    int status = pt_insn_sync_forward(dec);
    if (status == -pte_eos) break;
    if (status < 0) {  // a bad PSB+: an error, then the next PSB
      uint64_t off = 0;
      pt_insn_get_offset(dec, &off);
      log.entries.push_back({.kind = FlowEntry::kError, .code = status, .offset = off});
      ++log.errors;
      continue;
    }
    uint64_t off = 0;
    pt_insn_get_sync_offset(dec, &off);
    log.entries.push_back({.kind = FlowEntry::kSync, .ip = off});
    uint64_t last_offset = ~uint64_t{0}, without_packet = 0;
    for (;;) {
      while (status >= 0 && (status & pts_event_pending)) {
        pt_event ev;
        status = pt_insn_event(dec, &ev, sizeof ev);
        if (FlowEvent e; events && status >= 0 && FromLibipt(ev, &e)) log.entries.push_back(EventEntry(e));
      }
      if (status < 0) break;
      pt_insn insn;
      status = pt_insn_next(dec, &insn, sizeof insn);
      if (status < 0) break;
      log.entries.push_back(
          {.kind = FlowEntry::kInsn, .size = insn.size, .iclass = static_cast<uint8_t>(insn.iclass), .ip = insn.ip});
      ++log.insns;
      uint64_t at = 0;
      pt_insn_get_offset(dec, &at);
      without_packet = at == last_offset ? without_packet + 1 : 0;
      last_offset = at;
      if (without_packet >= kEndlessLoopInsns) {  // (an endless loop: see the top of libipt_flow.h)
        status = kLibiptEndlessLoop;
        break;
      }
    }
    pt_insn_get_offset(dec, &off);
    log.entries.push_back({.kind = FlowEntry::kError, .code = status, .offset = off});
    ++log.errors;
  }
  pt_insn_free_decoder(dec);
  std::free(buf);
  return log;
}

FlowLog OurInsnFlow(std::span<const uint8_t> trace, const Image& image, bool events) {
  FlowLog log;
  FlowDecoder dec(trace, &image,
                  FlowDecoder::Options{.packets = PacketDecoder::Options::Libipt205(), .libipt_errors = true});
  for (;;) {
    Result<uint64_t> s = dec.SyncForward();
    if (!s.ok()) {
      // The end of the trace; also a PSB+ cut off by it (libipt: -pte_eos).
      if (s.error() == ENODATA || s.error() == EMSGSIZE) break;
      // A bad PSB+: an error, then the next PSB.
      log.entries.push_back({.kind = FlowEntry::kError, .code = s.error(), .offset = dec.error_offset()});
      ++log.errors;
      continue;
    }
    log.entries.push_back({.kind = FlowEntry::kSync, .ip = *s});
    FlowStep step;
    int err;
    uint64_t last_offset = ~uint64_t{0}, without_packet = 0;
    while ((err = dec.Next(&step)) == 0) {
      if (step.kind != FlowStep::kBlock) {
        if (events && step.event.type != FlowEvent::Type::kTsc) log.entries.push_back(EventEntry(step.event));
        continue;
      }
      for (BlockInsns it(step.block); it.ok(); it.Advance()) {
        log.entries.push_back({.kind = FlowEntry::kInsn,
                               .size = it.length(),
                               .iclass = static_cast<uint8_t>(LibiptClass(it.insn())),
                               .ip = it.ip()});
        ++log.insns;
      }
      without_packet = dec.offset() == last_offset ? without_packet + step.block.ninsn : 0;
      last_offset = dec.offset();
      if (without_packet >= kEndlessLoopInsns) {  // (an endless loop: see the top of libipt_flow.h)
        err = ELOOP;
        break;
      }
    }
    log.entries.push_back({.kind = FlowEntry::kError, .code = err, .offset = dec.error_offset()});
    ++log.errors;
  }
  return log;
}

namespace {
size_t FirstError(const std::vector<FlowEntry>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].kind == FlowEntry::kError) return i;
  return v.size();
}
}  // namespace

std::string DiffFlowUntilError(const FlowLog& ours, const FlowLog& ref) {
  const size_t n = std::min(FirstError(ours.entries), FirstError(ref.entries));
  FlowLog a, b;
  a.entries.assign(ours.entries.begin(), ours.entries.begin() + std::min(n, ours.entries.size()));
  b.entries.assign(ref.entries.begin(), ref.entries.begin() + std::min(n, ref.entries.size()));
  return DiffFlow(a, b);
}

bool SameFlowError(int ours, int libipt) {
  if (libipt == kLibiptEndlessLoop) return ours == ELOOP || ours == EBADMSG;
  if (ours == ELOOP) return false;
  switch (-libipt) {
    case pte_eos: return ours == ENODATA || ours == EMSGSIZE;
    case pte_nomap: return ours == ENXIO;
    case pte_bad_insn:
    case pte_bad_opc: return ours == EILSEQ;
    case pte_bad_packet:
    case pte_bad_query:
    case pte_bad_context:
    case pte_noip:
    case pte_ip_suppressed:
    case pte_bad_retcomp:
    case pte_retstack_empty:
    case pte_no_enable:
    case pte_bad_status_update:
    // libipt allocates nothing while it decodes: -pte_nomem comes from its
    // event queue (pt_event_queue.c pt_evq_enqueue), whose ring per binding
    // (TIP, FUP, PSBEND) holds 6 events (evq_max 8, a gap kept), filling
    // up only while the packet they bind to never comes — e.g. FUP after
    // FUP with no TIP, each an asynchronous branch waiting for its TIP
    // (pt_qry_decode_fup): the trace does not fit.
    case pte_nomem: return ours == EBADMSG;
    case pte_nosync: return ours == ENOTCONN;
    default: return false;
  }
}

std::string DiffFlowThroughFirstError(const FlowLog& ours, const FlowLog& ref, int64_t* lead) {
  const size_t a = FirstError(ours.entries), b = FirstError(ref.entries);
  const size_t n = std::min(a, b);
  auto at = [](const FlowLog& log, size_t i) {
    return i < log.entries.size() ? fmt::format("[{}] {}", i, ToString(log.entries[i])) : std::string("none");
  };
  // Identical before the earlier first error.
  FlowLog x, y;
  x.entries.assign(ours.entries.begin(), ours.entries.begin() + static_cast<long>(n));
  y.entries.assign(ref.entries.begin(), ref.entries.begin() + static_cast<long>(n));
  if (std::string diff = DiffFlow(x, y); !diff.empty()) return diff;
  // Only instructions between the earlier and the later first error.
  const FlowLog& later = a > b ? ours : ref;
  for (size_t i = n; i < std::max(a, b); ++i) {
    if (later.entries[i].kind != FlowEntry::kInsn) {
      return fmt::format("{} reports {} after the other's first error ({}), before its own ({})\n",
                         a > b ? "ours" : "libipt", at(later, i), at(a > b ? ref : ours, n), at(later, std::max(a, b)));
    }
  }
  if (lead != nullptr) *lead = static_cast<int64_t>(a) - static_cast<int64_t>(b);
  if (a < ours.entries.size() && b < ref.entries.size() && !SameFlowError(ours.entries[a].code, ref.entries[b].code)) {
    return fmt::format("first errors: ours {} ({}), libipt {} ({}): not the same error\n", at(ours, a),
                       ErrnoName(ours.entries[a].code), at(ref, b), pt_errstr(pt_errcode(ref.entries[b].code)));
  }
  if ((a < ours.entries.size()) != (b < ref.entries.size()))
    return fmt::format("first errors: ours {}, libipt {}\n", at(ours, a), at(ref, b));
  return "";
}

std::string DiffFlow(const FlowLog& ours, const FlowLog& ref) {
  const auto& a = ours.entries;
  const auto& b = ref.entries;
  size_t i = 0;
  while (i < a.size() && i < b.size()) {
    const FlowEntry& x = a[i];
    const FlowEntry& y = b[i];
    bool same = x.kind == y.kind;
    if (same && x.kind == FlowEntry::kInsn) {
      same = x.ip == y.ip && x.size == y.size && x.iclass == y.iclass;
    }
    if (same && x.kind == FlowEntry::kSync) same = x.ip == y.ip;
    if (same && x.kind == FlowEntry::kEvent)
      same = x.code == y.code && x.has_ip == y.has_ip && x.ip == y.ip && x.payload == y.payload;
    if (!same) break;
    ++i;
  }
  if (i == a.size() && i == b.size()) return "";
  std::string s = fmt::format("first difference at entry {} (ours {} entries, libipt {}):\n", i, a.size(), b.size());
  const size_t from = i >= 5 ? i - 5 : 0;
  for (size_t k = from; k < i + 5 && (k < a.size() || k < b.size()); ++k) {
    s += fmt::format("  [{}] ours: {:<40} libipt: {}\n", k, k < a.size() ? ToString(a[k]) : "-",
                     k < b.size() ? ToString(b[k]) : "-");
  }
  return s;
}

}  // namespace perftest::pt::testing
