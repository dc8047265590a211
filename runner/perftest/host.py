"""Facts about this machine for the report's "host" block.

collect_host() -> dict with the keys documented in runner/SCHEMA.md. Every
probe is best effort: a file that is absent or unreadable (containers, non-x86
architectures, hardened /proc) gives null, never an exception.

Sources: uname(2); /proc/cmdline; /proc/cpuinfo; /sys/bus/event_source/
devices/*/{type,caps/*} (the PMUs perf_event_open(2) can address by
attr.type); /proc/sys/kernel/perf_event_{paranoid,max_sample_rate,mlock_kb};
/proc/self/status (CapEff, Seccomp); /proc/self/mounts (tracefs); container
and hypervisor hints.
"""

import glob
import os

_ARM_IMPLEMENTERS = {
    0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu", 0x48: "HiSilicon",
    0x4E: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm", 0x53: "Samsung", 0x61: "Apple",
    0x69: "Intel", 0xC0: "Ampere",
}

# The capabilities that matter to perf_event_open: (name, bit in CapEff
# (<linux/capability.h>), what it allows).
CAPS = (
    ("CAP_PERFMON", 38, "perf_event_open regardless of perf_event_paranoid (Linux 5.8+)"),
    ("CAP_SYS_ADMIN", 21, "the same as CAP_PERFMON (older kernels need it), and more"),
    ("CAP_IPC_LOCK", 14, "ring buffers beyond perf_event_mlock_kb and RLIMIT_MEMLOCK"),
    ("CAP_SYS_PTRACE", 19, "monitoring other users' processes (ptrace access mode check)"),
    ("CAP_SYSLOG", 34, "kernel addresses in samples and /proc/kallsyms (kptr_restrict)"),
)


def read_text(path, limit=1 << 20):
    """File contents stripped, or None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace").strip()
    except OSError:
        return None


def read_int(path):
    text = read_text(path)
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def _int_or_none(text, base=10):
    try:
        return int(text, base)
    except (TypeError, ValueError):
        return None


def parse_cpuinfo(text):
    """First processor block of /proc/cpuinfo -> {key: value}; plus 'flags'."""
    info = {}
    for line in (text or "").splitlines():
        if not line.strip():
            if info:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            info.setdefault(key.strip(), value.strip())
    return info


def cpu_facts(cpuinfo_text):
    """cpu_model, cpu_vendor, cpu_family, cpu_model_number, cpu_stepping."""
    ci = parse_cpuinfo(cpuinfo_text)
    model = ci.get("model name") or ci.get("cpu model") or ci.get("uarch") or ci.get("cpu")
    vendor = ci.get("vendor_id") or ci.get("mvendorid")
    family = _int_or_none(ci.get("cpu family"))
    number = _int_or_none(ci.get("model"))
    stepping = _int_or_none(ci.get("stepping"))
    if "CPU implementer" in ci:          # arm64: MIDR fields
        impl = _int_or_none(ci.get("CPU implementer"), 0)
        part = _int_or_none(ci.get("CPU part"), 0)
        vendor = _ARM_IMPLEMENTERS.get(impl, ci.get("CPU implementer"))
        number = part
        family = _int_or_none(ci.get("CPU architecture"))
        stepping = _int_or_none(ci.get("CPU revision"))
        if not model:
            model = "%s part 0x%03x" % (vendor, part) if part is not None else vendor
    return {
        "cpu_model": model,
        "cpu_vendor": vendor,
        "cpu_family": family,
        "cpu_model_number": number,
        "cpu_stepping": stepping,
    }


def pmus(root="/sys/bus/event_source/devices"):
    """[{"name", "type", "caps": {name: value}}] sorted by name."""
    out = []
    for d in sorted(glob.glob(os.path.join(root, "*"))):
        caps = {}
        for c in sorted(glob.glob(os.path.join(d, "caps", "*"))):
            v = read_text(c)
            if v is not None:
                caps[os.path.basename(c)] = v
        out.append({"name": os.path.basename(d), "type": read_int(os.path.join(d, "type")),
                    "caps": caps})
    return out


def _pid1_env_container():
    data = None
    try:
        with open("/proc/1/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    for item in data.split(b"\0"):
        if item.startswith(b"container="):
            return item[len(b"container="):].decode("utf-8", "replace") or None
    return None


_CGROUP_HINTS = (
    ("kubepods", "kubernetes"), ("docker", "docker"), ("libpod", "podman"),
    ("containerd", "containerd"), ("lxc", "lxc"), ("garden", "garden"),
)


def detect_container(root="/"):
    """(is_container, kind or None) from the usual hints, best first."""
    def p(path):
        return os.path.join(root, path.lstrip("/"))

    if os.path.exists(p("/.dockerenv")):
        return True, "docker"
    if os.path.exists(p("/run/.containerenv")):
        return True, "podman"
    kind = _pid1_env_container() if root == "/" else None
    if kind:
        return True, kind
    env_kind = os.environ.get("container") if root == "/" else None
    if env_kind:
        return True, env_kind
    cgroup = read_text(p("/proc/1/cgroup")) or ""
    for hint, name in _CGROUP_HINTS:
        if hint in cgroup:
            return True, name
    mountinfo = read_text(p("/proc/self/mountinfo"), limit=1 << 22) or ""
    for hint, name in _CGROUP_HINTS:
        if "/%s/" % hint in mountinfo:
            return True, name
    return False, None


_DMI_HINTS = (
    ("kvm", "kvm"), ("qemu", "qemu"), ("vmware", "vmware"), ("virtualbox", "virtualbox"),
    ("xen", "xen"), ("amazon ec2", "aws"), ("google compute engine", "gce"),
    ("microsoft corporation virtual machine", "hyperv"), ("bochs", "bochs"),
    ("parallels", "parallels"), ("openstack", "openstack"), ("firecracker", "firecracker"),
)


def detect_virtualization(cpuinfo_text, root="/"):
    """Hypervisor kind, 'unknown' with only the cpuinfo 'hypervisor' flag, or None."""
    def p(path):
        return os.path.join(root, path.lstrip("/"))

    vendor = read_text(p("/sys/class/dmi/id/sys_vendor")) or ""
    product = read_text(p("/sys/class/dmi/id/product_name")) or ""
    dmi = ("%s %s" % (vendor, product)).lower()
    for hint, name in _DMI_HINTS:
        if hint in dmi:
            return name
    hv_type = read_text(p("/sys/hypervisor/type"))
    if hv_type:
        return hv_type
    flags = parse_cpuinfo(cpuinfo_text).get("flags", "").split()
    if "hypervisor" in flags:
        return "unknown"
    return None


def status_field(status_text, key):
    """The value of ``key:`` in /proc/self/status text, stripped, or None."""
    for line in (status_text or "").splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None


def capabilities(status_text):
    """CapEff of /proc/self/status decoded: {"cap_eff": "0x%016x" or None,
    and for each of CAPS its name: True, False, or None when CapEff is
    unreadable}. The one decoder: the report's host block and doctor use it."""
    eff = _int_or_none(status_field(status_text, "CapEff"), 16)
    out = {"cap_eff": None if eff is None else "0x%016x" % eff}
    for name, bit, _ in CAPS:
        out[name] = None if eff is None else bool(eff >> bit & 1)
    return out


def report_capabilities(status_text):
    """The report's host keys (runner/SCHEMA.md): cap_eff, cap_perfmon,
    cap_sys_admin, cap_ipc_lock (from capabilities()), seccomp (the mode)."""
    caps = capabilities(status_text)
    return {
        "cap_eff": caps["cap_eff"],
        "cap_perfmon": caps["CAP_PERFMON"],
        "cap_sys_admin": caps["CAP_SYS_ADMIN"],
        "cap_ipc_lock": caps["CAP_IPC_LOCK"],
        "seccomp": _int_or_none(status_field(status_text, "Seccomp")),
    }


def tracefs_mount(mounts_text):
    """Mount point of tracefs from /proc/self/mounts text, or None.

    /sys/kernel/tracing is preferred when tracefs is mounted in several
    places (it is also auto-mounted under /sys/kernel/debug/tracing)."""
    points = []
    for line in (mounts_text or "").splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "tracefs":
            points.append(fields[1].replace("\\040", " "))
    if "/sys/kernel/tracing" in points:
        return "/sys/kernel/tracing"
    return points[0] if points else None


def collect_host():
    """The report's "host" object for this machine."""
    u = os.uname()
    cpuinfo = read_text("/proc/cpuinfo", limit=1 << 22)
    container, kind = detect_container()
    host = {
        "kernel_release": u.release,
        "kernel_version": u.version,
        "kernel_cmdline": read_text("/proc/cmdline"),
        "arch": u.machine,
    }
    host.update(cpu_facts(cpuinfo))
    host.update({
        "ncpus": os.cpu_count() or 0,
        "pmus": pmus(),
        "perf_event_paranoid": read_int("/proc/sys/kernel/perf_event_paranoid"),
        "perf_event_max_sample_rate": read_int("/proc/sys/kernel/perf_event_max_sample_rate"),
        "perf_event_mlock_kb": read_int("/proc/sys/kernel/perf_event_mlock_kb"),
        "container": container,
        "container_kind": kind,
        "virtualization": detect_virtualization(cpuinfo),
        "uid": os.getuid(),
        "euid": os.geteuid(),
    })
    host.update(report_capabilities(read_text("/proc/self/status")))
    host["tracefs"] = tracefs_mount(read_text("/proc/self/mounts", limit=1 << 22))
    return host
