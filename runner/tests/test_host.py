"""Host facts: parsers on canned /proc text and fake sysfs/root trees."""

import os
import shutil
import tempfile
import unittest

from perftest import host

X86 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8
flags\t\t: fpu vme de pse hypervisor pt

processor\t: 1
vendor_id\t: GenuineIntel
"""

ARM64 = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1
"""


class CpuTest(unittest.TestCase):
    def test_x86(self):
        self.assertEqual(host.cpu_facts(X86), {
            "cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "cpu_vendor": "GenuineIntel",
            "cpu_family": 6, "cpu_model_number": 143, "cpu_stepping": 8})

    def test_arm64(self):
        self.assertEqual(host.cpu_facts(ARM64), {
            "cpu_model": "ARM part 0xd0c", "cpu_vendor": "ARM",
            "cpu_family": 8, "cpu_model_number": 0xD0C, "cpu_stepping": 1})

    def test_empty(self):
        self.assertEqual(set(host.cpu_facts(None).values()), {None})

    def test_capabilities(self):
        caps = host.report_capabilities("Name:\tx\nCapEff:\t000001fffeffffff\nSeccomp:\t2\n")
        self.assertEqual(caps, {"cap_eff": "0x000001fffeffffff", "cap_perfmon": True,
                                "cap_sys_admin": True, "cap_ipc_lock": True,
                                "seccomp": 2})
        caps = host.report_capabilities("CapEff:\t0000000000000000\n")
        self.assertFalse(caps["cap_perfmon"])
        self.assertIsNone(host.report_capabilities(None)["cap_eff"])
        self.assertEqual(host.capabilities("CapEff:\t0000000000080000\n")["CAP_SYS_PTRACE"], True,
                         "report_capabilities() and doctor decode through the one capabilities()")


class FakeRootTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.root)

    def put(self, path, text=""):
        full = os.path.join(self.root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def test_pmus(self):
        self.put("devices/cpu/type", "4\n")
        self.put("devices/cpu/caps/max_precise", "3\n")
        self.put("devices/cpu/caps/pmu_name", "sapphire_rapids\n")
        self.put("devices/software/type", "1\n")
        self.put("devices/broken/format/event", "config:0-7\n")
        self.assertEqual(host.pmus(os.path.join(self.root, "devices")), [
            {"name": "broken", "type": None, "caps": {}},
            {"name": "cpu", "type": 4, "caps": {"max_precise": "3",
                                                "pmu_name": "sapphire_rapids"}},
            {"name": "software", "type": 1, "caps": {}},
        ])

    def test_container_hints(self):
        self.assertEqual(host.detect_container(self.root), (False, None))
        self.put("/proc/1/cgroup", "0::/kubepods/besteffort/pod1234/abcd\n")
        self.assertEqual(host.detect_container(self.root), (True, "kubernetes"))
        self.put("/run/.containerenv")
        self.assertEqual(host.detect_container(self.root), (True, "podman"))
        self.put("/.dockerenv")
        self.assertEqual(host.detect_container(self.root), (True, "docker"))

    def test_virtualization(self):
        self.assertIsNone(host.detect_virtualization("flags\t: fpu\n", self.root))
        self.assertEqual(host.detect_virtualization(X86, self.root), "unknown")
        self.put("/sys/class/dmi/id/sys_vendor", "QEMU\n")
        self.put("/sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n")
        self.assertEqual(host.detect_virtualization("", self.root), "qemu")

    def test_collect_host_never_raises(self):
        h = host.collect_host()
        self.assertIsInstance(h["pmus"], list)
        self.assertIsInstance(h["container"], bool)


if __name__ == "__main__":
    unittest.main()
