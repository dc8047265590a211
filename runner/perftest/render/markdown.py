"""Markdown renderer: title, run and host block, summary table, one table
per suite (status, feature, test, reason, duration), the kernel health
section (schema 1.2), skips grouped by skip_class."""

from .. import health as _health
from . import common

SKIP_CLASS_TITLES = {
    "unsupported": "unsupported: the machine or kernel lacks the feature",
    "permission": "permission: needs privileges (capabilities, perf_event_paranoid)",
    "sandbox": "sandbox: blocked by a container or seccomp",
    "kernel_version": "kernel_version: the kernel is too old",
}


def cell(text, limit=300):
    """Table-safe text: one line, pipes escaped, cut to limit."""
    text = common.one_line("" if text is None else str(text), limit)
    return text.replace("\\", "\\\\").replace("|", "\\|") or " "


def code(text):
    text = "" if text is None else str(text)
    return "`%s`" % text.replace("`", "'") if text else " "


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def render(doc):
    run, host, summary, cases = doc["run"], doc["host"], doc["summary"], doc["cases"]
    suites = ", ".join(run.get("suites") or []) or "no suites"
    out = ["# perftest report: %s (%s backend)" % (suites, run["backend"]), ""]
    verdict = ", ".join("%d %s" % (summary.get(k, 0), k) for k in common.COUNT_KEYS)
    out.append("**%d cases: %s**" % (summary["total"], verdict))
    if run.get("interrupted"):
        out.append("")
        out.append("**Interrupted: %d cases not run.**" % summary.get("not_run", 0))
    if common.health_line(doc):
        out += ["", "**Kernel health: %s**" % cell(common.health_line(doc), 600)]
    out.append("")

    out += ["## Run", ""]
    rows = [
        ["backend", cell(common.backend_line(run))],
        ["suites", cell(suites)],
        ["started", cell(run.get("started"))],
        ["duration", "%.2f s" % run.get("duration_s", 0)],
        ["perftest", cell(run.get("perftest_version"))],
        ["command", code(" ".join(run.get("command") or []))],
    ]
    probe = run.get("probe")
    if probe:
        state = "works" if probe["perf_event_open"] else "fails with %s" % (
            probe.get("errno_name") or probe.get("errno"))
        rows.insert(1, ["perf_event_open", cell("%s %s" % (state, probe.get("reason") or ""))])
    out += _table(["item", "value"], rows) + [""]

    out += ["## Host", ""]
    rows = [
        ["kernel", cell("%s %s" % (host.get("kernel_release"), host.get("kernel_version")))],
        ["arch", cell(host.get("arch"))],
        ["CPU", cell(common.cpu_line(host))],
        ["PMUs", cell(common.pmu_line(host), 1000)],
        ["perf_event_paranoid", cell(host.get("perf_event_paranoid"))],
        ["perf_event_max_sample_rate", cell(host.get("perf_event_max_sample_rate"))],
        ["perf_event_mlock_kb", cell(host.get("perf_event_mlock_kb"))],
        ["perf_event_attr size", cell(common.attr_size_line(host))],
        ["environment", cell(common.environment_line(host))],
        ["privileges", cell(common.privilege_line(host))],
        ["kernel command line", code(host.get("kernel_cmdline"))],
    ]
    out += _table(["item", "value"], rows) + [""]

    out += ["## Summary", ""]
    keys = list(common.COUNT_KEYS) + (["not_run"] if summary.get("not_run") else [])
    rows = []
    for suite, counts in common.suite_counts(doc):
        rows.append([code(suite), str(counts["total"])] + [str(counts.get(k, 0)) for k in keys])
    rows.append(["**all**", "**%d**" % summary["total"]] +
                ["**%d**" % summary.get(k, 0) for k in keys])
    out += _table(["suite", "total"] + keys, rows) + [""]

    for suite, _ in common.suite_counts(doc):
        out += ["## Suite `%s`" % suite, ""]
        rows = []
        for c in sorted((c for c in cases if c["suite"] == suite), key=common.sort_key):
            rows.append([
                c["status"].upper() if c["status"] != "pass" else "pass",
                code(c.get("feature")),
                code(c["name"]),
                cell(" ".join("[%s]" % t for t in common.annotations(c)) + " " + (c.get("reason") or "")
                     if common.annotations(c) else c.get("reason")),
                "%.3f s" % c.get("duration_s", 0),
            ])
        if rows:
            out += _table(["status", "feature", "test", "reason", "duration"], rows)
        else:
            out.append("No cases.")
        out.append("")

    out += _health_section(doc)

    divs = doc.get("divergences") or []
    if divs:
        out += ["## Documented versus actual behaviour", "",
                "Cases where this kernel follows its source, not the document the case cites.", ""]
        out += _table(["id", "feature", "status", "documented", "actual"],
                      [[code(d["id"]), code(d.get("feature") or d["name"]), d["status"],
                        cell(d.get("documented"), 400), cell(d.get("actual"), 400)] for d in divs])
        out.append("")

    skips = [c for c in cases if c["status"] == "skip"]
    if skips:
        out += ["## Skips by class", ""]
        classes = sorted({c.get("skip_class") or "unsupported" for c in skips},
                         key=lambda k: (list(SKIP_CLASS_TITLES).index(k)
                                        if k in SKIP_CLASS_TITLES else 99, k))
        for klass in classes:
            group = [c for c in skips if (c.get("skip_class") or "unsupported") == klass]
            out += ["### %s (%d)" % (SKIP_CLASS_TITLES.get(klass, klass), len(group)), ""]
            for c in group:
                out.append("- %s (%s): %s" % (code(common.case_label(c)), code(c["name"]),
                                              cell(c.get("reason"), 500)))
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _health_section(doc):
    """## Kernel health: how it was read, then one row per flagged case with
    its log lines (schema 1.2)."""
    if not doc.get("health"):
        return []
    out = ["## Kernel health", ""]
    out += _table(["item", "value"], [[k, cell(v, 600)] for k, v in common.health_details(doc)])
    out.append("")
    flagged = common.flagged_cases(doc)
    if flagged:
        rows = []
        for c in flagged:
            h = c["health"]
            lines = "<br>".join(cell(e["line"], 300) for e in h.get("events", [])[:5]) or " "
            rows.append([c["status"], code(common.case_label(c)), h["state"],
                         code(h.get("new_taint") or "-"), lines])
        out += ["Cases during which the kernel tainted itself or warned:", ""]
        out += _table(["status", "feature", "health", "new taint", "kernel log"], rows)
        out.append("")
    perf = [c for c in doc["cases"] if not _health.is_flagged(c.get("health")) and
            (c.get("health") or {}).get("events")]
    if perf:
        out += ["perf: lines in the kernel log (throttling; the cases stay healthy): " +
                ", ".join("%s (%s)" % (code(common.case_label(c)),
                                      cell(c["health"]["events"][0]["line"], 160))
                          for c in perf[:10]), ""]
    return out
