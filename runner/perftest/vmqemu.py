"""QEMU for perftest guests: the settings per arch, the command line, the
accelerator choice, and one guest process with its console.

Settings per arch (defaults; the reasons are in vm/README.md):
  x86_64   -M q35, KVM (-cpu host) where a stock kernel boots under it, else
           TCG with -cpu max; console ttyS0. TCG's x86 CPU has no PMU.
  arm64    -M virt -cpu max,pauth-impdef=on -smp 1 -icount shift=0: TCG (no
           KVM across arches); QEMU's PMUv3 under the kernel's real
           armv8_pmuv3 driver; icount makes instruction counts exact and
           deterministic (without it `instructions` does not exist);
           pauth-impdef: plain -cpu max emulates QARMA pointer authentication,
           3x slower to boot; -smp 1: with -smp 2 the other vCPU's
           instructions leak into counts under icount. Console ttyAMA0.
  riscv64  -M virt -cpu rv64,sscofpmf=true -smp 1 -icount shift=0: sscofpmf
           gives the SBI PMU overflow interrupts (sampling); -smp 2 with icount
           hangs QEMU 7.2 at boot. Console ttyS0.

Shares (virtio-9p-pci, 9p2000.L): ``job`` read-write (the case list, the
results), ``bin`` read-only (the suite binaries of the guest's arch) and
``hostroot``: the host's / read-only, so dynamically linked binaries (the
host build's; cross-built ones with their libraries from the host's
multiarch directories) run in a chroot in the guest (virtiofs ran out of
file handles on large directory walks here; 9p did not).

Guest: one QEMU process in its own session (process group), registered with
the run's ProcessTracker, its serial console written to a file the host
reads while it runs; kill() kills the group. Nothing is left behind: the
caller kills every guest in a ``finally``.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import time

from .errors import HarnessError
from .procs import kill_group

QEMU_BINARY = {"x86_64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64",
               "riscv64": "qemu-system-riscv64"}
QEMU_PACKAGE = {"x86_64": "qemu-system-x86", "arm64": "qemu-system-arm",
                "riscv64": "qemu-system-misc"}
CONSOLE = {"x86_64": "ttyS0", "arm64": "ttyAMA0", "riscv64": "ttyS0"}
MEMORY_MB = 1024
# A stock kernel under a KVM that cannot run it fails within this time.
KVM_PROBE_TIMEOUT_S = 40.0


def qemu_path(arch):
    """Path of qemu-system-ARCH, or None."""
    return shutil.which(QEMU_BINARY[arch])


def qemu_version(path):
    """'7.2.22' from `qemu-system-X --version`, or None."""
    try:
        p = subprocess.run([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"version (\S+)", p.stdout.decode("utf-8", "replace"))
    return m.group(1) if m else None


def machine_settings(arch, accel):
    """{machine, cpu, smp, icount, extra} for arch under accel ('kvm'/'tcg')."""
    if arch == "x86_64":
        return {"machine": "q35", "cpu": "host" if accel == "kvm" else "max", "smp": 1,
                "icount": None, "extra": []}
    if arch == "arm64":
        return {"machine": "virt", "cpu": "max,pauth-impdef=on", "smp": 1,
                "icount": "shift=0", "extra": []}
    if arch == "riscv64":
        return {"machine": "virt", "cpu": "rv64,sscofpmf=true", "smp": 1,
                "icount": "shift=0", "extra": []}
    raise ValueError(arch)


def kernel_cmdline(arch, extra=""):
    """Kernel command line: serial console, panic -> reboot (which -no-reboot
    turns into QEMU exiting), warnings and worse on the console (loglevel=5:
    levels 0..4), no clocksource watchdog complaints under TCG."""
    parts = ["console=%s" % CONSOLE[arch], "panic=-1", "loglevel=5", "rdinit=/init",
             "tsc=unstable" if arch == "x86_64" else "", "nokaslr" if arch != "x86_64" else ""]
    if extra:
        parts.append(extra)
    return " ".join(p for p in parts if p)


def build_command(qemu, arch, accel, kernel_image, initrd, console_path, shares, append="",
                  memory_mb=MEMORY_MB, settings=None):
    """The QEMU argv. shares: [(tag, host_path, readonly)]."""
    s = settings or machine_settings(arch, accel)
    argv = [qemu, "-nodefaults", "-display", "none", "-no-reboot", "-no-user-config",
            "-M", s["machine"], "-accel", accel, "-cpu", s["cpu"], "-smp", str(s["smp"]),
            "-m", str(memory_mb)]
    if s.get("icount"):
        argv += ["-icount", s["icount"]]
    argv += ["-kernel", kernel_image, "-initrd", initrd,
             "-append", kernel_cmdline(arch, append),
             "-serial", "file:%s" % console_path,
             "-monitor", "none"]
    for i, (tag, path, readonly) in enumerate(shares):
        fs = "local,id=fs%d,path=%s,security_model=none,multidevs=remap" % (i, path)
        if readonly:
            fs += ",readonly=on"
        argv += ["-fsdev", fs, "-device", "virtio-9p-pci,fsdev=fs%d,mount_tag=%s" % (i, tag)]
    argv += list(s.get("extra") or [])
    return argv


class Guest:
    """One running QEMU; console lines parsed as they arrive."""

    MARK = "@@perftest "

    def __init__(self, argv, console_path, tracker=None):
        self.argv = argv
        self.console_path = console_path
        self.tracker = tracker
        self.proc = None
        self._pos = 0
        self._partial = b""
        self.started = None

    def start(self):
        open(self.console_path, "wb").close()
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         start_new_session=True, close_fds=True)
        except OSError as e:
            raise HarnessError("cannot start %s: %s" % (self.argv[0], e)) from None
        if self.tracker is not None and not self.tracker.add(self.proc.pid):
            self.kill()
            return False
        return True

    def new_lines(self):
        """Complete console lines written since the last call (str, no \\r)."""
        try:
            with open(self.console_path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except OSError:
            return []
        self._pos += len(data)
        data = self._partial + data
        parts = data.split(b"\n")
        self._partial = parts.pop()
        return [p.decode("utf-8", "replace").rstrip("\r") for p in parts]

    def exited(self):
        return self.proc is not None and self.proc.poll() is not None

    def qemu_output(self):
        """What QEMU itself printed (errors), once it has exited."""
        if self.proc is None or self.proc.stdout is None:
            return ""
        try:
            return self.proc.stdout.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def kill(self):
        if self.proc is None:
            return
        kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                self.proc.send_signal(signal.SIGKILL)
            except OSError:
                pass
        if self.tracker is not None:
            self.tracker.discard(self.proc.pid)


def kvm_usable():
    """(bool, why): /dev/kvm present and openable read-write."""
    if not os.path.exists("/dev/kvm"):
        return False, "no /dev/kvm"
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        return False, "/dev/kvm cannot be opened: %s" % (e.strerror or e)
    return True, "/dev/kvm opens"


def _load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def choose_accel(arch, requested, probe_boot, cache_path, cache_key):
    """(accel, reason) for a guest of arch.

    requested: 'auto', 'kvm' or 'tcg'. Across arches only TCG exists. For
    x86_64 on an x86_64 host under auto: KVM when /dev/kvm opens AND a probe
    boot of this kernel under KVM reaches the guest's init and powers off
    (probe_boot() -> (ok, detail)); the verdict is cached per host kernel,
    QEMU version and guest kernel in cache_path, since a paravirtual KVM
    that cannot boot a stock kernel takes a while to fail."""
    host = os.uname().machine
    if arch != "x86_64" or host != "x86_64":
        if requested == "kvm":
            raise HarnessError("--vm-accel=kvm: a %s guest on a %s host has no KVM" % (arch, host))
        return "tcg", ("TCG: the guest is %s, the host %s (KVM runs only the host's arch)"
                       % (arch, host))
    if requested == "tcg":
        return "tcg", "TCG: requested with --vm-accel=tcg"
    ok, why = kvm_usable()
    if not ok:
        if requested == "kvm":
            raise HarnessError("--vm-accel=kvm: %s" % why)
        return "tcg", "TCG: KVM not available (%s)" % why
    if requested == "kvm":
        return "kvm", "KVM: requested with --vm-accel=kvm"
    cache = _load_json(cache_path)
    hit = cache.get(cache_key)
    if hit is None:
        t0 = time.monotonic()
        boots, detail = probe_boot()
        hit = {"kvm_boots": boots, "detail": detail, "probe_s": round(time.monotonic() - t0, 1)}
        cache[cache_key] = hit
        try:
            os.makedirs(os.path.dirname(cache_path), exist_ok=True)
            with open(cache_path + ".%d.tmp" % os.getpid(), "w") as f:
                json.dump(cache, f, indent=2, sort_keys=True)
            os.replace(cache_path + ".%d.tmp" % os.getpid(), cache_path)
        except OSError:
            pass
    if hit["kvm_boots"]:
        return "kvm", "KVM: /dev/kvm opens and a probe boot of this kernel under KVM " \
                      "reached init (%s)" % hit["detail"]
    return "tcg", ("TCG: /dev/kvm opens, but a probe boot of this kernel under KVM failed "
                   "(%s); this host's KVM cannot boot a stock kernel (cached in %s)"
                   % (hit["detail"], cache_path))
