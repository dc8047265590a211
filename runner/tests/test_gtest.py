"""gtest.classify against real GoogleTest 1.12 output (tests/data)."""

import json
import os
import unittest

from perftest import gtest
from perftest.procs import ProcResult

from .support import DATA


def proc(code=0, timed_out=False):
    return ProcResult(returncode=code, timed_out=timed_out, duration_s=0.1)


class RealGtestOutputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(DATA, "gtest_1.12_mixed.json")) as f:
            cls.doc = json.load(f)
        with open(os.path.join(DATA, "gtest_1.12_mixed.stdout")) as f:
            cls.stdout = f.read()

    def classify(self, name, code=0):
        return gtest.classify(name, proc(code), self.doc, None, self.stdout)

    def test_pass_with_properties(self):
        v = self.classify("S.Pass")
        self.assertEqual(v.status, "pass")
        self.assertEqual(v.feature, "s.pass")
        self.assertEqual(v.spec, "x y")

    def test_fail_reason_is_first_failure(self):
        v = self.classify("S.Fail", code=1)
        self.assertEqual(v.status, "fail")
        self.assertTrue(v.reason.startswith("t.cc:4\nExpected equality of these values:"))
        self.assertIn("one is not two", v.reason)
        self.assertIn("(+1 more failures)", v.reason)
        self.assertNotIn("second", v.reason)

    def test_skip_uses_properties(self):
        v = self.classify("S.Skip")
        self.assertEqual(v.status, "skip")
        self.assertEqual(v.skip_class, "permission")
        self.assertEqual(v.reason, "needs CAP_PERFMON")
        self.assertEqual(v.feature, "s.skip")

    def test_skip_without_properties_falls_back_to_stdout(self):
        out = ("[ RUN      ] S.Skip2\nt.cc:5: Skipped\nno PMU: PERF_TYPE_HARDWARE returns ENOENT\n"
               "[  SKIPPED ] S.Skip2 (0 ms)\n")
        doc = json.loads(json.dumps(self.doc))
        doc["testsuites"][0]["testsuite"].append(
            {"name": "Skip2", "status": "RUN", "result": "SKIPPED", "classname": "S"})
        v = gtest.classify("S.Skip2", proc(0), doc, None, out)
        self.assertEqual(v.status, "skip")
        self.assertTrue(v.reason.startswith("no PMU: PERF_TYPE_HARDWARE returns ENOENT"))
        self.assertEqual(v.skip_class, "unsupported")
        self.assertIn("no skip_class recorded", v.reason)

    def test_skip_message_parser_on_real_stdout(self):
        self.assertEqual(gtest.skip_message(self.stdout), "needs CAP_PERFMON or paranoid<=0")
        self.assertEqual(gtest.skip_message("t.cc:6: Skipped\n\n[  SKIPPED ] S.X (0 ms)\n"), "")

    def test_skip_without_any_message(self):
        v = gtest.classify("S.SkipNoMsg", proc(0), self.doc, None, "")
        self.assertEqual(v.status, "skip")
        self.assertIn("no reason given", v.reason)

    def test_invalid_skip_class_is_named(self):
        doc = json.loads(json.dumps(self.doc))
        doc["testsuites"][0]["testsuite"][2]["skip_class"] = "bogus"
        v = gtest.classify("S.Skip", proc(0), doc, None, "")
        self.assertEqual(v.skip_class, "unsupported")
        self.assertIn("'bogus'", v.reason)

    def test_numeric_property_is_string(self):
        tc = gtest.find_case(self.doc, "S.Num")
        self.assertEqual(gtest.properties(tc), {"n": "5"})

    def test_disabled(self):
        v = self.classify("S.DISABLED_y")
        self.assertEqual(v.status, "skip")
        self.assertIn("disabled", v.reason)

    def test_nonzero_exit_with_pass_is_error(self):
        v = gtest.classify("S.Pass", proc(23), self.doc, None, "LeakSanitizer: leaks\n")
        self.assertEqual(v.status, "error")
        self.assertIn("exit status 23 but gtest reports pass", v.reason)
        self.assertIn("LeakSanitizer", v.reason)

    def test_nonzero_exit_with_skip_is_error(self):
        # gtest 1.12: a failure in SetUpTestSuite gives SKIPPED + exit 1.
        v = self.classify("S.Skip", code=1)
        self.assertEqual(v.status, "error")
        self.assertIn("skipped", v.reason)

    def test_missing_from_json_is_error(self):
        v = self.classify("S.Nope")
        self.assertEqual(v.status, "error")
        self.assertIn("not found", v.reason)

    def test_no_json(self):
        v = gtest.classify("S.Pass", proc(0), None, "no gtest JSON written", "")
        self.assertEqual(v.status, "error")
        v = gtest.classify("S.Pass", proc(3), None, "no gtest JSON written", "boom\n")
        self.assertEqual(v.status, "crash")
        self.assertIn("exited with status 3", v.reason)
        self.assertIn("last output: boom", v.reason)

    def test_signal_and_timeout(self):
        v = gtest.classify("S.Pass", proc(-11), None, "x", "")
        self.assertEqual(v.status, "crash")
        self.assertIn("SIGSEGV", v.reason)
        v = gtest.classify("S.Pass", proc(-9, timed_out=True), None, "x", "", timeout_s=1.0)
        self.assertEqual(v.status, "timeout")
        self.assertIn("1s", v.reason)

    def test_reason_is_trimmed(self):
        doc = json.loads(json.dumps(self.doc))
        doc["testsuites"][0]["testsuite"][1]["failures"] = [{"failure": "x" * 5000, "type": ""}]
        v = gtest.classify("S.Fail", proc(1), doc, None, "")
        self.assertLessEqual(len(v.reason), gtest.REASON_MAX)
        self.assertTrue(v.reason.endswith("[truncated]"))

    def test_parameterized_names(self):
        doc = {"testsuites": [{"name": "Inst/Param", "testsuite": [
            {"name": "Works/3", "classname": "Inst/Param", "status": "RUN",
             "result": "COMPLETED"}]}]}
        self.assertIsNotNone(gtest.find_case(doc, "Inst/Param.Works/3"))


if __name__ == "__main__":
    unittest.main()
