#!/usr/bin/env python3
"""A fake qemu-system-*: plays a perftest guest (vm/guest/init + run-cases)
from the QEMU command line the runner builds, without booting anything.

Reads the job share (-fsdev path of mount_tag=job): env and cases; writes
the console file (-serial file:PATH) with the @@perftest markers, and out/
as run-cases does. Per case, by test name:
  *Pass*      gtest JSON "COMPLETED", a kernel line on the console
  *Fail*      gtest JSON with a failure
  *Panic*     "Kernel panic" on the console, then exits (panic=-1 + -no-reboot)
  *Hang*      hangs (the host's per-case limit must kill it)
  *GuestTimeout*  rc 137 after TIMEOUT guest seconds (busybox timeout -s KILL)
  *Warn*      passes, but a WARNING on the console and taint W (512) after it
Discovery (MODE=discover): facts (release 6.1.0-fake, PMU cpu type 4 on
-M virt), the listing of $FAKE_QEMU_CASES (comma-separated) for each suite.
$FAKE_QEMU_PIDS: a directory where each fake writes its pid.
"""
import json
import os
import sys
import time

argv = sys.argv[1:]
if "--version" in argv:
    print("QEMU emulator version 7.2.99 (fake)")
    sys.exit(0)
pids = os.environ.get("FAKE_QEMU_PIDS")
if pids:
    open(os.path.join(pids, str(os.getpid())), "w").close()
console_path = None
fsdev = {}
tags = {}
machine = "q35"
for i, a in enumerate(argv):
    nxt = argv[i + 1] if i + 1 < len(argv) else ""
    if a == "-serial":
        console_path = nxt[len("file:"):]
    elif a == "-M":
        machine = nxt
    elif a == "-fsdev":
        kv = dict(x.split("=", 1) for x in nxt.split(",") if "=" in x)
        fsdev[kv["id"]] = kv["path"]
    elif a == "-device" and nxt.startswith("virtio-9p-pci"):
        kv = dict(x.split("=", 1) for x in nxt.split(",") if "=" in x)
        tags[kv["mount_tag"]] = fsdev[kv["fsdev"]]
con = open(console_path, "a", buffering=1)


def say(line):
    con.write(line + "\n")
    con.flush()


job = tags["job"]
env = {}
for line in open(os.path.join(job, "env")):
    if "=" in line:
        k, v = line.rstrip("\n").split("=", 1)
        env[k] = v.strip("'")
out = os.path.join(job, "out")
say("[    0.000000] Linux version 6.1.0-fake (fake qemu)")
say("@@perftest init 0.5")
def facts():
    f = os.path.join(out, "facts")
    os.makedirs(os.path.join(f, "pmus", "software"))
    for name, text in (("release", "6.1.0-fake"), ("version", "#1 SMP fake"),
                       ("machine", "aarch64" if machine == "virt" else "x86_64"),
                       ("cpuinfo", "processor\t: 0\nmodel name\t: fake cpu\n"),
                       ("cmdline", "console=ttyS0"), ("ncpus", "1"),
                       ("perf_event_paranoid", env.get("PARANOID") or "3"),
                       ("uid", "0"), ("pmus/software/type", "1"), ("tainted", "0")):
        with open(os.path.join(f, name), "w") as fh:
            fh.write(text + "\n")
    if machine == "virt":
        os.makedirs(os.path.join(f, "pmus", "armv8_pmuv3", "caps"))
        with open(os.path.join(f, "pmus", "armv8_pmuv3", "type"), "w") as fh:
            fh.write("8\n")


if env["MODE"] == "command":
    # Plays `sh -c "$CMD"`: echoes the command with $P expanded, and lists
    # the input files the host copied into the job share.
    facts()
    cmd = env["CMD"].replace("$P", "/tmp/pt").replace("$O", "/tmp/pt/job/out")
    inputs = sorted(os.listdir(os.path.join(job, "in"))) if os.path.isdir(
        os.path.join(job, "in")) else []
    with open(os.path.join(out, "cmd.log"), "w") as fh:
        fh.write('{"perf_event_open": true, "errno": 0}\nran: %s\ninputs: %s\n'
                 % (cmd, " ".join(inputs)))
    with open(os.path.join(out, "cmd.rc"), "w") as fh:
        fh.write("3\n")
    say("@@perftest done 1.0")
    sys.exit(0)
if env["MODE"] == "discover":
    facts()
    names = os.environ.get("FAKE_QEMU_CASES", "Vm.Pass,Vm.Fail").split(",")
    for s in env["SUITES"].split():
        with open(os.path.join(out, "list.%s.json" % s), "w") as fh:
            json.dump({"suite": s, "cases": [{"test": n, "feature": "%s.%s" % (s, n.lower())}
                                             for n in names]}, fh)
    with open(os.path.join(out, "probe.json"), "w") as fh:
        json.dump({"perf_event_open": True, "errno": 0, "attr_size_kernel": 136,
                   "attr_size_uapi": 136}, fh)
    if env.get("THEN_CASES") != "1":
        say("@@perftest done 1.0")
        sys.exit(0)
    say("@@perftest listed 1.0")        # then wait for the host's case list
    while not os.path.exists(os.path.join(job, "cases.ready")):
        time.sleep(0.05)
    for line in open(os.path.join(job, "env")):
        if "=" in line:
            k, v = line.rstrip("\n").split("=", 1)
            env[k] = v.strip("'")


def gtest(idx, test, failures=None):
    suite, name = test.split(".", 1)
    tc = {"name": name, "status": "RUN", "result": "COMPLETED", "time": "0s"}
    if failures:
        tc["failures"] = [{"failure": failures, "type": ""}]
    with open(os.path.join(out, "%s.json" % idx), "w") as fh:
        json.dump({"testsuites": [{"name": suite, "testsuite": [tc]}]}, fh)


for line in open(os.path.join(job, "cases")):
    idx, suite, test = line.split()
    say("@@perftest begin %s 1.0" % idx)
    with open(os.path.join(out, "%s.log" % idx), "w") as fh:
        fh.write("[ RUN      ] %s\n" % test)
    rc = "0 1.0 1.2 0 0"
    if "Panic" in test:
        say("[    1.100000] Kernel panic - not syncing: fake panic in %s" % test)
        sys.exit(0)
    if "Hang" in test:
        say("[    1.100000] watchdog: BUG: soft lockup - CPU#0 stuck (fake)")
        time.sleep(3600)
    if "GuestTimeout" in test:
        rc = "137 1.0 %.1f" % (1.0 + float(env["TIMEOUT"]))
    elif "Warn" in test:
        say("[    1.100000] WARNING: CPU: 0 PID: 1 at kernel/events/core.c:1 fake+0x1/0x2")
        gtest(idx, test)
        rc = "0 1.0 1.2 0 512"
    elif "Fail" in test:
        gtest(idx, test, "fake.cc:1\nexpected 1, got 2")
    else:
        say("[    1.100000] fake kernel line during %s" % test)
        gtest(idx, test)
    with open(os.path.join(out, "%s.rc" % idx), "w") as fh:
        fh.write(rc + "\n")
    say("@@perftest end %s %s 1.2" % (idx, rc.split()[0]))
say("@@perftest done 2.0")
