"""perftest doctor --write-profile: the probe on a fake /proc and /sys tree
with a fake perf_event_open, and the written file's shape (what
mocks/profile.cc accepts)."""

import errno
import json
import os
import shutil
import tempfile
import unittest

from perftest import profile_probe as pp

from .test_doctor import fake_root, write

# Keys mocks/profile.cc KnownKeys() accepts (it refuses any other).
PROFILE_KEYS = {"name", "arch", "description", "provenance", "ncpus", "page_size", "perf_event_paranoid",
                "max_sample_rate", "max_stack", "max_contexts_per_stack", "mlock_kb", "hz", "attr_size",
                "privileged", "memlock_rlimit_kb", "pmus", "tracepoints", "hw_breakpoint_slots", "cpu_mhz",
                "hardware", "clock_pmu_types", "attr_aux_action"}


class FakeKernel:
    """perf_event_open like the Linux 6.18 VM: software, tracepoint and
    breakpoint PMUs, 4 breakpoint slots, cpu_clock/task_clock types 6/7."""

    def __init__(self, slots=4, clock_types=(6, 7), aux_action=True, works=True):
        self.slots, self.clock_types, self.aux_action, self.works = slots, clock_types, aux_action, works
        self.open_bps = 0
        self.calls = []

    def _fd(self):
        return os.open(os.devnull, os.O_RDONLY)

    def __call__(self, attr, pid, cpu, group_fd, flags):
        typ = int.from_bytes(attr[0:4], "little")
        size = int.from_bytes(attr[4:8], "little")
        config = int.from_bytes(attr[8:16], "little")
        self.calls.append((typ, config, size))
        if not self.works:
            return -1, errno.EPERM
        if size < 64:
            attr[4:8] = (136).to_bytes(4, "little")
            return -1, errno.E2BIG
        if int.from_bytes(attr[116:120], "little") & 1:
            return -1, errno.EOPNOTSUPP if self.aux_action else errno.EINVAL
        if typ == 1:
            return self._fd(), 0
        if typ == 5:
            if self.open_bps >= self.slots:
                return -1, errno.ENOSPC
            self.open_bps += 1
            return self._fd(), 0
        if typ in self.clock_types and config == self.clock_types.index(typ):
            return self._fd(), 0
        return -1, errno.ENOENT


class ProfileProbeTest(unittest.TestCase):
    def setUp(self):
        self.root = fake_root(cap_eff="000001ffffffffff", paranoid="2",
                              pmus=(("software", 1, {}), ("tracepoint", 2, {}), ("breakpoint", 5, {}),
                                    ("msr", 10, {}), ("uprobe", 8, {})))
        write(self.root, "/sys/kernel/tracing/events/syscalls/sys_enter_getpid/id", "309\n")
        write(self.root, "/sys/kernel/tracing/events/sched/sched_switch/id", "372\n")
        write(self.root, "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id", "443\n")
        write(self.root, "/proc/sys/kernel/perf_event_max_stack", "127\n")
        write(self.root, "/boot/config-6.18.0", "CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
        self.out = tempfile.mkdtemp(prefix="perftest-probe-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.addCleanup(shutil.rmtree, self.out, True)

    def probe(self, kernel, **kw):
        path = os.path.join(self.out, "host.json")
        pp.write_profile(path, root=self.root, opener=kernel, arch="x86_64", ncpus=2, page_size=4096,
                         release="6.18.0", **kw)
        with open(path) as f:
            return json.load(f)

    def test_writes_a_profile_of_this_host(self):
        p = self.probe(FakeKernel())
        self.assertLessEqual(set(p), PROFILE_KEYS, "only keys the C++ loader knows")
        self.assertEqual(p["name"], "host")
        self.assertEqual(p["ncpus"], 2)
        self.assertEqual(p["perf_event_paranoid"], 2)
        self.assertEqual(p["attr_size"], 136)
        self.assertEqual(p["hz"], 250)
        self.assertTrue(p["privileged"])
        self.assertEqual([q["name"] for q in p["pmus"]], ["breakpoint", "msr", "software", "tracepoint", "uprobe"],
                         "msr and uprobe are modelled (mocks/free_running_pmu.h, uprobe_pmu.h), with their sysfs types")
        self.assertEqual([q["type"] for q in p["pmus"] if q["name"] == "msr"], [10])
        self.assertEqual([q["type"] for q in p["pmus"] if q["name"] == "uprobe"], [8])
        self.assertEqual(p["hw_breakpoint_slots"], 4)
        self.assertEqual(p["clock_pmu_types"], {"cpu_clock": 6, "task_clock": 7})
        self.assertTrue(p["attr_aux_action"])
        self.assertEqual(p["tracepoints"], {"syscalls:sys_enter_getpid": 309, "sched:sched_switch": 372},
                         "only tracepoints the model fires")
        self.assertNotIn("hardware", p)

    def test_probes_follow_the_kernel(self):
        p = self.probe(FakeKernel(slots=6, clock_types=(), aux_action=False))
        self.assertEqual(p["hw_breakpoint_slots"], 6)
        self.assertNotIn("clock_pmu_types", p)
        self.assertFalse(p["attr_aux_action"])

    def test_no_perf_event_open_is_an_error(self):
        with self.assertRaisesRegex(pp.ProfileProbeError, r"perf_event_open does not work here \(EPERM\)"):
            self.probe(FakeKernel(works=False))

    def test_modelled_tracepoints_match_the_fixture(self):
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "..", "fixtures", "profiles", "sw-only.json")) as f:
            fixture = json.load(f)
        self.assertEqual(set(pp.MODELLED_TRACEPOINTS), set(fixture["tracepoints"]))


if __name__ == "__main__":
    unittest.main()
