// Finding PSB packets to synchronize on (SDM §33.4.2.17 "Packet Stream
// Boundary (PSB) Packet": 02h 82h repeated 8 times, 16 bytes; "the decoder
// should use PSB to find the start of packets").
//
//   std::optional<uint64_t> psb = pt::FindPsbForward(trace, 0);
//   if (psb) decoder.SyncSet(*psb);
//
// The PSB pattern can also appear in the payload of the packet just before a
// PSB (a TSC or TIP whose last bytes are 02h 82h), so a run of the pattern
// longer than 16 bytes is ambiguous. The rule here is libipt 2.0.5's
// (pt_sync.c), so that both decoders resynchronize at the same place: scan
// 8-byte words aligned to the start of the trace (libipt aligns to the
// address; the two agree for an 8-aligned buffer, which every AUX area is);
// at a word that is all pattern (either phase), follow the run of 02h 82h
// pairs that starts at the *next* word (or the byte after it, if that is not
// 02h) to its end; the PSB is the 16 bytes before that end, if they are a
// complete PSB. A PSB is thus recognised at the end of a run, because the
// packet after a PSB never starts with 02h 82h (except another PSB).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace perftest::pt {

// A complete PSB starts at `offset` (all 16 bytes inside the trace).
bool IsPsbAt(std::span<const uint8_t> trace, uint64_t offset);

// The first PSB at or after `from`, scanning words from align_up(from, 8) as
// described above. std::nullopt if there is none, or if `from` is past the end.
std::optional<uint64_t> FindPsbForward(std::span<const uint8_t> trace, uint64_t from);

// The first PSB found scanning words backward from align_down(from, 8) - 8,
// as described above. The PSB found may start at or after `from` when the run
// extends past it (as in libipt: SyncBackward from a PSB can find that PSB
// again). std::nullopt if there is none; `from` is clamped to the size.
std::optional<uint64_t> FindPsbBackward(std::span<const uint8_t> trace, uint64_t from);

}  // namespace perftest::pt
