"""Helpers shared by renderers: status order/labels, one-line reasons, host lines."""

from ..gtest import one_line

STATUS_ORDER = ("fail", "crash", "timeout", "error", "not_run", "skip", "pass")
COUNT_KEYS = ("pass", "fail", "skip", "error", "timeout", "crash")


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
    reason = one_line(case.get("reason") or "", limit)
    if case["status"] == "skip" and case.get("skip_class"):
        reason = "[%s] %s" % (case["skip_class"], reason)
    return reason


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
