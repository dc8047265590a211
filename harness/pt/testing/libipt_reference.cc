#include "harness/pt/testing/libipt_reference.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace perftest::pt::testing {
namespace {

RefPacket Ref(PacketType type, uint64_t offset, uint8_t size, uint64_t f0 = 0, uint64_t f1 = 0, uint64_t f2 = 0) {
  RefPacket r;
  r.type = type;
  r.offset = offset;
  r.size = size;
  r.f[0] = f0;
  r.f[1] = f1;
  r.f[2] = f2;
  return r;
}

}  // namespace

std::string ToString(const RefPacket& r) {
  return fmt::format("[{:#x}+{}] {} {:#x} {:#x} {:#x}", r.offset, r.size, PacketName(r.type), r.f[0], r.f[1], r.f[2]);
}

void PrintTo(const RefPacket& r, std::ostream* os) { *os << ToString(r); }

RefPacket FromOurs(const Packet& p) {
  const uint64_t o = p.offset;
  const uint8_t s = p.size;
  switch (p.type) {
    case PacketType::kTnt8:
    case PacketType::kTnt64:
      return Ref(p.type, o, s, p.tnt_size(), p.tnt_bits());
    case PacketType::kTip:
    case PacketType::kTipPge:
    case PacketType::kTipPgd:
    case PacketType::kFup:
      return Ref(p.type, o, s, p.ipbytes(), p.ip_payload());
    case PacketType::kModeExec:
      return Ref(p.type, o, s, p.cs_l(), p.cs_d());  // pt.libipt.mode_if: no IF
    case PacketType::kModeTsx:
      return Ref(p.type, o, s, p.intx(), p.txabort());
    case PacketType::kPip: return Ref(p.type, o, s, p.cr3(), p.nr());
    case PacketType::kVmcs: return Ref(p.type, o, s, p.vmcs_base());
    case PacketType::kCbr: return Ref(p.type, o, s, p.cbr());
    case PacketType::kTsc: return Ref(p.type, o, s, p.tsc());
    case PacketType::kTma: return Ref(p.type, o, s, p.tma_ctc(), p.tma_fc());
    case PacketType::kMtc: return Ref(p.type, o, s, p.mtc_ctc());
    case PacketType::kCyc: return Ref(p.type, o, s, p.cyc());
    case PacketType::kMnt: return Ref(p.type, o, s, p.mnt_payload());
    case PacketType::kExStop: return Ref(p.type, o, s, p.exstop_ip());
    case PacketType::kMwait: return Ref(p.type, o, s, p.mwait_hints(), p.mwait_ext());
    case PacketType::kPwre:
      // pt.libipt.pwre_hw: libipt's HW is byte 2 bit 3.
      return Ref(p.type, o, s, p.pwre_state(), p.pwre_sub_state(), (p.payload >> 3) & 1);
    case PacketType::kPwrx: {
      const uint8_t w = p.pwrx_wake_reason();
      return Ref(p.type, o, s, p.pwrx_last(), p.pwrx_deepest(), (w & 1) | ((w >> 2) & 1) << 1 | ((w >> 3) & 1) << 2);
    }
    case PacketType::kPtw: return Ref(p.type, o, s, p.ptw_payload(), (p.ext >> 5) & 3, p.ptw_ip());
    default:
      return Ref(p.type, o, s);
  }
}

RefPacket FromLibipt(const pt_packet& p, uint64_t offset) {
  const uint8_t s = p.size;
  const auto& pl = p.payload;
  switch (p.type) {
    case ppt_pad: return Ref(PacketType::kPad, offset, s);
    case ppt_psb: return Ref(PacketType::kPsb, offset, s);
    case ppt_psbend: return Ref(PacketType::kPsbEnd, offset, s);
    case ppt_stop: return Ref(PacketType::kTraceStop, offset, s);
    case ppt_ovf: return Ref(PacketType::kOvf, offset, s);
    case ppt_tnt_8: return Ref(PacketType::kTnt8, offset, s, pl.tnt.bit_size, pl.tnt.payload);
    case ppt_tnt_64: return Ref(PacketType::kTnt64, offset, s, pl.tnt.bit_size, pl.tnt.payload);
    case ppt_tip: return Ref(PacketType::kTip, offset, s, pl.ip.ipc, pl.ip.ip);
    case ppt_tip_pge: return Ref(PacketType::kTipPge, offset, s, pl.ip.ipc, pl.ip.ip);
    case ppt_tip_pgd: return Ref(PacketType::kTipPgd, offset, s, pl.ip.ipc, pl.ip.ip);
    case ppt_fup: return Ref(PacketType::kFup, offset, s, pl.ip.ipc, pl.ip.ip);
    case ppt_mode:
      if (pl.mode.leaf == pt_mol_exec) {
        return Ref(PacketType::kModeExec, offset, s, pl.mode.bits.exec.csl, pl.mode.bits.exec.csd);
      }
      return Ref(PacketType::kModeTsx, offset, s, pl.mode.bits.tsx.intx, pl.mode.bits.tsx.abrt);
    case ppt_pip: return Ref(PacketType::kPip, offset, s, pl.pip.cr3, pl.pip.nr);
    case ppt_vmcs: return Ref(PacketType::kVmcs, offset, s, pl.vmcs.base);
    case ppt_cbr: return Ref(PacketType::kCbr, offset, s, pl.cbr.ratio);
    case ppt_tsc: return Ref(PacketType::kTsc, offset, s, pl.tsc.tsc);
    case ppt_tma: return Ref(PacketType::kTma, offset, s, pl.tma.ctc, pl.tma.fc);
    case ppt_mtc: return Ref(PacketType::kMtc, offset, s, pl.mtc.ctc);
    case ppt_cyc: return Ref(PacketType::kCyc, offset, s, pl.cyc.value);
    case ppt_mnt: return Ref(PacketType::kMnt, offset, s, pl.mnt.payload);
    case ppt_exstop: return Ref(PacketType::kExStop, offset, s, pl.exstop.ip);
    case ppt_mwait: return Ref(PacketType::kMwait, offset, s, pl.mwait.hints, pl.mwait.ext);
    case ppt_pwre: return Ref(PacketType::kPwre, offset, s, pl.pwre.state, pl.pwre.sub_state, pl.pwre.hw);
    case ppt_pwrx:
      return Ref(PacketType::kPwrx, offset, s, pl.pwrx.last, pl.pwrx.deepest,
                 pl.pwrx.interrupt | pl.pwrx.store << 1 | pl.pwrx.autonomous << 2);
    case ppt_ptw: return Ref(PacketType::kPtw, offset, s, pl.ptw.payload, pl.ptw.plc, pl.ptw.ip);
    case ppt_invalid:
    case ppt_unknown:
      break;
  }
  return Ref(PacketType::kInvalid, offset, s);
}

bool ToLibipt(const Packet& p, pt_packet* out) {
  std::memset(out, 0, sizeof *out);
  auto& pl = out->payload;
  switch (p.type) {
    case PacketType::kPad: out->type = ppt_pad; return true;
    case PacketType::kPsb: out->type = ppt_psb; return true;
    case PacketType::kPsbEnd: out->type = ppt_psbend; return true;
    case PacketType::kTraceStop: out->type = ppt_stop; return true;
    case PacketType::kOvf: out->type = ppt_ovf; return true;
    case PacketType::kTnt8:
    case PacketType::kTnt64:
      out->type = p.type == PacketType::kTnt8 ? ppt_tnt_8 : ppt_tnt_64;
      pl.tnt.bit_size = static_cast<uint8_t>(p.tnt_size());
      pl.tnt.payload = p.tnt_bits();
      return true;
    case PacketType::kTip: out->type = ppt_tip; break;
    case PacketType::kTipPge: out->type = ppt_tip_pge; break;
    case PacketType::kTipPgd: out->type = ppt_tip_pgd; break;
    case PacketType::kFup: out->type = ppt_fup; break;
    case PacketType::kModeExec:
      if (p.payload & ~uint64_t{3}) return false;  // IF or reserved bits
      out->type = ppt_mode;
      pl.mode.leaf = pt_mol_exec;
      pl.mode.bits.exec.csl = p.cs_l();
      pl.mode.bits.exec.csd = p.cs_d();
      return true;
    case PacketType::kModeTsx:
      if (p.payload & 0x1c) return false;
      out->type = ppt_mode;
      pl.mode.leaf = pt_mol_tsx;
      pl.mode.bits.tsx.intx = p.intx();
      pl.mode.bits.tsx.abrt = p.txabort();
      return true;
    case PacketType::kPip: out->type = ppt_pip; pl.pip.cr3 = p.cr3(); pl.pip.nr = p.nr(); return true;
    case PacketType::kVmcs: out->type = ppt_vmcs; pl.vmcs.base = p.vmcs_base(); return true;
    case PacketType::kCbr:
      if (p.payload > 0xff) return false;  // reserved byte 3
      out->type = ppt_cbr;
      pl.cbr.ratio = p.cbr();
      return true;
    case PacketType::kTsc: out->type = ppt_tsc; pl.tsc.tsc = p.tsc(); return true;
    case PacketType::kTma: out->type = ppt_tma; pl.tma.ctc = p.tma_ctc(); pl.tma.fc = p.tma_fc(); return true;
    case PacketType::kMtc: out->type = ppt_mtc; pl.mtc.ctc = p.mtc_ctc(); return true;
    case PacketType::kCyc: out->type = ppt_cyc; pl.cyc.value = p.cyc(); return true;
    case PacketType::kMnt: out->type = ppt_mnt; pl.mnt.payload = p.mnt_payload(); return true;
    case PacketType::kExStop: out->type = ppt_exstop; pl.exstop.ip = p.exstop_ip(); return true;
    case PacketType::kMwait:
      out->type = ppt_mwait;
      pl.mwait.hints = p.mwait_hints();
      pl.mwait.ext = p.mwait_ext();
      return true;
    case PacketType::kPwre:
      if (p.payload & ~uint64_t{0xff08}) return false;  // pt.libipt.pwre_hw: only bit 3 is its HW
      out->type = ppt_pwre;
      pl.pwre.state = p.pwre_state();
      pl.pwre.sub_state = p.pwre_sub_state();
      pl.pwre.hw = (p.payload >> 3) & 1;
      return true;
    case PacketType::kPwrx: {
      if (p.payload & ~uint64_t{0xdff}) return false;
      const uint8_t w = p.pwrx_wake_reason();
      out->type = ppt_pwrx;
      pl.pwrx.last = p.pwrx_last();
      pl.pwrx.deepest = p.pwrx_deepest();
      pl.pwrx.interrupt = w & 1;
      pl.pwrx.store = (w >> 2) & 1;
      pl.pwrx.autonomous = (w >> 3) & 1;
      return true;
    }
    case PacketType::kPtw:
      out->type = ppt_ptw;
      pl.ptw.payload = p.ptw_payload();
      pl.ptw.plc = (p.ext >> 5) & 3;
      pl.ptw.ip = p.ptw_ip();
      return true;
    default:
      return false;
  }
  pl.ip.ipc = static_cast<pt_ip_compression>(p.ipbytes());
  pl.ip.ip = p.ip_payload();
  return true;
}

int ErrnoFromLibipt(int pte, uint64_t offset, uint64_t size) {
  switch (pt_errcode(pte)) {
    case pte_ok: return 0;
    case pte_eos: return offset >= size ? ENODATA : EMSGSIZE;
    case pte_bad_opc: return EILSEQ;
    case pte_bad_packet: return EBADMSG;
    case pte_nosync: return ENOTCONN;
    default: return EIO;
  }
}

LibiptDecoder::LibiptDecoder(std::span<const uint8_t> trace) : size_(trace.size()) {
  // Zeroes past the end: libipt's PSB search reads one byte beyond it (pt_find_psb).
  const size_t capacity = (trace.size() + 64) & ~size_t{63};
  buffer_ = static_cast<uint8_t*>(std::aligned_alloc(64, capacity));
  std::memset(buffer_, 0, capacity);
  if (!trace.empty()) std::memcpy(buffer_, trace.data(), trace.size());
  pt_config config;
  pt_config_init(&config);
  config.begin = buffer_;
  config.end = buffer_ + trace.size();
  decoder_ = pt_pkt_alloc_decoder(&config);
  if (decoder_ == nullptr) std::abort();
}

LibiptDecoder::~LibiptDecoder() {
  pt_pkt_free_decoder(decoder_);
  std::free(buffer_);
}

uint64_t LibiptDecoder::offset() const {
  uint64_t offset = 0;
  if (pt_pkt_get_offset(decoder_, &offset) < 0) return 0;
  return offset;
}

int LibiptDecoder::SyncForward(uint64_t* offset) {
  const int err = pt_pkt_sync_forward(decoder_);
  if (err < 0) return ENODATA;
  *offset = this->offset();
  return 0;
}

int LibiptDecoder::SyncBackward(uint64_t* offset) {
  const int err = pt_pkt_sync_backward(decoder_);
  if (err < 0) return ENODATA;
  *offset = this->offset();
  return 0;
}

int LibiptDecoder::SyncSet(uint64_t offset) { return pt_pkt_sync_set(decoder_, offset) < 0 ? EINVAL : 0; }

int LibiptDecoder::Next(RefPacket* packet) {
  pt_packet p;
  const int n = pt_pkt_next(decoder_, &p, sizeof p);
  const uint64_t after = offset();
  if (n < 0) return ErrnoFromLibipt(n, after, size_);
  *packet = FromLibipt(p, after - static_cast<uint64_t>(n));
  return 0;
}

bool LibiptEncode(const std::vector<pt_packet>& packets, std::vector<uint8_t>* out) {
  size_t size = 64;
  for (size_t i = 0; i < packets.size(); ++i) size += 16;
  std::vector<uint8_t> buf(size);
  pt_config config;
  pt_config_init(&config);
  config.begin = buf.data();
  config.end = buf.data() + buf.size();
  pt_encoder* enc = pt_alloc_encoder(&config);
  if (enc == nullptr) return false;
  bool ok = true;
  for (const pt_packet& p : packets) {
    if (pt_enc_next(enc, &p) < 0) {
      ok = false;
      break;
    }
  }
  uint64_t used = 0;
  pt_enc_get_offset(enc, &used);
  pt_free_encoder(enc);
  buf.resize(used);
  *out = std::move(buf);
  return ok;
}

}  // namespace perftest::pt::testing
