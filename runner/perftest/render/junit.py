"""JUnit XML renderer, in the dialect GitHub Actions reporters, GitLab
(``artifacts:reports:junit``) and Jenkins (JUnit plugin) read.

  <testsuites name tests failures errors skipped time timestamp>
    <testsuite name=SUITE tests failures errors skipped time timestamp>
      <properties><property name value/>...</properties>   run and host facts
      <testcase classname=SUITE name=FEATURE-ID time=SECONDS>
        <failure message type="fail">     status fail
        <error message type="error|timeout|crash">
        <skipped message="[skip_class] reason"/>   skip, not_run, expected failure
        <failure message type="kernel-health">   --taint=fail: a pass or skip during
                                                 which the kernel tainted itself or warned
        <properties><property name="kernel_health"/></properties>   the same
                                                 finding under --taint=warn/ignore
        <system-out>test, spec, reason, log, repeats, kernel health</system-out>
      </testcase>

``name`` is the feature id (the stable key), the GoogleTest name when a case
has none. Counts are those of the elements written (a failing case a deny
list marks ``xfail`` is counted as skipped, as pytest does for xfail).
Timestamps are ISO 8601 without a zone (the JUnit XSD's form), in UTC.
Characters XML 1.0 cannot carry (NUL and other C0 controls from a crashed
binary's output) are replaced by U+FFFD.

render(doc) -> str
"""

import re
import xml.etree.ElementTree as ET

from .. import health as _health
from . import common

_INVALID_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text):
    """text with characters XML 1.0 forbids replaced by U+FFFD."""
    return _INVALID_XML.sub("\ufffd", "" if text is None else str(text))


def _timestamp(started):
    if not started:
        return None
    return started[:-1] if started.endswith("Z") else started


def _seconds(x):
    return "%.3f" % (x or 0.0)


def _element_for(case, doc=None):
    """(tag, type) of the outcome element of a case, or (None, None) for a pass.
    With --taint=fail, a pass or skip during which the kernel tainted itself
    or warned is a failure of type "kernel-health"."""
    st = case["status"]
    if doc is not None and common.health_fails_case(doc, case):
        return "failure", "kernel-health"
    if st == "pass":
        return None, None
    if common.is_xfail(case) or st in ("skip", "not_run"):
        return "skipped", None
    if st == "fail":
        return "failure", "fail"
    return "error", st


def _message(case):
    st = case["status"]
    reason = case.get("reason") or ""
    if common.is_xfail(case):
        why = case.get("denylist_reason") or "declared in a deny list"
        return "expected failure (%s): %s: %s" % (why, st, common.one_line(reason, 300))
    if st == "skip":
        tag = "[%s] " % case["skip_class"] if case.get("skip_class") else ""
        if case.get("denylisted"):
            tag += "[denylisted] "
        if case.get("expected_skip"):
            tag += "[expected: %s] " % common.short_entry(case.get("expectation_entry"))
        if case.get("unexpected_skip"):
            tag += "[UNEXPECTED skip] "
        return tag + common.one_line(reason, 500)
    return common.one_line(reason, 500) or st


def _system_out(case):
    lines = ["test: %s" % case["name"]]
    if case.get("spec"):
        lines.append("spec: %s" % case["spec"])
    lines.append("status: %s" % case["status"])
    if case.get("repeats"):
        lines.append("repeats: %s%s" % (", ".join(r["status"] for r in case["repeats"]),
                                        " (flaky)" if case.get("flaky") else ""))
    if case.get("log"):
        lines.append("log: %s" % case["log"])
    if case.get("health"):
        lines.append("kernel health: %s" % _health.describe(case["health"]))
        lines += ["  kernel log: %s" % e["line"] for e in case["health"].get("events", [])]
    return "\n".join(lines) + "\n"


def _counts(cases, doc=None):
    n = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
    key = {"failure": "failures", "error": "errors", "skipped": "skipped"}
    for c in cases:
        tag, _ = _element_for(c, doc)
        if tag:
            n[key[tag]] += 1
    return n


def _set_counts(el, cases, time_s, doc=None):
    n = _counts(cases, doc)
    for k in ("tests", "failures", "errors", "skipped"):
        el.set(k, str(n[k]))
    el.set("time", _seconds(time_s))


def build(doc):
    """The <testsuites> Element for a report."""
    run, host = doc["run"], doc["host"]
    suites = common.suite_counts(doc)
    root = ET.Element("testsuites")
    root.set("name", "perftest %s (%s)" % (", ".join(s for s, _ in suites) or "no suites",
                                          run["backend"]))
    _set_counts(root, doc["cases"], run.get("duration_s"), doc)
    ts = _timestamp(run.get("started"))
    if ts:
        root.set("timestamp", ts)
    props = [
        ("backend", run["backend"]),
        ("backend_reason", run.get("backend_reason")),
        ("profile", run.get("profile")),
        ("kernel_release", host.get("kernel_release")),
        ("arch", host.get("arch")),
        ("cpu", common.cpu_line(host)),
        ("perf_event_paranoid", host.get("perf_event_paranoid")),
        ("perftest_version", run.get("perftest_version")),
        ("schema_version", doc.get("schema_version")),
        ("kernel_health", common.health_line(doc)),
    ]
    for suite, _ in suites:
        cases = [c for c in doc["cases"] if c["suite"] == suite]
        s = ET.SubElement(root, "testsuite")
        s.set("name", clean(suite))
        _set_counts(s, cases, sum(c.get("duration_s", 0) for c in cases), doc)
        if ts:
            s.set("timestamp", ts)
        pe = ET.SubElement(s, "properties")
        for k, v in props:
            if v is not None:
                p = ET.SubElement(pe, "property")
                p.set("name", k)
                p.set("value", clean(v))
        for c in cases:
            tc = ET.SubElement(s, "testcase")
            tc.set("classname", clean(suite))
            tc.set("name", clean(c.get("feature") or c["name"]))
            tc.set("time", _seconds(c.get("duration_s")))
            tag, kind = _element_for(c, doc)
            if _health.is_flagged(c.get("health")) and kind != "kernel-health":
                # --taint=warn/ignore: the finding as a property, the outcome unchanged.
                tp = ET.SubElement(ET.SubElement(tc, "properties"), "property")
                tp.set("name", "kernel_health")
                tp.set("value", clean(_health.describe(c["health"])))
            if tag == "skipped":
                ET.SubElement(tc, "skipped").set("message", clean(_message(c)))
            elif tag:
                e = ET.SubElement(tc, tag)
                e.set("message", clean(_message(c) if kind != "kernel-health" else
                                       "kernel health, case %s: %s" % (
                                           c["status"], _health.describe(c["health"]))))
                e.set("type", kind)
                e.text = clean(c.get("reason") or kind)
                if kind == "kernel-health":
                    e.text = clean("\n".join([_health.describe(c["health"])] + [
                        ev["line"] for ev in c["health"].get("events", [])]))
            ET.SubElement(tc, "system-out").text = clean(_system_out(c))
    return root


def render(doc):
    root = build(doc)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
