// libFuzzer target for reading a `perftest pt record` capture and decoding
// it (harness/pt/capture_file.h, itrace.h): ParseCapture(), CaptureTraceOf()
// (META JSON, side-band records, AUX chunks and their flags) and
// SynthesizeItrace() over the trace it gives, split where data was lost.
// Beyond "no crash, no out-of-bounds read" (ASan/UBSan), it traps when a
// contract breaks:
//   - the trace is exactly the AUX chunks' bytes, and the lost-data offsets
//     rise strictly inside it;
//   - every "Lost trace data" error is at one of those offsets, one each;
//   - decoding stays within the trace: every error's offset is in it.
//
// Input: the chunks of a capture (the fuzzer writes the "PTCAPv1\0" magic
// before them, so that every input is read as one): {u32 type; u32 source;
// u64 size; payload; padding to 8}...
//
//   build-fuzz/bin/pt_capture_fuzzer -max_total_time=60 -max_len=65536 CORPUS_DIR
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness/pt/capture_file.h"
#include "harness/pt/image.h"
#include "harness/pt/itrace.h"
#include "harness/pt/fuzz/fuzz_check.h"

namespace {

using namespace perftest::pt;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(std::begin(kCaptureMagic), std::end(kCaptureMagic));
  bytes.insert(bytes.end(), data, data + size);
  perftest::Result<Capture> c = ParseCapture(bytes, "fuzz");
  if (!c.ok()) {
    FUZZ_CHECK(c.error() == EBADMSG);
    return 0;
  }
  // (A directory that does not exist: no code files beside the capture.)
  perftest::Result<CaptureTrace> t = CaptureTraceOf(*c, "/nonexistent-perftest-fuzz/fuzz.ptcap");
  if (!t.ok()) {
    FUZZ_CHECK(t.error() == EBADMSG);
    return 0;
  }
  size_t aux_bytes = 0;
  for (const CaptureChunk& ch : c->chunks)
    if (ch.type == kCaptureAux) aux_bytes += ch.payload.size() - 24;
  FUZZ_CHECK(t->trace.size() == aux_bytes);
  for (size_t i = 0; i < t->data_lost.size(); ++i) {
    FUZZ_CHECK(t->data_lost[i] < t->trace.size());
    FUZZ_CHECK(i == 0 || t->data_lost[i] > t->data_lost[i - 1]);
  }
  const Image image;  // no code: the flow stops at each sync point; quick mode walks the packets
  for (const char* letters : {"bepwx", "beq"}) {
    perftest::Result<ItraceOptions> o = ParseItrace(letters);
    FUZZ_CHECK(o.ok());
    ItraceSynth synth(*o);
    SynthesizeItrace(t->trace, image, *o, {}, &synth, nullptr, t->data_lost);
    size_t lost = 0;
    for (const ItraceSample& s : synth.samples()) {
      if (s.event != "error") continue;
      FUZZ_CHECK(s.offset <= t->trace.size());
      if (s.error == ENOSPC) {
        FUZZ_CHECK(lost < t->data_lost.size() && s.offset == t->data_lost[lost]);
        ++lost;
      }
    }
    FUZZ_CHECK(lost == t->data_lost.size());
  }
  return 0;
}
