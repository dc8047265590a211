#include "harness/pt/dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "harness/pt/last_ip.h"
#include "harness/pt/packet_decoder.h"
#include "harness/pt/sync.h"

namespace perftest::pt {
namespace {

constexpr size_t kColumns = 16;
constexpr size_t kFlushAt = 64 * 1024;

void AppendBytesText(fmt::memory_buffer& out, std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes) fmt::format_to(std::back_inserter(out), " {:02x}", b);
  for (size_t i = bytes.size(); i < kColumns; ++i) fmt::format_to(std::back_inserter(out), "   ");
}

void AppendBytesHex(fmt::memory_buffer& out, std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes) fmt::format_to(std::back_inserter(out), "{:02x}", b);
}

// Type-specific JSON members, each with a leading comma.
void AppendJsonFields(fmt::memory_buffer& out, const Packet& p) {
  auto it = std::back_inserter(out);
  switch (p.type) {
    case PacketType::kTnt8:
    case PacketType::kTnt64: {
      std::string tnt;
      for (unsigned i = p.tnt_size(); i-- > 0;) tnt += ((p.tnt_bits() >> i) & 1) ? 'T' : 'N';
      fmt::format_to(it, ",\"tnt\":\"{}\",\"count\":{}", tnt, p.tnt_size());
      break;
    }
    case PacketType::kTip:
    case PacketType::kTipPge:
    case PacketType::kTipPgd:
    case PacketType::kFup:
      fmt::format_to(it, ",\"ipbytes\":{},\"payload\":\"{:#x}\"", p.ipbytes(), p.ip_payload());
      break;
    case PacketType::kPip:
      fmt::format_to(it, ",\"cr3\":\"{:#x}\",\"nr\":{}", p.cr3(), p.nr() ? 1 : 0);
      break;
    case PacketType::kModeExec:
      fmt::format_to(it, ",\"mode\":\"{}\",\"cs_l\":{},\"cs_d\":{},\"if\":{}", ExecModeName(p.exec_mode()),
                     p.cs_l() ? 1 : 0, p.cs_d() ? 1 : 0, p.if_flag() ? 1 : 0);
      break;
    case PacketType::kModeTsx:
      fmt::format_to(it, ",\"intx\":{},\"txabort\":{}", p.intx() ? 1 : 0, p.txabort() ? 1 : 0);
      break;
    case PacketType::kCbr: fmt::format_to(it, ",\"ratio\":{}", p.cbr()); break;
    case PacketType::kTsc: fmt::format_to(it, ",\"tsc\":\"{:#x}\"", p.tsc()); break;
    case PacketType::kMtc: fmt::format_to(it, ",\"ctc\":{}", p.mtc_ctc()); break;
    case PacketType::kTma: fmt::format_to(it, ",\"ctc\":{},\"fc\":{}", p.tma_ctc(), p.tma_fc()); break;
    case PacketType::kCyc: fmt::format_to(it, ",\"cycles\":\"{:#x}\"", p.cyc()); break;
    case PacketType::kVmcs: fmt::format_to(it, ",\"base\":\"{:#x}\"", p.vmcs_base()); break;
    case PacketType::kMnt: fmt::format_to(it, ",\"payload\":\"{:#x}\"", p.mnt_payload()); break;
    case PacketType::kPtw:
      fmt::format_to(it, ",\"payload\":\"{:#x}\",\"payload_bytes\":{},\"ip\":{}", p.ptw_payload(),
                     p.ptw_payload_bytes(), p.ptw_ip() ? 1 : 0);
      break;
    case PacketType::kExStop: fmt::format_to(it, ",\"ip\":{}", p.exstop_ip() ? 1 : 0); break;
    case PacketType::kBep: fmt::format_to(it, ",\"ip\":{}", p.bep_ip() ? 1 : 0); break;
    case PacketType::kMwait: fmt::format_to(it, ",\"hints\":{},\"ext\":{}", p.mwait_hints(), p.mwait_ext()); break;
    case PacketType::kPwre:
      fmt::format_to(it, ",\"hw\":{},\"state\":{},\"sub_state\":{}", p.pwre_hw() ? 1 : 0, p.pwre_state(),
                     p.pwre_sub_state());
      break;
    case PacketType::kPwrx:
      fmt::format_to(it, ",\"last\":{},\"deepest\":{},\"wake_reason\":{}", p.pwrx_last(), p.pwrx_deepest(),
                     p.pwrx_wake_reason());
      break;
    case PacketType::kBbp: fmt::format_to(it, ",\"item_bytes\":{},\"type\":{}", p.bbp_item_bytes(), p.bbp_type()); break;
    case PacketType::kBip: fmt::format_to(it, ",\"id\":{},\"value\":\"{:#x}\"", p.bip_id(), p.bip_value()); break;
    case PacketType::kCfe:
      fmt::format_to(it, ",\"type\":{},\"type_name\":\"{}\",\"vector\":{},\"ip\":{}", p.cfe_type(),
                     CfeTypeName(p.cfe_type()), p.cfe_vector(), p.cfe_ip() ? 1 : 0);
      break;
    case PacketType::kEvd:
      fmt::format_to(it, ",\"type\":{},\"type_name\":\"{}\",\"payload\":\"{:#x}\"", p.evd_type(),
                     EvdTypeName(p.evd_type()), p.evd_payload());
      break;
    case PacketType::kTrig:
      fmt::format_to(it, ",\"trbv\":{},\"icntv\":{},\"icnt\":{},\"mult\":{},\"ip\":{}", p.trig_trbv(),
                     p.trig_icntv() ? 1 : 0, p.trig_icnt(), p.trig_mult() ? 1 : 0, p.trig_ip() ? 1 : 0);
      break;
    default: break;
  }
}

// " ip 0x..." for the text form; the JSON member for the other.
std::string IpNote(const LastIp& last_ip, bool json) {
  const Result<uint64_t> ip = last_ip.ip();
  if (json) {
    if (ip.ok()) return fmt::format(",\"ip\":\"{:#x}\"", *ip);
    return fmt::format(",\"ip\":\"{}\"", ip.error() == EADDRNOTAVAIL ? "suppressed" : "none");
  }
  if (ip.ok()) return fmt::format("  ip {:#x}", *ip);
  return ip.error() == EADDRNOTAVAIL ? "  ip suppressed" : "  ip none";
}

class Dumper {
 public:
  Dumper(std::span<const uint8_t> trace, const DumpOptions& options,
         const std::function<void(std::string_view)>& sink)
      : trace_(trace), options_(options), sink_(sink) {}

  void Packet(const pt::Packet& p, const LastIp* last_ip) {
    const auto bytes = trace_.subspan(p.offset, p.size);
    if (json()) {
      fmt::format_to(it(), "{{\"offset\":{},\"size\":{},\"bytes\":\"", p.offset, p.size);
      AppendBytesHex(out_, bytes);
      fmt::format_to(it(), "\",\"packet\":\"{}\"", PacketName(p.type));
      AppendJsonFields(out_, p);
      if (last_ip != nullptr) fmt::format_to(it(), "{}", IpNote(*last_ip, true));
      fmt::format_to(it(), "}}\n");
    } else {
      fmt::format_to(it(), ".  {:08x}: ", p.offset);
      AppendBytesText(out_, bytes);
      fmt::format_to(it(), " {}", Describe(p));
      if (last_ip != nullptr) fmt::format_to(it(), "{}", IpNote(*last_ip, false));
      fmt::format_to(it(), "\n");
    }
    MaybeFlush();
  }

  void Error(uint64_t offset, int err) {
    // The first byte, or for a truncated packet all that is left of it.
    const size_t n = err == EMSGSIZE ? std::min(kColumns, trace_.size() - offset) : 1;
    const auto bytes = trace_.subspan(offset, n);
    const std::string_view what = PacketDecoder::ErrorDescription(err);
    if (json()) {
      fmt::format_to(it(), "{{\"offset\":{},\"error\":\"{}\",\"message\":\"{}\",\"bytes\":\"", offset,
                     ErrnoName(err), what);
      AppendBytesHex(out_, bytes);
      fmt::format_to(it(), "\"}}\n");
    } else {
      fmt::format_to(it(), ".  {:08x}: ", offset);
      AppendBytesText(out_, bytes);
      fmt::format_to(it(), " error: {} ({})\n", what, ErrnoName(err));
    }
    MaybeFlush();
  }

  // After an error at `from`: where decoding resumes (a PSB, possibly a few
  // bytes back when the bad packet overlapped it), or that it cannot.
  void Resync(uint64_t from, std::optional<uint64_t> psb) {
    if (json()) {
      if (psb) {
        fmt::format_to(it(), "{{\"offset\":{},\"resync\":true,\"from\":{}}}\n", *psb, from);
      } else {
        fmt::format_to(it(), "{{\"offset\":{},\"resync\":false,\"skipped\":{}}}\n", from, trace_.size() - from);
      }
    } else if (!psb) {
      fmt::format_to(it(), ".  {:08x}:  no PSB to resync at, {:#x} bytes skipped\n", from, trace_.size() - from);
    } else if (*psb >= from) {
      fmt::format_to(it(), ".  {:08x}:  resync at PSB, {:#x} bytes skipped\n", *psb, *psb - from);
    } else {
      fmt::format_to(it(), ".  {:08x}:  resync at PSB, {:#x} bytes back (the bad packet overlapped it)\n", *psb,
                     from - *psb);
    }
    MaybeFlush();
  }

  void Flush() {
    if (out_.size() != 0) sink_(std::string_view(out_.data(), out_.size()));
    out_.clear();
  }

 private:
  bool json() const { return options_.format == DumpOptions::Format::kJson; }
  std::back_insert_iterator<fmt::memory_buffer> it() { return std::back_inserter(out_); }
  void MaybeFlush() {
    if (out_.size() >= kFlushAt) Flush();
  }

  std::span<const uint8_t> trace_;
  const DumpOptions& options_;
  const std::function<void(std::string_view)>& sink_;
  fmt::memory_buffer out_;
};

}  // namespace

std::string DumpLine(std::span<const uint8_t> trace, const Packet& packet) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), ".  {:08x}: ", packet.offset);
  AppendBytesText(out, trace.subspan(packet.offset, packet.size));
  fmt::format_to(std::back_inserter(out), " {}", Describe(packet));
  return fmt::to_string(out);
}

Result<DumpStats> Dump(std::span<const uint8_t> trace, const DumpOptions& options,
                       const std::function<void(std::string_view)>& sink) {
  PacketDecoder decoder(trace, PacketDecoder::Options{.block_packets = options.block_packets});
  const Result<void> set = decoder.SyncSet(options.offset);
  if (!set.ok()) return Result<DumpStats>::FailureFrom(set);
  DumpStats stats;
  Dumper dumper(trace, options, sink);
  if (options.sync && !IsPsbAt(trace, options.offset)) {
    // SyncForward() after SyncSet(offset) searches from offset + 1; offset itself was checked above.
    const Result<uint64_t> psb = decoder.SyncForward();
    if (!psb.ok()) {
      dumper.Resync(options.offset, std::nullopt);
      dumper.Flush();
      stats.skipped += trace.size() - options.offset;
      return Result<DumpStats>::Ok(stats);
    }
    stats.skipped += *psb - options.offset;
  }
  LastIp last_ip;
  Packet p;
  for (;;) {
    if (options.limit != 0 && stats.packets >= options.limit) {
      stats.truncated = true;
      break;
    }
    const int err = decoder.Next(p);
    if (err == 0) {
      ++stats.packets;
      const LastIp* note = nullptr;
      if (options.last_ip) {
        if (p.type == PacketType::kPsb) last_ip.Reset();
        if (p.is_ip()) {
          (void)last_ip.Update(p);
          note = &last_ip;
        }
      }
      dumper.Packet(p, note);
      continue;
    }
    if (err == ENODATA) break;
    ++stats.errors;
    const uint64_t at = decoder.offset();
    dumper.Error(at, err);
    const Result<uint64_t> psb = decoder.SyncForward();
    if (!psb.ok()) {
      dumper.Resync(at, std::nullopt);
      stats.skipped += trace.size() - at;
      break;
    }
    dumper.Resync(at, *psb);
    if (*psb > at) stats.skipped += *psb - at;
    last_ip.Reset();
  }
  dumper.Flush();
  return Result<DumpStats>::Ok(stats);
}

}  // namespace perftest::pt
