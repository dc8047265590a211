"""End to end: ./perftest run/list/report against the fake suite binary."""

import json
import os
import signal
import subprocess
import time
import unittest

from perftest import report

from .support import FakeTree, LAUNCHER, process_gone, read_pid

EXPECTED = {
    "Fake.Pass": "pass",
    "Fake.Fail": "fail",
    "Fake.Skip": "skip",
    "Fake.SkipNoProps": "skip",
    "Fake.Crash": "crash",
    "Fake.Hang": "timeout",
    "Fake.ExitNoJson": "crash",
    "Fake.PassExit1": "error",
    "Fake.Exit0NoJson": "error",
    "Fake.LeakChild": "pass",
}


class FullRunTest(unittest.TestCase):
    """Every fake behaviour once, mock backend with an explicit profile."""

    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree()
        cls.out = os.path.join(cls.tree.root, "out")
        cls.proc = cls.tree.perftest("run", "--suite=fake", "--backend=mock",
                                     "--profile=x86_64-intel-pt", "--timeout=1s",
                                     "--output=%s" % cls.out)
        with open(os.path.join(cls.out, "report.json")) as f:
            cls.doc = json.load(f)
        cls.cases = {c["name"]: c for c in cls.doc["cases"]}

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    def test_exit_code_and_no_traceback(self):
        self.assertEqual(self.proc.returncode, 1, self.proc.stderr)
        self.assertNotIn("Traceback", self.proc.stderr)

    def test_statuses(self):
        self.assertEqual({n: c["status"] for n, c in self.cases.items()}, EXPECTED)
        s = self.doc["summary"]
        self.assertEqual((s["total"], s["pass"], s["fail"], s["skip"], s["error"],
                          s["timeout"], s["crash"]), (10, 2, 1, 2, 2, 1, 2))

    def test_report_is_valid(self):
        self.assertEqual(report.validate_report(self.doc), [])
        self.assertEqual(report.load_report(os.path.join(self.out, "report.json")), self.doc)

    def test_run_block(self):
        run = self.doc["run"]
        self.assertEqual(run["backend"], "mock")
        self.assertEqual(run["backend_reason"], "requested with --backend=mock")
        self.assertEqual(run["profile"], "x86_64-intel-pt")
        self.assertEqual(run["suites"], ["fake"])
        self.assertEqual(run["command"][:2], ["perftest", "run"])
        self.assertEqual(run["timeout_s"], 1.0)
        self.assertFalse(run["interrupted"])

    def test_feature_and_spec_from_listing_when_no_json(self):
        for name in ("Fake.Crash", "Fake.Hang", "Fake.ExitNoJson", "Fake.SkipNoProps"):
            c = self.cases[name]
            self.assertEqual(c["feature"], "fake." + {
                "Fake.Crash": "crash", "Fake.Hang": "hang", "Fake.ExitNoJson": "exit_no_json",
                "Fake.SkipNoProps": "skip_no_props"}[name])
            self.assertTrue(c["spec"].startswith("fake spec: "))

    def test_reasons(self):
        c = self.cases
        self.assertTrue(c["Fake.Fail"]["reason"].startswith("fake.cc:4\nExpected equality"))
        self.assertEqual(c["Fake.Skip"]["skip_class"], "permission")
        self.assertEqual(c["Fake.Skip"]["reason"], "needs CAP_PERFMON or perf_event_paranoid <= 0")
        self.assertTrue(c["Fake.SkipNoProps"]["reason"].startswith(
            "no hardware PMU: PERF_TYPE_HARDWARE returns ENOENT"))
        self.assertIn("SIGSEGV", c["Fake.Crash"]["reason"])
        self.assertIn("timed out after 1s", c["Fake.Hang"]["reason"])
        self.assertIn("exited with status 3", c["Fake.ExitNoJson"]["reason"])
        self.assertIn("exit status 1 but gtest reports pass", c["Fake.PassExit1"]["reason"])
        self.assertIn("exited 0 but no gtest JSON", c["Fake.Exit0NoJson"]["reason"])
        for name, case in c.items():
            self.assertEqual(case["skip_class"] is not None, case["status"] == "skip", name)

    def test_timeout_duration(self):
        d = self.cases["Fake.Hang"]["duration_s"]
        self.assertGreaterEqual(d, 1.0)
        self.assertLess(d, 3.0)

    def test_hung_case_child_killed(self):
        pid = read_pid(os.path.join(self.tree.state, "hang_child.pid"))
        self.assertTrue(process_gone(pid), "child %d of the hung case survived" % pid)

    def test_leaked_child_killed_after_normal_exit(self):
        pid = read_pid(os.path.join(self.tree.state, "leak_child.pid"))
        self.assertTrue(process_gone(pid), "leaked child %d survived" % pid)

    def test_each_case_isolated_with_protocol_flags(self):
        log = self.tree.argv_log()
        self.assertEqual(len(log), 10)
        profile = os.path.join(self.tree.profiles, "x86_64-intel-pt.json")
        cwds = set()
        for entry in log:
            argv = entry["argv"]
            self.assertEqual(argv[0], "--backend=mock")
            self.assertEqual(argv[1], "--profile=%s" % profile)
            self.assertTrue(argv[2].startswith("--gtest_filter=Fake."))
            self.assertTrue(argv[3].startswith("--gtest_output=json:"))
            self.assertTrue(entry["own_group"] and entry["own_session"])
            cwds.add(entry["cwd"])
        self.assertEqual(len(cwds), 10)

    def test_markdown_and_logs_written(self):
        with open(os.path.join(self.out, "report.md")) as f:
            md = f.read()
        self.assertIn("## Suite `fake`", md)
        self.assertIn("| CRASH | `fake.crash` | `Fake.Crash` | killed by SIGSEGV", md)
        self.assertIn("### permission", md)
        self.assertIn("### unsupported", md)
        crash = self.cases["Fake.Crash"]
        self.assertEqual(crash["log"], "logs/fake/Fake.Crash.log")
        with open(os.path.join(self.out, crash["log"])) as f:
            self.assertIn("about to crash", f.read())
        self.assertNotIn("log", self.cases["Fake.Pass"])

    def test_terminal_output(self):
        out = self.proc.stdout
        self.assertIn("backend: mock (requested with --backend=mock)", out)
        self.assertRegex(out, r"\[ 1/10\] pass +fake\.pass \(Fake\.Pass\) \d+\.\d\ds")
        self.assertIn("fake    10 cases:   2 pass    1 fail    2 skip    2 error    1 timeout"
                      "    2 crash", out)
        self.assertRegex(out, r"TIMEOUT +fake\.hang +timed out after 1s")
        self.assertRegex(out, r"SKIP +fake\.skip +\[permission\] needs CAP_PERFMON")
        self.assertNotRegex(out, r"PASS +fake\.pass")
        self.assertIn("report: %s" % os.path.join(self.out, "report.json"), out)

    def test_report_command_rerenders(self):
        p = self.tree.perftest("report", os.path.join(self.out, "report.json"), "--format=md")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.out, "report.md")) as f:
            self.assertEqual(p.stdout, f.read())
        p = self.tree.perftest("report", os.path.join(self.out, "report.json"), "--format=json")
        self.assertEqual(json.loads(p.stdout), self.doc)


class QuickRunTest(unittest.TestCase):
    """Backend choice, filters, --strict, exit codes: fast cases only."""

    def setUp(self):
        self.tree = FakeTree()
        self.out = os.path.join(self.tree.root, "out")

    def tearDown(self):
        self.tree.cleanup()

    def run_fake(self, *args, **env):
        return self.tree.perftest("run", "--suite=fake", "--output=%s" % self.out, *args, **env)

    def load(self):
        with open(os.path.join(self.out, "report.json")) as f:
            return json.load(f)

    def test_auto_picks_kernel_when_probe_works(self):
        p = self.run_fake("--filter=fake.pass", FAKE_PROBE="ok")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("backend: kernel (auto: perf_event_open works", p.stdout)
        run = self.load()["run"]
        self.assertEqual(run["backend"], "kernel")
        self.assertIsNone(run["profile"])
        self.assertTrue(run["probe"]["perf_event_open"])
        argv = self.tree.argv_log()[0]["argv"]
        self.assertEqual(argv[0], "--backend=kernel")
        self.assertFalse(any(a.startswith("--profile") for a in argv))

    def test_auto_falls_back_to_mock_and_says_why(self):
        p = self.run_fake("--filter=fake.pass", FAKE_PROBE="eperm")
        self.assertEqual(p.returncode, 0, p.stderr)
        why = "auto: perf_event_open failed with EPERM: seccomp denies perf_event_open"
        self.assertIn("backend: mock (%s)" % why, p.stdout)
        run = self.load()["run"]
        self.assertEqual((run["backend"], run["backend_reason"], run["profile"]),
                         ("mock", why, "software-only"))
        self.assertEqual(run["probe"]["seccomp_mode"], 2)    # extra probe keys kept
        argv = self.tree.argv_log()[0]["argv"]
        self.assertEqual(argv[:2], ["--backend=mock", "--profile=%s" % os.path.join(
            self.tree.profiles, "software-only.json")])

    def test_kernel_requested_but_probe_fails_warns(self):
        p = self.run_fake("--backend=kernel", "--filter=fake.pass", FAKE_PROBE="eperm")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("warning: --backend=kernel but perf_event_open failed with EPERM", p.stderr)
        self.assertEqual(self.load()["run"]["backend"], "kernel")

    def test_strict(self):
        p = self.run_fake("--filter=fake.pass,fake.skip")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.run_fake("--filter=fake.pass,fake.skip", "--strict")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--strict", p.stdout)
        self.assertTrue(self.load()["run"]["strict"])

    def test_filter_by_test_name_glob(self):
        p = self.run_fake("--filter=Fake.Fai*", "-q")
        self.assertEqual(p.returncode, 1)
        self.assertEqual([c["name"] for c in self.load()["cases"]], ["Fake.Fail"])
        self.assertNotIn("[1/1]", p.stdout)

    def test_filter_matching_nothing(self):
        p = self.run_fake("--filter=nothing.*")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--filter=nothing.* matched none of the 10 cases", p.stderr)

    def test_default_output_dir(self):
        cwd = os.path.join(self.tree.root, "cwd")
        os.mkdir(cwd)
        p = self.tree.perftest("run", "--suite=fake", "--backend=mock", "--filter=fake.pass",
                               cwd=cwd)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(cwd, "perftest-out", "fake-mock",
                                                    "report.json")))

    def test_probe_garbage_is_harness_error(self):
        p = self.run_fake(FAKE_PROBE="garbage")
        self.assertEqual(p.returncode, 3)
        self.assertIn("--perftest_probe did not print a JSON object", p.stderr)
        self.assertIn("suite_fake", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_bad_listing_is_harness_error(self):
        p = self.tree.perftest("list", FAKE_LIST="bad")
        self.assertEqual(p.returncode, 3)
        self.assertIn("--perftest_list did not print a JSON object", p.stderr)

    def test_interrupt_writes_partial_report(self):
        proc = subprocess.Popen(
            [LAUNCHER, "run", "--suite=fake", "--backend=mock", "--timeout=30s",
             "--filter=fake.pass,fake.hang,fake.leak_child", "--output=%s" % self.out],
            env=self.tree.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child = read_pid(os.path.join(self.tree.state, "hang_child.pid"), wait_s=10)
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 130, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("interrupted by SIGINT", err)
        doc = self.load()
        self.assertTrue(doc["run"]["interrupted"])
        self.assertEqual([c["status"] for c in doc["cases"]], ["pass", "not_run", "not_run"])
        self.assertEqual(doc["summary"]["not_run"], 2)
        self.assertEqual(report.validate_report(doc), [])
        self.assertTrue(process_gone(child), "child of the interrupted case survived")
        self.assertIn("INTERRUPTED", out)


class BadInputTest(unittest.TestCase):
    """Exit 2 with a message naming what was wrong, never a traceback."""

    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree()

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    def check(self, args, *needles, code=2, **env):
        p = self.tree.perftest(*args, **env)
        self.assertEqual(p.returncode, code, (p.stdout, p.stderr))
        self.assertNotIn("Traceback", p.stderr)
        for n in needles:
            self.assertIn(n, p.stderr)
        return p

    def test_unknown_suite(self):
        self.check(["run", "--suite=nope"], "unknown suite 'nope'", "known suites: fake")
        self.check(["list", "--suite=fake,nope"], "unknown suite 'nope'")

    def test_unknown_backend(self):
        self.check(["run", "--backend=qemu"], "argument --backend: invalid choice: 'qemu'")

    def test_unknown_profile(self):
        self.check(["run", "--profile=nope"], "unknown profile 'nope'",
                   "known profiles: software-only, x86_64-intel-pt")

    def test_profile_with_kernel_backend(self):
        self.check(["run", "--backend=kernel", "--profile=software-only"], "--backend=kernel")

    def test_bad_profile_file(self):
        bad = os.path.join(self.tree.root, "bad-profile.json")
        with open(bad, "w") as f:
            json.dump({"name": "x"}, f)
        self.check(["run", "--profile=%s" % bad], bad, "lacks required key(s): arch, description")

    def test_output_not_writable(self):
        blocker = os.path.join(self.tree.root, "a-file")
        with open(blocker, "w") as f:
            f.write("x")
        target = os.path.join(blocker, "out")
        self.check(["run", "--output=%s" % target],
                   "cannot write output directory %s: Not a directory" % target)
        self.assertEqual(self.tree.argv_log(), [])      # nothing ran

    def test_bad_timeout(self):
        self.check(["run", "--timeout=soon"], "invalid duration 'soon'")

    def test_missing_binaries(self):
        empty = os.path.join(self.tree.root, "empty-build")
        os.makedirs(empty, exist_ok=True)
        self.check(["run"], "no suite binaries found in %s" % os.path.join(empty, "bin"),
                   "build first: ./scripts/setup", PERFTEST_BUILD_DIR=empty)
        self.check(["run", "--suite=ringbuffer"],
                   os.path.join(empty, "bin", "suite_ringbuffer"), "build first: ./scripts/setup",
                   PERFTEST_BUILD_DIR=empty)

    def test_suite_binary_not_executable(self):
        path = os.path.join(self.tree.bin, "suite_noexec")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(path, 0o644)
        try:
            self.check(["run", "--suite=noexec"], "not executable: %s" % path)
        finally:
            os.unlink(path)

    def test_report_missing_and_not_a_report(self):
        missing = os.path.join(self.tree.root, "missing.json")
        self.check(["report", missing], "report file does not exist: %s" % missing)
        other = os.path.join(self.tree.root, "other.json")
        with open(other, "w") as f:
            json.dump({"testsuites": []}, f)
        self.check(["report", other], "%s is not a perftest report" % other)
        self.check(["report", other, "--format=pdf"], "invalid choice: 'pdf'")

    def test_extra_args_only_for_bench(self):
        self.check(["run", "--", "--foo"], "only for `perftest bench`")


class LauncherTest(unittest.TestCase):
    def test_runs_from_any_cwd(self):
        p = subprocess.run([LAUNCHER, "--version"], cwd="/", stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("perftest "))

    def test_help_documents_exit_codes(self):
        for args in (["--help"], ["run", "--help"]):
            p = subprocess.run([LAUNCHER] + args, stdout=subprocess.PIPE, text=True)
            self.assertEqual(p.returncode, 0)
            self.assertIn("exit codes:", p.stdout)
            self.assertIn("130", p.stdout)

    def test_list(self):
        tree = FakeTree()
        try:
            p = tree.perftest("list")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout, r"fake\.crash +Fake\.Crash +fake spec: crash")
            self.assertIn("1 suites, 10 cases", p.stdout)
            p = tree.perftest("list", "--json")
            self.assertEqual(json.loads(p.stdout)[0]["cases"][0]["test"], "Fake.Pass")
        finally:
            tree.cleanup()


if __name__ == "__main__":
    unittest.main()
