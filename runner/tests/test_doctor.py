"""perftest doctor: fact gathering on a fake /proc and /sys tree, the
paranoid explanation, and the command end to end against the fake suite."""

import json
import os
import shutil
import tempfile
import unittest

from perftest import doctor, host

from .support import FakeTree, run_main

STATUS = "Name:\tpython3\nCapEff:\t%s\nSeccomp:\t%d\nSeccomp_filters:\t%d\n"


def write(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def fake_root(cap_eff="0000000000000000", seccomp=2, filters=1, paranoid="3", pmus=None,
              tracefs=True):
    root = tempfile.mkdtemp(prefix="perftest-doctor-")
    write(root, "/proc/self/status", STATUS % (cap_eff, seccomp, filters))
    write(root, "/proc/sys/kernel/perf_event_paranoid", paranoid + "\n")
    write(root, "/proc/sys/kernel/perf_event_mlock_kb", "516\n")
    write(root, "/proc/sys/kernel/perf_event_max_sample_rate", "100000\n")
    write(root, "/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu hypervisor\n")
    write(root, "/proc/1/cgroup", "0::/\n")
    write(root, "/proc/self/mountinfo", "")
    write(root, "/proc/self/mounts", "sysfs /sys sysfs rw 0 0\n" +
          ("tracefs /sys/kernel/tracing tracefs rw 0 0\n" if tracefs else ""))
    for name, typ, caps in pmus if pmus is not None else (("software", 1, {}),):
        write(root, "/sys/bus/event_source/devices/%s/type" % name, "%d\n" % typ)
        for k, v in caps.items():
            write(root, "/sys/bus/event_source/devices/%s/caps/%s" % (name, k), v + "\n")
    return root


class ParanoidTest(unittest.TestCase):
    def test_levels_and_privilege(self):
        unpriv = {"CAP_PERFMON": False, "CAP_SYS_ADMIN": False}
        p = doctor.paranoid(2, unpriv)
        self.assertFalse(p["privileged"])
        self.assertIn("own (and its children's) user-space code only", p["effect"])
        self.assertEqual(len(p["restrictions"]), 3)        # levels 0, 1, 2
        self.assertIn("EACCES", doctor.paranoid(4, unpriv)["effect"])
        self.assertIn("(almost) every event", doctor.paranoid(-1, unpriv)["effect"])
        self.assertEqual(doctor.paranoid(-1, unpriv)["restrictions"], [])
        self.assertIn("not raw tracepoint", doctor.paranoid(0, unpriv)["effect"])
        p = doctor.paranoid(3, {"CAP_PERFMON": True, "CAP_SYS_ADMIN": False})
        self.assertTrue(p["privileged"])
        self.assertEqual(p["restrictions"], [])
        self.assertIn("it has CAP_PERFMON, which bypasses perf_event_paranoid", p["effect"])
        self.assertIn("not readable", doctor.paranoid(None, unpriv)["effect"])

    def test_capabilities_decoded(self):
        caps = host.capabilities(STATUS % ("0000004000204000", 0, 0))   # bits 38, 21, 14
        self.assertEqual((caps["CAP_PERFMON"], caps["CAP_SYS_ADMIN"], caps["CAP_IPC_LOCK"],
                          caps["CAP_SYS_PTRACE"]), (True, True, True, False))
        self.assertIsNone(host.capabilities("Name: x\n")["CAP_PERFMON"])


class GatherTest(unittest.TestCase):
    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def test_container_like_machine(self):
        self.root = fake_root(pmus=(("software", 1, {}), ("tracepoint", 2, {})), tracefs=False)
        f = doctor.gather(self.root, probe=False)
        self.assertEqual(f["seccomp"], {"mode": 2, "filters": 1})
        self.assertEqual(f["paranoid"]["value"], 3)
        self.assertFalse(f["hardware_pmu"]["present"])
        self.assertFalse(f["intel_pt"]["present"])
        self.assertFalse(f["tracefs"]["mounted"])
        self.assertEqual(f["virtualization"], "unknown")
        self.assertEqual(f["auto"]["backend"], None)
        text = doctor.render_text(f)
        for needle in ("perf_event_paranoid = 3", "mode 2: 1 seccomp filter installed",
                       "hardware PMU  no:", "intel_pt      no:", "tracefs       not mounted",
                       "->  3+", "kernel probe  not run: probe skipped",
                       "would choose: unknown"):
            self.assertIn(needle, text)

    def test_intel_machine(self):
        self.root = fake_root(cap_eff="0000004000000000", seccomp=0, filters=0, paranoid="2", pmus=(
            ("cpu", 4, {"max_precise": "3"}), ("software", 1, {}),
            ("intel_pt", 9, {"psb_cyc": "1", "ip_filtering": "1", "topa_multiple_entries": "1"})))
        f = doctor.gather(self.root, probe=False)
        self.assertEqual(f["hardware_pmu"], {"present": True, "pmus": ["cpu"]})
        self.assertEqual(f["intel_pt"]["type"], 9)
        self.assertEqual(f["tracefs"]["path"], "/sys/kernel/tracing")
        self.assertEqual({p["name"]: p["kind"] for p in f["pmus"]},
                         {"cpu": "PERF_TYPE_RAW", "software": "PERF_TYPE_SOFTWARE",
                          "intel_pt": "dynamic type"})
        text = doctor.render_text(f)
        self.assertIn("hardware PMU  yes: cpu", text)
        self.assertIn("intel_pt      yes: type 9, 3 caps (ip_filtering, psb_cyc, "
                      "topa_multiple_entries)", text)
        self.assertIn("it has CAP_PERFMON", text)
        self.assertIn("mode 0: no seccomp filter", text)

    def test_hybrid_and_arm_pmus(self):
        self.root = fake_root(pmus=(("cpu_core", 8, {}), ("cpu_atom", 10, {}),
                                    ("armv8_pmuv3_0", 11, {})))
        f = doctor.gather(self.root, probe=False)
        self.assertEqual(f["hardware_pmu"]["pmus"], ["armv8_pmuv3_0", "cpu_atom", "cpu_core"])


class DoctorCommandTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree()

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    def test_probe_eperm_means_mock(self):
        p = self.tree.perftest("doctor", FAKE_PROBE="eperm")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kernel probe  perf_event_open fails with EPERM: seccomp denies", p.stdout)
        self.assertIn("would choose: mock (perf_event_open failed with EPERM", p.stdout)
        self.assertIn("suite_fake --perftest_probe", p.stdout)

    def test_json(self):
        p = self.tree.perftest("doctor", "--json", "--suite=fake", FAKE_PROBE="ok")
        self.assertEqual(p.returncode, 0, p.stderr)
        facts = json.loads(p.stdout)
        self.assertEqual(facts["auto"]["backend"], "kernel")
        self.assertTrue(facts["probe"]["perf_event_open"])
        for key in ("capabilities", "paranoid", "mlock", "seccomp", "pmus", "hardware_pmu",
                    "intel_pt", "tracefs", "container", "virtualization"):
            self.assertIn(key, facts)

    def test_no_suites_built(self):
        empty = os.path.join(self.tree.root, "empty")
        os.makedirs(empty, exist_ok=True)
        p = self.tree.perftest("doctor", PERFTEST_BUILD_DIR=empty)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("kernel probe  not run: no suite binaries in %s" % os.path.join(empty, "bin"),
                      p.stdout)

    def test_broken_probe_is_harness_error(self):
        p = self.tree.perftest("doctor", FAKE_PROBE="garbage")
        self.assertEqual(p.returncode, 3)
        self.assertIn("did not print a JSON object", p.stderr)
        self.assertIn("auto ", p.stdout)          # the rest of the report is still printed

    def test_unknown_suite(self):
        code, _, err = run_main("doctor", "--suite=nope", env=self.tree.env())
        self.assertEqual(code, 2)
        self.assertIn("unknown suite 'nope'", err)


if __name__ == "__main__":
    unittest.main()
