#!/usr/bin/env python3
"""End-to-end checks of `perftest exec` on real programs: perf itself (perf
stat, perf list, perf record + perf report) and our own perftest_exec_spin.

    exec_e2e_test.py BUILD_DIR SCENARIO

One ctest per scenario (tools/exec/CMakeLists.txt). Exit 0 pass, 1 fail
(the reason on stderr), 77 skip (the reason on stderr: perf is not
installed, seccomp_deny not built, ptrace or a private mount namespace not
permitted here).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def need_perf():
    if shutil.which("perf") is None:
        raise Skip("perf is not installed (Debian: linux-perf, scripts/install-deps)")
    r = subprocess.run(["perf", "--version"], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("perf does not run here: %s" % (r.stderr.strip() or r.stdout.strip()))


def need_exec(e, sysfs=False):
    """Skip where perftest exec cannot work at all: no ptrace (a container
    without it), or (sysfs) no private mount namespace for the PMU view."""
    r = run([e.exec, "--", "true"])
    if r.returncode == 125 and "PTRACE" in r.stderr:
        raise Skip("ptrace is not permitted here: %s" % r.stderr.strip())
    if sysfs and "not shown in sysfs" in r.stderr:
        raise Skip("no private mount namespace for the profile's PMUs: %s" % r.stderr.strip())


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def check(cond, what, r=None):
    if not cond:
        detail = ""
        if r is not None:
            detail = "\n--- rc=%s\n--- stdout:\n%s\n--- stderr:\n%s" % (r.returncode, r.stdout[-3000:], r.stderr[-3000:])
        raise Fail(what + detail)


def stat_values(stderr):
    """{event: value text} from `perf stat -x,` lines: value,unit,event,..."""
    out = {}
    for line in stderr.splitlines():
        f = line.split(",")
        if len(f) >= 3 and f[2]:
            out[f[2]] = f[0]
    return out


class Env:
    def __init__(self, build):
        self.bin = os.path.join(build, "bin")
        self.exec = os.path.join(self.bin, "perftest_exec")
        self.spin = os.path.join(self.bin, "perftest_exec_spin")
        self.deny = os.path.join(self.bin, "seccomp_deny")

    def perf_stat_counts(self, prefix):
        events = "cycles,instructions,task-clock,page-faults,context-switches"
        r = run(prefix + [self.exec, "--profile=x86_64-intel", "--", "perf", "stat", "-x,", "-e", events,
                          "--", self.spin, "200"])
        check(r.returncode == 0, "perf stat under exec failed", r)
        values = stat_values(r.stderr)
        for ev in events.split(","):
            key = next((k for k in values if k.startswith(ev)), None)
            check(key is not None, "perf stat printed no line for %s" % ev, r)
            check(re.fullmatch(r"[0-9.]+", values[key]) is not None,
                  "%s: %r is not a number (<not supported>/<not counted>?)" % (ev, values[key]), r)
        cpu = re.search(r"cpu_ns=(\d+)", r.stderr)
        check(cpu is not None, "perftest_exec_spin printed no cpu_ns", r)
        task_clock_ms = float(values[next(k for k in values if k.startswith("task-clock"))])
        cpu_ms = int(cpu.group(1)) / 1e6
        check(abs(task_clock_ms - cpu_ms) <= 0.1 * cpu_ms,
              "task-clock %.2f ms is not within 10%% of the program's CPU time %.2f ms" % (task_clock_ms, cpu_ms), r)
        print("task-clock %.2f ms, program CPU time %.2f ms" % (task_clock_ms, cpu_ms))


def scenario_perf_stat(e):
    need_perf()
    need_exec(e)
    e.perf_stat_counts([])


def scenario_perf_stat_seccomp_deny(e):
    need_perf()
    need_exec(e)
    if not os.path.exists(e.deny):
        raise Skip("seccomp_deny is not built (libseccomp-dev)")
    r = run([e.deny, "--", "perf", "stat", "-e", "task-clock", "--", "true"])
    check(r.returncode != 0 and "No permission" in r.stderr + r.stdout,
          "perf stat under seccomp_deny alone should be denied", r)
    e.perf_stat_counts([e.deny, "--"])


def scenario_perf_list_profile(e):
    need_perf()
    need_exec(e, sysfs=True)
    r = run([e.exec, "--profile=x86_64-intel", "--", "perf", "list", "pmu"])
    check(r.returncode == 0 and "intel_pt//" in r.stdout, "perf list does not show the profile's intel_pt", r)
    r = run([e.exec, "--profile=arm64-pmuv3", "--", "perf", "stat", "-x,", "-e", "armv8_pmuv3/cpu_cycles/", "--", "true"])
    check(r.returncode == 0, "perf stat -e armv8_pmuv3/cpu_cycles/ failed", r)
    values = stat_values(r.stderr)
    check(any(k.startswith("armv8_pmuv3") and re.fullmatch(r"[0-9.]+", v) for k, v in values.items()),
          "armv8_pmuv3/cpu_cycles/ was not counted by its sysfs name", r)


def scenario_inject(e):
    need_perf()
    need_exec(e)
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log")
        r = run([e.exec, "--log=" + log, "--inject=perf_event_open:EMFILE", "--", "perf", "stat", "-e", "task-clock",
                 "--", "true"])
        check(r.returncode != 0 and "Too many events are opened" in r.stderr,
              "perf stat should report EMFILE as it does on a kernel", r)
        text = open(log).read()
        check("= -EMFILE (injected)" in text, "the log does not show the injected EMFILE:\n" + text)
        # EMFILE on the 2nd open only: perf raises RLIMIT_NOFILE and retries
        # (evsel__increase_rlimit()), as on a kernel, and counts.
        r = run([e.exec, "--inject=perf_event_open:EMFILE@2", "--", "perf", "stat", "-x,", "-e",
                 "task-clock,page-faults", "--", "true"])
        check(r.returncode == 0 and all(re.fullmatch(r"[0-9.]+", v) for v in stat_values(r.stderr).values()),
              "perf stat should recover from one EMFILE", r)


def scenario_log(e):
    need_perf()
    need_exec(e)
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log")
        r = run([e.exec, "--log=" + log, "--", "perf", "stat", "-e", "page-faults", "--", "true"])
        check(r.returncode == 0, "perf stat failed", r)
        text = open(log).read()
        check(re.search(r"^\[\d+\] perf_event_open\(type=1, config=0x2, .*\) = \d+$", text, re.M) is not None,
              "no perf_event_open line in the call notation:\n" + text)
        check(re.search(r"^\[\d+\] read\(fd=\d+, len=\d+\) = \d+$", text, re.M) is not None, "no read line:\n" + text)


def scenario_perf_record(e):
    need_perf()
    need_exec(e)
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "t.data")
        r = run([e.exec, "--", "perf", "record", "-e", "cpu-clock", "-F", "1000", "-g", "-o", data, "--", e.spin, "300"],
                timeout=300)
        check(r.returncode == 0, "perf record under exec failed", r)
        rep = run(["perf", "report", "-i", data, "--stdio", "--no-children", "--percent-limit=1"])
        check(rep.returncode == 0, "perf report failed", rep)
        rows = [l for l in rep.stdout.splitlines() if re.match(r"^\s+[0-9.]+%", l)]
        check(rows, "perf report shows no samples", rep)
        top = re.match(r"^\s+([0-9.]+)%.*\[\.\] (\S+)", rows[0])
        check(top is not None and top.group(2) == "HotLoop", "the hottest symbol is not HotLoop: %r" % rows[0], rep)
        check(float(top.group(1)) >= 80.0, "HotLoop has %s%% of the samples, under 80%%" % top.group(1), rep)
        graph = rep.stdout[rep.stdout.index("HotLoop"):]
        check("Caller" in graph and "main" in graph, "HotLoop's callers (Caller, main) are not in the call graph", rep)
        print("HotLoop %s%% of the samples" % top.group(1))


def _alive(marker):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker.encode() in f.read():
                    return True
        except OSError:
            pass
    return False


def scenario_exit_and_orphans(e):
    need_exec(e)
    r = run([e.exec, "--", "sh", "-c", "exit 7"])
    check(r.returncode == 7, "exit status 7 not passed through", r)
    r = run([e.exec, "--", "sh", "-c", "kill -9 $$"])
    check(r.returncode == 128 + 9, "a SIGKILLed program should give 137", r)
    marker = "1000.%d" % os.getpid()
    r = run([e.exec, "--", "sh", "-c", "sleep %s & exit 3" % marker], timeout=30)
    check(r.returncode == 3, "exit status 3 not passed through", r)
    time.sleep(0.2)
    check(not _alive(marker), "the program's background child outlived it")
    marker2 = "1001.%d" % os.getpid()
    p = subprocess.Popen([e.exec, "--", "sleep", marker2])
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=30)
    check(rc == 128 + signal.SIGTERM, "SIGTERM to perftest exec should give 143, got %s" % rc)
    time.sleep(0.2)
    check(not _alive(marker2), "the program outlived a SIGTERMed perftest exec")
    marker3 = "1002.%d" % os.getpid()
    p = subprocess.Popen([e.exec, "--", "sleep", marker3])
    time.sleep(0.5)
    p.kill()  # perftest crashes: PTRACE_O_EXITKILL
    p.wait(timeout=30)
    time.sleep(0.2)
    check(not _alive(marker3), "the program outlived a SIGKILLed perftest exec")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    e = Env(sys.argv[1])
    fn = globals().get("scenario_" + sys.argv[2])
    if fn is None:
        print("unknown scenario %s" % sys.argv[2], file=sys.stderr)
        return 2
    try:
        fn(e)
    except Skip as s:
        print("SKIP: %s" % s, file=sys.stderr)
        return SKIP
    except Fail as f:
        print("FAIL: %s" % f, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
