"""`perftest pt`, `perftest fidelity` and `perftest data` forward to their C++
tools (build/bin/perftest_pt, perftest_fidelity, perftest_data) and fail
clearly without them."""

import unittest

from .support import ForwardingTest


class ToolForwarding(ForwardingTest):
    def test_pt_forwards_arguments_and_exit_code(self):
        path = self.fake_tool("perftest_pt", 4)
        r = self.perftest_cmd(["pt", "dump", "trace.bin", "--format=json"])
        self.assertEqual(r.returncode, 4)
        self.assertEqual(r.stdout.strip(), "%s dump trace.bin --format=json" % path)

    def test_fidelity_forwards_arguments_after_double_dash(self):
        path = self.fake_tool("perftest_fidelity", 0)
        r = self.perftest_cmd(["fidelity", "--", "--count=5", "--seed=2"])
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "%s --count=5 --seed=2" % path)

    def test_help_goes_to_the_tool(self):
        path = self.fake_tool("perftest_pt", 0)
        r = self.perftest_cmd(["pt", "--help"])
        self.assertEqual(r.stdout.strip(), "%s --help" % path)

    def test_missing_tool_is_a_usage_error_naming_it(self):
        r = self.perftest_cmd(["pt", "dump", "x"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("perftest_pt", r.stderr)
        self.assertIn("not built", r.stderr)


    def test_data_forwards_arguments_and_exit_code(self):
        path = self.fake_tool("perftest_data", 2)
        r = self.perftest_cmd(["data", "dump", "p.data", "--no-header"])
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout.strip(), "%s dump p.data --no-header" % path)

    def test_data_arguments_after_double_dash_and_help_go_to_the_tool(self):
        path = self.fake_tool("perftest_data", 0)
        r = self.perftest_cmd(["data", "--", "rewrite", "a", "b", "--pipe"])
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.stdout.strip(), "%s rewrite a b --pipe" % path)
        r = self.perftest_cmd(["data", "--help"])
        self.assertEqual(r.stdout.strip(), "%s --help" % path)

    def test_data_missing_tool_is_a_usage_error_naming_it(self):
        r = self.perftest_cmd(["data", "dump", "x"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("perftest_data", r.stderr)
        self.assertIn("not built", r.stderr)

    def test_data_listed_in_help(self):
        r = self.perftest_cmd(["--help"])
        self.assertIn("data", r.stdout)
        self.assertIn("perf.data files", r.stdout)


if __name__ == "__main__":
    unittest.main()
