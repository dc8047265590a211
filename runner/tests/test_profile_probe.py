"""perftest doctor --write-profile: the runner's side. The probe itself is C++
(tools/write_profile, tested by tools.ProfileProbe.* on MockBackend and end to
end by the doctor.write_profile.ringbuffer ctest); here a fake
perftest_write_profile stands in, and the command line, the summary it prints
and the errors are checked."""

import json
import os
import stat
import sys
import unittest

from .support import FakeTree

FAKE_TOOL = r'''#!%s -S
import json, os, sys
mode = os.environ.get("FAKE_WRITE_PROFILE", "ok")
if mode == "denied":
    sys.stderr.write("perftest doctor --write-profile: probe_profile(\"host\", backend=kernel): perf_event_open "
                     "does not work here (EPERM): nothing to probe\n")
    sys.exit(3)
if mode == "silent":
    sys.exit(1)
with open(sys.argv[1], "w") as f:
    json.dump({"name": os.path.basename(sys.argv[1])[:-5], "arch": "x86_64", "description": "fake",
               "kernel_release": "6.18.0", "pmus": [{"name": "software", "type": 1},
                                                    {"name": "tracepoint", "type": 2}]}, f)
'''


class WriteProfileTest(unittest.TestCase):
    def setUp(self):
        self.tree = FakeTree()
        self.addCleanup(self.tree.cleanup)
        self.out = os.path.join(self.tree.root, "host.json")

    def install_tool(self):
        path = os.path.join(self.tree.bin, "perftest_write_profile")
        with open(path, "w") as f:
            f.write(FAKE_TOOL % sys.executable)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    def test_writes_through_the_tool_and_summarizes(self):
        self.install_tool()
        r = self.tree.perftest("doctor", "--write-profile=" + self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("wrote profile 'host' to %s (2 PMUs: software, tracepoint)" % self.out, r.stdout)
        self.assertIn("--backend=mock --profile=%s" % self.out, r.stdout)
        with open(self.out) as f:
            self.assertEqual(json.load(f)["kernel_release"], "6.18.0")

    def test_the_tools_error_is_the_message(self):
        self.install_tool()
        r = self.tree.perftest("doctor", "--write-profile=" + self.out, FAKE_WRITE_PROFILE="denied")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("perf_event_open does not work here (EPERM)", r.stderr)
        r = self.tree.perftest("doctor", "--write-profile=" + self.out, FAKE_WRITE_PROFILE="silent")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("perftest_write_profile exited with status 1", r.stderr)

    def test_unbuilt_tool_is_a_usage_error(self):
        r = self.tree.perftest("doctor", "--write-profile=" + self.out)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("perftest_write_profile, which is not built", r.stderr)


if __name__ == "__main__":
    unittest.main()
