// libipt 2.0.5's instruction and block decoders (pt_insn_next, pt_blk_next)
// as the reference for the flow decoder — tests and benchmarks only.
//
//   pt::testing::FlowLog ref = pt::testing::LibiptInsnFlow(trace, image);
//   pt::testing::FlowLog ours = pt::testing::OurInsnFlow(trace, image);
//   EXPECT_EQ(pt::testing::DiffFlow(ours, ref), "");
//
// Protocol on both sides: sync forward (a failed sync, other than at the
// end of the trace, is recorded as an error); next until an error; record
// the error; sync forward again; until no PSB is left. Each executed
// instruction (IP, size, class as libipt's pt_insn_class) and each error
// is an entry. libipt reads the image through a pt_image read callback on
// our Image (the differential is about the flow, not about image loading).
// A walk of kEndlessLoopInsns instructions without the decoder's trace
// offset moving is an endless loop of branches that need no packet: libipt
// decodes it for ever (pt_insn_next has no limit), our decoder fails after
// Options::max_steps_without_packet blocks (EBADMSG); both walks end there
// with an error entry (libipt's kLibiptEndlessLoop, our ELOOP) that
// SameFlowError() takes as the same error, then sync forward again.
#pragma once

#include <intel-pt.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/pt/flow_decoder.h"
#include "harness/pt/image.h"
#include "harness/pt/insn.h"

namespace perftest::pt::testing {

struct FlowEntry {
  enum Kind : uint8_t { kInsn, kError, kSync, kEvent } kind = kInsn;
  uint8_t size = 0;
  uint8_t iclass = 0;  // pt_insn_class
  bool has_ip = false; // kEvent: the event has an IP (not suppressed, and its type has one)
  uint64_t ip = 0;     // kInsn: the IP; kSync: the PSB offset; kEvent: the event's IP (has_ip)
  int code = 0;        // kError: the error (libipt's pte_* or our errno), for messages only;
                       // kEvent: the event type (FlowEvent::Type)
  uint64_t offset = 0; // kError: the trace offset, for messages only
  uint64_t payload = 0;  // kEvent: EventPayload()
};
std::string ToString(const FlowEntry& e);

struct FlowLog {
  std::vector<FlowEntry> entries;
  uint64_t insns = 0;
  uint64_t errors = 0;
};

// libipt's class for an instruction we classified.
pt_insn_class LibiptClass(const Insn& insn);

inline constexpr uint64_t kEndlessLoopInsns = uint64_t{1} << 20;
inline constexpr int kLibiptEndlessLoop = -1000;  // (no pte_* code is this)

// With `events`, each event (pt_insn_event; our FlowEvent) is an entry too,
// where it comes in the stream of instructions: its type (libipt's mapped to
// ours: ptev_async_paging is kPaging, ptev_async_vmcs kVmcs; libipt's
// ptev_tick and our kTsc, which the other has not, are left out), its IP
// where the type has one and it is not suppressed, and EventPayload().
FlowLog LibiptInsnFlow(std::span<const uint8_t> trace, const Image& image, bool events = false);
FlowLog OurInsnFlow(std::span<const uint8_t> trace, const Image& image, bool events = false);

// An event's fields in one comparable value, the same for both decoders:
//   async-branch, async-disabled  the source IP (`from`)
//   exec-mode                      ExecMode
//   tsx                            InTX | TXAbort << 1
//   paging                         CR3;  vmcs  the VMCS base
//   mwait                          hints | extensions << 32
//   pwre                           C-state | sub C-state << 8 (HW left out:
//                                  declared divergence pt.libipt.pwre_hw —
//                                  libipt 2.0.5 reads it from bit 3, the SDM
//                                  §33.4.2.24 puts it in bit 7)
//   pwrx                           last | deepest << 4 | interrupt << 8 |
//                                  store << 9 | autonomous << 10
//   ptwrite, cbr, mnt              the payload, the ratio, the payload
//   others                         0
uint64_t EventPayload(const FlowEvent& e);
// Whether events of `type` carry an IP to compare.
bool EventHasIp(FlowEvent::Type type);

// "" if the instruction streams are identical; else the first difference
// with a few entries of context. Errors compare by position only (libipt's
// and our error codes differ), and the final end-of-trace entries are equal.
std::string DiffFlow(const FlowLog& ours, const FlowLog& ref);
// As DiffFlow, but only up to the first error of either log (for corrupted
// traces, where the two decoders may give up at different instructions).
std::string DiffFlowUntilError(const FlowLog& ours, const FlowLog& ref);

// Whether our flow error `ours` (an errno, flow_decoder.h "Errors") is the
// error libipt reported as `libipt` (a negative pte_* code), by meaning:
//   ENODATA, EMSGSIZE  -pte_eos (the end of the trace; a packet cut off by it)
//   ENXIO              -pte_nomap (no code at the IP)
//   EILSEQ             -pte_bad_insn (not an instruction), -pte_bad_opc (not a packet)
//   EBADMSG            -pte_bad_packet (a malformed packet) or the trace not
//                      fitting the code: -pte_bad_query, -pte_bad_context,
//                      -pte_noip, -pte_ip_suppressed, -pte_bad_retcomp,
//                      -pte_retstack_empty, -pte_no_enable, -pte_nomem
//                      (libipt's event queue full of events whose packet
//                      never came), -pte_bad_status_update (a mid-flow
//                      PSB+'s MODE.Exec against the current mode)
//   ENOTCONN           -pte_nosync
//   ELOOP, EBADMSG     kLibiptEndlessLoop (the walk's cap, above; our decoder's
//                      own limit is EBADMSG)
bool SameFlowError(int ours, int libipt);
// As DiffFlow, up to and including the first error of each log, for
// corrupted traces (after an error the decoders may resynchronize
// differently):
//   - the entries before the earlier of the two first errors are identical;
//   - the log whose first error comes later has only instructions (no sync
//     point, no error) between that point and its own first error: the two
//     decoders notice a bad or missing packet at different instructions
//     (declared divergence pt.libipt.error_point: pt_insn_next withholds the
//     branch whose outcome it could not read, and reads packets ahead of the
//     instruction it reports; our decoder reports every instruction whose
//     flow the packets before the bad one determine);
//   - the two first errors are the same error (SameFlowError).
// `lead` (when given) receives how many more instructions ours reported
// before its first error than libipt (negative: fewer).
std::string DiffFlowThroughFirstError(const FlowLog& ours, const FlowLog& ref, int64_t* lead = nullptr);

// A libipt image whose read callback serves `image` (for pt_insn/pt_blk).
struct LibiptImage {
  explicit LibiptImage(const Image& image);
  ~LibiptImage();
  LibiptImage(const LibiptImage&) = delete;
  LibiptImage& operator=(const LibiptImage&) = delete;
  pt_image* get() const { return image_; }

 private:
  const Image& ours_;
  pt_image* image_;
};

// The image's sections written to a file and loaded through libipt's section
// cache (pt_iscache_add_file + pt_image_add_cached), as a real user of
// pt_blk_next does (for the benchmark).
struct LibiptCachedImage {
  explicit LibiptCachedImage(const Image& image);
  ~LibiptCachedImage();
  LibiptCachedImage(const LibiptCachedImage&) = delete;
  LibiptCachedImage& operator=(const LibiptCachedImage&) = delete;
  pt_image* get() const { return image_; }
  bool ok() const { return ok_; }

 private:
  pt_image_section_cache* iscache_ = nullptr;
  pt_image* image_ = nullptr;
  std::string path_;
  bool ok_ = false;
};

}  // namespace perftest::pt::testing
