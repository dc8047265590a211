"""Helpers shared by renderers: status order/labels, one-line reasons, host lines."""

import re

from .. import health as _health
from ..gtest import one_line

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")   # would beep or garble a terminal

STATUS_ORDER = ("fail", "crash", "timeout", "error", "not_run", "skip", "pass")
COUNT_KEYS = ("pass", "fail", "skip", "error", "timeout", "crash")
FAILING = ("fail", "error", "timeout", "crash")


def is_failing(case):
    """A failing status that counts against the run: fail/error/timeout/crash,
    unless a deny list declared the case an expected failure (``xfail``)."""
    return case["status"] in FAILING and not case.get("xfail")


def is_xfail(case):
    """A failing case a deny list declared as expected to fail."""
    return case["status"] in FAILING and bool(case.get("xfail"))


def verdict(doc):
    """PASSED / FAILED / FAILED (--strict: ...) / INTERRUPTED (n not run)."""
    from ..report import strict_problems
    run, summary = doc["run"], doc["summary"]
    if run.get("interrupted"):
        return "INTERRUPTED (%d not run)" % summary.get("not_run", 0)
    if any(is_failing(c) for c in doc["cases"]):
        return "FAILED"
    if _health.health_fails(doc):
        return "FAILED (--taint=fail: the kernel did not stay healthy)"
    if run.get("strict"):
        problems = strict_problems(doc)
        if summary["total"] == 0:
            return "FAILED (--strict: no cases ran)"
        if problems and "expectations" not in run:
            return "FAILED (--strict: skips count as failures)"
        if problems:
            skips = sum(1 for c in problems if c["status"] == "skip")
            passes = len(problems) - skips
            what = []
            if skips:
                what.append("%d unexpected skip%s" % (skips, "s" if skips > 1 else ""))
            if passes:
                what.append("%d expected skip%s passed" % (passes, "s" if passes > 1 else ""))
            return "FAILED (--strict: %s)" % ", ".join(what)
    return "PASSED"


def annotations(case):
    """Short tags for a case beyond its status: flaky, expected to fail (a
    denylisted case's reason already starts with "denylisted: ")."""
    tags = []
    if case.get("flaky"):
        tags.append("flaky: %s" % ", ".join(r["status"] for r in case.get("repeats") or []))
    if case.get("xfail"):
        tags.append("expected to fail")
    if case.get("retried"):
        tags.append("retried: %s" % ", ".join(a["status"] for a in case.get("attempts") or []))
    if case.get("expected_skip"):
        tags.append("expected: %s" % short_entry(case.get("expectation_entry")))
    if case.get("unexpected_skip"):
        tags.append("UNEXPECTED skip")
    if case.get("unexpected_pass"):
        tags.append("expected skip PASSED: %s" % short_entry(case.get("expectation_entry")))
    tag = health_tag(case)
    if tag:
        tags.append(tag)
    return tags


def short_entry(entry):
    """An expectation list entry FILE:LINE, from ci/ on when the file is in
    the repository's lists (the report keeps the absolute path)."""
    entry = entry or ""
    at = entry.rfind("/ci/expectations/")
    return entry[at + 1:] if at >= 0 else entry


def health_tag(case):
    """"kernel tainted W" / "kernel warned" for a case during which the
    kernel tainted itself or warned; None otherwise (1.2 ``health``)."""
    h = case.get("health")
    if not _health.is_flagged(h):
        return None
    if h["state"] == "tainted":
        return "kernel tainted %s" % h.get("new_taint", "")
    return "kernel warned"


def health_line(doc):
    """The run-level kernel health in one line, or None for reports before 1.2."""
    h = doc.get("health")
    if not h:
        return None
    text = h.get("summary") or ("healthy" if h.get("healthy") else "NOT healthy")
    return "%s [--taint=%s]" % (text, h.get("policy", "warn"))


def health_details(doc):
    """[(label, value)] rows describing how kernel health was read."""
    h = doc.get("health")
    if not h:
        return []
    def taint(v, letters):
        return "unreadable" if v is None else ("%d (%s)" % (v, letters) if v else "0")
    rows = [("verdict", h.get("summary", "")),
            ("policy", h.get("policy_reason") or h.get("policy")),
            ("taint at start", taint(h.get("tainted_start"), h.get("taint_flags_start", ""))),
            ("taint at end", taint(h.get("tainted_end"), h.get("taint_flags_end", ""))),
            ("taint source", h.get("tainted_source") or "/proc/sys/kernel/tainted"),
            ("kernel log", "%s (%s)" % (h.get("log_source"), "read" if h.get("log_readable")
                                        else "not readable"))]
    if h.get("dmesg_restrict") is not None:
        rows.append(("kernel.dmesg_restrict", str(h["dmesg_restrict"])))
    for key in ("log_note", "tainted_problem", "attribution"):
        if h.get(key):
            rows.append((key.replace("_", " "), h[key]))
    rows.append(("cases checked", "%s; %d tainted the kernel, %d made it warn" % (
        h.get("cases_checked", "?"), h.get("cases_tainted", 0), h.get("cases_warned", 0))))
    return rows


def flagged_cases(doc):
    """Cases whose health says the kernel tainted itself or warned."""
    return [c for c in doc["cases"] if _health.is_flagged(c.get("health"))]


def health_fails_case(doc, case):
    """The case passes or skips by itself but fails on kernel health (--taint=fail)."""
    return _health.case_health_fails(doc, case) and not is_failing(case)


def sort_key(case):
    """Failing cases first, then skips, then passes; stable within a status."""
    try:
        return STATUS_ORDER.index(case["status"])
    except ValueError:
        return len(STATUS_ORDER)


def suite_counts(doc):
    """[(suite, {status: n, "total": n})] in run order."""
    order = list(doc["run"].get("suites") or [])
    counts = {}
    for c in doc["cases"]:
        if c["suite"] not in order:
            order.append(c["suite"])
        d = counts.setdefault(c["suite"], {"total": 0})
        d["total"] += 1
        d[c["status"]] = d.get(c["status"], 0) + 1
    return [(s, counts.get(s, {"total": 0})) for s in order]


def case_label(case):
    """The feature id, or the test name when the case has none."""
    return case.get("feature") or case["name"]


def reason_line(case, limit=None):
    """One-line reason: "[skip_class] [flaky: ...] [denylisted] reason"."""
    tags = []
    if case["status"] == "skip" and case.get("skip_class"):
        tags.append(case["skip_class"])
    tags += annotations(case)
    prefix = "".join("[%s] " % t for t in tags)
    return _CONTROL.sub("?", one_line(prefix + (case.get("reason") or ""), limit))


def attr_size_line(host):
    """'UAPI 128 bytes, kernel 136 bytes' (1.1 keys; '?' where unknown)."""
    def size(key):
        v = host.get(key)
        return "%d bytes" % v if isinstance(v, int) else "?"
    return "UAPI %s, kernel %s" % (size("attr_size_uapi"), size("attr_size_kernel"))


def backend_line(run):
    s = run["backend"]
    if run.get("profile"):
        s += ", profile %s" % run["profile"]
    if run.get("backend_reason"):
        s += " (%s)" % run["backend_reason"]
    return s


def cpu_line(host):
    parts = [host.get("cpu_model") or "unknown CPU"]
    ids = []
    if host.get("cpu_vendor"):
        ids.append(str(host["cpu_vendor"]))
    for key, label in (("cpu_family", "family"), ("cpu_model_number", "model"),
                       ("cpu_stepping", "stepping")):
        if host.get(key) is not None:
            ids.append("%s %s" % (label, host[key]))
    if ids:
        parts.append("(%s)" % " ".join(ids))
    parts.append("%s CPUs" % host.get("ncpus"))
    return " ".join(parts[:-1]) + ", " + parts[-1]


def pmu_line(host):
    pmus = host.get("pmus") or []
    if not pmus:
        return "none found"
    return ", ".join("%s (type %s)" % (p["name"], p["type"]) for p in pmus)


def environment_line(host):
    parts = []
    if host.get("container"):
        parts.append("container: %s" % (host.get("container_kind") or "yes"))
    else:
        parts.append("not in a container")
    if host.get("virtualization"):
        parts.append("virtualization: %s" % host["virtualization"])
    return ", ".join(parts)


def privilege_line(host):
    parts = ["uid %s" % host.get("uid")]
    for key, label in (("cap_perfmon", "CAP_PERFMON"), ("cap_sys_admin", "CAP_SYS_ADMIN")):
        if host.get(key) is not None:
            parts.append("%s %s" % (label, "yes" if host[key] else "no"))
    if host.get("seccomp") is not None:
        parts.append("seccomp mode %s" % host["seccomp"])
    return ", ".join(parts)
