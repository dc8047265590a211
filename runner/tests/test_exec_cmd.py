"""`perftest exec` replaces the runner with build/bin/perftest_exec (execv):
arguments and exit code pass through unchanged, and it fails clearly
without the tool or without a program."""

import unittest

from .support import ForwardingTest


class ExecForwarding(ForwardingTest):
    def _fake(self, exit_code):
        return self.fake_tool("perftest_exec", exit_code)

    def test_forwards_arguments_and_the_programs_exit_code(self):
        path = self._fake(7)
        r = self.perftest_cmd(["exec", "--profile=arm64-pmuv3", "--inject=read:EINTR", "--", "perf", "stat", "true"])
        self.assertEqual(r.returncode, 7)
        self.assertEqual(r.stdout.strip(), "%s --profile=arm64-pmuv3 --inject=read:EINTR -- perf stat true" % path)

    def test_no_program_is_a_usage_error(self):
        self._fake(0)
        r = self.perftest_cmd(["exec", "--profile=x86_64-intel"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("no program given", r.stderr)

    def test_missing_tool_is_a_usage_error_naming_it(self):
        r = self.perftest_cmd(["exec", "--", "true"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("perftest_exec", r.stderr)
        self.assertIn("not built", r.stderr)


if __name__ == "__main__":
    unittest.main()
