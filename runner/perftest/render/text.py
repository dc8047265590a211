"""Terminal summary: per suite the counts, then one line per case that did
not pass (feature id and reason), fitting one screen: failing cases, skips
no expectation list declared (--strict) and expected skips that passed are
all shown, other skips up to MAX_SKIP_LINES."""

import shutil

from .. import health as _health
from . import common

MAX_SKIP_LINES = 15


def render(doc, width=None):
    width = width or max(80, min(200, shutil.get_terminal_size((120, 24)).columns))
    run, summary = doc["run"], doc["summary"]
    out = ["backend: %s" % common.backend_line(run)]
    name_w = max([len(s) for s, _ in common.suite_counts(doc)] + [5])
    for suite, counts in common.suite_counts(doc):
        parts = ["%3d %s" % (counts.get(k, 0), k) for k in common.COUNT_KEYS]
        if counts.get("not_run"):
            parts.append("%3d not_run" % counts["not_run"])
        out.append("  %-*s %4d cases: %s" % (name_w, suite, counts["total"], "  ".join(parts)))

    bad = sorted((c for c in doc["cases"] if c["status"] != "pass" or c.get("unexpected_pass")),
                 key=lambda c: (common.sort_key(c), not c.get("unexpected_skip")))
    skips = [c for c in bad if c["status"] == "skip" and not c.get("unexpected_skip")]
    shown_skips = 0
    label_w = min(40, max([len(common.case_label(c)) for c in bad] + [10]))
    for c in bad:
        if c["status"] == "skip" and not c.get("unexpected_skip"):
            shown_skips += 1
            if shown_skips > MAX_SKIP_LINES:
                continue
        head = "  %-8s %-*s " % (c["status"].upper(), label_w, common.case_label(c))
        out.append(head + common.reason_line(c, max(20, width - len(head))))
    if len(skips) > MAX_SKIP_LINES:
        out.append("  ... and %d more skips (see the report)" % (len(skips) - MAX_SKIP_LINES))
    for c in common.flagged_cases(doc):
        head = "  %-8s %-*s " % ("KERNEL", label_w, common.case_label(c))
        h = c["health"]
        what = common.health_tag(c)
        if h["state"] == "tainted":
            what += " (%s)" % "; ".join(_health.taint_names(
                sum(1 << bit for bit, letter, _ in _health.TAINT_FLAGS
                    if letter in h.get("new_taint", ""))))
        out.append(head + common.one_line(what, max(20, width - len(head))))
        for e in h.get("events", [])[:3]:
            out.append("             kernel log: " + common.one_line(e["line"], width - 25))
    if common.health_line(doc):
        out.append("kernel health: %s" % common.health_line(doc))

    verdict = common.verdict(doc)
    counts = ", ".join("%d %s" % (summary.get(k, 0), k) for k in common.COUNT_KEYS)
    for key, label in (("flaky", "flaky"), ("denylisted", "denylisted"),
                       ("xfail", "expected failures"), ("expected_skip", "expected skips"),
                       ("unexpected_skip", "UNEXPECTED skips"),
                       ("unexpected_pass", "expected skips PASSED"), ("retried", "retried")):
        n = sum(1 for c in doc["cases"] if c.get(key))
        if n:
            counts += "; %d %s" % (n, label)
    out.append("result: %s: %d cases, %s (%.1fs)" % (verdict, summary["total"], counts,
                                                      run.get("duration_s", 0)))
    return "\n".join(out) + "\n"
