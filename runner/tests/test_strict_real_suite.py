"""--strict against the expectation lists, proven on a real suite binary
(suite_counting on the mock, profile sw-only: no hardware PMU):

  - a case that skips where no list declares it fails the strict run, and
    the output names the case and its skip reason (what a GTEST_SKIP added
    to a case by mistake would do to its ctest);
  - the same case declared in ci/expectations (no-hwpmu.txt) passes it, and
    the report carries the entry (FILE:LINE) and its reason;
  - a passing case declared as an expected skip fails the strict run: the
    entry is stale.

Uses the build tree in $PERFTEST_BUILD_DIR (default <repo>/build); skipped,
saying what is missing, when bin/suite_counting is not built. ctest runs it
as runner.strict_real_suite (suites/CMakeLists.txt).
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from .support import LAUNCHER, REPO

BUILD = os.path.abspath(os.environ.get("PERFTEST_BUILD_DIR") or os.path.join(REPO, "build"))
SUITE = os.path.join(BUILD, "bin", "suite_counting")
SKIPS = "counting.hw_cycles"          # needs a hardware PMU: skips on sw-only
PASSES = "counting.page_faults"


@unittest.skipUnless(os.access(SUITE, os.X_OK),
                     "%s not built (cmake --build %s --target suite_counting)" % (SUITE, BUILD))
class StrictRealSuiteTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="perftest-strict-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def run_counting(self, cases, *args, lists_dir=None):
        out = os.path.join(self.tmp, "out")
        env = dict(os.environ, PERFTEST_BUILD_DIR=BUILD)
        env.pop("PERFTEST_DENYLIST_DIR", None)
        if lists_dir:
            env["PERFTEST_EXPECTATIONS_DIR"] = lists_dir
        else:
            env.pop("PERFTEST_EXPECTATIONS_DIR", None)
        p = subprocess.run([LAUNCHER, "run", "--suite=counting", "--backend=mock", "--profile=sw-only",
                            "--filter=%s" % cases, "--output=%s" % out, "--strict"] + list(args),
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=300)
        with open(os.path.join(out, "report.json")) as f:
            doc = json.load(f)
        return p, {c["feature"]: c for c in doc["cases"]}, doc

    def test_undeclared_skip_fails_naming_case_and_reason(self):
        empty = os.path.join(self.tmp, "no-lists")
        os.makedirs(empty)
        p, cases, doc = self.run_counting("%s,%s" % (SKIPS, PASSES), "--expect=auto", lists_dir=empty)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(cases[SKIPS]["status"], "skip")
        self.assertTrue(cases[SKIPS]["unexpected_skip"])
        self.assertEqual(doc["summary"]["unexpected_skip"], 1)
        self.assertRegex(p.stdout, r"SKIP +%s .*UNEXPECTED skip.*no hardware PMU" % SKIPS)
        self.assertIn("FAILED (--strict: 1 unexpected skip)", p.stdout)

    def test_declared_skip_passes_with_its_entry(self):
        p, cases, _ = self.run_counting("%s,%s" % (SKIPS, PASSES), "--expect=auto")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        case = cases[SKIPS]
        self.assertTrue(case["expected_skip"])
        entry_file, _, line = case["expectation_entry"].rpartition(":")
        self.assertEqual(entry_file, os.path.join(REPO, "ci", "expectations", "no-hwpmu.txt"))
        with open(entry_file) as f:
            self.assertTrue(f.read().splitlines()[int(line) - 1].startswith(SKIPS + " "))
        self.assertIn("no hardware PMU", case["expectation_reason"])

    def test_stale_declaration_fails(self):
        stale = os.path.join(self.tmp, "stale.txt")
        with open(stale, "w") as f:
            f.write("%s  skip=unsupported  declared by this test: it passes on the mock\n" % PASSES)
        p, cases, _ = self.run_counting(PASSES, "--expect=%s" % stale)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(cases[PASSES]["status"], "pass")
        self.assertTrue(cases[PASSES]["unexpected_pass"])
        self.assertIn("expected skip PASSED: %s:1" % stale, p.stdout)


if __name__ == "__main__":
    unittest.main()
