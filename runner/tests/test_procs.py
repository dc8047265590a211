"""Process-group isolation: timeouts and leaked children."""

import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from perftest import procs

from .support import process_gone, read_pid


class RunIsolatedTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.pidfile = os.path.join(self.dir, "child.pid")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def sh(self, script, timeout_s):
        return procs.run_isolated(["/bin/sh", "-c", script], timeout_s=timeout_s,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def test_timeout_kills_group(self):
        r = self.sh("sleep 100 & echo $! > %s; wait" % self.pidfile, 0.3)
        self.assertTrue(r.timed_out)
        self.assertEqual(r.signal, 9)
        self.assertGreaterEqual(r.duration_s, 0.3)
        self.assertTrue(process_gone(read_pid(self.pidfile)))

    def test_normal_exit_kills_leftovers(self):
        r = self.sh("sleep 100 & echo $! > %s; exit 7" % self.pidfile, 5)
        self.assertFalse(r.timed_out)
        self.assertEqual(r.returncode, 7)
        self.assertIsNone(r.signal)
        self.assertTrue(process_gone(read_pid(self.pidfile)))

    def test_signal(self):
        r = self.sh("kill -SEGV $$", 5)
        self.assertEqual(r.signal, 11)
        self.assertEqual(procs.signal_name(11), "SIGSEGV")
        self.assertTrue(procs.signal_description(11).startswith("SIGSEGV ("))

    def test_polling_fallback_without_pidfd(self):
        with mock.patch.object(procs, "_wait_exited_pidfd", side_effect=OSError(38, "ENOSYS")):
            r = self.sh("sleep 100 & echo $! > %s; wait" % self.pidfile, 0.2)
            self.assertTrue(r.timed_out)
            r = self.sh("exit 3", 5)
            self.assertEqual(r.returncode, 3)
        self.assertTrue(process_gone(read_pid(self.pidfile)))

    def test_cannot_execute(self):
        with self.assertRaises(OSError):
            procs.run_isolated([os.path.join(self.dir, "missing")], timeout_s=1)


if __name__ == "__main__":
    unittest.main()
