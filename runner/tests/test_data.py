"""`perftest data` forwards to build/bin/perftest_data (and fails clearly without it)."""

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


class DataForwarding(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = self.tmp.name
        os.makedirs(os.path.join(self.build, "bin"))

    def tearDown(self):
        self.tmp.cleanup()

    def _fake(self, exit_code):
        path = os.path.join(self.build, "bin", "perftest_data")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho \"$0 $*\"\nexit %d\n" % exit_code)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_dump_forwards_arguments_and_exit_code(self):
        path = self._fake(2)
        r = _run(["data", "dump", "p.data", "--no-header"], self.build)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout.strip(), "%s dump p.data --no-header" % path)

    def test_arguments_after_double_dash_and_help_go_to_the_tool(self):
        path = self._fake(0)
        r = _run(["data", "--", "rewrite", "a", "b", "--pipe"], self.build)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "%s rewrite a b --pipe" % path)
        r = _run(["data", "--help"], self.build)
        self.assertEqual(r.stdout.strip(), "%s --help" % path)

    def test_missing_tool_is_a_usage_error_naming_it(self):
        r = _run(["data", "dump", "x"], self.build)
        self.assertEqual(r.returncode, 2)
        self.assertIn("perftest_data", r.stderr)
        self.assertIn("not built", r.stderr)

    def test_listed_in_help(self):
        r = _run(["--help"], self.build)
        self.assertIn("data", r.stdout)
        self.assertIn("perf.data files", r.stdout)


if __name__ == "__main__":
    unittest.main()
