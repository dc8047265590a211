"""perftest run: --all, --jobs, --repeat, progress on a terminal and in a
pipe, Ctrl-C with parallel cases."""

import json
import os
import pty
import select
import signal
import subprocess
import time
import unittest

from perftest import report
from perftest.run import aggregate
from perftest.suite import CaseInfo, CaseResult

from .support import LAUNCHER, FakeTree, process_gone, read_pid, run_main


class AggregateTest(unittest.TestCase):
    def r(self, status, reason="", d=0.1):
        return CaseResult("s", "S.T", "s.t", None, status, "permission" if status == "skip" else None,
                          reason, d)

    def test_folding(self):
        case = CaseInfo("s", "S.T", "s.t", None)
        same = aggregate(case, [self.r("pass", d=0.1), self.r("pass", d=0.3)])
        self.assertEqual((same.status, same.extra["flaky"]), ("pass", False))
        self.assertAlmostEqual(same.duration_s, 0.2)
        mixed = aggregate(case, [self.r("pass"), self.r("skip", "no PMU"), self.r("pass")])
        self.assertEqual((mixed.status, mixed.skip_class, mixed.extra["flaky"]),
                         ("skip", "permission", True))
        self.assertEqual(mixed.reason, "flaky (2 of 3 runs passed): no PMU")
        worst = aggregate(case, [self.r("skip", "x"), self.r("timeout", "t"), self.r("crash", "c")])
        self.assertEqual((worst.status, worst.reason), ("timeout", "flaky (0 of 3 runs passed): t"))
        self.assertEqual([r["status"] for r in worst.extra["repeats"]], ["skip", "timeout", "crash"])
        single = self.r("fail", "f")
        self.assertIs(aggregate(case, [single]), single)


class RunOptionsTest(unittest.TestCase):
    def setUp(self):
        self.tree = FakeTree()
        self.out = os.path.join(self.tree.root, "out")

    def tearDown(self):
        self.tree.cleanup()

    def run_fake(self, *args, **env):
        return self.tree.perftest("run", "--suite=fake", "--backend=mock",
                                  "--output=%s" % self.out, *args, **env)

    def load(self):
        with open(os.path.join(self.out, "report.json")) as f:
            return json.load(f)

    def test_jobs_run_cases_in_parallel_and_keep_order(self):
        cases = "fake.pass,fake.fail,fake.skip,fake.skip_no_props,fake.pass_exit1,fake.leak_child"
        p = self.run_fake("--jobs=3", "--filter=" + cases, FAKE_CASE_SLEEP="0.3")
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = self.load()
        self.assertEqual([c["feature"] for c in doc["cases"]], cases.split(","))
        self.assertEqual(doc["run"]["jobs"], 3)
        self.assertEqual(report.validate_report(doc), [])
        with open(os.path.join(self.tree.state, "times.log")) as f:
            spans = [json.loads(line) for line in f]
        self.assertEqual(len(spans), 6)
        overlapping = max(sum(1 for s in spans if s["start"] < t["end"] and t["start"] < s["end"])
                          for t in spans)
        self.assertGreaterEqual(overlapping, 2, "no two cases ran at the same time: %s" % spans)
        # plain progress lines (not a terminal), one per case, each labelled
        lines = [line for line in p.stdout.splitlines() if line.startswith("[")]
        self.assertEqual(len(lines), 6)
        self.assertEqual(sorted(int(line[1:line.index("/")]) for line in lines), [1, 2, 3, 4, 5, 6])
        self.assertNotIn("\x1b[", p.stdout)
        self.assertIn("6 cases from fake, timeout 60s per case, 3 in parallel", p.stdout)

    def test_repeat_exposes_flaky_case(self):
        p = self.run_fake("--repeat=3", "--filter=fake.pass,fake.skip", FAKE_FLAKY="1")
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = self.load()
        self.assertEqual(report.validate_report(doc), [])
        flaky, skip = doc["cases"]
        self.assertEqual([r["status"] for r in flaky["repeats"]], ["pass", "fail", "pass"])
        self.assertTrue(flaky["flaky"])
        self.assertEqual(flaky["status"], "fail")
        self.assertTrue(flaky["reason"].startswith("flaky (2 of 3 runs passed): fake.cc:2"))
        self.assertEqual(flaky["log"], "logs/fake/Fake.Pass.1.log")
        self.assertTrue(os.path.isfile(os.path.join(self.out, flaky["log"])))
        self.assertEqual([r["status"] for r in skip["repeats"]], ["skip"] * 3)
        self.assertFalse(skip["flaky"])
        self.assertEqual(skip["skip_class"], "permission")
        self.assertEqual(doc["summary"]["flaky"], 1)
        self.assertEqual(doc["run"]["repeat"], 3)
        self.assertRegex(p.stdout, r"\[1/2\] fail +fake\.pass \(Fake\.Pass\) [0-9.]+s  "
                                   r"flaky: pass, fail, pass")
        self.assertEqual(len(self.tree.argv_log()), 6)

    def test_all(self):
        p = self.tree.perftest("run", "--all", "--backend=mock", "--filter=fake.pass",
                               "--output=%s" % self.out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.load()["run"]["suites"], ["fake"])
        code, _, err = run_main("run", "--all", "--suite=fake", env=self.tree.env())
        self.assertEqual(code, 2)
        self.assertIn("--all runs every suite; drop it or --suite=fake", err)

    def test_bad_counts(self):
        for args, needle in ((["--jobs=0"], "--jobs must be at least 1, got 0"),
                             (["--repeat=x"], "--repeat takes a whole number, got 'x'"),
                             (["-j", "-2"], "--jobs must be at least 1")):
            code, out, err = run_main("run", "--suite=fake", *args, env=self.tree.env())
            self.assertEqual(code, 2, args)
            self.assertIn(needle, err)
            self.assertNotIn("Traceback", err)

    def test_progress_on_a_terminal(self):
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [LAUNCHER, "run", "--suite=fake", "--backend=mock", "--output=%s" % self.out,
             "--filter=fake.pass,fake.fail,fake.skip"],
            env=self.tree.env(COLUMNS="120"), stdin=subprocess.DEVNULL, stdout=slave,
            stderr=subprocess.PIPE)
        os.close(slave)
        chunks = []
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                break
            try:
                data = os.read(master, 65536)
            except OSError:          # EIO: the other side closed
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        proc.wait(timeout=30)
        proc.stderr.close()
        self.assertEqual(proc.returncode, 1)
        out = b"".join(chunks).decode("utf-8", "replace")
        self.assertIn("\r\x1b[K[1/3]", out)                  # status line, rewritten in place
        self.assertRegex(out, r"\[3/3\]  [0-9.]+s  1 pass, 1 fail, 1 skip")
        self.assertRegex(out, r"FAIL +fake\.fail \(Fake\.Fail\) [0-9.]+s\r?\n +fake\.cc:4 Expected")
        self.assertIn("ran 3 of 3 cases in", out)
        self.assertNotRegex(out, r"\[ ?1/3\] pass ")          # no plain per-case lines
        self.assertIn("result: FAILED", out)

    def test_interrupt_with_parallel_cases(self):
        proc = subprocess.Popen(
            [LAUNCHER, "run", "--suite=fake", "--backend=mock", "--timeout=30s", "--jobs=2",
             "--filter=fake.hang,fake.pass,fake.skip", "--output=%s" % self.out],
            env=self.tree.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        child = read_pid(os.path.join(self.tree.state, "hang_child.pid"), wait_s=10)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
        self.assertEqual(proc.returncode, 130, err)
        self.assertNotIn("Traceback", err)
        doc = self.load()
        self.assertTrue(doc["run"]["interrupted"])
        by = {c["feature"]: c["status"] for c in doc["cases"]}
        self.assertEqual(by["fake.hang"], "not_run")
        self.assertLessEqual(set(by.values()), {"pass", "skip", "not_run"})
        self.assertEqual(report.validate_report(doc), [])
        self.assertTrue(process_gone(child), "child of the interrupted case survived")


if __name__ == "__main__":
    unittest.main()
