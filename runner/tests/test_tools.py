"""`perftest pt`, `perftest fidelity` and `perftest data` forward to their C++
tools (build/bin/perftest_pt, perftest_fidelity, perftest_data) and fail
clearly without them."""

import os
import stat
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PERFTEST = os.path.join(REPO, "perftest")


def _run(args, build):
    env = dict(os.environ, PERFTEST_BUILD_DIR=build)
    return subprocess.run([sys.executable, PERFTEST] + args, env=env, capture_output=True, text=True)


class ToolForwarding(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = self.tmp.name
        os.makedirs(os.path.join(self.build, "bin"))

    def tearDown(self):
        self.tmp.cleanup()

    def _fake(self, name, exit_code):
        path = os.path.join(self.build, "bin", name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho \"$0 $*\"\nexit %d\n" % exit_code)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_pt_forwards_arguments_and_exit_code(self):
        path = self._fake("perftest_pt", 4)
        r = _run(["pt", "dump", "trace.bin", "--format=json"], self.build)
        self.assertEqual(r.returncode, 4)
        self.assertEqual(r.stdout.strip(), "%s dump trace.bin --format=json" % path)

    def test_fidelity_forwards_arguments_after_double_dash(self):
        path = self._fake("perftest_fidelity", 0)
        r = _run(["fidelity", "--", "--count=5", "--seed=2"], self.build)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "%s --count=5 --seed=2" % path)

    def test_help_goes_to_the_tool(self):
        path = self._fake("perftest_pt", 0)
        r = _run(["pt", "--help"], self.build)
        self.assertEqual(r.stdout.strip(), "%s --help" % path)

    def test_missing_tool_is_a_usage_error_naming_it(self):
        r = _run(["pt", "dump", "x"], self.build)
        self.assertEqual(r.returncode, 2)
        self.assertIn("perftest_pt", r.stderr)
        self.assertIn("not built", r.stderr)


    def test_data_forwards_arguments_and_exit_code(self):
        path = self._fake("perftest_data", 2)
        r = _run(["data", "dump", "p.data", "--no-header"], self.build)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout.strip(), "%s dump p.data --no-header" % path)

    def test_data_arguments_after_double_dash_and_help_go_to_the_tool(self):
        path = self._fake("perftest_data", 0)
        r = _run(["data", "--", "rewrite", "a", "b", "--pipe"], self.build)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "%s rewrite a b --pipe" % path)
        r = _run(["data", "--help"], self.build)
        self.assertEqual(r.stdout.strip(), "%s --help" % path)

    def test_data_missing_tool_is_a_usage_error_naming_it(self):
        r = _run(["data", "dump", "x"], self.build)
        self.assertEqual(r.returncode, 2)
        self.assertIn("perftest_data", r.stderr)
        self.assertIn("not built", r.stderr)

    def test_data_listed_in_help(self):
        r = _run(["--help"], self.build)
        self.assertIn("data", r.stdout)
        self.assertIn("perf.data files", r.stdout)


if __name__ == "__main__":
    unittest.main()
