#!/usr/bin/env python3
"""Our own suites as programs under `perftest exec`: every suite binary runs
with --backend=kernel (it believes it talks to the kernel) while perftest
exec serves its perf_event_open and the calls on its perf fds from
MockBackend. Judged against ci/expectations/exec.txt, the declared list of
cases a served program cannot pass, each with why.

    exec_suites_test.py BUILD_DIR [OUTPUT_DIR]

Runs `perftest_exec -- python3 perftest run --all --backend=kernel --strict
--expect=ci/expectations/exec.txt,auto` (about 12 s on 2 cores). Exit 0
pass, 1 fail (a failing case exec.txt does not declare, an undeclared skip,
or a declared skip that passed: the cases on stderr), 77 skip (perftest exec
not built, ptrace or a private mount namespace not permitted here). Declared
failures that passed are listed on stdout (stale entries), not failed.
"""

import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECT = os.path.join(REPO, "ci", "expectations", "exec.txt")
FAILING = ("fail", "error", "timeout", "crash")


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: exec_suites_test.py BUILD_DIR [OUTPUT_DIR]", file=sys.stderr)
        return 2
    build = os.path.abspath(argv[1])
    exe = os.path.join(build, "bin", "perftest_exec")
    if not os.access(exe, os.X_OK):
        print("skip: %s is not built (tools/exec needs libseccomp and x86_64)" % exe, file=sys.stderr)
        return SKIP
    probe = subprocess.run([exe, "--", "true"], capture_output=True, text=True, timeout=60)
    if probe.returncode == 125 and "PTRACE" in probe.stderr:
        print("skip: ptrace is not permitted here: %s" % probe.stderr.strip(), file=sys.stderr)
        return SKIP
    if "not shown in sysfs" in probe.stderr:
        print("skip: no private mount namespace for the profile's PMUs: %s" % probe.stderr.strip(), file=sys.stderr)
        return SKIP
    with tempfile.TemporaryDirectory(prefix="exec_suites.") as tmp:
        out = argv[2] if len(argv) == 3 else tmp
        env = dict(os.environ, PERFTEST_BUILD_DIR=build)
        cmd = [exe, "--", sys.executable, os.path.join(REPO, "perftest"), "run", "--all", "--backend=kernel",
               "--strict", "--expect=%s,auto" % EXPECT, "--jobs=2", "--output=%s" % out]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        path = os.path.join(out, "report.json")
        if not os.path.exists(path):
            print("FAIL: no report from %s (rc=%d)\n%s\n%s" % (" ".join(cmd), r.returncode, r.stdout[-3000:],
                                                               r.stderr[-3000:]), file=sys.stderr)
            return 1
        with open(path) as f:
            report = json.load(f)
    return judge(report)


def judge(report):
    cases = report["cases"]
    bad = []
    for c in cases:
        name = c.get("feature") or c["name"]
        if c["status"] in FAILING and not c.get("xfail"):
            bad.append("%s %s (not declared in ci/expectations/exec.txt): %s" % (c["status"].upper(), name,
                                                                                 (c.get("reason") or "")[:400]))
        elif c.get("unexpected_skip"):
            bad.append("SKIP %s (not declared): %s" % (name, (c.get("reason") or "")[:300]))
        elif c.get("unexpected_pass"):
            bad.append("PASS %s: declared to skip (%s)" % (name, c.get("expectation_entry")))
    stale = [c.get("feature") or c["name"] for c in cases if c.get("xfail") and c["status"] == "pass"]
    s = report["summary"]
    xfailed = sum(1 for c in cases if c.get("xfail") and c["status"] in FAILING)
    print("under perftest exec: %d cases, %d pass, %d declared failures, %d skip, %d undeclared"
          % (s["total"], s["pass"] - len(stale), xfailed, s["skip"], len(bad)))
    if stale:
        print("declared failures that passed (stale entries in ci/expectations/exec.txt?): " + ", ".join(stale))
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
