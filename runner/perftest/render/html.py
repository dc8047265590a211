"""HTML renderer: one self-contained page (no external files, scripts or fonts).

Layout, top to bottom: title and verdict; summary figures (one card per
status, each a filter toggle); an inline SVG bar chart of the statuses per
suite; a filter bar (status checkboxes and a text search over feature ids,
test names and reasons); one table per suite, failing cases first; the run
and host details. From schema 1.2 the kernel's health is a line under the
verdict, a tag with the log lines on each flagged case and a "Kernel
health" table at the end. Without JavaScript every row is shown and the filter bar
is hidden; the small inline script only toggles rows.

render(doc) -> str (UTF-8 text, starts with <!DOCTYPE html>).
"""

import html

from .. import health as _health
from . import common

# Status -> (label, colour). Colours are readable on white and distinct for
# the common kinds of colour blindness in the pass/fail/skip triple.
STATUS_STYLE = {
    "pass": ("pass", "#1a7f37"),
    "fail": ("fail", "#cf222e"),
    "crash": ("crash", "#8250df"),
    "timeout": ("timeout", "#bc4c00"),
    "error": ("error", "#a0111f"),
    "skip": ("skip", "#b08800"),
    "not_run": ("not run", "#6e7781"),
}
CHART_ORDER = ("pass", "fail", "crash", "timeout", "error", "skip", "not_run")

_CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; --soft:#f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; padding: 24px 32px 48px; max-width: 1400px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
.sub { color: var(--muted); margin: 0 0 12px; }
.verdict { display: inline-block; padding: 3px 10px; border-radius: 6px; color: #fff;
           font-weight: 600; margin-right: 8px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 16px 0; }
.card { border: 1px solid var(--line); border-top: 5px solid var(--c); border-radius: 8px;
        padding: 8px 14px; min-width: 96px; background: var(--bg); cursor: pointer;
        text-align: left; font: inherit; color: inherit; }
.card .n { font-size: 28px; font-weight: 650; line-height: 1.1; color: var(--c); }
.card .l { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card.off { opacity: .35; }
.card.total { --c: var(--fg); cursor: default; }
.chart { margin: 8px 0 4px; max-width: 100%; height: auto; }
.chart text { font: 12px system-ui, sans-serif; fill: var(--fg); }
.chart .muted { fill: var(--muted); }
.filters { display: none; flex-wrap: wrap; align-items: center; gap: 6px 14px; padding: 8px 12px;
           background: var(--soft); border: 1px solid var(--line); border-radius: 8px;
           position: sticky; top: 0; z-index: 1; }
.js .filters { display: flex; }
.filters label { white-space: nowrap; cursor: pointer; }
.filters input[type=search] { min-width: 240px; padding: 3px 6px; border: 1px solid var(--line);
                              border-radius: 5px; font: inherit; }
.filters button { font: inherit; padding: 2px 8px; border: 1px solid var(--line); border-radius: 5px;
                  background: var(--bg); cursor: pointer; }
.shown { color: var(--muted); margin-left: auto; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 8px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.badge { display: inline-block; min-width: 62px; text-align: center; padding: 1px 6px; border-radius: 10px;
         color: #fff; font-size: 12px; font-weight: 600; background: var(--c); }
.tag { display: inline-block; padding: 0 6px; margin: 0 4px 2px 0; border-radius: 8px;
       border: 1px solid var(--line); font-size: 12px; color: var(--muted); }
.reason { white-space: pre-wrap; word-break: break-word; max-width: 70ch; }
details > summary { cursor: pointer; }
.suite-counts { color: var(--muted); font-weight: normal; font-size: 14px; margin-left: 8px; }
.empty { color: var(--muted); font-style: italic; }
.kv th { width: 220px; background: none; color: var(--muted); font-weight: normal; }
.health { display: inline-block; padding: 4px 10px; border-radius: 6px; border: 1px solid var(--c);
          border-left: 6px solid var(--c); margin: 0 0 8px; }
.tag.kern { color: #fff; background: #a0111f; border-color: #a0111f; font-weight: 600; }
.klog { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap;
        color: #a0111f; margin: 2px 0; }
"""

_JS = r"""
(function () {
  document.documentElement.className += " js";
  var boxes = Array.prototype.slice.call(document.querySelectorAll(".filters input[data-status]"));
  var search = document.getElementById("q");
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-status]"));
  var cards = Array.prototype.slice.call(document.querySelectorAll(".card[data-status]"));
  function on(status) {
    for (var i = 0; i < boxes.length; i++) if (boxes[i].dataset.status === status) return boxes[i].checked;
    return true;
  }
  function apply() {
    var q = (search.value || "").toLowerCase(), shown = 0;
    rows.forEach(function (r) {
      var ok = on(r.dataset.status) && (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
      r.hidden = !ok; if (ok) shown++;
    });
    document.querySelectorAll("section.suite").forEach(function (s) {
      var any = s.querySelector("tr[data-status]:not([hidden])");
      var note = s.querySelector(".nomatch");
      if (note) note.hidden = !!any || !s.querySelector("tr[data-status]");
    });
    cards.forEach(function (c) { c.classList.toggle("off", !on(c.dataset.status)); });
    document.getElementById("shown").textContent = shown + " of " + rows.length + " cases shown";
  }
  boxes.forEach(function (b) { b.addEventListener("change", apply); });
  search.addEventListener("input", apply);
  cards.forEach(function (c) {
    c.addEventListener("click", function () {
      var only = boxes.filter(function (b) { return b.checked; });
      var alone = only.length === 1 && only[0].dataset.status === c.dataset.status;
      boxes.forEach(function (b) { b.checked = alone || b.dataset.status === c.dataset.status; });
      apply();
    });
  });
  document.getElementById("all").addEventListener("click", function () {
    boxes.forEach(function (b) { b.checked = true; }); search.value = ""; apply();
  });
  document.getElementById("problems").addEventListener("click", function () {
    boxes.forEach(function (b) { b.checked = ["pass", "skip"].indexOf(b.dataset.status) < 0; });
    apply();
  });
  apply();
})();
"""


def esc(value):
    return html.escape("" if value is None else str(value), quote=True)


def _verdict_colour(verdict):
    if verdict.startswith("PASSED"):
        return STATUS_STYLE["pass"][1]
    if verdict.startswith("INTERRUPTED"):
        return STATUS_STYLE["not_run"][1]
    return STATUS_STYLE["fail"][1]


def _statuses_present(doc):
    present = [s for s in CHART_ORDER if doc["summary"].get(s, 0)]
    # pass, fail and skip are always offered, so "0 fail" is visible at a glance.
    base = [s for s in CHART_ORDER if s in ("pass", "fail", "skip") or s in present]
    return base


def _cards(doc, statuses):
    s = doc["summary"]
    out = ['<div class="cards">',
           '<div class="card total"><div class="n">%d</div><div class="l">cases</div></div>'
           % s["total"]]
    for st in statuses:
        label, colour = STATUS_STYLE[st]
        out.append('<button type="button" class="card" data-status="%s" style="--c:%s" '
                   'title="show only %s (click again for all)"><div class="n">%d</div>'
                   '<div class="l">%s</div></button>'
                   % (st, colour, esc(label), s.get(st, 0), esc(label)))
    flaky = sum(1 for c in doc["cases"] if c.get("flaky"))
    if flaky:
        out.append('<div class="card total" style="--c:#bc4c00"><div class="n">%d</div>'
                   '<div class="l">flaky</div></div>' % flaky)
    xfail = sum(1 for c in doc["cases"] if common.is_xfail(c))
    if xfail:
        out.append('<div class="card total"><div class="n">%d</div>'
                   '<div class="l">expected failures</div></div>' % xfail)
    out.append("</div>")
    return out


def chart_svg(doc):
    """Inline SVG: one horizontal stacked bar per suite, segments per status."""
    suites = common.suite_counts(doc)
    label_w, bar_w, row_h, top = 150, 640, 26, 26
    longest = max([len(s) for s, _ in suites] + [5])
    label_w = min(260, max(label_w, 8 * longest + 16))
    width = label_w + bar_w + 240
    height = top + row_h * max(1, len(suites)) + 8
    out = ['<svg class="chart" role="img" aria-labelledby="chart-title" width="%d" height="%d" '
           'viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">' % (width, height, width, height),
           '<title id="chart-title">Cases by status per suite</title>']
    # legend
    x = label_w
    for st in CHART_ORDER:
        if st not in ("pass", "fail", "skip") and not doc["summary"].get(st):
            continue
        label, colour = STATUS_STYLE[st]
        out.append('<rect x="%d" y="6" width="12" height="12" rx="2" fill="%s"/>'
                   '<text x="%d" y="16">%s</text>' % (x, colour, x + 16, esc(label)))
        x += 26 + 7 * len(label) + 10
    if not suites:
        out.append('<text class="muted" x="0" y="%d">no suites</text>' % (top + 16))
    biggest = max([c["total"] for _, c in suites] + [1])
    for i, (suite, counts) in enumerate(suites):
        y = top + i * row_h
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                   % (label_w - 10, y + 16, esc(suite)))
        total = counts["total"]
        # Bars share one scale so suites of different sizes compare honestly.
        x = float(label_w)
        for st in CHART_ORDER:
            n = counts.get(st, 0)
            if not n:
                continue
            w = bar_w * n / biggest
            label, colour = STATUS_STYLE[st]
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="18" fill="%s">'
                       '<title>%s: %d %s</title></rect>'
                       % (x, y + 3, max(w, 1.0), colour, esc(suite), n, esc(label)))
            if w >= 22:
                out.append('<text x="%.1f" y="%d" text-anchor="middle" style="fill:#fff">%d</text>'
                           % (x + w / 2, y + 16, n))
            x += w
        if total == 0:
            out.append('<text class="muted" x="%d" y="%d">no cases</text>' % (label_w, y + 16))
        else:
            parts = ["%d %s" % (counts.get(st, 0), STATUS_STYLE[st][0]) for st in ("pass", "fail", "skip")
                     if counts.get(st, 0)]
            other = sum(counts.get(st, 0) for st in ("crash", "timeout", "error", "not_run"))
            if other:
                parts.append("%d other" % other)
            out.append('<text class="muted" x="%.1f" y="%d">%s</text>'
                       % (x + 8, y + 16, esc(", ".join(parts))))
    out.append("</svg>")
    return "\n".join(out)


def _filters(doc, statuses):
    out = ['<div class="filters" role="group" aria-label="filter cases">', "<strong>Show:</strong>"]
    for st in statuses:
        label, colour = STATUS_STYLE[st]
        out.append('<label><input type="checkbox" data-status="%s" checked> '
                   '<span class="badge" style="--c:%s">%s</span> %d</label>'
                   % (st, colour, esc(label), doc["summary"].get(st, 0)))
    out.append('<input id="q" type="search" placeholder="search feature, test, reason"'
               ' aria-label="search">')
    out.append('<button type="button" id="problems">problems only</button>')
    out.append('<button type="button" id="all">show all</button>')
    out.append('<span class="shown" id="shown"></span></div>')
    return out


def _reason_cell(case):
    reason = case.get("reason") or ""
    tags = common.annotations(case)
    if case["status"] == "skip" and case.get("skip_class"):
        tags.insert(0, case["skip_class"])
    tag_html = "".join('<span class="tag%s">%s</span>' % (
        " kern" if t.startswith("kernel ") else "", esc(t)) for t in tags)
    if case.get("denylist_reason"):
        tag_html += '<span class="tag">deny list: %s</span>' % esc(case["denylist_reason"])
    elif case.get("expectation_reason"):
        tag_html += '<span class="tag">declared: %s</span>' % esc(case["expectation_reason"])
    lines = reason.splitlines()
    if len(lines) > 3 or len(reason) > 400:
        first = common.one_line(reason, 160)
        body = '<details><summary>%s</summary><div class="reason">%s</div></details>' % (
            esc(first), esc(reason))
    else:
        body = '<div class="reason">%s</div>' % esc(reason)
    h = case.get("health")
    if _health.is_flagged(h):
        body += '<div class="klog">%s</div>' % "\n".join(
            esc(e["line"]) for e in h.get("events", [])[:8])
    log = ""
    if case.get("log"):
        log = ' <a href="%s">log</a>' % esc(case["log"])
    return tag_html + body + log


def _suite_section(doc, suite, counts):
    cases = sorted((c for c in doc["cases"] if c["suite"] == suite), key=common.sort_key)
    summary = ", ".join("%d %s" % (counts.get(st, 0), STATUS_STYLE[st][0])
                        for st in CHART_ORDER if counts.get(st, 0)) or "no cases"
    out = ['<section class="suite" id="suite-%s">' % esc(suite),
           '<h2>Suite <code>%s</code><span class="suite-counts">%d cases: %s</span></h2>'
           % (esc(suite), counts["total"], esc(summary))]
    if not cases:
        out += ['<p class="empty">No cases.</p>', "</section>"]
        return out
    out.append('<table><thead><tr><th>status</th><th>feature</th><th>test</th><th>spec</th>'
               '<th>reason</th><th class="num">duration</th></tr></thead><tbody>')
    for c in cases:
        label, colour = STATUS_STYLE.get(c["status"], (c["status"], "#6e7781"))
        out.append(
            '<tr data-status="%s"><td><span class="badge" style="--c:%s">%s</span></td>'
            '<td><code>%s</code></td><td><code>%s</code></td><td>%s</td><td>%s</td>'
            '<td class="num">%.3f s</td></tr>'
            % (esc(c["status"]), colour, esc(label), esc(c.get("feature") or "-"), esc(c["name"]),
               esc(c.get("spec") or ""), _reason_cell(c), c.get("duration_s", 0)))
    out.append("</tbody></table>")
    out.append('<p class="empty nomatch" hidden>No cases of this suite match the filter.</p>')
    out.append("</section>")
    return out


def _kv_table(rows):
    out = ['<table class="kv"><tbody>']
    for k, v in rows:
        out.append("<tr><th>%s</th><td>%s</td></tr>" % (esc(k), v))
    out.append("</tbody></table>")
    return out


def _details(doc):
    run, host = doc["run"], doc["host"]
    probe = run.get("probe")
    rows = [("backend", esc(common.backend_line(run)))]
    if probe:
        state = "works" if probe["perf_event_open"] else "fails with %s" % (
            probe.get("errno_name") or probe.get("errno"))
        rows.append(("perf_event_open probe", esc("%s: %s" % (state, probe.get("reason") or ""))))
    rows += [
        ("suites", esc(", ".join(run.get("suites") or []))),
        ("started", esc(run.get("started"))),
        ("duration", "%.2f s" % run.get("duration_s", 0)),
    ]
    for key, label in (("jobs", "parallel jobs"), ("repeat", "repeats per case")):
        if run.get(key) and run[key] > 1:
            rows.append((label, esc(run[key])))
    if run.get("denylists"):
        rows.append(("deny lists", esc(", ".join(run["denylists"]))))
    rows += [
        ("perftest", esc(run.get("perftest_version"))),
        ("command", "<code>%s</code>" % esc(" ".join(run.get("command") or []))),
        ("schema", esc(doc.get("schema_version"))),
    ]
    out = ["<h2>Run</h2>"] + _kv_table(rows)
    rows = [
        ("kernel", esc("%s %s" % (host.get("kernel_release"), host.get("kernel_version")))),
        ("arch", esc(host.get("arch"))),
        ("CPU", esc(common.cpu_line(host))),
        ("PMUs", esc(common.pmu_line(host))),
        ("perf_event_paranoid", esc(host.get("perf_event_paranoid"))),
        ("perf_event_max_sample_rate", esc(host.get("perf_event_max_sample_rate"))),
        ("perf_event_mlock_kb", esc(host.get("perf_event_mlock_kb"))),
        ("perf_event_attr size", esc(common.attr_size_line(host))),
        ("environment", esc(common.environment_line(host))),
        ("privileges", esc(common.privilege_line(host))),
        ("kernel command line", "<code>%s</code>" % esc(host.get("kernel_cmdline"))),
    ]
    out += ["<h2>Host</h2>"] + _kv_table(rows)
    if doc.get("health"):
        out += ["<h2>Kernel health</h2>"] + _kv_table(
            [(k, esc(v)) for k, v in common.health_details(doc)])
    return out


def _divergences(doc):
    divs = doc.get("divergences") or []
    if not divs:
        return []
    out = ["<h2>Documented versus actual behaviour</h2>",
           "<p>Cases where this kernel follows its source, not the document the case cites.</p>",
           "<table><thead><tr><th>id</th><th>feature</th><th>status</th><th>documented</th>"
           "<th>actual</th></tr></thead><tbody>"]
    for d in divs:
        out.append("<tr><td><code>%s</code></td><td><code>%s</code></td><td>%s</td><td>%s</td>"
                   "<td>%s</td></tr>" % (esc(d["id"]), esc(d.get("feature") or d["name"]),
                                         esc(d["status"]), esc(d.get("documented")),
                                         esc(d.get("actual"))))
    out.append("</tbody></table>")
    return out


def render(doc):
    run, summary = doc["run"], doc["summary"]
    suites = ", ".join(run.get("suites") or []) or "no suites"
    title = "perftest report: %s (%s backend)" % (suites, run["backend"])
    verdict = common.verdict(doc)
    statuses = _statuses_present(doc)
    host = doc["host"]
    sub = "%s · %s %s · %s · started %s · %.1f s" % (
        common.backend_line(run), host.get("kernel_release"), host.get("arch"),
        common.cpu_line(host), run.get("started"), run.get("duration_s", 0))
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="perftest %s">' % esc(run.get("perftest_version")),
        "<title>%s</title>" % esc(title),
        "<style>%s</style>" % _CSS,
        "</head><body>",
        "<h1>%s</h1>" % esc(title),
        '<p class="sub">%s</p>' % esc(sub),
        '<p><span class="verdict" style="background:%s">%s</span>%d cases: %s</p>'
        % (_verdict_colour(verdict), esc(verdict), summary["total"],
           esc(", ".join("%d %s" % (summary.get(k, 0), k) for k in common.COUNT_KEYS))),
    ]
    if common.health_line(doc):
        h = doc["health"]
        colour = STATUS_STYLE["pass"][1] if h.get("healthy") else STATUS_STYLE["fail"][1]
        out.append('<p class="health" style="--c:%s"><strong>Kernel health:</strong> %s</p>'
                   % (colour, esc(common.health_line(doc))))
    out += _cards(doc, statuses)
    out += ["<h2>Statuses by suite</h2>", chart_svg(doc)]
    out += ["<h2>Cases</h2>"] + _filters(doc, statuses)
    for suite, counts in common.suite_counts(doc):
        out += _suite_section(doc, suite, counts)
    out += _divergences(doc)
    out += _details(doc)
    out += ["<script>%s</script>" % _JS, "</body></html>"]
    return "\n".join(out) + "\n"
