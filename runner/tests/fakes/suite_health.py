#!/usr/bin/env python3
"""A fake suite whose cases appear to hurt the kernel, for the kernel health
tests. Copied to <build>/bin/suite_health by tests/test_health.py; the
runner's health reader is pointed at files the test owns through
$PERFTEST_TAINTED_FILE and $PERFTEST_KMSG, which this fake writes to (it
inherits the runner's environment). The real kernel is never touched.

  Health.Quiet       pass; touches nothing
  Health.Warns       pass; sets taint bit 9 (W) and appends a WARN splat
                     (kmsg records) naming kernel/events/core.c
  Health.Throttled   pass; appends perf's "interrupt took too long" line
  Health.Bug         fail; appends "BUG: kernel NULL pointer dereference"
                     without changing the taint value
"""

import json
import os
import sys

SUITE = "health"
CASES = [
    ("Health.Quiet", "health.quiet"),
    ("Health.Warns", "health.warns"),
    ("Health.Throttled", "health.throttled"),
    ("Health.Bug", "health.bug"),
]

WARN_SPLAT = [
    "4,9001,123456789,-;------------[ cut here ]------------",
    "4,9002,123456790,-;WARNING: CPU: 1 PID: 4242 at kernel/events/core.c:1234 "
    "perf_event_fake+0x12/0x30",
    "4,9003,123456791,-;Modules linked in:",
    "4,9004,123456792,-;CPU: 1 PID: 4242 Comm: suite_health Not tainted 6.1.0 #1",
    " SUBSYSTEM=cpu",
    "4,9005,123456793,-;---[ end trace 0000000000000000 ]---",
]
THROTTLE = ["6,9101,123457000,-;perf: interrupt took too long (2502 > 2500), lowering "
            "kernel.perf_event_max_sample_rate to 79000"]
BUG = ["1,9201,123458000,-;BUG: kernel NULL pointer dereference, address: 0000000000000008",
       "4,9202,123458001,-;Oops: 0002 [#1] PREEMPT SMP NOPTI"]


def arg(name):
    for a in sys.argv[1:]:
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def write_gtest(path, test, failures=None):
    suite, name = test.split(".", 1)
    feature = dict(CASES)[test]
    tc = {"name": name, "status": "RUN", "result": "COMPLETED", "time": "0.001s",
          "classname": suite, "feature": feature, "spec": "fake spec: %s" % feature}
    if failures:
        tc["failures"] = [{"failure": f, "type": ""} for f in failures]
    n = 1 if failures else 0
    doc = {"tests": 1, "failures": n, "disabled": 0, "errors": 0, "time": "0.001s",
           "name": "AllTests",
           "testsuites": [{"name": suite, "tests": 1, "failures": n, "disabled": 0,
                           "errors": 0, "time": "0.001s", "testsuite": [tc]}]}
    with open(path, "w") as f:
        json.dump(doc, f)


def append_log(lines):
    with open(os.environ["PERFTEST_KMSG"], "a") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if "--perftest_list" in sys.argv:
        print(json.dumps({"suite": SUITE, "cases": [
            {"test": t, "feature": f, "spec": "fake spec: %s" % f} for t, f in CASES]}))
        return 0
    if "--perftest_probe" in sys.argv:
        print(json.dumps({"perf_event_open": True, "errno": 0, "errno_name": "",
                          "reason": "fake"}))
        return 0
    test = arg("--gtest_filter")
    out = arg("--gtest_output")[len("json:"):]
    if test == "Health.Warns":
        path = os.environ["PERFTEST_TAINTED_FILE"]
        with open(path) as f:
            value = int(f.read())
        with open(path, "w") as f:
            f.write("%d\n" % (value | 1 << 9))
        append_log(WARN_SPLAT)
    elif test == "Health.Throttled":
        append_log(THROTTLE)
    elif test == "Health.Bug":
        append_log(BUG)
        write_gtest(out, test, failures=["fake.cc:3\nExpected the kernel to survive"])
        return 1
    write_gtest(out, test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
