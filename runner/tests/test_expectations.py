"""Expectation lists: the file format, its errors, auto selection by
environment, and runs that apply them: denied cases skipped with a reason,
xfail cases run, expected skips judged under --strict (an undeclared skip
fails the run, an expected skip that passes too), retries of declared
timing-sensitive kernel cases recorded per attempt."""

import glob
import json
import os
import unittest

from perftest import expectations, report
from perftest.errors import UsageError
from perftest.expectations import Environment
from perftest.suite import CaseInfo, CaseResult

from .support import REPO, FakeTree

GOOD = """\
# known problems on 6.1 x86_64
# match: kernel=6.1.* arch=x86_64 backend=kernel

ringbuffer.aux_*        class=unsupported  AUX area needs intel_pt, absent here
RingBuffer.Wakeup*      class=kernel_version  fixed in 6.2 (commit abc)
groups.leader_disable   xfail  kernel returns EINVAL, the man page says 0 (reported)
pt.*                    no PT on this runner's CPU # not an inline comment
"""


def info(test, feature):
    return CaseInfo("s", test, feature, None)


def kernel_env(release="6.1.0-18-amd64", arch="x86_64", hwpmu="yes", privileged="yes"):
    return Environment(release, arch, "kernel", "", hwpmu, privileged)


class ParseTest(unittest.TestCase):
    def test_good(self):
        dl = expectations.parse(GOOD, "x.txt")
        self.assertEqual(dl.match, {"kernel": "6.1.*", "arch": "x86_64", "backend": "kernel"})
        self.assertEqual([(e.pattern, e.skip_class, e.xfail, e.source) for e in dl.entries], [
            ("ringbuffer.aux_*", "unsupported", False, "x.txt:4"),
            ("RingBuffer.Wakeup*", "kernel_version", False, "x.txt:5"),
            ("groups.leader_disable", None, True, "x.txt:6"),
            ("pt.*", "unsupported", False, "x.txt:7"),
        ])
        self.assertEqual(dl.entries[3].reason, "no PT on this runner's CPU # not an inline comment")
        self.assertEqual(dl.entries[2].reason,
                         "kernel returns EINVAL, the man page says 0 (reported)")

    def test_errors_name_file_and_line(self):
        for text, needle in [
            ("ringbuffer.aux\n", "x.txt:1: entry 'ringbuffer.aux' has no reason"),
            ("\n\nringbuffer.aux   class=sandbox\n", "x.txt:3: entry 'ringbuffer.aux' has no reason"),
            ("a.b class=nope why\n", "x.txt:1: class=nope: not a skip class; use one of "
                                     "unsupported, permission, sandbox, kernel_version"),
            ("a.b skip=nope why\n", "x.txt:1: skip=nope: not a skip class"),
            ("a.b clas=sandbox why\n", "x.txt:1: unknown option 'clas'"),
            ("a.b xfail class=sandbox why\n", "one verdict per entry"),
            ("a.b skip=sandbox retry=2 why\n", "one verdict per entry"),
            ("# match: backend=kernel\na.b retry=0 why\n", "x.txt:2: retry=0: the extra attempts"),
            ("# match: backend=mock\na.b retry=2 timing\n",
             "x.txt:2: retry= is only for timing-sensitive kernel cases"),
            ("a.b retry=2 timing\n", "retry= is only for timing-sensitive kernel cases"),
            ("a.b skip=sandbox why\nc.d why\na.b xfail again\n",
             "x.txt:3: 'a.b' is already declared at line 1"),
            ('"a.b" why\n', "is not a feature-id or test-name glob"),
            ("# match: kernel=6.*\n# match: arch=x86_64\n", "x.txt:2: a second '# match:' line"),
            ("# match: os=linux\n", "'# match:' key 'os' is not one of kernel, arch, backend, "
                                    "profile, hwpmu, intel_pt, privileged"),
            ("# match: kernel\n", "'# match:' takes key=GLOB words"),
        ]:
            with self.subTest(text=text):
                with self.assertRaises(UsageError) as cm:
                    expectations.parse(text, "x.txt")
                msg = str(cm.exception)
                self.assertIn(needle, msg)
                self.assertTrue(msg.startswith("expectation list x.txt:"), msg)

    def test_matching(self):
        dls = expectations.Expectations([expectations.parse(GOOD, "x.txt")])
        self.assertEqual(dls.match(info("RingBuffer.AuxWrap", "ringbuffer.aux_wrap")).source,
                         "x.txt:4")
        self.assertEqual(dls.match(info("RingBuffer.WakeupEvents", "ringbuffer.wakeup_events"))
                         .skip_class, "kernel_version")
        self.assertIsNone(dls.match(info("RingBuffer.Wraps", "ringbuffer.wraparound")))
        self.assertIsNone(dls.match(info("RingBuffer.X", None)))

    def test_applies_to(self):
        dl = expectations.parse(GOOD, "x.txt")
        self.assertTrue(dl.applies_to(kernel_env()))
        mock = Environment("6.1.0-18-amd64", "x86_64", "mock", "sw-only", "no", "yes")
        self.assertFalse(dl.applies_to(mock))
        self.assertFalse(dl.applies_to(kernel_env("6.10.2")))
        self.assertFalse(expectations.parse("a.b why\n", "y.txt").applies_to(kernel_env("6.1")))
        two = expectations.parse("# match: kernel=3.*,4.0.*\n", "z.txt")
        self.assertTrue(two.applies_to(kernel_env("4.0.9", "aarch64")))
        self.assertTrue(two.applies_to(kernel_env("3.10.0-1160.el7.x86_64")))
        self.assertFalse(two.applies_to(kernel_env("4.1.0")))
        no_pmu = expectations.parse("# match: backend=kernel hwpmu=no\n", "h.txt")
        self.assertTrue(no_pmu.applies_to(kernel_env(hwpmu="no")))
        self.assertFalse(no_pmu.applies_to(kernel_env(hwpmu="yes")))
        self.assertFalse(no_pmu.applies_to(Environment("6.1", "x86_64", "mock", "sw-only", "no")))
        prof = expectations.parse("# match: backend=mock profile=riscv64-*,sw-only\n", "p.txt")
        self.assertTrue(prof.applies_to(Environment("6.1", "riscv64", "mock", "riscv64-sbi", "yes")))
        self.assertFalse(prof.applies_to(Environment("6.1", "x86_64", "mock", "x86_64-intel", "yes")))
        self.assertFalse(prof.applies_to(kernel_env()), "the kernel backend has no profile")

    def test_mock_environment_is_the_profile(self):
        env = expectations.environment("mock", {
            "name": "riscv64-sbi", "arch": "riscv64", "privileged": False,
            "pmus": [{"name": "cpu", "type": 4}, {"name": "software", "type": 1}]})
        self.assertEqual((env.backend, env.arch, env.profile, env.hwpmu, env.privileged),
                         ("mock", "riscv64", "riscv64-sbi", "yes", "no"))
        env = expectations.environment("mock", {"name": "sw-only", "arch": "x86_64",
                                                "pmus": [{"name": "software", "type": 1}]})
        self.assertEqual((env.hwpmu, env.privileged), ("no", "yes"))
        host = expectations.environment("kernel")
        self.assertEqual((host.backend, host.profile, host.arch), ("kernel", "", os.uname().machine))
        self.assertIn(host.hwpmu, ("yes", "no"))

    def test_shipped_lists_parse(self):
        paths = glob.glob(os.path.join(REPO, "ci", "expectations", "*.txt"))
        self.assertTrue(paths, "no expectation lists in ci/expectations")
        for path in paths:
            with self.subTest(path=os.path.basename(path)):
                dl = expectations.load(path)
                self.assertTrue(dl.match, "%s has no '# match:' line" % path)
                for e in dl.entries:
                    self.assertGreater(len(e.reason), 10, e.source)


class JudgeTest(unittest.TestCase):
    """expectations.judge: the verdict keys of a finished case."""

    SKIP = expectations.parse("a.skip skip=unsupported no hardware PMU here\n", "e.txt").entries[0]

    def result(self, status, skip_class=None):
        return CaseResult("s", "S.A", "a.skip", None, status, skip_class, "why", 0.1)

    def test_verdicts(self):
        judge = expectations.judge
        self.assertEqual(judge(self.result("skip", "unsupported"), self.SKIP, True),
                         {"expected_skip": True, "expectation_entry": "e.txt:1",
                          "expectation_reason": "no hardware PMU here"})
        self.assertTrue(judge(self.result("skip", "permission"), self.SKIP, True)["unexpected_skip"],
                        "declared with another class")
        self.assertEqual(judge(self.result("skip", "unsupported"), None, True),
                         {"unexpected_skip": True})
        self.assertEqual(judge(self.result("skip", "unsupported"), None, False), {},
                         "not strict: a skip is only a skip")
        self.assertTrue(judge(self.result("pass"), self.SKIP, False)["unexpected_pass"])
        self.assertNotIn("unexpected_pass", judge(self.result("fail"), self.SKIP, True))


class ListRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree()
        cls.dir = os.path.join(cls.tree.root, "expectations")
        os.makedirs(cls.dir)
        cls.explicit = cls.write("explicit.txt", """\
# no match line: used only when named
fake.crash   class=sandbox  crashes under this seccomp profile (issue 12)
Fake.Fail    xfail          divergence documented in issue 7
""")
        cls.write("this-machine.txt", "# match: kernel=* arch=%s backend=mock\n"
                  "fake.skip  class=permission  needs a privileged runner\n" % os.uname().machine)
        cls.write("other-arch.txt", "# match: arch=sparc64\nfake.pass  never on sparc\n")

    @classmethod
    def write(cls, name, text):
        path = os.path.join(cls.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    def run_fake(self, *args, backend="mock", cases="fake.pass,fake.fail,fake.skip,fake.crash",
                 **env):
        out = os.path.join(self.tree.root, "out")
        p = self.tree.perftest("run", "--suite=fake", "--backend=%s" % backend,
                               "--output=%s" % out, "--filter=%s" % cases, *args,
                               PERFTEST_EXPECTATIONS_DIR=self.dir, **env)
        doc = None
        if os.path.exists(os.path.join(out, "report.json")):
            with open(os.path.join(out, "report.json")) as f:
                doc = json.load(f)
        return p, doc, out

    def test_explicit_and_auto(self):
        p, doc, out = self.run_fake("--denylist=%s,auto" % self.explicit)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)     # fail is expected, crash denied
        self.assertEqual(report.validate_report(doc), [])
        by = {c["feature"]: c for c in doc["cases"]}
        crash = by["fake.crash"]
        self.assertEqual((crash["status"], crash["skip_class"], crash["denylisted"]),
                         ("skip", "sandbox", True))
        self.assertEqual(crash["reason"], "denylisted: crashes under this seccomp profile (issue 12)")
        self.assertEqual(crash["denylist_entry"], "%s:2" % self.explicit)
        fail = by["fake.fail"]
        self.assertEqual((fail["status"], fail["xfail"]), ("fail", True))
        self.assertEqual(fail["denylist_reason"], "divergence documented in issue 7")
        self.assertEqual(by["fake.skip"]["skip_class"], "permission")     # from the auto file
        self.assertTrue(by["fake.skip"]["denylisted"])
        self.assertEqual(by["fake.pass"]["status"], "pass")              # sparc list not used
        self.assertEqual(doc["run"]["denylists"],
                         [self.explicit, os.path.join(self.dir, "this-machine.txt")])
        self.assertEqual(doc["run"]["expectations"], doc["run"]["denylists"])
        self.assertEqual((doc["summary"]["denylisted"], doc["summary"]["xfail"]), (2, 1))
        ran = [e["argv"][2] for e in self.tree.argv_log()]
        self.assertNotIn("--gtest_filter=Fake.Crash", ran)
        self.assertNotIn("--gtest_filter=Fake.Skip", ran)
        with open(os.path.join(out, "report.ktap")) as f:
            self.assertIn("ok 2 fake.fail # XFAIL fail:", f.read())
        self.assertIn("expectations: %s" % self.explicit, p.stdout)
        self.assertIn("result: PASSED", p.stdout)

    def test_bad_deny_list_is_exit_2_before_running(self):
        bad = os.path.join(self.tree.root, "bad.txt")
        with open(bad, "w") as f:
            f.write("fake.pass\n")
        before = len(self.tree.argv_log())
        p, _, _ = self.run_fake("--denylist=%s" % bad)
        self.assertEqual(p.returncode, 2)
        self.assertIn("expectation list %s:1: entry 'fake.pass' has no reason" % bad, p.stderr)
        self.assertEqual(len(self.tree.argv_log()), before)
        p, _, _ = self.run_fake("--denylist=/nonexistent/x.txt")
        self.assertEqual(p.returncode, 2)
        self.assertIn("expectation list does not exist: /nonexistent/x.txt", p.stderr)



class StrictRunTest(unittest.TestCase):
    """--strict against expectation lists: the proof that a case made to skip
    without a declaration fails the run, and that a stale declaration does."""

    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree()
        cls.dir = os.path.join(cls.tree.root, "expectations")
        os.makedirs(cls.dir)
        cls.skips = os.path.join(cls.dir, "skips.txt")
        with open(cls.skips, "w") as f:
            f.write("# match: backend=mock\n"
                    "fake.skip  skip=permission  the fake needs CAP_PERFMON\n")
        cls.stale = os.path.join(cls.tree.root, "stale.txt")
        with open(cls.stale, "w") as f:
            f.write("fake.pass  skip=unsupported  once skipped here\n")
        cls.timing = os.path.join(cls.tree.root, "timing.txt")
        with open(cls.timing, "w") as f:
            f.write("# match: backend=kernel\n"
                    "Fake.Pass  retry=2  counts timer ticks: a loaded host can miss one\n")

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    run_fake = ListRunTest.run_fake

    def test_declared_skip_passes_strict(self):
        p, doc, out = self.run_fake("--expect=auto", "--strict", cases="fake.pass,fake.skip")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(report.validate_report(doc), [])
        skip = next(c for c in doc["cases"] if c["feature"] == "fake.skip")
        self.assertEqual((skip["status"], skip["expected_skip"], skip["expectation_entry"]),
                         ("skip", True, "%s:2" % self.skips))
        self.assertEqual(skip["expectation_reason"], "the fake needs CAP_PERFMON")
        self.assertEqual(doc["summary"]["expected_skip"], 1)
        self.assertIn("expected skip (%s:2)" % self.skips, p.stdout)
        self.assertIn("1 expected skips", p.stdout)
        with open(os.path.join(out, "report.md")) as f:
            self.assertIn("%s:2" % self.skips, f.read())
        with open(os.path.join(out, "report.ktap")) as f:
            self.assertIn("# SKIP [permission] [expected: %s:2]" % self.skips, f.read())
        with open(os.path.join(out, "report.junit.xml")) as f:
            self.assertIn("[expected: %s:2]" % self.skips, f.read())

    def test_undeclared_skip_fails_strict_naming_the_case(self):
        # fake.skip_no_props skips, and no list declares it.
        p, doc, _ = self.run_fake("--expect=auto", "--strict", cases="fake.skip,fake.skip_no_props")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        bad = next(c for c in doc["cases"] if c["feature"] == "fake.skip_no_props")
        self.assertTrue(bad["unexpected_skip"])
        self.assertEqual(doc["summary"]["unexpected_skip"], 1)
        self.assertIn("result: FAILED (--strict: 1 unexpected skip)", p.stdout)
        self.assertRegex(p.stdout, r"SKIP +fake.skip_no_props .*UNEXPECTED skip.*no hardware PMU")
        # Without --strict the same run passes, and nothing is marked unexpected.
        p, doc, _ = self.run_fake("--expect=auto", cases="fake.skip,fake.skip_no_props")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(any(c.get("unexpected_skip") for c in doc["cases"]))

    def test_skip_declared_with_another_class_is_unexpected(self):
        other = os.path.join(self.tree.root, "other.txt")
        with open(other, "w") as f:
            f.write("fake.skip  skip=sandbox  declared as a seccomp skip\n")
        p, doc, _ = self.run_fake("--expect=%s" % other, "--strict", cases="fake.skip")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertTrue(doc["cases"][0]["unexpected_skip"])

    def test_expected_skip_that_passes_fails_strict(self):
        p, doc, _ = self.run_fake("--expect=%s" % self.stale, "--strict", cases="fake.pass")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        case = doc["cases"][0]
        self.assertEqual((case["status"], case["unexpected_pass"]), ("pass", True))
        self.assertEqual(doc["summary"]["unexpected_pass"], 1)
        self.assertIn("FAILED (--strict: 1 expected skip passed)", p.stdout)
        self.assertIn("expected skip PASSED: %s:1" % self.stale, p.stdout)
        p, doc, _ = self.run_fake("--expect=%s" % self.stale, cases="fake.pass")
        self.assertEqual(p.returncode, 0, "reported, but only --strict fails on it")
        self.assertTrue(doc["cases"][0]["unexpected_pass"])

    def test_strict_without_lists_fails_every_skip(self):
        p, doc, _ = self.run_fake("--strict", cases="fake.pass,fake.skip")
        self.assertEqual(p.returncode, 1)
        self.assertTrue(next(c for c in doc["cases"] if c["feature"] == "fake.skip")["unexpected_skip"])

    def test_retry_of_a_declared_timing_sensitive_case(self):
        with open(os.path.join(self.tree.state, "flaky.count"), "w") as f:
            f.write("1")                     # the fake's next run fails, the one after passes
        p, doc, out = self.run_fake("--expect=%s" % self.timing, backend="kernel",
                                    cases="fake.pass", FAKE_FLAKY="1")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        case = doc["cases"][0]
        self.assertEqual((case["status"], case["retried"]), ("pass", True))
        self.assertEqual([a["status"] for a in case["attempts"]], ["fail", "pass"])
        self.assertIn("flaked on run 2", case["attempts"][0]["reason"])
        self.assertTrue(os.path.exists(os.path.join(out, case["attempts"][0]["log"])))
        self.assertEqual(case["expectation_entry"], "%s:2" % self.timing)
        self.assertEqual(doc["summary"]["retried"], 1)
        self.assertIn("retried: fail, pass", p.stdout)
        self.assertEqual(report.validate_report(doc), [])

    def test_no_retry_without_a_declaration(self):
        with open(os.path.join(self.tree.state, "flaky.count"), "w") as f:
            f.write("1")
        p, doc, _ = self.run_fake(backend="kernel", cases="fake.pass", FAKE_FLAKY="1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertNotIn("attempts", doc["cases"][0])

    def test_retry_gives_up_after_n_extra_attempts(self):
        fail_list = os.path.join(self.tree.root, "timing-fail.txt")
        with open(fail_list, "w") as f:
            f.write("# match: backend=kernel\nfake.fail  retry=2  a real failure fails every time\n")
        p, doc, _ = self.run_fake("--expect=%s" % fail_list, backend="kernel", cases="fake.fail")
        self.assertEqual(p.returncode, 1)
        self.assertEqual([a["status"] for a in doc["cases"][0]["attempts"]], ["fail"] * 3)


if __name__ == "__main__":
    unittest.main()
