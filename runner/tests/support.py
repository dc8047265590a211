"""Shared helpers: a temporary build tree with the fake suite and bench,
profiles, and running ./perftest as a subprocess."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.dirname(HERE)
REPO = os.path.dirname(RUNNER)
LAUNCHER = os.path.join(REPO, "perftest")
DATA = os.path.join(HERE, "data")

PROFILES = {
    "software-only": {"name": "software-only", "arch": "x86_64",
                      "description": "no hardware PMU, as on many VMs"},
    "x86_64-intel-pt": {"name": "x86_64-intel-pt", "arch": "x86_64",
                        "description": "Intel with PT"},
}


def install_script(src, dst):
    """Copy a Python script, pointing its shebang at this interpreter with -S
    (no site-packages: the fakes use the standard library only, and each
    starts in half the time, which the runner tests feel: they start one
    per case)."""
    with open(src) as f:
        body = f.read().split("\n", 1)[1]
    with open(dst, "w") as f:
        f.write("#!%s -S\n%s" % (sys.executable, body))
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class FakeTree:
    """A temp dir with build/bin/{suite_fake,bench_fake}, profiles/, state/."""

    def __init__(self, suites=("fake",), benches=("fake",)):
        self.root = tempfile.mkdtemp(prefix="perftest-test-")
        self.build = os.path.join(self.root, "build")
        self.bin = os.path.join(self.build, "bin")
        self.profiles = os.path.join(self.root, "profiles")
        self.state = os.path.join(self.root, "state")
        for d in (self.bin, self.profiles, self.state):
            os.makedirs(d)
        for s in suites:
            install_script(os.path.join(HERE, "fakes", "suite_fake.py"),
                           os.path.join(self.bin, "suite_" + s))
        for b in benches:
            install_script(os.path.join(HERE, "fakes", "bench_fake.py"),
                           os.path.join(self.bin, "bench_" + b))
        for name, doc in PROFILES.items():
            with open(os.path.join(self.profiles, name + ".json"), "w") as f:
                json.dump(doc, f)

    def env(self, **extra):
        env = dict(os.environ)
        env.update({
            "PERFTEST_BUILD_DIR": self.build,
            "PERFTEST_PROFILES_DIR": self.profiles,
            "FAKE_STATE_DIR": self.state,
            "FAKE_BENCH_JSON": os.path.join(DATA, "gbench_1.7.json"),
        })
        env.pop("FAKE_PROBE", None)
        env.update(extra)
        return env

    def perftest(self, *args, timeout=60, cwd=None, **env):
        """Run ./perftest; returns CompletedProcess (text)."""
        return subprocess.run([LAUNCHER] + list(args), env=self.env(**env), cwd=cwd or self.root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)

    def argv_log(self):
        path = os.path.join(self.state, "argv.log")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f]

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


def process_gone(pid, wait_s=2.0):
    """True when pid no longer runs (gone, or a zombie nobody reaped yet)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def read_pid(path, wait_s=5.0):
    deadline = time.monotonic() + wait_s
    while not os.path.exists(path):
        if time.monotonic() >= deadline:
            raise AssertionError("no pid file %s" % path)
        time.sleep(0.01)
    with open(path) as f:
        return int(f.read())


def minimal_report(**overrides):
    """A small valid report document for schema/render tests."""
    doc = {
        "schema_version": "1.0",
        "run": {"backend": "mock", "backend_reason": "requested with --backend=mock",
                "profile": "software-only", "suites": ["ringbuffer"],
                "started": "2026-01-01T00:00:00Z", "duration_s": 1.5,
                "perftest_version": "0.1.0", "command": ["perftest", "run"]},
        "host": {"kernel_release": "6.1.0", "kernel_version": "#1 SMP", "kernel_cmdline": "quiet",
                 "arch": "x86_64", "cpu_model": "Some CPU", "cpu_vendor": "GenuineIntel",
                 "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8, "ncpus": 4,
                 "pmus": [{"name": "software", "type": 1, "caps": {}},
                          {"name": "cpu", "type": 4, "caps": {"max_precise": "3"}}],
                 "perf_event_paranoid": 2, "perf_event_max_sample_rate": 100000,
                 "perf_event_mlock_kb": 516, "container": True, "container_kind": "docker",
                 "virtualization": None, "uid": 1000},
        "summary": {"total": 3, "pass": 1, "fail": 1, "skip": 1, "error": 0, "timeout": 0,
                    "crash": 0},
        "cases": [
            {"suite": "ringbuffer", "name": "RingBuffer.MmapSizeRule",
             "feature": "ringbuffer.mmap_size_rule", "spec": "perf_event_open(2) mmap",
             "status": "pass", "skip_class": None, "reason": "", "duration_s": 0.01},
            {"suite": "ringbuffer", "name": "RingBuffer.Wraps",
             "feature": "ringbuffer.wraparound", "spec": "kernel/events/ring_buffer.c",
             "status": "fail", "skip_class": None,
             "reason": "rb.cc:10\nExpected | equality", "duration_s": 0.02},
            {"suite": "ringbuffer", "name": "RingBuffer.Aux",
             "feature": "ringbuffer.aux", "spec": "aux_head",
             "status": "skip", "skip_class": "permission",
             "reason": "needs CAP_PERFMON", "duration_s": 0.0},
        ],
    }
    for path, value in overrides.items():
        node = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        elif value is DELETE:
            del node[last]
        else:
            node[last] = value
    return doc


DELETE = object()


def mixed_report():
    """A report with every status, two suites, a denylisted skip, an expected
    failure, a flaky case and characters that need escaping in every format."""
    def case(suite, name, feature, status, skip_class=None, reason="", **extra):
        c = {"suite": suite, "name": name, "feature": feature, "spec": "spec of %s" % name,
             "status": status, "skip_class": skip_class, "reason": reason, "duration_s": 0.012}
        c.update(extra)
        return c

    cases = [
        case("ringbuffer", "RingBuffer.MmapSizeRule", "ringbuffer.mmap_size_rule", "pass"),
        case("ringbuffer", "RingBuffer.Wraps", "ringbuffer.wraparound", "fail",
             reason="rb.cc:10\nExpected equality of these values:\n  a <b> & \"c\"\n  \x00\x07bad"),
        case("ringbuffer", "RingBuffer.Aux", "ringbuffer.aux", "skip", "permission",
             "needs CAP_PERFMON # or paranoid <= 0"),
        case("ringbuffer", "RingBuffer.Hang", "ringbuffer.hang", "timeout",
             reason="timed out after 1s; process group killed", log="logs/ringbuffer/RingBuffer.Hang.log"),
        case("ringbuffer", "RingBuffer.Crash", None, "crash",
             reason="killed by SIGSEGV (Segmentation fault)"),
        case("ringbuffer", "RingBuffer.Err", "ringbuffer.err", "error",
             reason="exit status 1 but gtest reports pass"),
        case("groups", "Groups.Flaky", "groups.flaky", "fail", reason="g.cc:1\nflaked",
             flaky=True, repeats=[{"status": "pass", "duration_s": 0.01},
                                  {"status": "fail", "duration_s": 0.01, "reason": "g.cc:1\nflaked"}]),
        case("groups", "Groups.Denied", "groups.denied", "skip", "unsupported",
             "denylisted: known kernel bug", denylisted=True,
             denylist_reason="known kernel bug", denylist_entry="x.txt:3"),
        case("groups", "Groups.Known", "groups.known", "fail", reason="g.cc:2\nknown divergence",
             xfail=True, denylist_reason="documented divergence", denylist_entry="x.txt:4"),
        case("groups", "Groups.Later", "groups.later", "not_run", reason="not run: interrupted by SIGINT"),
    ]
    doc = minimal_report(cases=cases)
    doc["schema_version"] = "1.1"
    doc["run"]["suites"] = ["ringbuffer", "groups"]
    from perftest import report as _report
    doc["summary"] = _report.summarize(cases)
    return doc


def run_main(*argv, env=None):
    """perftest.cli.main in this process: (exit code, stdout, stderr). For the
    quick error-path checks; end-to-end behaviour is tested through the
    launcher in a subprocess."""
    import contextlib
    import io
    from unittest import mock

    from perftest.cli import main

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


class ForwardingTest(unittest.TestCase):
    """For the subcommands that hand over to a C++ tool in <build>/bin
    (pt, fidelity, data, exec): an empty build tree per test, a fake tool
    that prints its argv and exits with a given code, and ./perftest run
    against that tree."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = self.tmp.name
        os.makedirs(os.path.join(self.build, "bin"))

    def tearDown(self):
        self.tmp.cleanup()

    def fake_tool(self, name, exit_code):
        """<build>/bin/NAME: prints "$0 $*" and exits with `exit_code`."""
        path = os.path.join(self.build, "bin", name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho \"$0 $*\"\nexit %d\n" % exit_code)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def perftest_cmd(self, args):
        """./perftest ARGS with PERFTEST_BUILD_DIR at the test's tree."""
        env = dict(os.environ, PERFTEST_BUILD_DIR=self.build)
        return subprocess.run([sys.executable, LAUNCHER] + list(args), env=env, capture_output=True, text=True)

