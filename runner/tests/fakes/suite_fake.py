#!/usr/bin/env python3
"""A fake suite binary speaking the perftest protocol, for the runner tests.

Copied to <build>/bin/suite_fake by tests/support.py. Behaviour per
--gtest_filter (written the way GoogleTest 1.12 writes its JSON):

  Fake.Pass            pass, properties feature/spec
  Fake.Fail            two failures, exit 1
  Fake.Skip            skipped with skip_class/skip_reason properties
  Fake.SkipNoProps     skipped, message only on stdout (gtest console format)
  Fake.Crash           SIGSEGV, no JSON
  Fake.Hang            spawns a sleeping child (pid -> $FAKE_STATE_DIR/hang_child.pid),
                       then sleeps forever
  Fake.ExitNoJson      exit 3, no JSON
  Fake.PassExit1       JSON says pass, exit 1
  Fake.Exit0NoJson     exit 0, no JSON
  Fake.LeakChild       pass, but leaves a sleeping child behind
                       (pid -> $FAKE_STATE_DIR/leak_child.pid)

Environment knobs: FAKE_PROBE=ok|eperm|garbage (default ok),
FAKE_LIST=bad (print a broken listing), FAKE_STATE_DIR (argv log, pid files),
FAKE_CASE_SLEEP=SECONDS (every case sleeps first; start and end times go to
$FAKE_STATE_DIR/times.log), FAKE_FLAKY=1 (Fake.Pass fails on every second
run, counted in $FAKE_STATE_DIR/flaky.count).
"""

import json
import os
import signal
import subprocess
import sys
import time

SUITE = os.path.basename(sys.argv[0])[len("suite_"):] if os.path.basename(
    sys.argv[0]).startswith("suite_") else "fake"

CASES = [
    ("Fake.Pass", "fake.pass", "fake spec: pass"),
    ("Fake.Fail", "fake.fail", "fake spec: fail"),
    ("Fake.Skip", "fake.skip", "fake spec: skip"),
    ("Fake.SkipNoProps", "fake.skip_no_props", "fake spec: skip no props"),
    ("Fake.Crash", "fake.crash", "fake spec: crash"),
    ("Fake.Hang", "fake.hang", "fake spec: hang"),
    ("Fake.ExitNoJson", "fake.exit_no_json", "fake spec: exit no json"),
    ("Fake.PassExit1", "fake.pass_exit1", "fake spec: pass exit 1"),
    ("Fake.Exit0NoJson", "fake.exit0_no_json", "fake spec: exit 0 no json"),
    ("Fake.LeakChild", "fake.leak_child", "fake spec: leak child"),
]

STATE = os.environ.get("FAKE_STATE_DIR")


def arg(name):
    for a in sys.argv[1:]:
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def write_gtest(path, test, result="COMPLETED", failures=None, props=None):
    suite, name = test.split(".", 1)
    tc = {"name": name, "file": "fake.cc", "line": 1, "status": "RUN", "result": result,
          "timestamp": "2026-01-01T00:00:00Z", "time": "0.001s", "classname": suite}
    tc.update(props or {})
    if failures:
        tc["failures"] = [{"failure": f, "type": ""} for f in failures]
    doc = {"tests": 1, "failures": 1 if failures else 0, "disabled": 0, "errors": 0,
           "timestamp": "2026-01-01T00:00:00Z", "time": "0.001s", "name": "AllTests",
           "testsuites": [{"name": suite, "tests": 1, "failures": 1 if failures else 0,
                           "disabled": 0, "errors": 0, "timestamp": "2026-01-01T00:00:00Z",
                           "time": "0.001s", "testsuite": [tc]}]}
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def spawn_sleeper(pidfile):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
    if STATE:
        with open(os.path.join(STATE, pidfile + ".tmp"), "w") as f:
            f.write(str(child.pid))
        os.rename(os.path.join(STATE, pidfile + ".tmp"), os.path.join(STATE, pidfile))
    return child


def main():
    if "--perftest_list" in sys.argv:
        if os.environ.get("FAKE_LIST") == "bad":
            print("this is not json")
            return 0
        print("Running main() from fake_main.cc")   # a banner the runner must tolerate
        print(json.dumps({"suite": SUITE, "cases": [
            {"test": t, "feature": f, "spec": s} for t, f, s in CASES]}))
        return 0
    if "--perftest_probe" in sys.argv:
        mode = os.environ.get("FAKE_PROBE", "ok")
        if mode == "garbage":
            print("probe??")
        elif mode == "eperm":
            print(json.dumps({"perf_event_open": False, "errno": 1, "errno_name": "EPERM",
                              "reason": "seccomp denies perf_event_open",
                              "seccomp_mode": 2}))
        else:
            print(json.dumps({"perf_event_open": True, "errno": 0, "errno_name": "",
                              "reason": "software dummy event opened"}))
        return 0

    test = arg("--gtest_filter")
    out = arg("--gtest_output")
    out = out[len("json:"):] if out else None
    if STATE:
        with open(os.path.join(STATE, "argv.log"), "a") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(),
                                "own_group": os.getpgrp() == os.getpid(),
                                "own_session": os.getsid(0) == os.getpid()}) + "\n")
    print("Note: Google Test filter = %s" % test)
    print("[ RUN      ] %s" % test)
    sys.stdout.flush()

    nap = float(os.environ.get("FAKE_CASE_SLEEP") or 0)
    if nap:
        start = time.time()
        time.sleep(nap)
        if STATE:
            with open(os.path.join(STATE, "times.log"), "a") as f:
                f.write(json.dumps({"test": test, "start": start, "end": time.time()}) + "\n")

    if test == "Fake.Pass" and os.environ.get("FAKE_FLAKY") and STATE:
        counter = os.path.join(STATE, "flaky.count")
        n = int(open(counter).read()) if os.path.exists(counter) else 0
        with open(counter, "w") as f:
            f.write(str(n + 1))
        if n % 2 == 1:
            write_gtest(out, test, failures=["fake.cc:2\nflaked on run %d" % (n + 1)],
                        props={"feature": "fake.pass", "spec": "fake spec: pass"})
            return 1

    if test == "Fake.Pass":
        write_gtest(out, test, props={"feature": "fake.pass", "spec": "fake spec: pass"})
        return 0
    if test == "Fake.Fail":
        print("fake.cc:4: Failure")
        write_gtest(out, test, failures=["fake.cc:4\nExpected equality of these values:\n  1\n  2",
                                         "fake.cc:5\nFailed\nsecond"],
                    props={"feature": "fake.fail", "spec": "fake spec: fail"})
        return 1
    if test == "Fake.Skip":
        print("fake.cc:7: Skipped\nneeds CAP_PERFMON\n[  SKIPPED ] Fake.Skip (0 ms)")
        write_gtest(out, test, result="SKIPPED",
                    props={"feature": "fake.skip", "spec": "fake spec: skip",
                           "skip_class": "permission",
                           "skip_reason": "needs CAP_PERFMON or perf_event_paranoid <= 0"})
        return 0
    if test == "Fake.SkipNoProps":
        print("fake.cc:9: Skipped\nno hardware PMU: PERF_TYPE_HARDWARE returns ENOENT\n"
              "[  SKIPPED ] Fake.SkipNoProps (0 ms)")
        write_gtest(out, test, result="SKIPPED")
        return 0
    if test == "Fake.Crash":
        print("about to crash")
        sys.stdout.flush()
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(5)
        return 0
    if test == "Fake.Hang":
        spawn_sleeper("hang_child.pid")
        while True:
            time.sleep(1000)
    if test == "Fake.ExitNoJson":
        print("fatal: giving up")
        return 3
    if test == "Fake.PassExit1":
        write_gtest(out, test, props={"feature": "fake.pass_exit1"})
        print("LeakSanitizer: detected memory leaks")
        return 1
    if test == "Fake.Exit0NoJson":
        return 0
    if test == "Fake.LeakChild":
        spawn_sleeper("leak_child.pid")
        write_gtest(out, test, props={"feature": "fake.leak_child", "spec": "fake spec: leak child"})
        os._exit(0)   # do not wait for the child
    write_gtest(out, "None.None")
    return 0


if __name__ == "__main__":
    sys.exit(main())
