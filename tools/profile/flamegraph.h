// A flame graph of folded stacks as one self-contained SVG (no script, no
// external resources): one rectangle per frame, width proportional to its
// samples, callers below callees (root at the bottom, as flamegraph.pl draws),
// each with a <title> tooltip "name (N samples, P%)".
//
//   std::string svg = FlameGraphSvg(Fold(counts, sym, opt), "perftest profile");
#pragma once

#include <string>
#include <vector>

#include "tools/profile/output.h"

namespace perftest::profile {

struct FlameGraphOptions {
  int width = 1200;         // px
  int frame_height = 16;    // px per stack level
  double min_width = 0.1;   // px: narrower frames are left out
};

std::string FlameGraphSvg(const std::vector<FoldedStack>& stacks, const std::string& title,
                          const FlameGraphOptions& opt = {});

}  // namespace perftest::profile
