"""The ``bench`` command: run a Google Benchmark (1.7) binary with
``--benchmark_format=json`` and print each benchmark against its baseline.

Baseline: a benchmark of the same binary whose name contains "Baseline"
(e.g. BM_Baseline_Memcpy/4096). A benchmark is paired with the baseline
that has the same argument suffix (the part of the run name after the first
"/", e.g. "4096"), the same run type and aggregate; failing that, with a
baseline that has no suffix; otherwise it has no ratio.

Ratio = speed relative to the baseline (> 1 faster, < 1 slower), from the
first metric both have: bytes_per_second, items_per_second, else the
inverse of the time per iteration (real_time if the name says /real_time,
else cpu_time, the basis Google Benchmark uses for its rates).
"""

import json
import tempfile

from . import layout
from .errors import EXIT_FAILED, EXIT_OK, HarnessError
from .procs import run_isolated, signal_description

_TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# Google Benchmark's own JSON keys; any other number in a benchmark's entry
# is a user counter (state.counters: e.g. bench_pt_decode's samples, cpu_s).
_GB_KEYS = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
            "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
            "bytes_per_second", "items_per_second", "label", "error_occurred", "error_message",
            "aggregate_name", "aggregate_unit", "big_o", "rms"}


def counters(bm):
    """A benchmark's user counters, {name: number}, in the JSON's order."""
    return {k: v for k, v in bm.items()
            if k not in _GB_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool)}


def format_counter(v):
    """12.0 -> '12', 0.25 -> '0.25', 399173.0 -> '399173'."""
    return "%d" % v if float(v).is_integer() else "%.4g" % v


def suffix(bm):
    """Argument suffix of a benchmark: 'BM_X/64/8' -> '64/8', 'BM_X' -> ''."""
    name = bm.get("run_name") or bm.get("name") or ""
    return name.split("/", 1)[1] if "/" in name else ""


def is_baseline(bm):
    return "Baseline" in (bm.get("run_name") or bm.get("name") or "")


def _time_ns(bm):
    field = "real_time" if "/real_time" in (bm.get("name") or "") else "cpu_time"
    t = bm.get(field)
    if not isinstance(t, (int, float)) or t <= 0:
        return None
    return t * _TIME_UNIT_NS.get(bm.get("time_unit", "ns"), 1.0)


def _pair_key(bm):
    return (bm.get("run_type", "iteration"), bm.get("aggregate_name"),
            bm.get("repetition_index") if bm.get("run_type", "iteration") == "iteration" else None)


def ratio(bm, base):
    """Speed of bm relative to base (see module doc); None when not comparable."""
    if bm.get("error_occurred") or base.get("error_occurred"):
        return None
    if bm.get("aggregate_name") in ("stddev", "cv"):
        return None
    for key in ("bytes_per_second", "items_per_second"):
        a, b = bm.get(key), base.get(key)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0:
            return a / b
    a, b = _time_ns(bm), _time_ns(base)
    if a and b:
        return b / a
    return None


def find_baseline(bm, benchmarks):
    """The baseline benchmark bm is compared with, or None."""
    bases = [b for b in benchmarks if is_baseline(b) and _pair_key(b) == _pair_key(bm)]
    same = [b for b in bases if suffix(b) == suffix(bm)]
    if same:
        return same[0]
    plain = [b for b in bases if suffix(b) == ""]
    return plain[0] if plain else None


def compare(benchmarks):
    """Rows for the table: dicts with name, time_ns, bytes_per_second,
    items_per_second, baseline (name or None), ratio (float or None), error."""
    rows = []
    for bm in benchmarks:
        base = bm if is_baseline(bm) else find_baseline(bm, benchmarks)
        rows.append({
            "name": bm.get("name", "?"),
            "time_ns": _time_ns(bm),
            "bytes_per_second": bm.get("bytes_per_second"),
            "items_per_second": bm.get("items_per_second"),
            "baseline": base.get("name") if base is not None else None,
            "ratio": None if base is None or base is bm else ratio(bm, base),
            "is_baseline": base is bm,
            "error": bm.get("error_message") if bm.get("error_occurred") else None,
            "counters": counters(bm),
            "label": bm.get("label") or None,
        })
    return rows


def format_bytes_rate(v):
    """Decimal units: 1.2e10 -> '12.00 GB/s', 5.9e8 -> '590.13 MB/s'."""
    if not isinstance(v, (int, float)):
        return "-"
    if v >= 1e9:
        return "%.2f GB/s" % (v / 1e9)
    if v >= 1e6:
        return "%.2f MB/s" % (v / 1e6)
    return "%.2f kB/s" % (v / 1e3)


def format_items_rate(v):
    if not isinstance(v, (int, float)):
        return "-"
    for div, unit in ((1e9, "G/s"), (1e6, "M/s"), (1e3, "k/s")):
        if v >= div:
            return "%.2f %s" % (v / div, unit)
    return "%.2f /s" % v


def format_time(ns):
    if ns is None:
        return "-"
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if ns >= div:
            return "%.2f %s" % (ns / div, unit)
    return "%.1f ns" % ns


def format_table(rows):
    header = ["benchmark", "time/iter", "bytes/s", "items/s", "vs baseline"]
    table = [header]
    for r in rows:
        if r["error"]:
            vs = "ERROR: %s" % r["error"]
        elif r["is_baseline"]:
            vs = "baseline"
        elif r["ratio"] is not None:
            vs = "%.3fx %s" % (r["ratio"], r["baseline"])
        else:
            vs = "-"
        extra = r.get("counters") or {}
        if extra:
            vs += "  [%s]" % " ".join("%s=%s" % (k, format_counter(v)) for k, v in extra.items())
        if r.get("label"):
            vs += "  " + r["label"]
        table.append([r["name"], format_time(r["time_ns"]),
                      format_bytes_rate(r["bytes_per_second"]),
                      format_items_rate(r["items_per_second"]), vs])
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = []
    for n, row in enumerate(table):
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, 4)]
        lines.append("  ".join(cells + [row[4]]).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths + [11]))
    return "\n".join(lines) + "\n"


def parse_output(text, path):
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise HarnessError("%s did not print Google Benchmark JSON (%s); start of output: %r"
                           % (path, e, text[:200])) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise HarnessError("%s: JSON without a \"benchmarks\" list" % path)
    return doc


def run_bench(name, extra_args):
    """Run bench_<name> and print its table; returns the exit code (1 when a
    benchmark reported an error). HarnessError when the binary cannot run,
    dies, or prints no benchmark JSON."""
    path = layout.resolve_bench(name)
    argv = [path, "--benchmark_format=json"] + list(extra_args)
    with tempfile.TemporaryFile() as out:
        try:
            proc = run_isolated(argv, stdout=out, stderr=None)
        except OSError as e:
            raise HarnessError("cannot run %s: %s" % (path, e)) from None
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if proc.signal is not None:
        raise HarnessError("%s was killed by %s" % (path, signal_description(proc.signal)))
    if proc.returncode != 0 and not text.strip():
        raise HarnessError("%s exited with status %d and printed no results"
                           % (path, proc.returncode))
    doc = parse_output(text, path)
    rows = compare(doc["benchmarks"])
    print("bench %s (%s)" % (name, path))
    print(format_table(rows), end="", flush=True)
    if proc.returncode != 0:
        raise HarnessError("%s exited with status %d" % (path, proc.returncode))
    return EXIT_FAILED if any(r["error"] for r in rows) else EXIT_OK
