"""The porting check: ``perftest diff BASE.json NEW.json``.

Compares two reports case by case, matched by feature id (a case without
one by suite and test name; a feature id that occurs twice in a report is
told apart by test name). Works between any two 1.x reports: two kernels,
a machine and a mock profile, two arch profiles; the header says where the
runs differ (backend, profile, kernel, arch, CPU, schema version, suites).

Categories (each case lands in exactly one):
  lost            pass -> fail/error/timeout/crash                  regression
  newly_failing   skip/not_run -> fail/error/timeout/crash           regression
  gained          anything else -> pass
  changed         any other status change (pass -> skip, fail -> crash, ...)
  skip_changed    skip in both, but skip_class or reason differs
  new             only in NEW; counted as a regression when it fails
  removed         only in BASE
  unchanged       same status (and for skips: same class and reason)
A failing case that a deny list marks ``xfail`` in NEW is not failing here
either. With ``strict``, pass -> skip/not_run and a removed case that
passed are regressions too (coverage lost).

compare(base, new, strict=False) -> dict, also the JSON form: "verdict"
("regressed" | "no_regressions" | "identical"), "headline", "base" and "new"
(what each run was), "notes", "counts", "changes": {category: [entry]} with
entry = {"key", "feature", "base", "new" (status, skip_class, reason, suite,
name; null when absent), "regression"};
render_text / render_markdown / render_json(result) -> str;
exit code: 0 no regression, 1 regression, 2 bad input (UsageError).
"""

import json
import shutil

from . import report
from .errors import UsageError
from .gtest import one_line
from .render.markdown import cell, code

DIFF_VERSION = "1.0"
CATEGORIES = ("lost", "newly_failing", "gained", "changed", "skip_changed", "new", "removed")
TITLES = {
    "lost": "Lost: passed in BASE, fails in NEW",
    "newly_failing": "Newly failing: skipped or not run in BASE, fails in NEW",
    "gained": "Gained: passes in NEW, did not in BASE",
    "changed": "Changed status",
    "skip_changed": "Skip reason or class changed",
    "new": "New cases (only in NEW)",
    "removed": "Removed cases (only in BASE)",
}


def _failing(case):
    return case is not None and report.is_failing(case)


def _keys(cases):
    """{key: case}, key = feature id, else 'suite:Test.Name'; duplicates of a
    feature id are keyed 'feature [suite:Test.Name]'."""
    seen = {}
    for c in cases:
        seen[c.get("feature")] = seen.get(c.get("feature"), 0) + 1
    out = {}
    for c in cases:
        f = c.get("feature")
        if not f:
            key = "%s:%s" % (c["suite"], c["name"])
        elif seen[f] > 1:
            key = "%s [%s:%s]" % (f, c["suite"], c["name"])
        else:
            key = f
        out[key] = c
    return out


def _side(case):
    if case is None:
        return None
    d = {"status": case["status"], "skip_class": case.get("skip_class"),
         "reason": case.get("reason") or "", "suite": case["suite"], "name": case["name"]}
    for flag in ("flaky", "denylisted", "xfail"):
        if case.get(flag):
            d[flag] = True
    return d


def classify(base, new, strict=False):
    """(category or 'unchanged', is_regression) for a pair; either may be None."""
    if base is None:
        return "new", _failing(new)
    if new is None:
        return "removed", strict and base["status"] == "pass"
    b, n = base["status"], new["status"]
    if _failing(new) and not _failing(base):
        if b == "pass":
            return "lost", True
        if b in ("skip", "not_run") or (b in report.FAILING and base.get("xfail")):
            return "newly_failing", True
    if n == "pass" and b != "pass":
        return "gained", False
    if b != n:
        return "changed", strict and b == "pass" and n in ("skip", "not_run")
    if b == "skip" and (base.get("skip_class") != new.get("skip_class")
                        or (base.get("reason") or "") != (new.get("reason") or "")):
        return "skip_changed", False
    return "unchanged", False


def _run_info(doc, path):
    run, host = doc["run"], doc["host"]
    return {
        "path": path,
        "schema_version": doc["schema_version"],
        "backend": run["backend"],
        "profile": run.get("profile"),
        "backend_reason": run.get("backend_reason"),
        "kernel_release": host.get("kernel_release"),
        "arch": host.get("arch"),
        "cpu_model": host.get("cpu_model"),
        "started": run.get("started"),
        "suites": list(run.get("suites") or []),
        "interrupted": bool(run.get("interrupted")),
        "kernel_health": (doc.get("health") or {}).get("summary"),
        "kernel_healthy": (doc.get("health") or {}).get("healthy"),
        "summary": {k: doc["summary"].get(k, 0)
                    for k in ("total",) + report.STATUSES + (report.NOT_RUN,)},
    }


def _where(info):
    s = info["backend"]
    if info["profile"]:
        s += " (profile %s)" % info["profile"]
    return s


def _notes(b, n):
    """What differs between the two runs, as sentences for the header."""
    notes = []
    if (b["backend"], b["profile"]) != (n["backend"], n["profile"]):
        notes.append("different backends: BASE ran on %s, NEW on %s; differences can come "
                     "from the %s, not only the machine"
                     % (_where(b), _where(n),
                        "mock model" if "mock" in (b["backend"], n["backend"]) else "profiles"))
    for key, what in (("kernel_release", "kernels"), ("arch", "architectures"),
                      ("cpu_model", "CPUs")):
        if b[key] != n[key]:
            notes.append("different %s: %s (BASE) vs %s (NEW)" % (what, b[key], n[key]))
    if b["schema_version"] != n["schema_version"]:
        notes.append("schema versions differ: %s (BASE) vs %s (NEW); keys added after %s "
                     "are treated as absent"
                     % (b["schema_version"], n["schema_version"],
                        min(b["schema_version"], n["schema_version"])))
    if b["suites"] != n["suites"]:
        only_b = [s for s in b["suites"] if s not in n["suites"]]
        only_n = [s for s in n["suites"] if s not in b["suites"]]
        parts = []
        if only_b:
            parts.append("only BASE ran %s" % ", ".join(only_b))
        if only_n:
            parts.append("only NEW ran %s" % ", ".join(only_n))
        if parts:
            notes.append("different suites: %s" % "; ".join(parts))
    for info, label in ((b, "BASE"), (n, "NEW")):
        if info.get("kernel_healthy") is False:
            notes.append("kernel health of the %s run: %s" % (label, info["kernel_health"]))
        if info["interrupted"]:
            notes.append("the %s run was interrupted: %d cases not run"
                         % (label, info["summary"].get("not_run", 0)))
    return notes


def compare(base_doc, new_doc, base_path="BASE", new_path="NEW", strict=False):
    """The diff of two validated report documents (see the module doc)."""
    base_cases, new_cases = _keys(base_doc["cases"]), _keys(new_doc["cases"])
    order = list(base_cases) + [k for k in new_cases if k not in base_cases]
    result = {
        "perftest_diff": DIFF_VERSION,
        "strict": strict,
        "base": _run_info(base_doc, base_path),
        "new": _run_info(new_doc, new_path),
    }
    result["notes"] = _notes(result["base"], result["new"])
    buckets = {c: [] for c in CATEGORIES}
    unchanged = still_failing = regressions = 0
    for key in order:
        b, n = base_cases.get(key), new_cases.get(key)
        category, regression = classify(b, n, strict)
        if category == "unchanged":
            unchanged += 1
            if _failing(n):
                still_failing += 1
            continue
        entry = {"key": key, "feature": (n or b).get("feature"),
                 "base": _side(b), "new": _side(n), "regression": regression}
        if category == "removed" and b["suite"] not in result["new"]["suites"]:
            entry["note"] = "suite %s not run in NEW" % b["suite"]
        buckets[category].append(entry)
        regressions += regression
    result["changes"] = buckets
    result["counts"] = dict({c: len(buckets[c]) for c in CATEGORIES},
                            unchanged=unchanged, still_failing=still_failing,
                            regressions=regressions)
    if regressions:
        result["verdict"] = "regressed"
    elif any(buckets[c] for c in CATEGORIES):
        result["verdict"] = "no_regressions"
    else:
        result["verdict"] = "identical"
    result["headline"] = headline(result)
    return result


def exit_code(result):
    return 1 if result["verdict"] == "regressed" else 0


def headline(result):
    c = result["counts"]
    if result["verdict"] == "regressed":
        parts = ["%d lost" % c["lost"]] if c["lost"] else []
        if c["newly_failing"]:
            parts.append("%d newly failing" % c["newly_failing"])
        new_failing = sum(1 for e in result["changes"]["new"] if e["regression"])
        if new_failing:
            parts.append("%d new failing" % new_failing)
        others = c["regressions"] - c["lost"] - c["newly_failing"] - new_failing
        if others:
            parts.append("%d lost coverage (--strict)" % others)
        return "REGRESSED: %d regression%s (%s)" % (c["regressions"],
                                                    "" if c["regressions"] == 1 else "s",
                                                    ", ".join(parts))
    if result["verdict"] == "identical":
        return "IDENTICAL: %d cases, same results" % c["unchanged"]
    parts = ["%d %s" % (c[k], k.replace("_", " ")) for k in CATEGORIES if c[k]]
    return "NO REGRESSIONS: %s" % ", ".join(parts)


def _describe_run(info):
    s = info["summary"]
    counts = ", ".join("%d %s" % (s[k], k) for k in report.STATUSES + (report.NOT_RUN,) if s.get(k))
    return "%s; kernel %s %s; %s; %s; schema %s; %d cases (%s)" % (
        _where(info), info["kernel_release"], info["arch"], info["cpu_model"] or "unknown CPU",
        info["started"], info["schema_version"], s["total"], counts or "none")


def _status_text(side):
    if side is None:
        return "-"
    s = side["status"]
    if s == "skip" and side.get("skip_class"):
        s += " [%s]" % side["skip_class"]
    if side.get("xfail"):
        s += " (xfail)"
    if side.get("flaky"):
        s += " (flaky)"
    return s


def _entry_reason(e):
    """The most telling reason of an entry: NEW's, unless NEW passed."""
    n, b = e["new"], e["base"]
    if n is not None and n["status"] != "pass" and n["reason"]:
        return n["reason"]
    if b is not None and b["reason"]:
        return "was: " + b["reason"]
    return ""


def render_text(result, width=None):
    width = width or max(100, min(200, shutil.get_terminal_size((140, 24)).columns))
    out = ["perftest diff: %s" % headline(result),
           "  BASE %s" % result["base"]["path"],
           "       %s" % _describe_run(result["base"]),
           "  NEW  %s" % result["new"]["path"],
           "       %s" % _describe_run(result["new"])]
    for note in result["notes"]:
        out.append("  note: %s" % note)
    for cat in CATEGORIES:
        entries = result["changes"][cat]
        if not entries:
            continue
        out += ["", "%s (%d):" % (TITLES[cat], len(entries))]
        key_w = min(40, max(len(e["key"]) for e in entries))
        for e in entries:
            change = "%s -> %s" % (_status_text(e["base"]), _status_text(e["new"]))
            mark = "!" if e["regression"] else " "
            line = "%s %-*s  %-28s " % (mark, key_w, e["key"], change)
            if cat == "skip_changed":
                reason = "was: %s" % one_line(e["base"]["reason"])
                line += one_line(reason, max(20, width - len(line)))
                out.append(line.rstrip())
                out.append("  %-*s  %-28s now: %s" % (key_w, "", "", one_line(
                    e["new"]["reason"], max(20, width - key_w - 40))))
                continue
            reason = e.get("note") or _entry_reason(e)
            out.append((line + one_line(reason, max(20, width - len(line)))).rstrip())
    c = result["counts"]
    out += ["", "unchanged: %d cases (%d of them failing in both)" % (c["unchanged"],
                                                                    c["still_failing"])]
    if c["regressions"]:
        out.append("(! marks a regression)")
    return "\n".join(out) + "\n"


def render_markdown(result):
    b, n = result["base"], result["new"]
    out = ["# perftest diff", "", "**%s**" % headline(result), ""]
    rows = [("", "BASE", "NEW"),
            ("report", code(b["path"]), code(n["path"])),
            ("backend", cell(_where(b)), cell(_where(n))),
            ("kernel", cell(b["kernel_release"]), cell(n["kernel_release"])),
            ("arch", cell(b["arch"]), cell(n["arch"])),
            ("CPU", cell(b["cpu_model"]), cell(n["cpu_model"])),
            ("started", cell(b["started"]), cell(n["started"])),
            ("schema", cell(b["schema_version"]), cell(n["schema_version"])),
            ("suites", cell(", ".join(b["suites"])), cell(", ".join(n["suites"]))),
            ("cases", cell(_counts_line(b)), cell(_counts_line(n)))]
    out.append("| " + " | ".join(rows[0]) + " |")
    out.append("|---|---|---|")
    out += ["| %s | %s | %s |" % r for r in rows[1:]]
    out.append("")
    for note in result["notes"]:
        out.append("> **Note:** %s" % cell(note, 500))
        out.append("")
    for cat in CATEGORIES:
        entries = result["changes"][cat]
        if not entries:
            continue
        out += ["## %s (%d)" % (TITLES[cat], len(entries)), ""]
        out.append("| case | BASE | NEW | reason |")
        out.append("|---|---|---|---|")
        for e in entries:
            key = code(e["key"]) + (" **(regression)**" if e["regression"] else "")
            if cat == "skip_changed":
                reason = "was: %s<br>now: %s" % (cell(e["base"]["reason"]), cell(e["new"]["reason"]))
            else:
                reason = cell(e.get("note") or _entry_reason(e))
            out.append("| %s | %s | %s | %s |" % (key, cell(_status_text(e["base"])),
                                                   cell(_status_text(e["new"])), reason))
        out.append("")
    c = result["counts"]
    out.append("Unchanged: %d cases (%d of them failing in both)." % (c["unchanged"],
                                                                      c["still_failing"]))
    return "\n".join(out) + "\n"


def _counts_line(info):
    s = info["summary"]
    return "%d: %s" % (s["total"], ", ".join(
        "%d %s" % (s[k], k) for k in report.STATUSES + (report.NOT_RUN,) if s.get(k)) or "none")


def render_json(result):
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


FORMATS = {"text": render_text, "md": render_markdown, "json": render_json}


def load_pair(base_path, new_path):
    """Both reports, validated; UsageError names which argument was bad."""
    docs = []
    for label, path in (("BASE", base_path), ("NEW", new_path)):
        try:
            docs.append(report.load_report(path))
        except UsageError as e:
            raise UsageError("%s: %s" % (label, e)) from None
    return docs
