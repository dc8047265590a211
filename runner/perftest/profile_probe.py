"""``perftest doctor --write-profile FILE``: probe this machine and write a
mock arch profile (fixtures/profiles format, mocks/profile.h) that makes
``perftest run --backend=mock --profile=FILE`` imitate it.

probe_profile(name, root="/", opener=None) -> dict (the profile JSON)
write_profile(path, root="/", opener=None) -> dict, written to ``path``

What is probed, and where from:
  arch, ncpus, page_size   os.uname().machine, sysconf(_SC_NPROCESSORS_ONLN),
                           sysconf(_SC_PAGESIZE)
  sysctls                  /proc/sys/kernel/perf_event_{paranoid, max_sample_rate,
                           max_stack, max_contexts_per_stack, mlock_kb}
  hz                       CONFIG_HZ from /boot/config-RELEASE or /proc/config.gz
                           (250, the x86 and arm64 defconfig value, when neither is readable)
  privileged               CapEff has CAP_PERFMON or CAP_SYS_ADMIN
  memlock_rlimit_kb        RLIMIT_MEMLOCK (soft)
  pmus                     /sys/bus/event_source/devices/*/{type, format/*,
                           events/*, caps/*} for the PMU kinds MockBackend
                           implements (software, tracepoint, breakpoint, and a
                           core PMU: cpu on x86 (Intel), armv8_pmuv3*, cpu on
                           riscv64); the others are named in the provenance
  attr_size                perf_event_open(attr.size=8): E2BIG, and the kernel
                           writes its sizeof(struct perf_event_attr) back
  hw_breakpoint_slots      write watchpoints opened for this task until ENOSPC
  clock_pmu_types          the types (>= PERF_TYPE_MAX, not in sysfs) where
                           perf_event_open(type=T, config=0|1) opens cpu-clock /
                           task-clock (Linux 6.x registers them with dynamic types)
  attr_aux_action          aux_start_paused (bit 0 of __reserved_3 in older
                           headers) gives EOPNOTSUPP (Linux 6.13+) rather than EINVAL
  tracepoints              tracefs events/<system>/<event>/id of the tracepoints
                           the model can fire (MODELLED_TRACEPOINTS)
  hardware                 gp_counters: members of one group of branch-miss events
                           (a general-purpose-only event) until EINVAL; fixed
                           counters and width from the PMU kind (documented below)

Real opens go through ``opener(attr_bytes: bytearray, pid, cpu, group_fd,
flags) -> (fd or -1, errno)``; the default issues perf_event_open(2) with
ctypes. Tests pass a fake. Errors: ProfileProbeError (a HarnessError) when
perf_event_open does not work at all (no syscall, seccomp) or the file cannot
be written.
"""

import ctypes
import errno
import gzip
import json
import os
import platform
import resource
import time

from . import doctor, host
from .errors import HarnessError

# perf_event_open(2) syscall numbers (arch/*/include/uapi/asm/unistd*.h).
SYSCALL_NR = {"x86_64": 298, "aarch64": 241, "riscv64": 241, "i686": 336, "i386": 336,
              "armv7l": 364, "ppc64le": 319, "ppc64": 319, "s390x": 331}

# struct perf_event_attr offsets (<linux/perf_event.h>, PERF_ATTR_SIZE_VER8 = 136).
ATTR_SIZE = 136
OFF_TYPE, OFF_SIZE, OFF_CONFIG, OFF_FLAGS = 0, 4, 8, 40
OFF_BP_TYPE, OFF_BP_ADDR, OFF_BP_LEN = 52, 56, 64
OFF_RESERVED_3 = 116
FLAG_DISABLED, FLAG_EXCLUDE_KERNEL, FLAG_EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_BREAKPOINT, PERF_TYPE_MAX = 0, 1, 5, 6
PERF_COUNT_HW_BRANCH_MISSES = 5
PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_PAGE_FAULTS = 0, 1, 2
HW_BREAKPOINT_W = 2
PERF_FLAG_FD_CLOEXEC = 8

# The tracepoints MockBackend can fire (mocks/tracepoint_pmu.h ModelledTracepoints());
# a profile may list no others.
MODELLED_TRACEPOINTS = ("syscalls:sys_enter_getpid", "syscalls:sys_exit_getpid",
                        "sched:sched_switch", "sched:sched_process_fork",
                        "sched:sched_stat_runtime")

# Counters a PMU kind has besides the general-purpose ones, and their width:
# not visible in sysfs, so taken from the architecture (documented in the
# provenance the profile carries).
CORE_KINDS = {
    "cpu": {"fixed_counters": 3, "counter_width": 48, "max_precise": 3,
            "why": "Intel architectural perfmon v4+: 3 fixed counters, 48-bit (Intel SDM vol. 3B ch. 20)"},
    "armv8_pmuv3": {"fixed_counters": 1, "counter_width": 32,
                    "why": "PMUv3: the cycle counter PMCCNTR_EL0; event counters 32-bit before FEAT_PMUv3p5"},
    "riscv_sbi": {"fixed_counters": 2, "counter_width": 64,
                  "why": "RISC-V: the CY and IR counters (mcycle, minstret), 64-bit"},
}
MAX_PROBE_SLOTS = 64
MAX_PROBE_COUNTERS = 64
MAX_PROBE_TYPE = 64


class ProfileProbeError(HarnessError):
    pass


def _syscall_opener():
    nr = SYSCALL_NR.get(platform.machine())
    if nr is None:
        raise ProfileProbeError("perftest doctor --write-profile: no perf_event_open syscall number "
                                "known for %s" % platform.machine())
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def opener(attr, pid, cpu, group_fd, flags):
        buf = (ctypes.c_char * len(attr)).from_buffer(attr)
        fd = libc.syscall(ctypes.c_long(nr), buf, ctypes.c_int(pid), ctypes.c_int(cpu),
                          ctypes.c_int(group_fd), ctypes.c_ulong(flags))
        return (int(fd), 0) if fd >= 0 else (-1, ctypes.get_errno())
    return opener


def make_attr(type_, config, flags=FLAG_DISABLED, size=ATTR_SIZE):
    a = bytearray(ATTR_SIZE)
    a[OFF_TYPE:OFF_TYPE + 4] = type_.to_bytes(4, "little")
    a[OFF_SIZE:OFF_SIZE + 4] = size.to_bytes(4, "little")
    a[OFF_CONFIG:OFF_CONFIG + 8] = config.to_bytes(8, "little")
    a[OFF_FLAGS:OFF_FLAGS + 8] = flags.to_bytes(8, "little")
    return a


class _Prober:
    def __init__(self, opener):
        self.opener = opener
        self.fds = []

    def open(self, attr, group_fd=-1, keep=False):
        fd, err = self.opener(attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC)
        if fd >= 0:
            if keep:
                self.fds.append(fd)
            else:
                os.close(fd)
        return fd, err

    def close_all(self):
        for fd in reversed(self.fds):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def _read(root, path):
    return host.read_text(doctor._p(root, path))


def _int(root, path, default=None):
    v = host.read_int(doctor._p(root, path))
    return default if v is None else v


def _dir_files(path):
    out = {}
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return out
    for n in names:
        text = host.read_text(os.path.join(path, n))
        if text is not None:
            out[n] = text.strip()
    return out


def _config_hz(root, release):
    texts = [_read(root, "/boot/config-%s" % release)]
    try:
        with gzip.open(doctor._p(root, "/proc/config.gz"), "rt") as f:
            texts.append(f.read())
    except (OSError, EOFError):
        pass
    for text in texts:
        for line in (text or "").splitlines():
            if line.startswith("CONFIG_HZ="):
                try:
                    return int(line.split("=", 1)[1]), "CONFIG_HZ from the kernel config"
                except ValueError:
                    pass
    return 250, "CONFIG_HZ not readable (/boot/config-%s, /proc/config.gz): 250 assumed" % release


def _core_kind(name, arch, cpuinfo):
    if name.startswith("armv8_pmuv3") or name.startswith("armv8_"):
        return "armv8_pmuv3"
    if name == "cpu" and arch == "riscv64":
        return "riscv_sbi"
    if name == "cpu" and arch == "x86_64" and "GenuineIntel" in (cpuinfo or ""):
        return "cpu"
    return None


def probe_profile(name, root="/", opener=None, arch=None, ncpus=None, page_size=None, release=None):
    """The profile dict for this machine (see the module docstring)."""
    opener = opener or _syscall_opener()
    arch = arch or platform.machine()
    release = release or platform.release()
    ncpus = ncpus or os.sysconf("SC_NPROCESSORS_ONLN")
    page_size = page_size or os.sysconf("SC_PAGE_SIZE")
    caps = doctor.capabilities(_read(root, "/proc/self/status"))
    prober = _Prober(opener)
    notes = []

    # perf_event_open must work at all.
    fd, err = prober.open(make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
                                    FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV))
    if fd < 0:
        raise ProfileProbeError("perftest doctor --write-profile: perf_event_open does not work here (%s): "
                                "nothing to probe (seccomp profile, perf_event_paranoid, or no "
                                "CONFIG_PERF_EVENTS)" % errno.errorcode.get(err, err))

    # attr_size: perf_copy_attr() writes sizeof(*attr) back on E2BIG.
    small = make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, size=8)
    fd, err = prober.open(small)
    attr_size = int.from_bytes(small[OFF_SIZE:OFF_SIZE + 4], "little") if err == errno.E2BIG else ATTR_SIZE
    notes.append("attr_size=%d: what perf_event_open(attr.size=8) wrote back (E2BIG)" % attr_size)

    # PMUs from sysfs.
    devices = doctor._p(root, "/sys/bus/event_source/devices")
    cpuinfo = _read(root, "/proc/cpuinfo")
    pmus, left_out, sysfs_types = [], [], set()
    core = None
    for pmu_name in sorted(os.listdir(devices)) if os.path.isdir(devices) else []:
        d = os.path.join(devices, pmu_name)
        typ = host.read_int(os.path.join(d, "type"))
        if typ is None:
            continue
        sysfs_types.add(typ)
        entry = {"name": pmu_name, "type": typ, "format": _dir_files(os.path.join(d, "format")),
                 "events": _dir_files(os.path.join(d, "events")), "caps": _dir_files(os.path.join(d, "caps"))}
        # msr and power (RAPL): count-only PMUs the mock models from their
        # events/ (mocks/free_running_pmu.h); uprobe: local uprobe trace events
        # (mocks/uprobe_pmu.h). Their types are dynamic.
        if pmu_name in ("software", "tracepoint", "breakpoint", "msr", "power", "uprobe"):
            pmus.append(entry)
            continue
        kind = _core_kind(pmu_name, arch, cpuinfo)
        if kind is not None and core is None:
            if kind != pmu_name:
                entry["kind"] = kind
            pmus.append(entry)
            core = (entry, kind)
            continue
        left_out.append("%s (type %d)" % (pmu_name, typ))
    if left_out:
        notes.append("PMUs not listed (MockBackend does not implement them): " + ", ".join(left_out))

    profile = {
        "name": name,
        "arch": arch,
        "description": "this host, probed by perftest doctor --write-profile: Linux %s %s, %d CPUs%s"
                       % (release, arch, ncpus, "" if core else ", no hardware PMU modelled"),
        "provenance": "",
        "ncpus": ncpus,
        "page_size": page_size,
        "perf_event_paranoid": _int(root, "/proc/sys/kernel/perf_event_paranoid", 2),
        "max_sample_rate": _int(root, "/proc/sys/kernel/perf_event_max_sample_rate", 100000),
        "max_stack": _int(root, "/proc/sys/kernel/perf_event_max_stack", 127),
        "max_contexts_per_stack": _int(root, "/proc/sys/kernel/perf_event_max_contexts_per_stack", 8),
        "mlock_kb": _int(root, "/proc/sys/kernel/perf_event_mlock_kb", 516),
        "attr_size": attr_size,
        "privileged": bool(caps.get("CAP_PERFMON") or caps.get("CAP_SYS_ADMIN")),
        "pmus": pmus,
    }
    hz, hz_note = _config_hz(root, release)
    profile["hz"] = hz
    notes.append(hz_note)
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    profile["memlock_rlimit_kb"] = min(soft // 1024, 1 << 31) if soft != resource.RLIM_INFINITY else 1 << 31

    # Breakpoint slots: write watchpoints on one word of this process until ENOSPC.
    if any(p["name"] == "breakpoint" for p in pmus):
        word = ctypes.c_uint64(0)
        bp = make_attr(PERF_TYPE_BREAKPOINT, 0)
        bp[OFF_BP_TYPE:OFF_BP_TYPE + 4] = HW_BREAKPOINT_W.to_bytes(4, "little")
        bp[OFF_BP_ADDR:OFF_BP_ADDR + 8] = ctypes.addressof(word).to_bytes(8, "little")
        bp[OFF_BP_LEN:OFF_BP_LEN + 8] = (8).to_bytes(8, "little")
        slots, last = 0, 0
        try:
            while slots < MAX_PROBE_SLOTS:
                fd, last = prober.open(bp, keep=True)
                if fd < 0:
                    break
                slots += 1
        finally:
            prober.close_all()
        if last == errno.ENOSPC:
            profile["hw_breakpoint_slots"] = slots
            notes.append("hw_breakpoint_slots=%d: the next write watchpoint of this task was ENOSPC" % slots)
        else:
            notes.append("hw_breakpoint_slots: not probed (a watchpoint open said %s); default kept"
                         % errno.errorcode.get(last, last))

    # The clock PMUs' dynamic types (not in sysfs on Linux 6.x).
    clock = {}
    for t in range(PERF_TYPE_MAX, MAX_PROBE_TYPE):
        if t in sysfs_types:
            continue
        for key, config in (("cpu_clock", PERF_COUNT_SW_CPU_CLOCK), ("task_clock", PERF_COUNT_SW_TASK_CLOCK)):
            if key not in clock and prober.open(make_attr(t, config))[0] >= 0:
                clock[key] = t
    if len(clock) == 2:
        profile["clock_pmu_types"] = clock
        notes.append("clock_pmu_types: perf_event_open(type=%d, config=0) and (type=%d, config=1) open "
                     "cpu-clock and task-clock" % (clock["cpu_clock"], clock["task_clock"]))

    # aux_action (Linux 6.13+): aux_start_paused is EOPNOTSUPP, not the reserved-bit EINVAL.
    paused = make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
                       FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV)
    paused[OFF_RESERVED_3:OFF_RESERVED_3 + 4] = (1).to_bytes(4, "little")
    profile["attr_aux_action"] = prober.open(paused)[1] == errno.EOPNOTSUPP
    notes.append("attr_aux_action=%s: aux_start_paused on a software event said %s"
                 % (str(profile["attr_aux_action"]).lower(),
                    "EOPNOTSUPP" if profile["attr_aux_action"] else "something else (EINVAL: reserved)"))

    # Tracepoint ids the model can fire.
    if any(p["name"] == "tracepoint" for p in pmus):
        tps = {}
        for tracing in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
            for tp in MODELLED_TRACEPOINTS:
                system, event = tp.split(":")
                tid = _int(root, "%s/events/%s/%s/id" % (tracing, system, event))
                if tid is not None:
                    tps[tp] = tid
            if tps:
                notes.append("tracepoints: ids from %s/events" % tracing)
                break
        if tps:
            profile["tracepoints"] = tps

    # The core PMU's counters.
    if core is not None:
        entry, kind = core
        shape = CORE_KINDS["cpu" if kind == "cpu" else kind]
        hw = {k: v for k, v in shape.items() if k != "why"}
        excl = FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV
        leader, err = prober.open(make_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, FLAG_DISABLED | excl),
                                  keep=True)
        if leader < 0 and err == errno.EINVAL:  # PERF_PMU_CAP_NO_EXCLUDE: no exclude_* at all
            excl = 0
            leader, err = prober.open(make_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, FLAG_DISABLED),
                                      keep=True)
        members = 0
        try:
            if leader >= 0:
                members = 1
                while members < MAX_PROBE_COUNTERS:
                    fd, err = prober.open(make_attr(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, excl),
                                          group_fd=leader, keep=True)
                    if fd < 0:
                        break
                    members += 1
        finally:
            prober.close_all()
        hw["gp_counters"] = max(members, 1)
        if kind == "riscv_sbi":
            # Sampling needs an overflow interrupt (Sscofpmf): riscv_pmu_sbi.c sets
            # PERF_PMU_CAP_NO_INTERRUPT and NO_EXCLUDE without it.
            samp = make_attr(PERF_TYPE_HARDWARE, 0)
            samp[16:24] = (100000).to_bytes(8, "little")
            hw["overflow_interrupt"] = prober.open(samp)[1] != errno.EOPNOTSUPP
            hw["mode_exclusion"] = hw["overflow_interrupt"]
        profile["hardware"] = hw
        notes.append("hardware: gp_counters=%d branch-miss events fit one group; %s"
                     % (hw["gp_counters"], shape["why"]))

    profile["provenance"] = ("Probed on this machine by `perftest doctor --write-profile` at %s (Linux %s, %s, "
                             "uid %d): sysctls from /proc/sys/kernel, PMUs from /sys/bus/event_source/devices, "
                             "real perf_event_open calls for the rest. %s."
                             % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), release, arch, os.geteuid(),
                                "; ".join(notes)))
    return profile


def write_profile(path, root="/", opener=None, **kw):
    name = os.path.basename(path)
    if name.endswith(".json"):
        name = name[:-len(".json")]
    profile = probe_profile(name, root=root, opener=opener, **kw)
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(profile, f, indent=2)
            f.write("\n")
    except OSError as e:
        raise ProfileProbeError("perftest doctor --write-profile: cannot write %s: %s" % (path, e)) from None
    return profile
