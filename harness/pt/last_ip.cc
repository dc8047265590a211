#include "harness/pt/last_ip.h"

#include <cerrno>

namespace perftest::pt {
namespace {

uint64_t SignExtend48(uint64_t v) {
  return static_cast<uint64_t>(static_cast<int64_t>(v << 16) >> 16);
}

}  // namespace

Result<void> LastIp::Update(uint8_t ipbytes, uint64_t payload) {
  if (ipbytes == 0b000) {
    suppressed_ = true;
    return Result<void>::Ok();
  }
  if (IpPayloadSize(ipbytes) < 0) return Result<void>::Failure(EBADMSG, "LastIp::Update(ipbytes=" + std::to_string(ipbytes) + ")");
  ip_ = Decompress(ip_, ipbytes, payload);
  have_ip_ = true;
  suppressed_ = false;
  return Result<void>::Ok();
}

Result<void> LastIp::Update(const Packet& packet) {
  if (!packet.is_ip()) {
    return Result<void>::Failure(EINVAL, "LastIp::Update(" + std::string(PacketName(packet.type)) + ")");
  }
  return Update(packet.ipbytes(), packet.payload);
}

Result<uint64_t> LastIp::ip() const {
  if (!have_ip_) return Result<uint64_t>::Failure(ENOENT, "LastIp::ip()");
  if (suppressed_) return Result<uint64_t>::Failure(EADDRNOTAVAIL, "LastIp::ip()");
  return Result<uint64_t>::Ok(ip_, "LastIp::ip()");
}

LastIp::Compressed LastIp::Compress(uint64_t last, bool have_last, uint64_t ip) {
  if (have_last && (ip >> 16) == (last >> 16)) return {0b001, ip & 0xffff};
  if (have_last && (ip >> 32) == (last >> 32)) return {0b010, ip & 0xffffffff};
  if (SignExtend48(ip) == ip) return {0b011, ip & 0xffffffffffff};
  if (have_last && (ip >> 48) == (last >> 48)) return {0b100, ip & 0xffffffffffff};
  return {0b110, ip};
}

}  // namespace perftest::pt
