"""The report document (schema 1.x, runner/SCHEMA.md, report.schema.json).

  build_report(run, host, cases) -> dict      adds schema_version and summary
  summarize(cases) -> summary dict
  validate_report(doc) -> [problem]           schema + consistency checks
  load_report(path) -> dict                   UsageError if not a perftest report
  write_report(doc, outdir, formats) -> [paths written]
  strict_problems(doc) -> [case]             what --strict fails the run for
  exit_code(doc, strict) -> 0 | 1 | 130       the run's exit code

The stable keys are a contract: do not rename them; add new keys freely.
"""

import json
import os
import tempfile

from . import schema
from .errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError

SCHEMA_VERSION = "1.3"
STATUSES = ("pass", "fail", "skip", "error", "timeout", "crash")
NOT_RUN = "not_run"            # only in interrupted runs (run.interrupted)
FAILING = ("fail", "error", "timeout", "crash")
SKIP_CLASSES = ("unsupported", "permission", "sandbox", "kernel_version")
# Summary counts of case flags, not statuses (not part of total): 1.1 the
# first three, 1.3 the expectation-list verdicts (expectations.judge) and retries.
FLAG_COUNTS = (("flaky", "flaky"), ("denylisted", "denylisted"), ("xfail", "xfail"),
               ("expected_skip", "expected_skip"), ("unexpected_skip", "unexpected_skip"),
               ("unexpected_pass", "unexpected_pass"), ("retried", "retried"))

_SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report.schema.json")
_schema_cache = None


def report_schema():
    """The parsed report.schema.json shipped with the package."""
    global _schema_cache
    if _schema_cache is None:
        with open(_SCHEMA_PATH, encoding="utf-8") as f:
            _schema_cache = json.load(f)
    return _schema_cache


def summarize(cases):
    """{"total", "pass", ..., "crash", "not_run", and the FLAG_COUNTS} counts
    over case dicts."""
    summary = {"total": len(cases)}
    for s in STATUSES + (NOT_RUN,):
        summary[s] = 0
    for c in cases:
        summary[c["status"]] = summary.get(c["status"], 0) + 1
    for key, flag in FLAG_COUNTS:
        summary[key] = sum(1 for c in cases if c.get(flag))
    return summary


def is_failing(case):
    """fail/error/timeout/crash, unless a deny list expects it to fail (xfail)."""
    return case["status"] in FAILING and not case.get("xfail")


def divergences(cases):
    """The documentation-divergences section: one entry per case that
    recorded a divergence, with the case's outcome here."""
    out = []
    for c in cases:
        d = c.get("divergence")
        if d:
            out.append({"id": d["id"], "suite": c["suite"], "name": c["name"],
                        "feature": c.get("feature"), "status": c["status"],
                        "documented": d.get("documented", ""), "actual": d.get("actual", "")})
    return out


def build_report(run, host, cases, health=None):
    """Assemble the document; cases are dicts as CaseResult.to_json gives;
    health is the run-level kernel health object (health.run_health), 1.2."""
    doc = {
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "host": host,
        "summary": summarize(cases),
        "cases": cases,
        "divergences": divergences(cases),
    }
    if health is not None:
        doc["health"] = health
    return doc


def validate_report(doc):
    """Problems with doc as a perftest report; [] when it is valid.

    Checks report.schema.json, then what a schema cannot say: skip_class set
    exactly for skips, summary counts matching the cases.
    """
    problems = schema.validate(doc, report_schema())
    if problems:
        return problems
    for i, c in enumerate(doc["cases"]):
        if c["status"] == "skip" and c["skip_class"] is None:
            problems.append("$.cases[%d].skip_class: a skip needs a skip_class" % i)
        if c["status"] != "skip" and c["skip_class"] is not None:
            problems.append("$.cases[%d].skip_class: must be null for status %r" % (i, c["status"]))
        if c.get("denylisted") and c["status"] != "skip":
            problems.append("$.cases[%d].denylisted: a denylisted case must be a skip, not %r"
                            % (i, c["status"]))
        if (c.get("expected_skip") or c.get("unexpected_skip")) and c["status"] != "skip":
            problems.append("$.cases[%d]: expected_skip/unexpected_skip on a %r, not a skip"
                            % (i, c["status"]))
        if c.get("unexpected_pass") and c["status"] != "pass":
            problems.append("$.cases[%d].unexpected_pass: on a %r, not a pass" % (i, c["status"]))
        if c.get("flaky") and len({r["status"] for r in c.get("repeats") or []}) < 2:
            problems.append("$.cases[%d].flaky: a flaky case needs repeats with differing "
                            "statuses" % i)
    h = doc.get("health")
    if h:
        flagged = {"tainted": 0, "warned": 0}
        for c in doc["cases"]:
            state = (c.get("health") or {}).get("state")
            if state in flagged:
                flagged[state] += 1
        for state, n in flagged.items():
            if h["cases_%s" % state] != n:
                problems.append("$.health.cases_%s: %d, but %d cases have health.state %r"
                                % (state, h["cases_%s" % state], n, state))
        if h["healthy"] and (flagged["tainted"] or flagged["warned"] or h["new_taint"]):
            problems.append("$.health.healthy: true, but cases or the run's taint say otherwise")
    counted = summarize(doc["cases"])
    optional = (NOT_RUN,) + tuple(k for k, _ in FLAG_COUNTS)
    for key in ("total",) + STATUSES + tuple(k for k in optional if k in doc["summary"]):
        if doc["summary"][key] != counted[key]:
            problems.append("$.summary.%s: %d, but the cases count %d"
                            % (key, doc["summary"][key], counted[key]))
    return problems


def load_report(path):
    """Read and validate a saved report. UsageError (exit 2) naming the
    file and the first problems when it is missing or not a perftest report."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise UsageError("report file does not exist: %s" % path) from None
    except OSError as e:
        raise UsageError("cannot read report %s: %s" % (path, e.strerror or e)) from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise UsageError("%s is not a perftest report: not valid JSON (%s)" % (path, e)) from None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        raise UsageError("%s is not a perftest report: no \"schema_version\" key" % path)
    version = doc["schema_version"]
    if not isinstance(version, str) or not version.startswith("1."):
        raise UsageError("%s: unsupported schema_version %r (this perftest reads 1.x)"
                         % (path, version))
    problems = validate_report(doc)
    if problems:
        more = "" if len(problems) <= 5 else " (and %d more)" % (len(problems) - 5)
        raise UsageError("%s is not a valid perftest report: %s%s"
                         % (path, "; ".join(problems[:5]), more))
    return doc


def check_output_dir(path):
    """Create the output directory and prove it writable; UsageError saying
    the path and the OS error otherwise. Returns the absolute path."""
    path = os.path.abspath(path)
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".perftest-write-test-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError("cannot write output directory %s: %s"
                         % (path, e.strerror or e)) from None
    return path


def _write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_report(doc, outdir, formats=("md",)):
    """Write outdir/report.json plus one rendering per format; returns paths."""
    from .render import RENDERERS

    paths = []
    json_path = os.path.join(outdir, "report.json")
    _write_atomic(json_path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    paths.append(json_path)
    for fmt in formats:
        renderer = RENDERERS[fmt]
        out = os.path.join(outdir, "report." + renderer.extension)
        _write_atomic(out, renderer.render(doc))
        paths.append(out)
    return paths


def strict_problems(doc):
    """The cases --strict fails the run for: skips no expectation list
    declared (``unexpected_skip``) and expected skips that passed
    (``unexpected_pass``). A report from before 1.3 (no ``run.expectations``)
    knew no expected skips: there every skip counts."""
    if "expectations" not in doc["run"]:
        return [c for c in doc["cases"] if c["status"] == "skip"]
    return [c for c in doc["cases"] if c.get("unexpected_skip") or c.get("unexpected_pass")]


def exit_code(doc, strict=False):
    """0 all passed (skips allowed unless strict), 1 any failing case (an
    expected failure from a deny list does not count; with strict also a
    strict_problems() case, or no cases; with --taint=fail also a kernel that
    tainted itself or warned), 130 when the run was interrupted."""
    from .health import health_fails
    s = doc["summary"]
    if doc["run"].get("interrupted"):
        return EXIT_INTERRUPTED
    if any(is_failing(c) for c in doc["cases"]) or health_fails(doc):
        return EXIT_FAILED
    if strict and (strict_problems(doc) or s.get("total", 0) == 0):
        return EXIT_FAILED
    return EXIT_OK
