"""`perftest exec` replaces the runner with build/bin/perftest_exec (execv):
arguments and exit code pass through unchanged, and it fails clearly
without the tool or without a program."""

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


class ExecForwarding(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = self.tmp.name
        os.makedirs(os.path.join(self.build, "bin"))

    def tearDown(self):
        self.tmp.cleanup()

    def _fake(self, exit_code):
        path = os.path.join(self.build, "bin", "perftest_exec")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho \"$0 $*\"\nexit %d\n" % exit_code)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_forwards_arguments_and_the_programs_exit_code(self):
        path = self._fake(7)
        r = _run(["exec", "--profile=arm64-pmuv3", "--inject=read:EINTR", "--", "perf", "stat", "true"], self.build)
        self.assertEqual(r.returncode, 7)
        self.assertEqual(r.stdout.strip(), "%s --profile=arm64-pmuv3 --inject=read:EINTR -- perf stat true" % path)

    def test_no_program_is_a_usage_error(self):
        self._fake(0)
        r = _run(["exec", "--profile=x86_64-intel"], self.build)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no program given", r.stderr)

    def test_missing_tool_is_a_usage_error_naming_it(self):
        r = _run(["exec", "--", "true"], self.build)
        self.assertEqual(r.returncode, 2)
        self.assertIn("perftest_exec", r.stderr)
        self.assertIn("not built", r.stderr)


if __name__ == "__main__":
    unittest.main()
