"""``perftest run ... --vm=KERNEL [--arch=ARCH]``: the same suites, inside
QEMU guests booted with KERNEL (design and measured numbers: vm/README.md).

Order of work (bad input fails fast, exit 2, before anything boots):
  arch, options -> the guest's suite binaries (--vm-bin, default per arch) ->
  QEMU present -> kernel (fetched into the cache when it is debian:...) ->
  initramfs -> accelerator (KVM probe boot, cached) -> discovery boot (the
  guest lists the cases, runs the probe and writes its facts) -> filter,
  deny lists (matched against the guest's release and arch) -> output dir
  -> the cases on --jobs guest slots (vmguest.GuestSlot) -> report.

The report's ``host`` block is the guest's (its release, arch, CPU, PMUs,
paranoid), with ``host.vm`` describing the VM: QEMU version, accelerator and
why, icount, CPU model, machine, kernel image and package, boot times. Each
case carries ``console``: the guest console lines (kernel messages) printed
while it ran.
"""

import datetime
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time

from . import expectations, health, layout, report, vmimage, vmkernel, vmqemu
from .errors import HarnessError, Interrupted, UsageError
from .host import capabilities, cpu_facts, read_int, read_text, tracefs_mount, pmus
from .procs import ProcessTracker
from .progress import make_progress
from .run import (_SignalsToFlag, _log_path, attr_sizes, denied_result, filter_cases, finish_run,
                  fold_case, run_record, say, split_list)
from .suite import CaseInfo, CaseResult, _first_json_object
from .vmguest import Guest, GuestSlot, parse_marker

BOOT_TIMEOUT_S = {"kvm": 60.0, "tcg": 180.0}
GNU_ARCH = {"x86_64": "x86_64", "arm64": "aarch64", "riscv64": "riscv64"}


def default_bin_dir(arch):
    """The suite binaries for a guest of arch: the host build for the host's
    arch; <repo>/build-<gnu arch>/bin (scripts/cross-build) otherwise;
    $PERFTEST_VM_BIN_DIR overrides both."""
    env = os.environ.get("PERFTEST_VM_BIN_DIR")
    if env:
        return env
    if arch == vmkernel.host_arch():
        return layout.bin_dir()
    return os.path.join(layout.repo_root(), "build-%s" % GNU_ARCH[arch], "bin")


def guest_suites(bin_dir, requested):
    """{name: path} of suite_* in bin_dir, in the order asked (all sorted
    when none asked). UsageError naming the directory when it is empty or a
    requested suite is missing."""
    try:
        names = sorted(f[len("suite_"):] for f in os.listdir(bin_dir)
                       if f.startswith("suite_") and os.path.isfile(os.path.join(bin_dir, f)))
    except OSError as e:
        names = []
        why = e.strerror or str(e)
    else:
        why = "no suite_* binaries"
    if not names:
        raise UsageError("guest suite binaries: %s: %s (build them: ./scripts/setup for this "
                         "host's arch, scripts/cross-build aarch64|riscv64 for the others; "
                         "or --vm-bin=DIR)" % (bin_dir, why))
    if not requested:
        return {n: os.path.join(bin_dir, "suite_" + n) for n in names}
    missing = [r for r in requested if r not in names]
    if missing:
        raise UsageError("unknown suite %s in %s (there: %s)" % (
            ", ".join(missing), bin_dir, ", ".join(names)))
    return {n: os.path.join(bin_dir, "suite_" + n) for n in requested}


def host_from_facts(facts):
    """The report's host block from the guest's facts directory (run-cases
    facts()): the same keys collect_host() gives for this machine."""
    def text(name):
        return read_text(os.path.join(facts, name))
    host = {
        "kernel_release": text("release") or "",
        "kernel_version": text("version") or "",
        "kernel_cmdline": text("cmdline"),
        "arch": text("machine") or "",
    }
    host.update(cpu_facts(text("cpuinfo")))
    ncpus = read_int(os.path.join(facts, "ncpus"))
    host.update({
        "ncpus": ncpus or 0,
        "pmus": pmus(os.path.join(facts, "pmus")),
        "perf_event_paranoid": read_int(os.path.join(facts, "perf_event_paranoid")),
        "perf_event_max_sample_rate": read_int(os.path.join(facts, "perf_event_max_sample_rate")),
        "perf_event_mlock_kb": read_int(os.path.join(facts, "perf_event_mlock_kb")),
        "container": False,
        "container_kind": None,
        "virtualization": "qemu",
        "uid": read_int(os.path.join(facts, "uid")) or 0,
        "euid": read_int(os.path.join(facts, "uid")) or 0,
    })
    user_access = read_int(os.path.join(facts, "perf_user_access"))
    if user_access is not None:        # arm64 (and riscv64) kernels only
        host["perf_user_access"] = user_access
    host.update(capabilities(text("status")))
    host["tracefs"] = tracefs_mount(text("mounts"))
    return host


class VmSetup:
    """Everything needed to boot guests of one kernel and arch."""

    def __init__(self, arch, kernel, image, initrd, qemu, accel, accel_reason, bin_dir,
                 paranoid, append="", icount=None):
        self.arch = arch
        self.kernel = kernel
        self.image = image
        self.initrd = initrd
        self.qemu = qemu
        self.accel = accel
        self.accel_reason = accel_reason
        self.bin_dir = bin_dir
        self.paranoid = paranoid
        self.append = append
        self.icount = icount
        self.settings = vmqemu.machine_settings(arch, accel, icount)
        # The host's / read-only for every guest: the host build's dynamic
        # binaries (x86_64) and dynamically linked cross binaries (their
        # libraries from the host's multiarch directories, e.g.
        # /usr/lib/aarch64-linux-gnu) run in a chroot of it.
        self.hostroot = True

    def shares(self, job_dir):
        s = [("job", job_dir, False), ("bin", self.bin_dir, True)]
        if self.hostroot:
            s.append(("hostroot", "/", True))
        return s

    def argv(self, job_dir, console_path, accel=None):
        a = accel or self.accel
        return vmqemu.build_command(self.qemu, self.arch, a, self.image, self.initrd,
                                    console_path, self.shares(job_dir), self.append,
                                    settings=vmqemu.machine_settings(self.arch, a, self.icount))

    def write_env(self, job_dir, mode, timeout_s=60, suites=(), then_cases=False):
        with open(os.path.join(job_dir, "env"), "w") as f:
            f.write("MODE=%s\nHOSTROOT=%d\nTIMEOUT=%d\nPARANOID=%s\nSUITES=%s\n"
                    "THEN_CASES=%d\n" % (
                        mode, 1 if self.hostroot else 0, max(1, int(round(timeout_s))),
                        "" if self.paranoid is None else int(self.paranoid),
                        shlex.quote(" ".join(suites)), 1 if then_cases else 0))

    def write_command(self, job_dir, command):
        """MODE=command: the guest runs `sh -c COMMAND` once (run_in_guest)."""
        self.write_env(job_dir, "command")
        with open(os.path.join(job_dir, "env"), "a") as f:
            f.write("CMD=%s\n" % shlex.quote(command))

    def describe(self):
        """host.vm: what ran the guest."""
        k = self.kernel
        return {
            "qemu": os.path.basename(self.qemu),
            "qemu_version": vmqemu.qemu_version(self.qemu),
            "accel": self.accel,
            "accel_reason": self.accel_reason,
            "machine": self.settings["machine"],
            "cpu": self.settings["cpu"],
            "smp": self.settings["smp"],
            "icount": self.settings["icount"],
            "memory_mb": vmqemu.MEMORY_MB,
            "arch": self.arch,
            "kernel_spec": k["spec"],
            "kernel_package": k.get("package"),
            "kernel_package_version": k.get("package_version"),
            "kernel_image": self.image,
            "initramfs": self.initrd,
            "append": vmqemu.kernel_cmdline(self.arch, self.append),
            "hostroot_9p": self.hostroot,
            "suite_binaries": self.bin_dir,
        }


def boot_and_wait(setup, job_dir, timeout_s, tracker, accel=None):
    """Boot once, wait for "@@perftest done" and QEMU's exit. Returns
    (done?, console lines, seconds to init, seconds in all, QEMU output)."""
    console = os.path.join(job_dir, "console.log")
    g = Guest(setup.argv(job_dir, console, accel), console, tracker)
    lines, t0, t_init, done = [], time.monotonic(), None, False
    try:
        if not g.start():
            return False, lines, None, 0.0, "interrupted"
        while time.monotonic() - t0 < timeout_s and not tracker.stopping:
            for line in g.new_lines():
                lines.append(line)
                m = parse_marker(line)
                if m and m[0] == "other" and m[1].startswith("init") and t_init is None:
                    t_init = time.monotonic() - t0
                if m and m[0] == "done":
                    done = True
            if g.exited():
                lines += g.new_lines()
                done = done or any((parse_marker(x) or ("",))[0] == "done" for x in lines)
                break
            time.sleep(0.05)
        return done, lines, t_init, time.monotonic() - t0, (g.qemu_output() if g.exited()
                                                            else "")
    finally:
        g.kill()


def discover(setup, suites, scratch, tracker, timeout_s):
    """The discovery boot: facts, each suite's --perftest_list, the probe.
    The guest then waits for its case list: it goes on as the run's first
    guest (GuestSlot.run(adopted=...)), which saves a boot. Returns (cases,
    host, probe, boot info, (Guest, job dir))."""
    job = tempfile.mkdtemp(prefix="vm-discover-", dir=scratch)
    os.makedirs(os.path.join(job, "out"))
    open(os.path.join(job, "cases"), "w").close()
    setup.write_env(job, "discover", timeout_s, suites=list(suites), then_cases=True)
    console = os.path.join(job, "console.log")
    guest = Guest(setup.argv(job, console), console, tracker)
    lines, t0, t_init, done, qemu_says = [], time.monotonic(), None, False, ""
    limit = BOOT_TIMEOUT_S[setup.accel] + 30 * len(suites)
    if guest.start():
        while time.monotonic() - t0 < limit and not tracker.stopping and not done:
            for line in guest.new_lines():
                lines.append(line)
                m = parse_marker(line)
                if m and m[0] == "other" and m[1].startswith("init") and t_init is None:
                    t_init = time.monotonic() - t0
                if m and m[0] == "other" and m[1].startswith("listed"):
                    done = True
            if not done and guest.exited():
                lines += guest.new_lines()
                qemu_says = guest.qemu_output()
                break
            time.sleep(0.05)
    total = time.monotonic() - t0
    if tracker.stopping:
        guest.kill()
        raise Interrupted(signal.SIGINT)
    out = os.path.join(job, "out")
    if not done:
        guest.kill()
        raise HarnessError("the discovery boot of %s did not finish (%.0fs)%s; console tail:\n%s"
                           % (setup.kernel["spec"], total,
                              "; QEMU: " + qemu_says[-400:] if qemu_says else "",
                              "\n".join(lines[-25:])))
    cases = []
    for name in suites:
        text = read_text(os.path.join(out, "list.%s.json" % name)) or ""
        try:
            doc = _first_json_object(text)
        except ValueError:
            err = read_text(os.path.join(out, "list.%s.err" % name)) or ""
            raise HarnessError("suite_%s --perftest_list in the guest printed no JSON (exit %s); "
                               "stderr: %s" % (name, read_text(os.path.join(out, "list.%s.rc"
                                                                          % name)), err[-400:]))
        for c in doc.get("cases") or []:
            if isinstance(c, dict) and isinstance(c.get("test"), str) and "." in c["test"]:
                cases.append(CaseInfo(name, c["test"], c.get("feature") or None,
                                      c.get("spec") or None))
    try:
        probe = _first_json_object(read_text(os.path.join(out, "probe.json")) or "")
    except ValueError:
        probe = {}
    host = host_from_facts(os.path.join(out, "facts"))
    info = {"discovery_boot_to_init_s": round(t_init, 2) if t_init else None,
            "discovery_boot_total_s": round(total, 2),
            "tainted_at_boot": read_int(os.path.join(out, "facts", "tainted"))}
    return cases, host, probe, info, (guest, job)


def probe_kvm(setup, scratch, tracker):
    """Boot this kernel once under KVM with an empty job: (boots?, detail)."""
    job = tempfile.mkdtemp(prefix="vm-kvmprobe-", dir=scratch)
    os.makedirs(os.path.join(job, "out"))
    open(os.path.join(job, "cases"), "w").close()
    setup.write_env(job, "cases")
    print("vm: probing whether KVM boots %s (once; the verdict is cached)"
          % setup.kernel["spec"], file=sys.stderr, flush=True)
    done, lines, _, total, qemu_says = boot_and_wait(setup, job, vmqemu.KVM_PROBE_TIMEOUT_S,
                                                     tracker, accel="kvm")
    shutil.rmtree(job, ignore_errors=True)
    if done:
        return True, "guest init reached and powered off in %.1fs" % total
    detail = qemu_says.strip().splitlines()[-1] if qemu_says.strip() else (
        lines[-1] if lines else "no console output")
    return False, "after %.1fs: %s" % (total, detail[-200:])


def prepare(args, arch, tracker, scratch):
    """VmSetup for the run's --vm/--arch (fetching and building as needed)."""
    qemu = vmqemu.qemu_path(arch)
    if qemu is None:
        raise UsageError("%s not found: install Debian's %s (./scripts/install-deps)"
                         % (vmqemu.QEMU_BINARY[arch], vmqemu.QEMU_PACKAGE[arch]))
    kernel = vmkernel.resolve(args.vm, arch, getattr(args, "vm_modules", None))
    image = kernel["image"]
    if arch == "x86_64":
        image = vmkernel.pvh_vmlinux(image, os.path.join(
            os.path.dirname(image), os.path.basename(image).replace("vmlinuz", "vmlinux")
            + ("" if "vmlinuz" in os.path.basename(image) else ".pvh"))) or image
    initrd = vmimage.build_initramfs(kernel, vmkernel.busybox(arch))
    bin_dir = os.path.abspath(args.vm_bin or default_bin_dir(arch))
    paranoid = args.vm_paranoid
    if paranoid == "host":
        paranoid = read_int("/proc/sys/kernel/perf_event_paranoid")
    elif paranoid == "keep":
        paranoid = None
    else:
        paranoid = int(paranoid)
    setup = VmSetup(arch, kernel, image, initrd, qemu, "tcg", "", bin_dir, paranoid,
                    getattr(args, "vm_append", None) or "", getattr(args, "vm_icount", None))
    accel, why = vmqemu.choose_accel(
        arch, args.vm_accel, lambda: probe_kvm(setup, scratch, tracker),
        os.path.join(vmkernel.cache_dir(), "accel.json"),
        "%s|%s|%s" % (os.uname().release, vmqemu.qemu_version(qemu), os.path.basename(image)))
    setup.accel, setup.accel_reason = accel, why
    setup.settings = vmqemu.machine_settings(arch, accel, setup.icount)
    return setup


def check_vm_args(args):
    if args.backend == "mock":
        raise UsageError("--vm runs the suites on the guest's kernel; --backend=mock does not "
                         "need a guest (drop one of them)")
    if args.profile:
        raise UsageError("--profile=%s selects a mock machine; --vm runs on a guest kernel"
                         % args.profile)
    if args.vm_paranoid not in ("host", "keep"):
        try:
            int(args.vm_paranoid)
        except ValueError:
            raise UsageError("--vm-paranoid=%s: a level (-1..4), 'host' or 'keep'"
                             % args.vm_paranoid) from None


def _now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_vm(args, command):
    """``perftest run --vm=KERNEL``; returns the exit code."""
    requested = split_list(args.suite)
    if getattr(args, "all", False) and requested:
        raise UsageError("--all runs every suite; drop it or --suite=%s" % ",".join(requested))
    check_vm_args(args)
    arch = vmkernel.normalize_arch(args.arch or vmkernel.host_arch())
    bin_dir = os.path.abspath(args.vm_bin or default_bin_dir(arch))
    suites = guest_suites(bin_dir, requested)
    deny_specs = split_list(args.expect)
    expectations.check_files(deny_specs)
    outdir = report.check_output_dir(args.output) if args.output else None

    tracker = ProcessTracker()
    scratch = tempfile.mkdtemp(prefix="perftest-vm-")
    started = _now_iso()
    t0 = time.monotonic()
    try:
        with _SignalsToFlag() as sig:
            watcher = threading.Thread(target=_stop_on_signal, args=(sig, tracker), daemon=True)
            watcher.start()
            setup = prepare(args, arch, tracker, scratch)
            say("vm: %s %s (%s), %s" % (arch, setup.kernel["spec"], setup.kernel.get("package")
                                        or setup.image, setup.accel_reason))
            cases, host, probe, boot_info, adopted = discover(setup, list(suites), scratch,
                                                              tracker, args.timeout)
            say("vm: guest kernel %s (%s), booted to init in %ss" % (
                host["kernel_release"], host["arch"], boot_info["discovery_boot_to_init_s"]))
            patterns = split_list([args.filter]) if args.filter else []
            selected = filter_cases(cases, patterns)
            if patterns and not selected:
                raise UsageError("--filter=%s matched none of the %d cases in the guest"
                                 % (args.filter, len(cases)))
            env = expectations.host_environment(host)   # the guest's: ci/expectations/README.md
            denied_by = expectations.resolve(deny_specs, env)
            if outdir is None:
                label = "all" if not requested else "+".join(requested)
                outdir = report.check_output_dir(os.path.join(
                    os.getcwd(), "perftest-out", "%s-vm-%s-%s" % (
                        label, setup.kernel["spec"].replace(":", "").replace("/", "_"), arch)))
            shutil.rmtree(os.path.join(outdir, "logs"), ignore_errors=True)
            for path in denied_by.paths:
                say("expectations: %s" % path)
            say("running %d cases from %s in %d guest%s, timeout %gs per case" % (
                len(selected), ", ".join(suites), args.jobs, "s" if args.jobs > 1 else "",
                args.timeout))
            results, slots_info = run_cases(args, setup, selected, denied_by, outdir, scratch,
                                            tracker, sig, adopted)
    finally:
        tracker.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    interrupted = Interrupted(sig.signum) if sig.signum is not None else None
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        final = []
        for case, r in zip(selected, results):
            if r is None:
                r = CaseResult(case.suite, case.test, case.feature, case.spec, report.NOT_RUN,
                               None, "not run: %s" % (interrupted or "the guest stopped"), 0.0)
            final.append(r)
        vm = setup.describe()
        vm.update(boot_info)
        boots = [b for s in slots_info for b in s]
        vm["boots"] = 1 + sum(1 for b in boots if not b.get("adopted"))
        times = [b["boot_s"] for b in boots if b.get("boot_s") and not b.get("adopted")]
        vm["case_boot_s_mean"] = round(sum(times) / len(times), 2) if times else None
        vm["restarts"] = sum(max(0, len(s) - 1) for s in slots_info)
        host["vm"] = vm
        host.update(attr_sizes(probe, None) if probe else
                    {"attr_size_uapi": None, "attr_size_kernel": None})
        run = run_record(
            args, command, backend="kernel",
            backend_reason="--vm=%s: the guest's kernel (%s, %s) under QEMU %s" % (
                args.vm, host["kernel_release"], arch, setup.accel),
            profile=None, suites=suites, started=started, t0=t0, interrupted=interrupted,
            build_dir=os.path.dirname(bin_dir), expected=denied_by, env=env)
        run["vm"] = {"kernel": args.vm, "arch": arch}
        run["probe"] = probe
        cases_json = [r.to_json(log_base=outdir) for r in final]
        doc = report.build_report(run, host, cases_json,
                                  health=guest_run_health(args, host, cases_json))
        note = ("vm: %s, %d guest boot%s (to init: %ss; later boots to their first case: %s), "
                "%d restart%s, whole run %.0fs"
                % (setup.accel, vm["boots"], "" if vm["boots"] == 1 else "s",
                   vm.get("discovery_boot_to_init_s"),
                   "%ss mean" % vm["case_boot_s_mean"] if times else "none",
                   vm["restarts"], "" if vm["restarts"] == 1 else "s", run["duration_s"]))
        return finish_run(doc, outdir, args, interrupted, notes=[note])
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def guest_run_health(args, host, cases):
    """The report's run-level health for a --vm run: the taint of the
    discovery guest at its start, and at the end the union of every case's
    tainted value after it (each guest boot is a fresh kernel, so "the end"
    is every guest's end); the log is the guests' serial consoles."""
    start = host.get("vm", {}).get("tainted_at_boot")
    end = None
    for c in cases:
        after = (c.get("health") or {}).get("tainted_after")
        if after is not None:
            end = (end or 0) | after
    if end is None:
        end = start
    source = {"tainted_source": "the guest's /proc/sys/kernel/tainted before and after each "
                                "case (vm/guest/run-cases)",
              "log_source": "the guest's serial console (printk loglevel 0..4)",
              "log_readable": True, "dmesg_restrict": None,
              "log_note": "per case: the console lines between its begin and end markers"}
    return health.run_health(getattr(args, "taint", "warn"), start, end, source, cases,
                             args.jobs)


def _stop_on_signal(sig, tracker):
    """Ctrl-C during setup or the run: stop every guest (QEMU process group)."""
    while not tracker.stopping:
        if sig.signum is not None:
            tracker.stop()
            return
        time.sleep(0.1)


def run_cases(args, setup, selected, denied_by, outdir, scratch, tracker, sig, adopted=None):
    """The selected cases (with --repeat) on args.jobs guest slots, slot 0
    starting on the adopted discovery guest; returns ([CaseResult or None
    per case], [[boot info] per slot])."""
    n = args.repeat
    results = [None] * len(selected)
    runs = [dict() for _ in selected]
    entries = {}      # retry= entries are not applied in guests: each attempt would boot one
    units = []
    for i, case in enumerate(selected):
        entry = denied_by.match(case)
        if entry is not None and entry.denies:
            results[i] = denied_result(case, entry)
            continue
        entries[i] = entry
        for k in range(n):
            index = i * n + k
            argv_text = "$ (guest %s) suite_%s --backend=kernel --gtest_filter=%s" % (
                setup.kernel["spec"], case.suite, case.test)
            units.append((index, case, _log_path(outdir, case, k if n > 1 else None),
                          argv_text))
    progress = make_progress(sys.stdout, len(selected), quiet=args.quiet)
    for i, r in enumerate(results):
        if r is not None:
            progress.case_done(selected[i], r)
    lock = threading.Lock()
    running = {}

    def on_result(unit, r):
        i, k = divmod(unit[0], n)
        with lock:
            runs[i][k] = r
            if len(runs[i]) == n:
                agg = fold_case(selected[i], [runs[i][j] for j in range(n)], entries.get(i),
                                args.strict)
                results[i] = agg
                progress.case_done(selected[i], agg)

    slots = min(args.jobs, max(1, len(units)))
    # Round-robin by case keeps each slot's share mixed across suites.
    shares = [units[s::slots] for s in range(slots)]
    infos = [[] for _ in range(slots)]

    def slot_main(s):
        def on_running(unit, s=s):
            with lock:
                if unit is None:
                    running.pop(s, None)
                else:
                    running[s] = unit[1]

        def write_job(job, us):
            setup.write_env(job, "cases", args.timeout)
            with open(os.path.join(job, "cases"), "w") as f:
                for u in us:
                    f.write("%d %s %s\n" % (u[0], u[1].suite, u[1].test))

        slot = GuestSlot(make_argv=setup.argv, write_job=write_job, timeout_s=args.timeout,
                         boot_timeout_s=BOOT_TIMEOUT_S[setup.accel], tracker=tracker,
                         on_result=on_result, on_running=on_running, scratch_root=scratch)
        try:
            slot.run(shares[s], adopted if s == 0 else None)
        finally:
            infos[s] = slot.boots

    threads = [threading.Thread(target=slot_main, args=(s,), name="perftest-vm-%d" % s,
                                daemon=True) for s in range(slots)]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.1)
            with lock:
                now = list(running.values())
            progress.tick(now)
    finally:
        tracker.stop() if sig.signum is not None else None
        for t in threads:
            t.join()
        progress.finish()
    return results, infos


def run_in_guest(args, command, timeout_s, keep=None, inputs=None):
    """Boot a guest of --vm/--arch that runs `sh -c COMMAND` once ($P/bin:
    the guest's binaries; $O: a directory the host reads back). Returns
    (exit status, output, host block of the guest, VmSetup, {name: dest}
    of the files copied out); keep: {name of a file in $O: host path to
    copy it to}; inputs: {name: host file} copied to $P/job/in/NAME first
    (the guest's /tmp is its own). Used by `fidelity --vm`, `doctor --vm`."""
    arch = vmkernel.normalize_arch(args.arch or vmkernel.host_arch())
    tracker = ProcessTracker()
    scratch = tempfile.mkdtemp(prefix="perftest-vm-")
    try:
        setup = prepare(args, arch, tracker, scratch)
        job = tempfile.mkdtemp(prefix="vm-cmd-", dir=scratch)
        out = os.path.join(job, "out")
        os.makedirs(out)
        open(os.path.join(job, "cases"), "w").close()
        if inputs:
            os.makedirs(os.path.join(job, "in"))
            for name, src in inputs.items():
                shutil.copy(src, os.path.join(job, "in", name))
        setup.write_command(job, command)
        print("vm: %s %s, %s; running in the guest: %s" % (
            arch, setup.kernel["spec"], setup.accel_reason, command), file=sys.stderr,
            flush=True)
        try:
            done, lines, t_init, total, qemu_says = boot_and_wait(
                setup, job, timeout_s + BOOT_TIMEOUT_S[setup.accel], tracker)
        except KeyboardInterrupt:
            raise Interrupted(signal.SIGINT) from None
        rc_text = read_text(os.path.join(out, "cmd.rc"))
        output = read_text(os.path.join(out, "cmd.log")) or ""
        if not done or rc_text is None:
            raise HarnessError("the guest did not finish `%s` within %.0fs%s; console tail:\n%s"
                               % (command, total, "; QEMU: " + qemu_says[-300:]
                                  if qemu_says else "", "\n".join(lines[-25:])))
        host = host_from_facts(os.path.join(out, "facts"))
        host["vm"] = setup.describe()
        host["vm"]["boot_to_init_s"] = round(t_init, 2) if t_init else None
        host["vm"]["boot_total_s"] = round(total, 2)
        kept = {}
        for name, dest in (keep or {}).items():
            src = os.path.join(out, name)
            if os.path.isfile(src):
                shutil.copy(src, dest)
                kept[name] = dest
        return int(rc_text.split()[0]), output, host, setup, kept
    finally:
        tracker.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def describe_guest(host):
    """The text `perftest doctor --vm` prints about a guest."""
    vm = host["vm"]
    hw = [p for p in host["pmus"] if p["type"] == 4 or p["name"].startswith(("armv8", "cpu"))]
    lines = [
        "guest kernel: %s (%s) %s" % (host["kernel_release"], host["arch"], host["kernel_version"]),
        "  from: %s%s" % (vm["kernel_spec"], " (%s %s)" % (vm["kernel_package"],
                                                          vm["kernel_package_version"])
                          if vm.get("kernel_package") else ""),
        "  cmdline: %s" % host.get("kernel_cmdline"),
        "VM: %s %s, -M %s -cpu %s -smp %s%s, %d MiB" % (
            vm["qemu"], vm["qemu_version"], vm["machine"], vm["cpu"], vm["smp"],
            " -icount %s" % vm["icount"] if vm.get("icount") else "", vm["memory_mb"]),
        "  accelerator: %s" % vm["accel_reason"],
        "  boot to init: %ss, whole boot: %ss" % (vm.get("boot_to_init_s"),
                                                  vm.get("boot_total_s")),
        "CPU: %s (%s CPUs)" % (host.get("cpu_model"), host.get("ncpus")),
        "perf_event_paranoid: %s, max_sample_rate: %s, mlock_kb: %s" % (
            host.get("perf_event_paranoid"), host.get("perf_event_max_sample_rate"),
            host.get("perf_event_mlock_kb")),
        "PMUs: %s" % ", ".join("%s (type %s)" % (p["name"], p["type"]) for p in host["pmus"]),
        "hardware PMU: %s" % (", ".join(p["name"] for p in hw) if hw else
                              "none (PERF_TYPE_HARDWARE events will fail with ENOENT)"),
        "tracefs: %s" % (host.get("tracefs") or "not mounted"),
    ]
    return "\n".join(lines) + "\n"
