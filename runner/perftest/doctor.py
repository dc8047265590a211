"""``perftest doctor``: what this machine allows perf_event_open to do, and why.

gather(root="/", binary=None) -> facts dict (the ``--json`` form):
  kernel_release, arch, uid, euid
  capabilities      CapEff decoded: CAP_PERFMON (38), CAP_SYS_ADMIN (21),
                    CAP_IPC_LOCK (14), CAP_SYS_PTRACE (19), CAP_SYSLOG (34)
  paranoid          /proc/sys/kernel/perf_event_paranoid: the level, what each
                    level restricts (Documentation/admin-guide/sysctl/kernel.rst,
                    "perf_event_paranoid"), what applies to this process
  mlock             perf_event_mlock_kb, RLIMIT_MEMLOCK, CAP_IPC_LOCK
  seccomp           /proc/self/status Seccomp and Seccomp_filters
  pmus              /sys/bus/event_source/devices: name, type, caps
  hardware_pmu      a core PMU: type 4 (PERF_TYPE_RAW) or a cpu, cpu_core,
                    cpu_atom, armv8_*/armv7_* PMU directory
  intel_pt          the intel_pt PMU and its caps
  tracefs           where tracefs is mounted (tracepoint ids need it)
  container, container_kind, virtualization
  probe             ``suite_X --perftest_probe`` (the real kernel's answer), or
                    probe_error / a note that no suite is built
  auto              what ``perftest run --backend=auto`` would choose, and why
render_text(facts) -> str. Every probe is best effort: an unreadable file
gives null, never an exception. Paths are read under ``root`` (tests use a
fake tree).
"""

import json
import os

from . import host, layout
from .errors import HarnessError


# Documentation/admin-guide/sysctl/kernel.rst, perf_event_paranoid; each
# level also applies everything of the levels below it.
PARANOID_LEVELS = (
    (-1, "allow use of (almost) all events by all users; ignore the mlock limit after "
         "perf_event_mlock_kb without CAP_IPC_LOCK"),
    (0, "disallow ftrace function tracepoints and raw tracepoint access by users "
        "without CAP_PERFMON"),
    (1, "disallow CPU-wide events (pid=-1, cpu>=0) by users without CAP_PERFMON"),
    (2, "disallow kernel profiling (events counting in kernel mode: set exclude_kernel=1) "
        "by users without CAP_PERFMON"),
    (3, "not in mainline (a Debian, Ubuntu and Android patch): disallow every "
        "perf_event_open by users without CAP_PERFMON (EACCES); on a mainline kernel "
        "values above 2 act like 2"),
)

HW_PMU_NAMES = ("cpu", "cpu_core", "cpu_atom")
HW_PMU_PREFIXES = ("armv8_", "armv7_", "arm_cortex", "arm_pmu")
PERF_TYPE_RAW = 4
PREDEFINED_TYPES = {0: "PERF_TYPE_HARDWARE", 1: "PERF_TYPE_SOFTWARE", 2: "PERF_TYPE_TRACEPOINT",
                    3: "PERF_TYPE_HW_CACHE", 4: "PERF_TYPE_RAW", 5: "PERF_TYPE_BREAKPOINT"}


def _p(root, path):
    return os.path.join(root, path.lstrip("/"))


def paranoid(level, caps):
    """The level, what each level means, and what applies to this process."""
    privileged = bool(caps.get("CAP_PERFMON") or caps.get("CAP_SYS_ADMIN"))
    levels = [{"level": lv, "meaning": text} for lv, text in PARANOID_LEVELS]
    out = {"value": level, "levels": levels, "privileged": privileged}
    if level is None:
        out["effect"] = ("unknown: /proc/sys/kernel/perf_event_paranoid is not readable "
                         "(kernel without CONFIG_PERF_EVENTS, or /proc hidden)")
        out["restrictions"] = []
        return out
    restrictions = [text for lv, text in PARANOID_LEVELS if 0 <= lv <= level]
    if level >= 3:
        restrictions = [PARANOID_LEVELS[-1][1]]
    out["restrictions"] = [] if privileged else restrictions
    who = [n for n in ("CAP_PERFMON", "CAP_SYS_ADMIN") if caps.get(n)]
    if privileged:
        out["effect"] = ("no restriction for this process: it has %s, which bypasses "
                         "perf_event_paranoid" % " and ".join(who))
    elif level < 0:
        out["effect"] = "unprivileged use of (almost) every event is allowed"
    elif level >= 3:
        out["effect"] = ("unprivileged perf_event_open is refused (EACCES) on kernels carrying the "
                         "distribution patch; on a mainline kernel this acts like 2: user-space "
                         "measurement of own processes only")
    elif level == 2:
        out["effect"] = ("this process may measure its own (and its children's) user-space "
                         "code only: set exclude_kernel=1; no CPU-wide events, no raw tracepoints")
    elif level == 1:
        out["effect"] = ("this process may measure user and kernel space of its own processes; "
                         "no CPU-wide events, no raw tracepoints")
    else:
        out["effect"] = ("this process may use per-task and CPU-wide events, but not raw "
                         "tracepoint data or ftrace function tracepoints")
    return out


def _rlimit_memlock():
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (ImportError, OSError, ValueError, AttributeError):
        return None

    def fmt(v):
        return None if v == resource.RLIM_INFINITY else v
    return {"soft": fmt(soft), "hard": fmt(hard)}


def is_hardware_pmu(pmu):
    name = pmu["name"]
    return (pmu.get("type") == PERF_TYPE_RAW or name in HW_PMU_NAMES
            or name.startswith(HW_PMU_PREFIXES))


def _pmu_kind(pmu):
    t = pmu.get("type")
    if t in PREDEFINED_TYPES:
        return PREDEFINED_TYPES[t]
    if is_hardware_pmu(pmu):
        return "core PMU (dynamic type)"
    if t is None:
        return "type unreadable"
    return "dynamic type"


def _pick_probe_binary(binary):
    if binary is not None:
        return binary
    suites = layout.discover_suites()
    if not suites:
        return None
    from .suite import SuiteBinary
    name = "ringbuffer" if "ringbuffer" in suites else next(iter(suites))
    return SuiteBinary(name, suites[name])


def gather(root="/", binary=None, probe=True):
    """Facts about this machine (see the module doc). ``binary``: a
    SuiteBinary to probe with (default: ringbuffer, else the first suite)."""
    u = os.uname()
    status = host.read_text(_p(root, "/proc/self/status"))
    caps = host.capabilities(status)
    seccomp_mode = host.status_field(status, "Seccomp")
    filters = host.status_field(status, "Seccomp_filters")
    level = host.read_int(_p(root, "/proc/sys/kernel/perf_event_paranoid"))
    pmus = host.pmus(_p(root, "/sys/bus/event_source/devices"))
    for pmu in pmus:
        pmu["kind"] = _pmu_kind(pmu)
    hw = [p["name"] for p in pmus if is_hardware_pmu(p)]
    pt = next((p for p in pmus if p["name"] == "intel_pt"), None)
    cpuinfo = host.read_text(_p(root, "/proc/cpuinfo"), limit=1 << 22)
    container, kind = host.detect_container(root)
    mounts = host.read_text(_p(root, "/proc/self/mounts"), limit=1 << 22)
    tracefs = host.tracefs_mount(mounts)
    facts = {
        "kernel_release": u.release,
        "arch": u.machine,
        "uid": os.getuid(),
        "euid": os.geteuid(),
        "capabilities": caps,
        "paranoid": paranoid(level, caps),
        "mlock": {"perf_event_mlock_kb": host.read_int(_p(root, "/proc/sys/kernel/perf_event_mlock_kb")),
                  "rlimit_memlock": _rlimit_memlock(),
                  "cap_ipc_lock": caps["CAP_IPC_LOCK"]},
        "perf_event_max_sample_rate": host.read_int(
            _p(root, "/proc/sys/kernel/perf_event_max_sample_rate")),
        "seccomp": {"mode": int(seccomp_mode) if seccomp_mode and seccomp_mode.isdigit() else None,
                    "filters": int(filters) if filters and filters.isdigit() else None},
        "pmus": pmus,
        "hardware_pmu": {"present": bool(hw), "pmus": hw},
        "intel_pt": {"present": pt is not None, "type": pt["type"] if pt else None,
                     "caps": pt["caps"] if pt else {}},
        "tracefs": {"mounted": tracefs is not None, "path": tracefs,
                    "exists": os.path.isdir(_p(root, "/sys/kernel/tracing"))},
        "container": container,
        "container_kind": kind,
        "virtualization": host.detect_virtualization(cpuinfo, root),
        "probe": None,
        "probe_binary": None,
        "probe_error": None,
    }
    if not probe:
        facts["probe_error"] = "probe skipped"
    else:
        b = _pick_probe_binary(binary)
        if b is None:
            facts["probe_error"] = "no suite binaries in %s (%s)" % (layout.bin_dir(), layout.BUILD_HINT)
        else:
            facts["probe_binary"] = b.path
            try:
                facts["probe"] = b.probe()
            except HarnessError as e:
                facts["probe_error"] = str(e)
                facts["probe_harness_error"] = True
    facts["auto"] = auto_choice(facts)
    return facts


def auto_choice(facts):
    """{"backend": "kernel"|"mock"|None, "reason"} as run's auto would decide."""
    from .run import probe_reason
    probe = facts.get("probe")
    if probe is None:
        return {"backend": None,
                "reason": "unknown without the kernel probe: %s" % facts.get("probe_error")}
    if probe["perf_event_open"]:
        why = probe.get("reason")
        return {"backend": "kernel",
                "reason": "perf_event_open works" + (": %s" % why if why else "")}
    return {"backend": "mock", "reason": probe_reason(probe)}


def _yes(v):
    return "unknown" if v is None else ("yes" if v else "no")


def _seccomp_line(sc, probe):
    mode = sc["mode"]
    if mode is None:
        return "unknown (no Seccomp line in /proc/self/status)"
    if mode == 0:
        return "mode 0: no seccomp filter on this process"
    if mode == 1:
        return "mode 1: strict mode (only read, write, exit, sigreturn)"
    text = "mode 2: %s seccomp filter%s installed" % (
        sc["filters"] if sc["filters"] is not None else "a",
        "s" if (sc["filters"] or 0) > 1 else "")
    if probe is not None and not probe["perf_event_open"] and probe.get("errno_name") == "EPERM":
        text += "; perf_event_open returns EPERM: the filter denies it (Docker's default profile does)"
    else:
        text += "; a container's default profile may deny perf_event_open"
    return text


def render_text(f):
    out = ["perftest doctor: what this machine allows and why", ""]

    def row(label, text, *more):
        out.append("%-14s%s" % (label, text))
        for m in more:
            out.append("%-14s%s" % ("", m))

    env = []
    env.append("in a container (%s)" % (f["container_kind"] or "yes") if f["container"]
               else "not in a container")
    env.append("virtualization: %s" % f["virtualization"] if f["virtualization"] else "bare metal")
    row("kernel", "%s %s; %s" % (f["kernel_release"], f["arch"], "; ".join(env)))
    row("user", "uid %d, euid %d" % (f["uid"], f["euid"]))
    caps = f["capabilities"]
    row("capabilities", "CapEff %s" % (caps["cap_eff"] or "unknown"),
        *["%-15s %-4s %s" % (n, _yes(caps[n]), why) for n, _, why in host.CAPS])
    par = f["paranoid"]
    lines = ["meaning of the levels (each includes the ones below it):"]
    for lv in par["levels"]:
        mark = "->" if par["value"] is not None and (
            lv["level"] == par["value"] or (lv["level"] == 3 and par["value"] > 3)) else "  "
        lines.append("  %s %2d%s  %s" % (mark, lv["level"], "+" if lv["level"] == 3 else " ",
                                         lv["meaning"]))
    row("paranoid", "perf_event_paranoid = %s: %s" % (
        "unknown" if par["value"] is None else par["value"], par["effect"]), *lines)
    ml = f["mlock"]
    rl = ml["rlimit_memlock"]
    rl_text = "unknown" if rl is None else (
        "unlimited" if rl["soft"] is None else "%d KiB" % (rl["soft"] // 1024))
    row("mlock", "perf_event_mlock_kb = %s (per-user ring buffer allowance beyond "
                 "RLIMIT_MEMLOCK); RLIMIT_MEMLOCK %s; CAP_IPC_LOCK %s"
        % (ml["perf_event_mlock_kb"], rl_text, _yes(ml["cap_ipc_lock"])))
    row("seccomp", _seccomp_line(f["seccomp"], f["probe"]))
    pmus = f["pmus"]
    if pmus:
        row("PMUs", "%d in /sys/bus/event_source/devices:" % len(pmus),
            *["  %-16s type %-4s %s%s" % (p["name"], p["type"], p["kind"],
                                          ", %d caps" % len(p["caps"]) if p["caps"] else "")
              for p in pmus])
    else:
        row("PMUs", "none: /sys/bus/event_source/devices is empty or missing "
                    "(no perf events, or sysfs not mounted)")
    hw = f["hardware_pmu"]
    if hw["present"]:
        row("hardware PMU", "yes: %s (PERF_TYPE_HARDWARE and raw events work)" % ", ".join(hw["pmus"]))
    else:
        row("hardware PMU", "no: no type-4 core PMU and no cpu/cpu_core/armv8 PMU directory; "
                            "PERF_TYPE_HARDWARE events return ENOENT (a VM without a virtual PMU?); "
                            "hardware-counter cases skip as unsupported")
    pt = f["intel_pt"]
    if pt["present"]:
        row("intel_pt", "yes: type %s, %d caps (%s)" % (
            pt["type"], len(pt["caps"]), ", ".join(sorted(pt["caps"])[:8])))
    else:
        row("intel_pt", "no: no intel_pt PMU; the aux/pt suites run on the mock only")
    tf = f["tracefs"]
    if tf["mounted"]:
        row("tracefs", "mounted at %s (tracepoint ids readable for PERF_TYPE_TRACEPOINT)" % tf["path"])
    else:
        row("tracefs", "not mounted%s; tracepoint cases cannot look up event ids" % (
            " (/sys/kernel/tracing exists: mount -t tracefs nodev /sys/kernel/tracing)"
            if tf["exists"] else ""))
    if f["probe"] is not None:
        p = f["probe"]
        state = "perf_event_open works" if p["perf_event_open"] else \
            "perf_event_open fails with %s" % (p.get("errno_name") or p.get("errno"))
        extra = ["%s=%s" % (k, v) for k, v in sorted(p.items())
                 if k not in ("perf_event_open", "errno", "errno_name", "reason")]
        row("kernel probe", "%s: %s" % (state, p.get("reason") or ""),
            "(%s --perftest_probe%s)" % (f["probe_binary"],
                                          "; " + ", ".join(extra) if extra else ""))
    else:
        row("kernel probe", "not run: %s" % f["probe_error"])
    a = f["auto"]
    row("auto", "perftest run --backend=auto would choose: %s (%s)" % (
        a["backend"] or "unknown", a["reason"]))
    return "\n".join(out) + "\n"


def render_json(facts):
    return json.dumps(facts, indent=2, ensure_ascii=False) + "\n"
