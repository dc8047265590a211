"""HTML rendering of a compatibility matrix: one self-contained page (inline
CSS and script, no network) a person reads at a glance.

Top to bottom: title and counts; one card per report (backend or mock
profile, kernel, arch, CPU, a bar of its statuses, its kernel health); the
legend; a filter bar (suite, statuses, "rows that differ", "kernel health
flags", text search, one checkbox per column); the grid: a row per
behaviour grouped by suite, a coloured cell per report; a click on a row
opens its reasons (status, skip class, reason and kernel log lines per
report). Without JavaScript every row and every reason is shown.

render(matrix) -> str
"""

import html

from ..matrix import plural
from .html import STATUS_STYLE

STYLE = dict(STATUS_STYLE, missing=("missing", "#d0d7de"))
ORDER = ("pass", "fail", "crash", "timeout", "error", "skip", "not_run", "missing")
SKIP_SHORT = {"unsupported": "unsup", "permission": "perm", "sandbox": "sandbox",
              "kernel_version": "kver"}
HEALTH_COLOUR = "#a0111f"

_CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       margin: 0; padding: 20px 28px 40px; }
h1 { font-size: 22px; margin: 0 0 4px; }
.sub { color: var(--muted); margin: 0 0 12px; }
.cols { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0 12px; }
.col { border: 1px solid var(--line); border-top: 6px solid var(--h); border-radius: 8px;
       padding: 5px 9px; flex: 1 1 160px; max-width: 260px; min-width: 0; font-size: 12.5px; }
.col .id { font-weight: 700; font-size: 15px; }
.col .what { font-weight: 600; font-size: 14px; }
.col .m { color: var(--muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.bar { display: flex; height: 10px; border-radius: 3px; overflow: hidden; margin: 5px 0 3px;
       background: var(--soft); }
.bar span { display: block; height: 100%; }
.kh { font-weight: 600; color: var(--h); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 4px 0 10px; font-size: 12.5px; }
.sw { display: inline-block; width: 14px; height: 14px; border-radius: 3px; vertical-align: -2px;
      margin-right: 4px; background: var(--c); }
.sw.flag { background: #fff; box-shadow: inset 0 0 0 3px """ + HEALTH_COLOUR + """; }
.filters { display: none; flex-wrap: wrap; align-items: center; gap: 6px 14px; padding: 7px 10px;
           background: var(--soft); border: 1px solid var(--line); border-radius: 8px;
           margin-bottom: 8px; }
.js .filters { display: flex; }
.filters label { white-space: nowrap; cursor: pointer; }
.filters select, .filters input[type=search] { font: inherit; padding: 2px 6px;
                                               border: 1px solid var(--line); border-radius: 5px; }
.shown { color: var(--muted); margin-left: auto; }
table.grid { border-collapse: separate; border-spacing: 2px; }
.grid th, .grid td { padding: 3px 6px; text-align: left; }
.grid thead th { position: sticky; top: 0; background: #fff; z-index: 2; font-size: 12px;
                 vertical-align: bottom; border-bottom: 2px solid var(--line); min-width: 92px; }
.grid thead th b { font-size: 13px; }
.grid tr.suite th { background: var(--soft); font-size: 14px; padding: 6px; }
.grid tr.suite th span { color: var(--muted); font-weight: normal; margin-left: 8px; }
.grid td.feat { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
                white-space: nowrap; padding-right: 12px; }
.grid tr.row { cursor: pointer; }
.grid tr.row:hover td.feat { text-decoration: underline; }
.grid tr.row.differs td.feat::before { content: "≠ "; color: #bc4c00; font-weight: 700; }
td.cell { color: #fff; background: var(--c); border-radius: 4px; font-size: 12px; font-weight: 600;
          text-align: center; white-space: nowrap; }
td.cell.s-pass { color: #116329; background: #d3f3db; }
.sw.s-pass { background: #d3f3db; box-shadow: inset 0 0 0 1px #1a7f37; }
h2 { font-size: 17px; margin: 18px 0 6px; }
table.overview { border-collapse: separate; border-spacing: 2px; margin-bottom: 6px; }
.overview th { text-align: left; padding: 2px 8px 2px 0; font-weight: 600; }
.overview thead th { font-size: 12px; min-width: 120px; }
.overview td { padding: 0; }
.overview tr.os { cursor: pointer; }
.overview tr.os:hover th { text-decoration: underline; }
.ov { display: flex; height: 20px; border-radius: 4px; overflow: hidden; position: relative;
      background: var(--soft); min-width: 120px; }
.ov span { display: block; height: 100%; }
.ov b { position: absolute; left: 6px; top: 1px; font-size: 12px; color: #fff;
        text-shadow: 0 0 2px rgba(0,0,0,.7); }
.ov.flag { box-shadow: inset 0 0 0 3px """ + HEALTH_COLOUR + """; }
td.cell.s-missing { color: #57606a; background: repeating-linear-gradient(135deg, #eaeef2 0 6px,
                    #f6f8fa 6px 12px); font-weight: normal; }
td.cell.flag { box-shadow: inset 0 0 0 3px """ + HEALTH_COLOUR + """, inset 0 0 0 5px #fff; }
tr.detail td { background: #fff; border: 1px solid var(--line); border-radius: 6px; }
.js tr.detail { display: none; }
tr[hidden] { display: none !important; }
.js tr.detail.open { display: table-row; }
table.why { border-collapse: collapse; width: 100%; font-size: 12.5px; }
table.why td, table.why th { border-bottom: 1px solid var(--line); padding: 3px 6px;
                              vertical-align: top; text-align: left; }
.badge { display: inline-block; min-width: 56px; text-align: center; padding: 0 6px;
         border-radius: 9px; color: #fff; font-size: 12px; font-weight: 600; background: var(--c); }
.reason { white-space: pre-wrap; word-break: break-word; }
.klog { font: 12px ui-monospace, Menlo, Consolas, monospace; color: """ + HEALTH_COLOUR + """; }
"""

_JS = r"""
(function () {
  document.documentElement.className += " js";
  var $ = function (s) { return Array.prototype.slice.call(document.querySelectorAll(s)); };
  var suite = document.getElementById("suite"), q = document.getElementById("q");
  var differs = document.getElementById("differs"), flagged = document.getElementById("flagged");
  var statusBoxes = $(".filters input[data-status]"), colBoxes = $(".filters input[data-col]");
  var rows = $("tr.row");
  function colOn(i) { return colBoxes[i].checked; }
  function statusOn(s) {
    for (var i = 0; i < statusBoxes.length; i++) if (statusBoxes[i].dataset.status === s) return statusBoxes[i].checked;
    return false;
  }
  function apply() {
    colBoxes.forEach(function (b, i) {
      $('.grid [data-col="' + i + '"], .overview [data-col="' + i + '"]').forEach(function (e) { e.style.display = b.checked ? "" : "none"; });
    });
    var want = suite.value, text = (q.value || "").toLowerCase(), shown = 0, perSuite = {};
    rows.forEach(function (r) {
      var cells = Array.prototype.slice.call(r.querySelectorAll("td.cell"));
      var vis = cells.filter(function (c) { return colOn(+c.dataset.col); });
      var ok = (!want || r.dataset.suite === want)
        && vis.some(function (c) { return statusOn(c.dataset.status); })
        && (!differs.checked || new Set(vis.map(function (c) { return c.dataset.status; })).size > 1)
        && (!flagged.checked || vis.some(function (c) { return c.classList.contains("flag"); }))
        && (!text || r.dataset.text.indexOf(text) >= 0);
      r.hidden = !ok;
      var d = document.getElementById(r.dataset.detail);
      if (d) d.hidden = !ok;
      if (ok) { shown++; perSuite[r.dataset.suite] = 1; }
    });
    $("tr.suite").forEach(function (s) { s.hidden = !perSuite[s.dataset.suite]; });
    document.getElementById("shown").textContent = shown + " of " + rows.length + " behaviours shown";
  }
  rows.forEach(function (r) {
    function toggle() { document.getElementById(r.dataset.detail).classList.toggle("open"); }
    r.addEventListener("click", toggle);
    r.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } });
  });
  [suite, differs, flagged].concat(statusBoxes, colBoxes).forEach(function (e) { e.addEventListener("change", apply); });
  q.addEventListener("input", apply);
  $("tr.os").forEach(function (r) {
    r.addEventListener("click", function () {
      suite.value = r.dataset.suite; apply();
      document.querySelector("table.grid").scrollIntoView();
    });
  });
  document.getElementById("all").addEventListener("click", function () {
    statusBoxes.concat(colBoxes).forEach(function (b) { b.checked = true; });
    differs.checked = flagged.checked = false; suite.value = ""; q.value = ""; apply();
  });
  apply();
})();
"""


def esc(value):
    return html.escape("" if value is None else str(value), quote=True)


def _health_view(col):
    """(colour, text) of a column's kernel health."""
    h = col.get("health")
    if h is None:
        return STYLE["not_run"][1], "kernel health not checked (schema %s)" % col["schema_version"]
    if h["healthy"]:
        taint = h.get("tainted_end")
        return STYLE["pass"][1], "kernel healthy (taint %s)" % ("?" if taint is None else taint)
    return HEALTH_COLOUR, "☢ kernel NOT healthy: %d case%s flagged%s" % (
        h["cases_flagged"], "" if h["cases_flagged"] == 1 else "s",
        ", new taint %s" % h["new_taint"] if h.get("new_taint") else "")


def _col_card(col):
    s = col["summary"]
    total = max(1, s.get("total", 0))
    bar = "".join('<span style="width:%.2f%%;background:%s" title="%d %s"></span>'
                  % (100.0 * s.get(k, 0) / total, STYLE[k][1], s.get(k, 0), STYLE[k][0])
                  for k in ORDER if k != "missing" and s.get(k, 0))
    counts = " · ".join("%d %s" % (s.get(k, 0), STYLE[k][0]) for k in ORDER
                        if k != "missing" and (s.get(k, 0) or k in ("pass", "fail", "skip")))
    colour, text = _health_view(col)
    return ('<div class="col" style="--h:%s" title="%s"><div><span class="id">%s</span> '
            '<span class="what">%s</span></div><div class="m">%s · %s</div>'
            '<div class="m">%s</div><div class="bar">%s</div><div class="m">%s</div>'
            '<div class="kh">%s</div></div>'
            % (colour, esc(col["source"]), esc(col["id"]), esc(col["label"]),
               esc(col["kernel_release"]), esc(col["arch"]), esc(col["cpu"]), bar, esc(counts),
               esc(text)))


def cell_label(c):
    st = c["status"]
    if st == "missing":
        return "—"
    text = STYLE[st][0]
    if st == "skip" and c.get("skip_class"):
        text = "skip·%s" % SKIP_SHORT.get(c["skip_class"], c["skip_class"])
    if c.get("flaky"):
        text += "~"
    if c.get("health"):
        text = "☢ " + text + (" %s" % c["new_taint"] if c.get("new_taint") else "")
    return text


def _cell_title(col, c):
    parts = ["%s: %s" % (col["id"], c["status"])]
    if c.get("skip_class"):
        parts.append("[%s]" % c["skip_class"])
    if c.get("reason"):
        parts.append(c["reason"][:200])
    if c.get("health"):
        parts.append("kernel %s %s" % (c["health"], c.get("new_taint", "")))
    return " ".join(parts)


def _detail(matrix, row, n):
    out = ['<table class="why"><tr><th>report</th><th>status</th><th>reason</th></tr>']
    for col, c in zip(matrix["columns"], row["cells"]):
        colour = STYLE.get(c["status"], STYLE["missing"])[1]
        why = '<div class="reason">%s</div>' % esc(c.get("reason") or (
            "this report has no such case" if c["status"] == "missing" else ""))
        if c.get("kernel_log"):
            why += "".join('<div class="klog">☢ %s</div>' % esc(line) for line in c["kernel_log"])
        tags = ""
        for flag in ("flaky", "xfail", "denylisted"):
            if c.get(flag):
                tags += " [%s]" % flag
        out.append('<tr data-col="%d"><td><b>%s</b> %s</td><td><span class="badge" '
                   'style="--c:%s">%s</span>%s</td><td>%s</td></tr>'
                   % (matrix["columns"].index(col), esc(col["id"]), esc(col["label"]), colour,
                      esc(c["status"].replace("_", " ")),
                      esc(" [%s]" % c["skip_class"] if c.get("skip_class") else "") + esc(tags),
                      why))
    out.append("</table>")
    names = ", ".join(row["names"])
    return ('<tr class="detail" id="d%d"><td colspan="%d"><div class="m">test %s · spec %s</div>%s'
            '</td></tr>' % (n, len(matrix["columns"]) + 1, esc(names), esc(row.get("spec") or "-"),
                            "".join(out)))


def _overview(matrix):
    """Suites x reports: per cell a bar of the statuses of that suite's
    behaviours in that report and "passed/total"; a click filters the grid."""
    cols = matrix["columns"]
    out = ["<h2>By suite</h2>", '<table class="overview"><thead><tr><th>suite</th>']
    out += ['<th data-col="%d">%s %s</th>' % (i, esc(c["id"]), esc(c["label"]))
            for i, c in enumerate(cols)]
    out.append("</tr></thead><tbody>")
    for suite in matrix["suites"]:
        rows = [r for r in matrix["rows"] if r["suite"] == suite]
        if not rows:
            continue
        out.append('<tr class="os" data-suite="%s" title="show only %s"><th>%s</th>'
                   % (esc(suite), esc(suite), esc(suite)))
        for i, col in enumerate(cols):
            cells = [r["cells"][i] for r in rows]
            n = {k: sum(1 for c in cells if c["status"] == k) for k in ORDER}
            flag = any(c.get("health") for c in cells)
            bar = "".join('<span style="width:%.2f%%;background:%s"></span>'
                          % (100.0 * n[k] / len(cells), "#2da44e" if k == "pass" else STYLE[k][1])
                          for k in ORDER if n[k])
            have = len(cells) - n["missing"]
            label = "%d/%d pass" % (n["pass"], have) if have else "missing"
            title = ", ".join("%d %s" % (n[k], STYLE[k][0]) for k in ORDER if n[k])
            out.append('<td data-col="%d"><div class="ov%s" title="%s: %s">%s<b>%s%s</b></div></td>'
                       % (i, " flag" if flag else "", esc(col["id"]), esc(title), bar,
                          "☢ " if flag else "", esc(label)))
        out.append("</tr>")
    out.append("</tbody></table>")
    return out


def _filters(matrix):
    out = ['<div class="filters" role="group" aria-label="filter the matrix">',
           '<label>Suite <select id="suite"><option value="">all suites</option>']
    out += ['<option value="%s">%s</option>' % (esc(s), esc(s)) for s in matrix["suites"]]
    out.append("</select></label><span><b>Status:</b>")
    present = [k for k in ORDER if matrix["counts"]["cells"].get(k)]
    for k in ORDER:
        if k in present or k in ("pass", "fail", "skip"):
            out.append('<label><input type="checkbox" data-status="%s" checked> '
                       '<span class="sw s-%s" style="--c:%s"></span>%s</label>'
                       % (k, k, STYLE[k][1], esc(STYLE[k][0])))
    out.append('</span><label><input type="checkbox" id="differs"> only rows that differ</label>')
    out.append('<label><input type="checkbox" id="flagged"> only kernel health flags</label>')
    out.append('<input id="q" type="search" placeholder="search feature or test" aria-label="search">')
    out.append("<span><b>Columns:</b>")
    for i, col in enumerate(matrix["columns"]):
        out.append('<label title="%s"><input type="checkbox" data-col="%d" checked> %s</label>'
                   % (esc("%s %s %s" % (col["label"], col["kernel_release"], col["arch"])), i,
                      esc(col["id"])))
    out.append('</span><button type="button" id="all">reset</button>'
               '<span class="shown" id="shown"></span></div>')
    return out


def _grid(matrix):
    cols = matrix["columns"]
    out = ['<table class="grid"><thead><tr><th>behaviour (feature id)</th>']
    for i, col in enumerate(cols):
        colour, text = _health_view(col)
        out.append('<th data-col="%d" title="%s"><b>%s</b> %s<br>%s %s<br>'
                   '<span style="color:%s">%s</span></th>'
                   % (i, esc("%s · %s · %s" % (col["cpu"], col["source"], text)), esc(col["id"]),
                      esc(col["label"]), esc(col["kernel_release"]), esc(col["arch"]), colour,
                      "☢ flagged" if col.get("health") and not col["health"]["healthy"] else
                      ("healthy" if col.get("health") else "—")))
    out.append("</tr></thead>")
    n = 0
    for suite in matrix["suites"]:
        rows = [r for r in matrix["rows"] if r["suite"] == suite]
        if not rows:
            continue
        differ = sum(1 for r in rows if r["differs"])
        out.append('<tbody><tr class="suite" data-suite="%s"><th colspan="%d">%s'
                   '<span>%s, %d differ</span></th></tr>'
                   % (esc(suite), len(cols) + 1, esc(suite), plural(len(rows), "behaviour"), differ))
        for row in rows:
            n += 1
            text = " ".join([row["feature"]] + row["names"]).lower()
            out.append('<tr class="row%s" tabindex="0" data-suite="%s" data-detail="d%d" '
                       'data-text="%s"><td class="feat" title="%s">%s</td>'
                       % (" differs" if row["differs"] else "", esc(suite), n, esc(text),
                          esc(", ".join(row["names"])), esc(row["feature"])))
            for i, (col, c) in enumerate(zip(cols, row["cells"])):
                out.append('<td class="cell s-%s%s" data-col="%d" data-status="%s" '
                           'style="--c:%s" title="%s">%s</td>'
                           % (esc(c["status"]), " flag" if c.get("health") else "", i,
                              esc(c["status"]), STYLE.get(c["status"], STYLE["missing"])[1],
                              esc(_cell_title(col, c)), esc(cell_label(c))))
            out.append("</tr>")
            out.append(_detail(matrix, row, n))
        out.append("</tbody>")
    out.append("</table>")
    return out


def render(matrix):
    n = matrix["counts"]
    title = "perftest compatibility matrix: %d reports × %d behaviours" % (n["columns"], n["rows"])
    legend = ['<div class="legend">']
    legend += ['<span><span class="sw s-%s" style="--c:%s"></span>%s</span>'
               % (k, STYLE[k][1], esc(STYLE[k][0])) for k in ORDER]
    legend += ['<span><span class="sw flag"></span>☢ kernel tainted itself or warned</span>',
               '<span>≠ statuses differ between reports · click a row for its reasons</span>',
               "</div>"]
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="perftest %s">' % esc(matrix["perftest_version"]),
        "<title>%s</title>" % esc(title),
        "<style>%s</style>" % _CSS,
        "</head><body>",
        "<h1>%s</h1>" % esc(title),
        '<p class="sub">%s · %s differ between reports · %s · %s with kernel health flags · '
        'generated %s by perftest %s</p>'
        % (plural(len(matrix["suites"]), "suite"), plural(n["rows_differing"], "row"),
           plural(n["cells"].get("missing", 0), "missing cell"), plural(n["rows_flagged"], "row"),
           esc(matrix["generated"]), esc(matrix["perftest_version"])),
        '<div class="cols">',
    ]
    out += [_col_card(c) for c in matrix["columns"]]
    out.append("</div>")
    out += legend
    out += _overview(matrix)
    out += ["<h2>By behaviour</h2>"]
    out += _filters(matrix)
    out += _grid(matrix)
    out += ["<script>%s</script>" % _JS, "</body></html>"]
    return "\n".join(out) + "\n"
