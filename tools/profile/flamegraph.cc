#include "tools/profile/flamegraph.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

namespace perftest::profile {
namespace {

struct Node {
  uint64_t total = 0;
  std::map<std::string, std::unique_ptr<Node>> children;  // by name: a stable, alphabetical order
};

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A warm colour from the name (flamegraph.pl's "hot" palette, hashed so a
// function keeps its colour between graphs).
std::string Colour(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  int r = 205 + static_cast<int>(h % 50);
  int g = static_cast<int>((h >> 8) % 230);
  int b = static_cast<int>((h >> 16) % 55);
  return fmt::format("rgb({},{},{})", r, g, b);
}

int Depth(const Node& n) {
  int d = 0;
  for (const auto& [_, c] : n.children) d = std::max(d, 1 + Depth(*c));
  return d;
}

struct Writer {
  const FlameGraphOptions& opt;
  double px_per_sample;
  uint64_t grand_total;
  int height;
  std::string out;

  void Draw(const std::string& name, const Node& n, double x, int level) {
    const double w = n.total * px_per_sample;
    if (w < opt.min_width) return;
    const int y = height - (level + 1) * opt.frame_height - 4;
    out += fmt::format(
        "<g><title>{} ({} samples, {:.2f}%)</title><rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
        "fill=\"{}\" rx=\"2\"/>",
        Escape(name), n.total, 100.0 * n.total / grand_total, x, y, w, opt.frame_height - 1, Colour(name));
    const size_t fit = static_cast<size_t>(w / 7);  // ~7 px per character at 12 px
    if (fit >= 3) {
      std::string label = name.size() <= fit ? name : name.substr(0, fit - 2) + "..";
      out += fmt::format("<text x=\"{:.2f}\" y=\"{}\">{}</text>", x + 3, y + opt.frame_height - 4, Escape(label));
    }
    out += "</g>\n";
    double cx = x;
    for (const auto& [cname, c] : n.children) {
      Draw(cname, *c, cx, level + 1);
      cx += c->total * px_per_sample;
    }
  }
};

}  // namespace

std::string FlameGraphSvg(const std::vector<FoldedStack>& stacks, const std::string& title,
                          const FlameGraphOptions& opt) {
  Node root;
  for (const auto& [frames, n] : stacks) {
    root.total += n;
    Node* cur = &root;
    for (const std::string& f : frames) {
      auto& c = cur->children[f];
      if (!c) c = std::make_unique<Node>();
      c->total += n;
      cur = c.get();
    }
  }
  const int pad_top = 40;
  const int depth = Depth(root) + 1;  // + the "all" frame
  const int height = pad_top + depth * opt.frame_height + 8;
  const double usable = opt.width - 20;
  Writer w{opt, root.total ? usable / root.total : 0.0, std::max<uint64_t>(root.total, 1), height, {}};
  w.out = fmt::format(
      "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      "<svg version=\"1.1\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" xmlns=\"http://www.w3.org/2000/svg\">\n"
      "<style>text {{ font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }} "
      "rect:hover {{ stroke: #000; stroke-width: 0.5; }}</style>\n"
      "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f8f8f0\"/>\n"
      "<text x=\"{}\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">{}</text>\n",
      opt.width, height, opt.width, height, opt.width / 2, Escape(title));
  if (root.total) w.Draw(fmt::format("all"), root, 10, 0);
  w.out += "</svg>\n";
  return w.out;
}

}  // namespace perftest::profile
