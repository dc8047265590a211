// Output of a profile in profile.py's two layouts (bcc tools/profile.py):
//
// Text (default), one block per stack, by increasing count:
//     kernel frames, innermost first         (absent with -U)
//     --                                     (with -d, when both stacks exist)
//     user frames, innermost first           (absent with -K)
//     -                comm (pid)
//         count
// Folded (-f), one line per stack, by increasing count, what flamegraph.pl and
// speedscope read:  comm;user frames outermost first;-;kernel frames count
// ("-" only with -d). A stack that could not be stored prints as
// "[Missed User Stack]" / "[Missed Kernel Stack]".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/profile/stack_counts.h"
#include "tools/profile/symbolizer.h"

namespace perftest::profile {

struct OutputOptions {
  bool delimited = false;          // -d
  bool user_stacks_only = false;   // -U
  bool kernel_stacks_only = false; // -K
};

// One folded stack: frames outermost first (comm first), and its count.
using FoldedStack = std::pair<std::vector<std::string>, uint64_t>;

std::vector<FoldedStack> Fold(const StackCounts& counts, Symbolizer& sym, const OutputOptions& opt);
std::string FormatFolded(const std::vector<FoldedStack>& stacks);
std::string FormatText(const StackCounts& counts, Symbolizer& sym, const OutputOptions& opt);

// profile.py's closing warning, or "" when no stack was missed.
std::string MissingStacksWarning(const StackCounts& counts);

}  // namespace perftest::profile
