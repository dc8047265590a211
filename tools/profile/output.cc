#include "tools/profile/output.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace perftest::profile {
namespace {

// profile.py's need_delimiter: -d, and both stacks shown.
bool NeedDelimiter(const OutputOptions& opt) {
  return opt.delimited && !(opt.kernel_stacks_only || opt.user_stacks_only);
}

// User frames of `key`, innermost first (inlined frames expanded).
std::vector<Frame> UserFrames(const StackKey& key, Symbolizer& sym) {
  std::vector<Frame> out;
  for (size_t i = 0; i < key.user.size(); ++i) {
    for (Frame& f : sym.User(key.pid, key.user[i], i > 0)) out.push_back(std::move(f));
  }
  return out;
}

std::vector<Frame> KernelFrames(const StackKey& key, Symbolizer& sym) {
  std::vector<Frame> out;
  for (uint64_t ip : key.kernel) out.push_back(sym.Kernel(ip));
  return out;
}

std::string TextFrame(const Frame& f) {
  if (f.name == "[unknown]") return f.name;
  if (f.inlined) return fmt::format("{} (inlined)", f.name);
  return fmt::format("{}+0x{:x}", f.name, f.offset);
}

}  // namespace

std::vector<FoldedStack> Fold(const StackCounts& counts, Symbolizer& sym, const OutputOptions& opt) {
  std::vector<FoldedStack> out;
  for (const auto& [key, n] : counts.SortedAscending()) {
    std::vector<std::string> line{key.comm};
    if (!opt.kernel_stacks_only) {
      if (key.user_missing) {
        line.push_back("[Missed User Stack]");
      } else {
        std::vector<Frame> u = UserFrames(key, sym);
        for (auto it = u.rbegin(); it != u.rend(); ++it) line.push_back(it->name);
      }
    }
    if (!opt.user_stacks_only) {
      const bool has_user = !key.user.empty() || key.user_missing;
      const bool has_kernel = !key.kernel.empty() || key.kernel_missing;
      if (NeedDelimiter(opt) && has_user && has_kernel) line.push_back("-");
      if (key.kernel_missing) {
        line.push_back("[Missed Kernel Stack]");
      } else {
        std::vector<Frame> k = KernelFrames(key, sym);
        for (auto it = k.rbegin(); it != k.rend(); ++it) line.push_back(it->name);
      }
    }
    out.emplace_back(std::move(line), n);
  }
  // Stacks whose addresses differ but whose names agree print as one line,
  // as flamegraph.pl's stackcollapse would merge them; order stays ascending.
  std::map<std::vector<std::string>, uint64_t> merged;
  for (auto& [frames, n] : out) merged[frames] += n;
  out.assign(merged.begin(), merged.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

std::string FormatFolded(const std::vector<FoldedStack>& stacks) {
  std::string s;
  for (const auto& [frames, n] : stacks) {
    for (size_t i = 0; i < frames.size(); ++i) {
      if (i) s += ';';
      s += frames[i];
    }
    s += fmt::format(" {}\n", n);
  }
  return s;
}

std::string FormatText(const StackCounts& counts, Symbolizer& sym, const OutputOptions& opt) {
  std::string s;
  for (const auto& [key, n] : counts.SortedAscending()) {
    const bool has_user = !key.user.empty() || key.user_missing;
    const bool has_kernel = !key.kernel.empty() || key.kernel_missing;
    if (!opt.user_stacks_only) {
      if (key.kernel_missing) {
        s += "    [Missed Kernel Stack]\n";
      } else {
        for (const Frame& f : KernelFrames(key, sym)) s += "    " + TextFrame(f) + "\n";
      }
    }
    if (!opt.kernel_stacks_only) {
      if (NeedDelimiter(opt) && has_user && has_kernel) s += "    --\n";
      if (key.user_missing) {
        s += "    [Missed User Stack]\n";
      } else {
        for (const Frame& f : UserFrames(key, sym)) s += "    " + TextFrame(f) + "\n";
      }
    }
    s += fmt::format("    {:<16} {} ({})\n", "-", key.comm, key.pid);
    s += fmt::format("        {}\n\n", n);
  }
  return s;
}

std::string MissingStacksWarning(const StackCounts& counts) {
  if (counts.missing() == 0) return "";
  return fmt::format("WARNING: {} stack traces could not be displayed.{}\n", counts.missing(),
                     counts.storage_full() ? " Consider increasing --stack-storage-size." : "");
}

}  // namespace perftest::profile
