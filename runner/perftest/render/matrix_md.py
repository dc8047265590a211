"""Markdown rendering of a compatibility matrix (perftest/matrix.py), for CI
job summaries and merge request comments: the columns with their counts and
kernel health, then one table per suite (a row per behaviour, a cell per
report) with the reasons of every cell that is not a pass folded under it.

render(matrix) -> str
"""

from ..matrix import plural
from .markdown import cell as md_cell, code

SYMBOL = {
    "pass": "✅",
    "fail": "❌ fail",
    "error": "⚠️ error",
    "crash": "💥 crash",
    "timeout": "⏱️ timeout",
    "skip": "⏭️ skip",
    "not_run": "⏸️ not run",
    "missing": "—",
}
SKIP_SHORT = {"unsupported": "unsupported", "permission": "permission", "sandbox": "sandbox",
              "kernel_version": "kernel version"}


def cell_text(c):
    """A cell's short Markdown: symbol, skip class, kernel health flag."""
    text = SYMBOL.get(c["status"], c["status"])
    if c["status"] == "skip" and c.get("skip_class"):
        text = "⏭️ %s" % SKIP_SHORT.get(c["skip_class"], c["skip_class"])
    if c.get("flaky"):
        text += " (flaky)"
    if c.get("xfail"):
        text += " (xfail)"
    if c.get("health"):
        text += " ☢️ %s" % ("tainted %s" % c.get("new_taint", "") if c["health"] == "tainted"
                            else "warned")
    return text


def column_health(col):
    h = col.get("health")
    if h is None:
        return "not checked (report before schema 1.2)"
    if h["healthy"]:
        return "healthy (taint %s)" % h.get("tainted_end")
    return "☢️ NOT healthy: %d case%s flagged%s" % (
        h["cases_flagged"], "" if h["cases_flagged"] == 1 else "s", ", new taint %s" % h["new_taint"] if h.get("new_taint") else "")


def _table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def render(matrix):
    cols, rows, n = matrix["columns"], matrix["rows"], matrix["counts"]
    unhealthy = sum(1 for c in cols if c.get("health") and not c["health"]["healthy"])
    out = ["# perftest compatibility matrix", "",
           "**%d reports × %d behaviours in %d suites: %d rows differ between reports, "
           "%d missing cells; kernel health: %s.**"
           % (n["columns"], n["rows"], len(matrix["suites"]), n["rows_differing"],
              n["cells"].get("missing", 0),
              "%d report%s NOT healthy" % (unhealthy, "" if unhealthy == 1 else "s")
              if unhealthy else "every checked kernel stayed healthy"), "",
           "Generated %s by perftest %s." % (matrix["generated"], matrix["perftest_version"]),
           "", "## Reports", ""]
    body = []
    for c in cols:
        s = c["summary"]
        other = sum(s.get(k, 0) for k in ("error", "timeout", "crash", "not_run"))
        body.append([c["id"], md_cell(c["label"]), code(c["kernel_release"]), code(c["arch"]),
                     md_cell(c["cpu"]), str(s["total"]), str(s["pass"]), str(s["fail"]),
                     str(s["skip"]), str(other), md_cell(column_health(c)),
                     code(c["source"])])
    out += _table(["column", "backend / profile", "kernel", "arch", "CPU", "cases", "pass",
                   "fail", "skip", "other", "kernel health", "report"], body)
    out += ["", "Cells: ✅ pass · ❌ fail · ⚠️ error · 💥 crash · ⏱️ timeout · ⏭️ skip (with "
            "its class) · ⏸️ not run · — missing (the report has no such case) · ☢️ the kernel "
            "tainted itself or warned during the case", ""]
    for suite in matrix["suites"]:
        srows = [r for r in rows if r["suite"] == suite]
        if not srows:
            continue
        differ = sum(1 for r in srows if r["differs"])
        out += ["## Suite `%s` (%s, %d differ)" % (suite, plural(len(srows), "behaviour"), differ),
                ""]
        out += _table(["feature"] + [c["id"] for c in cols],
                      [[code(r["feature"])] + [cell_text(c) for c in r["cells"]] for r in srows])
        notes = []
        for r in srows:
            for col, c in zip(cols, r["cells"]):
                if c["status"] in ("pass", "missing") and not c.get("health"):
                    continue
                why = c.get("reason") or ""
                if c.get("kernel_log"):
                    why += " kernel log: " + " / ".join(c["kernel_log"][:2])
                notes.append("- %s %s %s: %s" % (code(r["feature"]), col["id"], cell_text(c),
                                                 md_cell(why, 300)))
        if notes:
            out += ["", "<details><summary>Reasons (%d)</summary>" % len(notes), ""] + notes + \
                ["", "</details>"]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
