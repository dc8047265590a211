"""The ``matrix`` command: one compatibility matrix from many reports.

A kernel developer or CPU vendor runs the suites on many machines, kernels
and architectures (bare-metal runners, ``--vm`` guests, mock profiles); the
matrix puts every report side by side. Rows are behaviours (feature ids,
grouped by suite), columns are reports (kernel release x arch x backend or
mock profile, with the CPU), cells are the case's status there, with its
skip class, reason and kernel health.

  load_reports(paths) -> [(path, doc)]      UsageError (exit 2): no reports, a
                                            file that is not a report, two
                                            reports with the same column identity
  build(reports) -> dict                    the matrix document (schema below)
  write(matrix, outdir) -> [paths]          matrix.json, matrix.md, matrix.html
  load_matrix(path) -> dict                 a saved matrix.json, validated

Reports of any 1.x schema and of different case sets merge: a behaviour a
report does not have is a ``missing`` cell. The matrix document's schema is
``matrix.schema.json`` (documented in runner/SCHEMA.md, "Matrix").
"""

import datetime
import json
import os

from . import __version__, health, report, schema
from .errors import UsageError

MATRIX_VERSION = "1.0"
MISSING = "missing"
CELL_STATUSES = report.STATUSES + (report.NOT_RUN, MISSING)
_SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "matrix.schema.json")
FILES = (("json", "matrix.json"), ("md", "matrix.md"), ("html", "matrix.html"))


def _resolve(path):
    """A report path; a directory stands for its report.json."""
    if os.path.isdir(path):
        return os.path.join(path, "report.json")
    return path


def identity(doc):
    """The column identity of a report: (backend, profile, kernel release,
    arch, CPU model). Two reports with the same identity would be one column."""
    run, host = doc["run"], doc["host"]
    return (run["backend"], run.get("profile") if run["backend"] == "mock" else None,
            host.get("kernel_release"), host.get("arch"), host.get("cpu_model"))


def _identity_text(ident):
    backend, profile, release, arch, cpu = ident
    what = "mock profile %s" % profile if backend == "mock" else backend
    return "%s, kernel %s, %s, CPU %s" % (what, release, arch, cpu or "unknown")


def load_reports(paths):
    """[(path, doc)] for the given report files (or directories holding a
    report.json), validated; UsageError naming the file and the problem."""
    if not paths:
        raise UsageError("perftest matrix needs at least one report (REPORT.json files or "
                         "directories holding one), e.g. perftest matrix out/*/report.json")
    out, seen = [], {}
    for given in paths:
        path = _resolve(given)
        doc = report.load_report(path)
        ident = identity(doc)
        if ident in seen:
            raise UsageError("%s and %s have the same column identity (%s): a matrix column is "
                             "one backend/profile on one kernel, arch and CPU; drop one of them"
                             % (seen[ident], path, _identity_text(ident)))
        seen[ident] = path
        out.append((path, doc))
    return out


def _short_cpu(cpu):
    if not cpu:
        return "unknown CPU"
    for noise in ("(R)", "(TM)", "(tm)", " CPU", " Processor", " processor"):
        cpu = cpu.replace(noise, "")
    return " ".join(cpu.split())


def _column(index, path, doc):
    run, host = doc["run"], doc["host"]
    h = doc.get("health")
    what = "mock %s" % run.get("profile") if run["backend"] == "mock" else run["backend"]
    guest = None
    if isinstance(run.get("vm"), dict):          # perftest run --vm (host is the guest)
        vm = host.get("vm") if isinstance(host.get("vm"), dict) else {}
        guest = {"kernel": run["vm"].get("kernel"), "accel": vm.get("accel")}
        what = "guest %s" % (guest["kernel"] or "?")
        if guest["accel"]:
            what += " (%s)" % guest["accel"]
    col = {
        "id": "c%d" % (index + 1),
        "label": what,
        "source": path,
        "backend": run["backend"],
        "profile": run.get("profile"),
        "kernel_release": host.get("kernel_release"),
        "arch": host.get("arch"),
        "cpu_model": host.get("cpu_model"),
        "cpu": _short_cpu(host.get("cpu_model")),
        "virtualization": host.get("virtualization"),
        "guest": guest,
        "started": run.get("started"),
        "perftest_version": run.get("perftest_version"),
        "schema_version": doc["schema_version"],
        "suites": list(run.get("suites") or []),
        "interrupted": bool(run.get("interrupted")),
        "summary": {k: doc["summary"].get(k, 0)
                    for k in ("total",) + report.STATUSES + (report.NOT_RUN,)},
        "health": None,
    }
    if h:
        col["health"] = {"healthy": h["healthy"], "policy": h["policy"],
                         "tainted_end": h.get("tainted_end"),
                         "new_taint": h.get("new_taint", ""),
                         "cases_flagged": h["cases_tainted"] + h["cases_warned"],
                         "log_readable": h.get("log_readable", False),
                         "summary": h.get("summary", "")}
    return col


def _row_keys(doc):
    """[(row key, case)]: key (suite, feature or test name); a feature id
    that appears twice in one report is told apart by its test name."""
    count = {}
    for c in doc["cases"]:
        k = (c["suite"], c.get("feature") or c["name"])
        count[k] = count.get(k, 0) + 1
    out = []
    for c in doc["cases"]:
        k = (c["suite"], c.get("feature") or c["name"])
        if count[k] > 1:
            k = (c["suite"], "%s (%s)" % (k[1], c["name"]))
        out.append((k, c))
    return out


def _cell(case):
    cell = {"status": case["status"]}
    if case.get("skip_class"):
        cell["skip_class"] = case["skip_class"]
    if case.get("reason"):
        cell["reason"] = case["reason"][:600]
    for flag in ("flaky", "xfail", "denylisted"):
        if case.get(flag):
            cell[flag] = True
    h = case.get("health")
    if health.is_flagged(h):
        cell["health"] = h["state"]
        if h.get("new_taint"):
            cell["new_taint"] = h["new_taint"]
        cell["kernel_log"] = [e["line"] for e in h.get("events", [])][:5]
    return cell


def build(reports, generated=None):
    """The matrix document for [(path, doc)] (see matrix.schema.json)."""
    columns = [_column(i, path, doc) for i, (path, doc) in enumerate(reports)]
    suites, rows = [], {}
    for i, (_, doc) in enumerate(reports):
        for s in list(doc["run"].get("suites") or []) + [c["suite"] for c in doc["cases"]]:
            if s not in suites:
                suites.append(s)
        for key, case in _row_keys(doc):
            row = rows.setdefault(key, {"suite": key[0], "feature": key[1], "names": [],
                                        "spec": None, "cells": [None] * len(reports)})
            if case["name"] not in row["names"]:
                row["names"].append(case["name"])
            row["spec"] = row["spec"] or case.get("spec")
            row["cells"][i] = _cell(case)
    ordered = []
    for key in sorted(rows, key=lambda k: (suites.index(k[0]), k[1])):
        row = rows[key]
        row["cells"] = [c or {"status": MISSING} for c in row["cells"]]
        present = {c["status"] for c in row["cells"] if c["status"] != MISSING}
        row["differs"] = len(present) > 1 or (len(present) == 1 and any(
            c["status"] == MISSING for c in row["cells"]))
        row["flagged"] = any("health" in c for c in row["cells"])
        ordered.append(row)
    cells = [c for r in ordered for c in r["cells"]]
    counts = {s: sum(1 for c in cells if c["status"] == s) for s in CELL_STATUSES}
    return {
        "matrix_version": MATRIX_VERSION,
        "generated": generated or datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ"),
        "perftest_version": __version__,
        "columns": columns,
        "suites": suites,
        "rows": ordered,
        "counts": {"rows": len(ordered), "columns": len(columns),
                   "rows_differing": sum(1 for r in ordered if r["differs"]),
                   "rows_flagged": sum(1 for r in ordered if r["flagged"]),
                   "cells": counts},
    }


def matrix_schema():
    with open(_SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)


def validate_matrix(doc):
    """Problems with doc as a matrix document ([] when valid): the schema,
    then every row having one cell per column."""
    problems = schema.validate(doc, matrix_schema())
    if problems:
        return problems
    n = len(doc["columns"])
    for i, row in enumerate(doc["rows"]):
        if len(row["cells"]) != n:
            problems.append("$.rows[%d].cells: %d cells for %d columns" % (i, len(row["cells"]), n))
    return problems


def load_matrix(path):
    """A saved matrix.json, validated; UsageError naming the file otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError("cannot read matrix %s: %s" % (path, e)) from None
    problems = validate_matrix(doc)
    if problems:
        raise UsageError("%s is not a valid perftest matrix: %s" % (path, "; ".join(problems[:5])))
    return doc


def to_json(matrix):
    return json.dumps(matrix, indent=2, ensure_ascii=False) + "\n"


def render(matrix, fmt):
    if fmt == "json":
        return to_json(matrix)
    if fmt == "md":
        from .render import matrix_md
        return matrix_md.render(matrix)
    from .render import matrix_html
    return matrix_html.render(matrix)


def write(matrix, outdir):
    """Write matrix.json, matrix.md and matrix.html into outdir; the paths."""
    paths = []
    for fmt, name in FILES:
        path = os.path.join(outdir, name)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(render(matrix, fmt))
        os.replace(tmp, path)
        paths.append(path)
    return paths


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def summary_text(matrix):
    """What `perftest matrix` prints: one line per column, then the counts."""
    out = []
    for c in matrix["columns"]:
        s = c["summary"]
        h = c["health"]
        kernel = "not checked" if h is None else ("healthy" if h["healthy"] else
                                                   "NOT healthy (%s flagged)"
                                                   % plural(h["cases_flagged"], "case"))
        out.append("  %-4s %-28s %s %s, %s: %d cases, %d pass, %d fail, %d skip; kernel %s"
                   % (c["id"], c["label"], c["kernel_release"], c["arch"], c["cpu"],
                      s["total"], s["pass"], s["fail"], s["skip"], kernel))
    n = matrix["counts"]
    out.append("matrix: %d behaviours x %d columns; %s differ between columns, %s, "
               "%s with kernel health flags"
               % (n["rows"], n["columns"], plural(n["rows_differing"], "row"),
                  plural(n["cells"][MISSING], "missing cell"), plural(n["rows_flagged"], "row")))
    return "\n".join(out) + "\n"


def matrix_command(args):
    """``perftest matrix REPORT... [--output=DIR]``: exit 0, 2 on bad input."""
    reports = load_reports(args.reports)
    outdir = report.check_output_dir(args.output or os.path.join(os.getcwd(), "perftest-out",
                                                                  "matrix"))
    m = build(reports)
    try:
        paths = write(m, outdir)
    except OSError as e:
        raise UsageError("cannot write the matrix to %s: %s" % (outdir, e)) from None
    print(summary_text(m), end="")
    print("written: %s" % "\n         ".join(paths))
    return 0
