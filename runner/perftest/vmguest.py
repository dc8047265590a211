"""One guest slot of a ``--vm`` run: boot a guest with a list of cases, follow
its console, turn what it wrote into CaseResults, and restart it when a case
crashes or hangs the guest kernel, until every case has a result.

The guest side (vm/guest/run-cases) says on the serial console, one line each:
  @@perftest begin INDEX UPTIME     a case starts
  @@perftest end INDEX RC UPTIME    it ended with shell status RC
  @@perftest done UPTIME            the list is finished
and writes, in the job share's out/ directory, INDEX.json (gtest JSON),
INDEX.log (the case's stdout and stderr) and INDEX.rc ("RC T0 T1", guest
uptime seconds). Every other console line is the kernel's (printk at
loglevel <= 4: warnings, oopses, panics) and is kept per case: the lines
between a case's begin and end are that case's ``console``.

Host-side limits (wall clock, the real limit; the guest's own per-case
timeout runs on guest time, which under icount can run slower than wall):
  boot      no "begin"/"done" within boot_timeout_s of QEMU's start
  a case    no "end" within case_timeout_s + CASE_GRACE_S of its "begin"
  between   no console marker within case_timeout_s + CASE_GRACE_S
A case running when the guest dies (QEMU exits: panic -> reboot ->
-no-reboot) is ``crash``; one running at the host limit is ``timeout``
(QEMU killed); either way its result carries the console tail, the guest is
restarted with the cases still without a result, and the others still run.
A guest that fails to boot twice in a row gives its remaining cases
``error`` with the console tail.
"""

import os
import shutil
import tempfile
import time

from . import gtest, health
from .procs import ProcResult
from .suite import CaseResult
from .vmqemu import Guest

MARK = "@@perftest "
# Host-side slack over the case's own time limit ($PERFTEST_VM_CASE_GRACE_S:
# the runner's tests shorten it).
CASE_GRACE_S = float(os.environ.get("PERFTEST_VM_CASE_GRACE_S") or 20.0)
CONSOLE_MAX = 20000
TAIL_LINES = 40


def parse_marker(line):
    """('begin', index) / ('end', index, rc) / ('done',) / ('other', text)
    for one console line; None for a kernel line."""
    i = line.find(MARK)
    if i < 0:
        return None
    words = line[i + len(MARK):].split()
    if not words:
        return None
    try:
        if words[0] == "begin" and len(words) >= 2:
            return ("begin", int(words[1]))
        if words[0] == "end" and len(words) >= 3:
            return ("end", int(words[1]), int(words[2]))
    except ValueError:
        return ("other", " ".join(words))
    if words[0] == "done":
        return ("done",)
    return ("other", " ".join(words))


def proc_from_rc(rc_text, timeout_s):
    """ProcResult from the guest's INDEX.rc ("RC T0 T1"). The shell reports a
    signal death as 128+SIG; busybox timeout -s KILL kills the case itself,
    so a SIGKILL at (or after) the time limit is the guest-side timeout."""
    parts = (rc_text or "").split()
    rc = int(parts[0])
    t0 = float(parts[1]) if len(parts) > 1 else 0.0
    t1 = float(parts[2]) if len(parts) > 2 else t0
    duration = max(0.0, t1 - t0)
    returncode = -(rc - 128) if rc > 128 else rc
    timed_out = rc == 128 + 9 and timeout_s is not None and duration >= timeout_s - 0.5
    return ProcResult(returncode=returncode, timed_out=timed_out, duration_s=duration)


def _read(path, limit=1 << 22):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def console_text(lines):
    text = "\n".join(lines)
    if len(text) > CONSOLE_MAX:
        text = "…[cut]\n" + text[-CONSOLE_MAX:]
    return text


def tail(lines, n=TAIL_LINES):
    return "\n".join(lines[-n:])


def write_log(path, header, output, console):
    if not path:
        return None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(header + "\n")
            f.write(output or "")
            if console:
                f.write("\n--- guest console during this case ---\n%s\n" % console)
        return path
    except OSError:
        return None


def result_from_files(case, out_dir, index, timeout_s, console_lines, log_path, argv_text,
                      wall_s=None):
    """The CaseResult of a case the guest finished (its files in out_dir).
    duration_s is wall_s (host clock from "begin" to "end") when given: the
    guest's own clock is virtual under icount (1 ns per instruction)."""
    rc_text = _read(os.path.join(out_dir, "%d.rc" % index))
    console = console_text(console_lines)
    output = _read(os.path.join(out_dir, "%d.log" % index)) or ""
    if not rc_text:
        return CaseResult(case.suite, case.test, case.feature, case.spec, "error", None,
                          "the guest ended the case but wrote no %d.rc" % index, 0.0,
                          write_log(log_path, argv_text, output, console), {"console": console})
    proc = proc_from_rc(rc_text, timeout_s)
    doc, problem = gtest.load_json(os.path.join(out_dir, "%d.json" % index))
    v = gtest.classify(case.test, proc, doc, problem, output, timeout_s)
    log = write_log(log_path, argv_text, output, console) if v.status != "pass" else None
    taint = rc_text.split()[3:5]
    extra = {"console": console, "health": health.case_health_from_text(
        taint[0] if taint else None, taint[1] if len(taint) > 1 else None, console_lines)}
    if v.divergence:
        extra["divergence"] = v.divergence
    duration = proc.duration_s if wall_s is None else wall_s
    return CaseResult(case.suite, case.test, v.feature or case.feature, v.spec or case.spec,
                      v.status, v.skip_class, v.reason, duration, log, extra)


def lost_result(case, status, why, console_lines, duration, log_path, argv_text, out_dir, index):
    """A case the guest did not finish: crash (the guest died) or timeout."""
    output = _read(os.path.join(out_dir, "%d.log" % index)) or ""
    console = console_text(console_lines)
    headline = next((l for l in console_lines if any(
        k in l for k in ("Kernel panic", "BUG:", "Oops", "soft lockup", "hard LOCKUP",
                         "rcu_sched self-detected stall", "WARNING:"))), None)
    if headline:
        why += "; kernel: %s" % headline.strip()
    reason = "%s; guest console tail:\n%s" % (why, tail(console_lines, 12))
    # The guest's tainted value after the case cannot be read: the guest is
    # gone; its console (a panic, a lockup) still tells.
    return CaseResult(case.suite, case.test, case.feature, case.spec, status, None,
                      gtest.trim(reason), duration,
                      write_log(log_path, argv_text + "\n# " + why, output, console),
                      {"console": console,
                       "health": health.case_health_from_text(None, None, console_lines)})


class GuestSlot:
    """Runs a list of units in guests, one after another, restarting as needed.

    make_argv(job_dir, console_path) -> QEMU argv; write_job(job_dir, units)
    writes env and cases; on_result(unit, CaseResult) is called as each case
    finishes; on_running(unit or None) tells which case runs now. units:
    [(index, case, log_path, argv_text)], index unique in the run."""

    def __init__(self, *, make_argv, write_job, timeout_s, boot_timeout_s, tracker,
                 on_result, on_running=None, on_boot=None, scratch_root=None):
        self.make_argv = make_argv
        self.write_job = write_job
        self.timeout_s = timeout_s
        self.boot_timeout_s = boot_timeout_s
        self.tracker = tracker
        self.on_result = on_result
        self.on_running = on_running or (lambda u: None)
        self.on_boot = on_boot or (lambda info: None)
        self.scratch_root = scratch_root
        self.boots = []            # per boot: {"boot_s", "cases", "ended"}

    def run(self, units, adopted=None):
        """Run units to the end. adopted: (Guest, job_dir) of a guest already
        running that waits for its case list (the discovery guest); it runs
        the first share."""
        remaining = list(units)
        failed_boots = 0
        while remaining and not self.tracker.stopping:
            done, booted, info = self._one_guest(remaining, adopted)
            adopted = None
            self.boots.append(info)
            self.on_boot(info)
            remaining = [u for u in remaining if u[0] not in done]
            if info.get("done") and remaining:
                for u in remaining:       # the guest's list ended without them
                    self.on_result(u, CaseResult(
                        u[1].suite, u[1].test, u[1].feature, u[1].spec, "error", None,
                        "the guest finished its case list without running this case", 0.0))
                return
            if booted:
                failed_boots = 0
                continue
            failed_boots += 1
            if failed_boots >= 2 and remaining:
                why = "the guest did not boot twice in a row (%s)" % info.get("ended")
                for u in remaining:
                    r = CaseResult(u[1].suite, u[1].test, u[1].feature, u[1].spec, "error",
                                   None, gtest.trim("%s; console tail:\n%s"
                                                    % (why, info.get("console_tail", ""))), 0.0)
                    self.on_result(u, r)
                return

    def _one_guest(self, units, adopted=None):
        """Boot once with units (or hand them to an adopted guest); returns
        (set of finished indexes, booted?, info)."""
        if adopted is not None:
            guest, job = adopted
            self.write_job(job, units)
            open(os.path.join(job, "cases.ready"), "w").close()
        else:
            job = tempfile.mkdtemp(prefix="vm-job-", dir=self.scratch_root)
            os.makedirs(os.path.join(job, "out"))
            self.write_job(job, units)
            console_path = os.path.join(job, "console.log")
            guest = Guest(self.make_argv(job, console_path), console_path, self.tracker)
        out = os.path.join(job, "out")
        by_index = {u[0]: u for u in units}
        finished = set()
        info = {"cases": len(units), "boot_s": None, "ended": None}
        all_lines = []
        current, current_lines, current_t0 = None, [], None
        booted = False
        t_start = time.monotonic()
        last_mark = t_start
        if adopted is not None:
            info["adopted"] = True     # the discovery guest: its boot is counted there
        try:
            if adopted is None and not guest.start():
                info["ended"] = "interrupted"
                return finished, True, info
            while True:
                now = time.monotonic()
                for line in guest.new_lines():
                    all_lines.append(line)
                    m = parse_marker(line)
                    if m is None:
                        if current is not None:
                            current_lines.append(line)
                        continue
                    last_mark = now
                    if m[0] == "begin" and m[1] in by_index:
                        if not booted:
                            booted = True
                            info["boot_s"] = round(now - t_start, 2)
                        current, current_lines, current_t0 = m[1], [], now
                        self.on_running(by_index[current])
                    elif m[0] == "end" and m[1] in by_index:
                        u = by_index[m[1]]
                        mine = current == m[1]
                        r = result_from_files(u[1], out, u[0], self.timeout_s,
                                              current_lines if mine else [], u[2], u[3],
                                              now - current_t0 if mine else None)
                        finished.add(u[0])
                        current = None
                        self.on_running(None)
                        self.on_result(u, r)
                    elif m[0] == "done":
                        booted = True
                        info["done"] = True
                        if info["boot_s"] is None:
                            info["boot_s"] = round(now - t_start, 2)
                if self.tracker.stopping:
                    info["ended"] = "interrupted"
                    break
                if guest.exited():
                    for line in guest.new_lines():
                        all_lines.append(line)
                        if current is not None and parse_marker(line) is None:
                            current_lines.append(line)
                    qemu_says = guest.qemu_output()
                    if current is not None:
                        u = by_index[current]
                        why = "the guest died while this case ran (QEMU exit status %s%s)" % (
                            guest.proc.returncode, "; QEMU: " + qemu_says[-300:] if qemu_says
                            else "")
                        self.on_result(u, lost_result(u[1], "crash", why, current_lines,
                                                      now - current_t0, u[2], u[3], out, u[0]))
                        finished.add(u[0])
                        booted = True
                    info["ended"] = "exit %s%s" % (guest.proc.returncode,
                                                   ": " + qemu_says[-300:] if qemu_says else "")
                    break
                limit = self.timeout_s + CASE_GRACE_S
                if current is not None and now - current_t0 > limit:
                    u = by_index[current]
                    why = ("no end within %gs (the case's %gs + %gs grace, host clock); QEMU "
                           "killed, the guest restarted" % (limit, self.timeout_s, CASE_GRACE_S))
                    guest.kill()
                    for line in guest.new_lines():
                        if parse_marker(line) is None:
                            current_lines.append(line)
                    self.on_result(u, lost_result(u[1], "timeout", why, current_lines,
                                                  now - current_t0, u[2], u[3], out, u[0]))
                    finished.add(u[0])
                    info["ended"] = "case timeout"
                    break
                if current is None and not booted and now - t_start > self.boot_timeout_s:
                    info["ended"] = "no boot within %gs" % self.boot_timeout_s
                    break
                if current is None and booted and now - last_mark > limit:
                    info["ended"] = "no console marker within %gs" % limit
                    break
                time.sleep(0.05)
        finally:
            guest.kill()
            info["console_tail"] = tail(all_lines)
            info["wall_s"] = round(time.monotonic() - t_start, 2)
            shutil.rmtree(job, ignore_errors=True)
        return finished, booted, info
