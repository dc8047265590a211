"""KTAP version 1 renderer (Linux Documentation/dev-tools/ktap.rst), for
kselftest and KernelCI tooling.

Suites are the top-level tests, cases their subtests, indented two spaces:

  KTAP version 1
  1..1
  # perftest 0.1.0: backend kernel (...); kernel 6.1.0 x86_64
    KTAP version 1
    # Subtest: ringbuffer
    1..3
    ok 1 ringbuffer.mmap_size_rule
    # rb.cc:10
    # Expected equality
    not ok 2 ringbuffer.wraparound
    ok 3 ringbuffer.aux # SKIP [permission] needs CAP_PERFMON
  not ok 1 ringbuffer
  # Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0

Case result lines, by status (description = feature id, or the test name):
  pass      ok N desc
  fail      not ok N desc           the reason as "# " diagnostic lines before it
  skip      ok N desc # SKIP [skip_class] reason
  timeout   not ok N desc # TIMEOUT reason
  error     not ok N desc # ERROR reason
  crash     not ok N desc # ERROR crash: reason
  not_run   ok N desc # SKIP not run: reason   (interrupted runs)
  expected failure (deny list ``xfail``):  ok N desc # XFAIL status: reason
Kernel health (schema 1.2): a case during which the kernel tainted itself
or warned gets "# kernel health: ..." and "# kernel log: ..." diagnostic
lines before its result; under --taint=fail a pass or skip among them is
"not ok N desc # kernel health (case pass)". The run's health is a
diagnostic line after the plan.
A suite is "not ok" when one of its cases is (an expected failure is not),
"ok ... # SKIP" when every case skipped, else "ok". The "# Subtest:" line is
the diagnostic line KUnit writes; ktap.rst allows diagnostic lines anywhere.
The closing "# Totals:" line has kselftest's form (error counts error,
timeout and crash).

render(doc) -> str
"""

from .. import health as _health
from . import common

INDENT = "  "


def description(case):
    """The test's description: feature id or name; '#' cannot appear in it."""
    return (case.get("feature") or case["name"]).replace("#", "_").strip() or "case"


def _data(text, limit=400):
    return common.one_line(text, limit)


def health_lines(case):
    """'# kernel health: ...' diagnostic lines for a case during which the
    kernel tainted itself or warned (one per kernel log line), else []."""
    h = case.get("health")
    if not _health.is_flagged(h):
        return []
    lines = ["# kernel health: %s" % _data(_health.describe(h))]
    lines += ["# kernel log: %s" % _data(e["line"]) for e in h.get("events", [])]
    return lines


def case_lines(case, number, doc=None):
    """KTAP lines (unindented) for one case: diagnostics, then the result line.
    With --taint=fail (``doc``'s health policy) a pass or skip during which
    the kernel tainted itself or warned is "not ok"."""
    st = case["status"]
    desc = description(case)
    reason = case.get("reason") or ""
    lines = health_lines(case)
    if doc is not None and common.health_fails_case(doc, case):
        lines.append("not ok %d %s # kernel health (case %s)" % (number, desc, st))
        return [line.rstrip() for line in lines]
    if common.is_xfail(case):
        why = case.get("denylist_reason")
        data = "%s: %s" % (st, _data(reason))
        if why:
            data += " (expected: %s)" % _data(why, 200)
        lines.append("ok %d %s # XFAIL %s" % (number, desc, data))
        return lines
    if st == "pass":
        note = ""
        if case.get("flaky"):
            note = " # flaky: %s" % ", ".join(r["status"] for r in case.get("repeats") or [])
        lines.append("ok %d %s%s" % (number, desc, note))
    elif st == "fail":
        for line in reason.splitlines() or ["failed"]:
            lines.append(("# " + line).rstrip())
        if case.get("flaky"):
            lines.append("# flaky: %s" % ", ".join(r["status"] for r in case.get("repeats") or []))
        lines.append("not ok %d %s" % (number, desc))
    elif st == "skip":
        tag = "[%s] " % case["skip_class"] if case.get("skip_class") else ""
        if case.get("denylisted"):
            tag += "[denylisted] "
        if case.get("expected_skip"):
            tag += "[expected: %s] " % common.short_entry(case.get("expectation_entry"))
        if case.get("unexpected_skip"):
            tag += "[UNEXPECTED skip] "
        lines.append("ok %d %s # SKIP %s%s" % (number, desc, tag, _data(reason)))
    elif st == "timeout":
        lines.append("not ok %d %s # TIMEOUT %s" % (number, desc, _data(reason)))
    elif st == "crash":
        lines.append("not ok %d %s # ERROR crash: %s" % (number, desc, _data(reason)))
    elif st == "error":
        lines.append("not ok %d %s # ERROR %s" % (number, desc, _data(reason)))
    else:   # not_run
        lines.append("ok %d %s # SKIP not run: %s" % (number, desc, _data(reason)))
    return [line.rstrip() for line in lines]


def _suite_result(cases, doc=None):
    """(ok, directive text or '') of a suite from its cases."""
    if any(common.is_failing(c) or (doc is not None and common.health_fails_case(doc, c))
           for c in cases):
        return False, ""
    if not cases:
        return True, " # SKIP no cases"
    if all(c["status"] in ("skip", "not_run") for c in cases):
        return True, " # SKIP all %d cases skipped" % len(cases)
    return True, ""


def totals(doc):
    cases = doc["cases"]
    n = {"pass": 0, "fail": 0, "xfail": 0, "xpass": 0, "skip": 0, "error": 0}
    for c in cases:
        st = c["status"]
        if common.health_fails_case(doc, c):
            n["fail"] += 1
        elif common.is_xfail(c):
            n["xfail"] += 1
        elif st == "pass":
            n["xpass" if c.get("xfail") else "pass"] += 1
        elif st == "fail":
            n["fail"] += 1
        elif st in ("skip", "not_run"):
            n["skip"] += 1
        else:
            n["error"] += 1
    return "# Totals: " + " ".join("%s:%d" % (k, v) for k, v in n.items())


def render(doc):
    run, host = doc["run"], doc["host"]
    suites = common.suite_counts(doc)
    out = ["KTAP version 1", "1..%d" % len(suites)]
    out.append("# perftest %s: backend %s; kernel %s %s" % (
        run.get("perftest_version"), _data(common.backend_line(run), 300),
        host.get("kernel_release"), host.get("arch")))
    if run.get("interrupted"):
        out.append("# interrupted: %d cases not run" % doc["summary"].get("not_run", 0))
    if common.health_line(doc):
        out.append("# kernel health: %s" % _data(common.health_line(doc), 600))
    for i, (suite, _) in enumerate(suites, 1):
        cases = [c for c in doc["cases"] if c["suite"] == suite]
        out.append(INDENT + "KTAP version 1")
        out.append(INDENT + "# Subtest: %s" % suite)
        out.append(INDENT + "1..%d" % len(cases))
        for j, c in enumerate(cases, 1):
            out += [INDENT + line for line in case_lines(c, j, doc)]
        ok, directive = _suite_result(cases, doc)
        out.append("%s %d %s%s" % ("ok" if ok else "not ok", i, suite.replace("#", "_"), directive))
    out.append(totals(doc))
    return "\n".join(out) + "\n"
