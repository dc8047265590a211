"""Container fallback, proven on the real suite: perf_event_open denied by a
seccomp filter (tools/seccomp_deny: EPERM, as Docker's default profile).

  - ``--backend=auto`` falls back to the mock, the report says why (EPERM,
    seccomp), and the suite passes there;
  - ``--backend=kernel`` reports every case as a skip of class ``sandbox``;
  - ``perftest doctor`` sees the filter and says auto would choose the mock.

Uses the build tree in $PERFTEST_BUILD_DIR (default <repo>/build): its
bin/seccomp_deny and bin/suite_ringbuffer. Skipped, saying what is missing,
when either is not built. ctest runs it as runner.container_fallback
(tools/CMakeLists.txt) with PERFTEST_BUILD_DIR set to the build tree.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from perftest import report

from .support import LAUNCHER, REPO

BUILD = os.path.abspath(os.environ.get("PERFTEST_BUILD_DIR") or os.path.join(REPO, "build"))
DENY = os.path.join(BUILD, "bin", "seccomp_deny")
SUITE = os.path.join(BUILD, "bin", "suite_ringbuffer")


def _why_not():
    if not os.access(DENY, os.X_OK):
        return ("%s not built (needs libseccomp-dev; cmake --build %s --target seccomp_deny)"
                % (DENY, BUILD))
    if not os.access(SUITE, os.X_OK):
        return "%s not built (cmake --build %s --target suite_ringbuffer)" % (SUITE, BUILD)
    p = subprocess.run([DENY, "--", "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=30)
    if p.returncode != 0:
        return "seccomp_deny cannot install a filter here: %s" % p.stderr.strip()
    return None


WHY_NOT = _why_not()


@unittest.skipIf(WHY_NOT, WHY_NOT or "")
class ContainerFallbackTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="perftest-seccomp-")
        cls.env = dict(os.environ, PERFTEST_BUILD_DIR=BUILD)
        cls.env.pop("PERFTEST_PROFILES_DIR", None)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def denied(self, *args):
        return subprocess.run([DENY, "--", LAUNCHER] + list(args), env=self.env, cwd=self.dir,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=240)

    def load(self, out):
        path = os.path.join(out, "report.json")
        self.assertTrue(os.path.isfile(path), "no report at %s" % path)
        return report.load_report(path)

    def test_auto_falls_back_to_mock_and_passes(self):
        out = os.path.join(self.dir, "auto")
        p = self.denied("run", "--suite=ringbuffer", "--output=%s" % out)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        doc = self.load(out)
        run = doc["run"]
        self.assertEqual(run["backend"], "mock")
        reason = run["backend_reason"]
        self.assertTrue(reason.startswith("auto: perf_event_open failed with EPERM"), reason)
        self.assertIn("seccomp", reason)
        self.assertEqual(run["probe"]["errno_name"], "EPERM")
        self.assertEqual(run["probe"].get("seccomp_mode"), 2)
        self.assertEqual(doc["host"]["seccomp"], 2)
        self.assertEqual(run["profile"], "software-only")
        s = doc["summary"]
        self.assertGreater(s["total"], 0)
        self.assertEqual(s["pass"], s["total"], [c for c in doc["cases"] if c["status"] != "pass"])
        self.assertIn("backend: mock (auto: perf_event_open failed with EPERM", p.stdout)

    def test_kernel_backend_skips_every_case_as_sandbox(self):
        out = os.path.join(self.dir, "kernel")
        p = self.denied("run", "--suite=ringbuffer", "--backend=kernel", "--output=%s" % out)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertIn("warning: --backend=kernel but perf_event_open failed with EPERM", p.stderr)
        doc = self.load(out)
        self.assertEqual(doc["run"]["backend"], "kernel")
        self.assertGreater(len(doc["cases"]), 0)
        for c in doc["cases"]:
            self.assertEqual((c["status"], c["skip_class"]), ("skip", "sandbox"), c)
            self.assertIn("seccomp", c["reason"])
        with open(os.path.join(out, "report.ktap")) as f:
            ktap = f.read()
        self.assertIn("ok 1 ringbuffer # SKIP all %d cases skipped" % len(doc["cases"]), ktap)
        self.assertIn("# SKIP [sandbox] perf_event_open returns EPERM under a seccomp filter", ktap)

    def test_doctor_sees_the_filter(self):
        p = self.denied("doctor", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        facts = json.loads(p.stdout)
        self.assertEqual(facts["seccomp"]["mode"], 2)
        self.assertEqual(facts["auto"]["backend"], "mock")
        self.assertFalse(facts["probe"]["perf_event_open"])
        p = self.denied("doctor")
        self.assertIn("perf_event_open returns EPERM: the filter denies it", p.stdout)


if __name__ == "__main__":
    unittest.main()
