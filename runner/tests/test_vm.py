"""--vm: kernel specs, the QEMU command line, the guest's console protocol,
and whole runs against a fake QEMU (tests/fakes/qemu_fake.py) that plays the
guest: a case that passes, fails, panics the guest kernel, hangs it, or hits
the guest's own timeout; the others still run and no QEMU is left behind."""

import json
import lzma
import os
import shutil
import struct
import tempfile
import unittest

from perftest import vmguest, vmimage, vmkernel, vmqemu
from perftest.errors import UsageError

from .support import HERE, LAUNCHER, FakeTree, install_script, process_gone  # noqa: F401


class KernelSpecTest(unittest.TestCase):
    NAMES = [
        "linux-image-6.1.0-9-amd64-unsigned", "linux-image-6.1.0-57-amd64-unsigned",
        "linux-image-6.1.0-57-cloud-amd64-unsigned", "linux-image-6.1.0-57-rt-amd64-unsigned",
        "linux-image-6.1.0-57-amd64-dbg", "linux-image-6.12.117+deb12-amd64-unsigned",
        "linux-image-6.12.113+deb12-amd64-unsigned", "linux-image-6.12-amd64-signed-template",
    ]

    def test_newest_plain_flavour(self):
        self.assertEqual(vmkernel.pick_package(self.NAMES, "6.1", None, "amd64"),
                         "linux-image-6.1.0-57-amd64-unsigned")

    def test_6_1_does_not_match_6_12(self):
        self.assertEqual(vmkernel.pick_package(self.NAMES, "6.12", None, "amd64"),
                         "linux-image-6.12.117+deb12-amd64-unsigned")
        self.assertNotIn("6.12", vmkernel.pick_package(self.NAMES, "6.1", None, "amd64"))

    def test_flavour(self):
        self.assertEqual(vmkernel.pick_package(self.NAMES, "6.1", "cloud", "amd64"),
                         "linux-image-6.1.0-57-cloud-amd64-unsigned")
        self.assertIsNone(vmkernel.pick_package(self.NAMES, "6.1", "cloud", "arm64"))

    def test_riscv_has_no_unsigned_suffix(self):
        self.assertEqual(vmkernel.pick_package(["linux-image-6.12.48+deb13-riscv64"], "6.12",
                                               None, "riscv64"),
                         "linux-image-6.12.48+deb13-riscv64")

    def test_parse_spec(self):
        self.assertEqual(vmkernel.parse_spec("debian:6.12-rt"), ("debian", "6.12", "rt"))
        with self.assertRaises(UsageError):
            vmkernel.parse_spec("debian:six")
        with self.assertRaises(UsageError):
            vmkernel.parse_spec("/no/such/bzImage")

    def test_arch_names(self):
        self.assertEqual(vmkernel.normalize_arch("aarch64"), "arm64")
        with self.assertRaises(UsageError):
            vmkernel.normalize_arch("sparc")


class GuestProfileTest(unittest.TestCase):
    """fidelity --vm without --profile: the profile of the guest's arch and
    kernel release, from fixtures/profiles or its guests/ subdirectory."""

    def pick(self, arch, release):
        import argparse
        from unittest import mock
        from perftest import cli
        args = argparse.Namespace(vm="debian:6.1", arch=arch, vm_modules=None)
        with mock.patch.object(vmkernel, "resolve", return_value={"release": release}):
            return cli.guest_profile(args)

    def test_arm64_61_guest_gets_its_guest_layout(self):
        p = self.pick("arm64", "6.1.0-57-arm64")
        self.assertIsNotNone(p)
        self.assertEqual(os.path.relpath(p, os.path.dirname(os.path.dirname(p))),
                         os.path.join("guests", "arm64-pmuv3-qemu-6.1.json"))

    def test_no_profile_of_that_release_gives_none(self):
        self.assertIsNone(self.pick("arm64", "5.10.0-30-arm64"))
        self.assertIsNone(self.pick("arm64", None))


class BzImageTest(unittest.TestCase):
    def test_payload_found_from_the_setup_header(self):
        elf = b"\x7fELF" + b"\x02\x01" + b"\0" * 200
        payload = lzma.compress(elf, format=lzma.FORMAT_XZ)
        setup_sects = 3
        data = bytearray((setup_sects + 1) * 512 + 16 + len(payload) + 8)
        data[0x1F1] = setup_sects
        data[0x202:0x206] = b"HdrS"
        struct.pack_into("<II", data, 0x248, 16, len(payload))
        start = (setup_sects + 1) * 512 + 16
        data[start:start + len(payload)] = payload
        got, kind = vmkernel.bzimage_payload(bytes(data))
        self.assertEqual((got, kind), (payload, "xz"))
        d = tempfile.mkdtemp()
        try:
            image = os.path.join(d, "vmlinuz")
            with open(image, "wb") as f:
                f.write(data)
            out = vmkernel.pvh_vmlinux(image, os.path.join(d, "vmlinux"))
            with open(out, "rb") as f:
                self.assertEqual(f.read(), elf)
        finally:
            shutil.rmtree(d)

    def test_not_a_bzimage(self):
        with self.assertRaises(ValueError):
            vmkernel.bzimage_payload(b"\0" * 4096)


class InitramfsTest(unittest.TestCase):
    def test_newc_archive_round_trips(self):
        d = tempfile.mkdtemp()
        try:
            path = os.path.join(d, "x.cpio")
            vmimage.write_cpio(path, [("bin", 0o040755, b""), ("init", 0o100755, b"#!x\n")])
            with open(path, "rb") as f:
                data = f.read()
            self.assertTrue(data.startswith(b"070701"))
            self.assertIn(b"init\0", data)
            self.assertIn(b"TRAILER!!!", data)
            self.assertEqual(len(data) % 4, 0)
        finally:
            shutil.rmtree(d)

    def test_modinfo_depends(self):
        # A minimal ELF64 with a .modinfo section, as the kernel's modpost writes it.
        modinfo = b"license=GPL\0depends=virtio,virtio_ring\0name=virtio_pci\0"
        shstr = b"\0.modinfo\0.shstrtab\0"
        body_off = 64
        sh_off = body_off + len(modinfo) + len(shstr)
        elf = bytearray(b"\x7fELF\x02\x01\x01" + b"\0" * 57)
        struct.pack_into("<Q", elf, 0x28, sh_off)
        struct.pack_into("<HHH", elf, 0x3A, 64, 3, 2)
        elf += modinfo + shstr
        sections = [(0, 0, 0), (1, body_off, len(modinfo)),
                    (10, body_off + len(modinfo), len(shstr))]
        for name, off, size in sections:
            elf += struct.pack("<IIQQQQIIQQ", name, 1, 0, 0, off, size, 0, 0, 1, 0)
        info = vmimage.modinfo(bytes(elf))
        self.assertEqual(info["depends"], ["virtio,virtio_ring"])
        self.assertEqual(info["name"], ["virtio_pci"])


class QemuCommandTest(unittest.TestCase):
    def test_arm64_defaults(self):
        argv = vmqemu.build_command("qemu-system-aarch64", "arm64", "tcg", "/k", "/i", "/c",
                                    [("job", "/j", False), ("bin", "/b", True)])
        s = " ".join(argv)
        for want in ("-M virt", "-cpu max,pauth-impdef=on", "-smp 1", "-icount shift=0",
                     "-accel tcg", "-no-reboot", "console=ttyAMA0", "panic=-1",
                     "-serial file:/c", "mount_tag=job", "mount_tag=bin"):
            self.assertIn(want, s)
        self.assertIn("readonly=on", [a for a in argv if "path=/b" in a][0])
        self.assertNotIn("readonly=on", [a for a in argv if "path=/j" in a][0])

    def test_x86_kvm_uses_the_host_cpu_and_no_icount(self):
        argv = vmqemu.build_command("q", "x86_64", "kvm", "/k", "/i", "/c", [])
        self.assertIn("host", argv[argv.index("-cpu") + 1])
        self.assertNotIn("-icount", argv)
        self.assertIn("console=ttyS0", argv[argv.index("-append") + 1])

    def test_x86_tcg_counts_instructions_unless_told_not_to(self):
        argv = vmqemu.build_command("q", "x86_64", "tcg", "/k", "/i", "/c", [])
        self.assertEqual(argv[argv.index("-icount") + 1], "shift=0")
        off = vmqemu.build_command("q", "x86_64", "tcg", "/k", "/i", "/c", [],
                                   settings=vmqemu.machine_settings("x86_64", "tcg", "off"))
        self.assertNotIn("-icount", off)

    def test_accel_across_arches_is_tcg(self):
        accel, why = vmqemu.choose_accel("arm64", "auto", None, "/nonexistent", "k")
        self.assertEqual(accel, "tcg")
        self.assertIn("guest is arm64", why)

    def test_accel_probe_verdict_is_cached(self):
        if os.uname().machine != "x86_64" or not vmqemu.kvm_usable()[0]:
            self.skipTest("needs an x86_64 host where /dev/kvm opens")
        d = tempfile.mkdtemp()
        calls = []
        try:
            cache = os.path.join(d, "accel.json")

            def probe():
                calls.append(1)
                return False, "emulation failure"
            for _ in range(2):
                accel, why = vmqemu.choose_accel("x86_64", "auto", probe, cache, "key")
                self.assertEqual(accel, "tcg")
                self.assertIn("emulation failure", why)
            self.assertEqual(len(calls), 1)
        finally:
            shutil.rmtree(d)


class ConsoleProtocolTest(unittest.TestCase):
    def test_markers(self):
        self.assertEqual(vmguest.parse_marker("@@perftest begin 7 3.21"), ("begin", 7))
        self.assertEqual(vmguest.parse_marker("@@perftest end 7 137 9.9"), ("end", 7, 137))
        self.assertEqual(vmguest.parse_marker("junk@@perftest done 1"), ("done",))
        self.assertIsNone(vmguest.parse_marker("[ 1.0] Kernel panic"))

    def test_rc(self):
        p = vmguest.proc_from_rc("139 1.0 1.5", 60)
        self.assertEqual(p.signal, 11)
        self.assertFalse(p.timed_out)
        p = vmguest.proc_from_rc("137 1.0 61.0", 60)
        self.assertTrue(p.timed_out)
        p = vmguest.proc_from_rc("137 1.0 2.0", 60)      # SIGKILL, not the timeout
        self.assertFalse(p.timed_out)
        self.assertEqual(p.signal, 9)
        self.assertEqual(vmguest.proc_from_rc("1 0 0.25", 60).returncode, 1)


class FakeQemuRunTest(unittest.TestCase):
    """./perftest run --vm against qemu_fake.py on PATH."""

    CASES = "Vm.Pass,Vm.Fail,Vm.Panic,Vm.Pass2,Vm.Hang,Vm.GuestTimeout,Vm.Pass3,Vm.Warn"

    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree(suites=("vm",), benches=())
        root = cls.tree.root
        cls.qbin = os.path.join(root, "qbin")
        cls.pids = os.path.join(root, "pids")
        os.makedirs(cls.qbin)
        os.makedirs(cls.pids)
        for arch in ("x86_64", "aarch64"):
            install_script(os.path.join(HERE, "fakes", "qemu_fake.py"),
                           os.path.join(cls.qbin, "qemu-system-" + arch))
        cls.image = os.path.join(root, "bzImage")
        with open(cls.image, "wb") as f:
            f.write(b"not really a kernel")
        cls.busybox = os.path.join(root, "busybox")
        with open(cls.busybox, "wb") as f:
            f.write(b"not really busybox")

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    def run_vm(self, *args, cases=CASES):
        env = {"PATH": self.qbin + os.pathsep + os.environ.get("PATH", ""),
               "PERFTEST_KERNEL_CACHE": os.path.join(self.tree.root, "cache"),
               "PERFTEST_VM_BUSYBOX": self.busybox, "PERFTEST_VM_CASE_GRACE_S": "1",
               "FAKE_QEMU_CASES": cases, "FAKE_QEMU_PIDS": self.pids}
        out = tempfile.mkdtemp(dir=self.tree.root)
        proc = self.tree.perftest("run", "--vm=%s" % self.image, "--vm-accel=tcg",
                                  "--vm-bin=%s" % self.tree.bin, "--output=%s" % out, *args,
                                  timeout=120, **env)
        with open(os.path.join(out, "report.json")) as f:
            return proc, json.load(f), out

    def test_every_outcome_and_the_guest_restarts(self):
        proc, doc, out = self.run_vm("--timeout=2s")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        got = {c["name"]: c["status"] for c in doc["cases"]}
        self.assertEqual(got, {"Vm.Pass": "pass", "Vm.Fail": "fail", "Vm.Panic": "crash",
                               "Vm.Pass2": "pass", "Vm.Hang": "timeout",
                               "Vm.GuestTimeout": "timeout", "Vm.Pass3": "pass",
                               "Vm.Warn": "pass"})
        cases = {c["name"]: c for c in doc["cases"]}
        self.assertIn("Kernel panic", cases["Vm.Panic"]["console"])
        self.assertIn("Kernel panic", cases["Vm.Panic"]["reason"])
        self.assertIn("fake kernel line during Vm.Pass2", cases["Vm.Pass2"]["console"])
        self.assertNotIn("Vm.Pass2", cases["Vm.Pass"]["console"])
        self.assertIn("soft lockup", cases["Vm.Hang"]["console"])
        with open(os.path.join(out, cases["Vm.Panic"]["log"])) as f:
            self.assertIn("guest console during this case", f.read())
        # Kernel health per case, from the guest's taint and console.
        self.assertEqual(cases["Vm.Pass"]["health"]["state"], "healthy")
        self.assertEqual(cases["Vm.Warn"]["health"]["state"], "tainted")
        self.assertEqual(cases["Vm.Warn"]["health"]["new_taint"], "W")
        self.assertEqual(cases["Vm.Panic"]["health"]["state"], "warned")
        self.assertFalse(doc["health"]["healthy"])
        self.assertEqual(doc["health"]["cases_tainted"], 1)
        vm = doc["host"]["vm"]
        self.assertEqual(vm["restarts"], 2)          # after the panic and after the hang
        self.assertEqual(vm["boots"], 3)             # the discovery guest runs the first share
        self.assertEqual(vm["accel"], "tcg")
        self.assertEqual(vm["qemu_version"], "7.2.99")
        self.assertEqual(doc["host"]["kernel_release"], "6.1.0-fake")
        self.assertEqual(doc["run"]["vm"]["arch"], "x86_64")
        for pid in os.listdir(self.pids):            # no QEMU left behind
            self.assertTrue(process_gone(int(pid)), "fake QEMU %s still runs" % pid)

    def test_jobs_split_cases_over_guests(self):
        proc, doc, _ = self.run_vm("--jobs=2", cases="Vm.Pass,Vm.Pass2,Vm.Pass3,Vm.Fail")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertEqual([c["status"] for c in doc["cases"]], ["pass", "pass", "pass", "fail"])
        self.assertEqual(doc["run"]["jobs"], 2)

    def test_arm64_guest_describes_its_pmu(self):
        proc, doc, _ = self.run_vm("--arch=arm64", "--vm-paranoid=-1", cases="Vm.Pass")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(doc["host"]["arch"], "aarch64")
        self.assertIn("armv8_pmuv3", [p["name"] for p in doc["host"]["pmus"]])
        self.assertEqual(doc["host"]["perf_event_paranoid"], -1)
        self.assertEqual(doc["host"]["vm"]["icount"], "shift=0")

    def test_ctrl_c_kills_the_guests_and_writes_a_partial_report(self):
        import signal
        import subprocess
        import time
        pids = tempfile.mkdtemp(dir=self.tree.root)
        out = tempfile.mkdtemp(dir=self.tree.root)
        env = self.tree.env(**{
            "PATH": self.qbin + os.pathsep + os.environ.get("PATH", ""),
            "PERFTEST_KERNEL_CACHE": os.path.join(self.tree.root, "cache"),
            "PERFTEST_VM_BUSYBOX": self.busybox, "FAKE_QEMU_PIDS": pids,
            "FAKE_QEMU_CASES": "Vm.Pass,Vm.Hang,Vm.Pass2"})
        proc = subprocess.Popen([LAUNCHER, "run", "--vm=%s" % self.image, "--vm-accel=tcg",
                                 "--vm-bin=%s" % self.tree.bin, "--output=%s" % out,
                                 "--timeout=60s"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not os.listdir(pids) and time.monotonic() < deadline:   # the guest runs
            time.sleep(0.05)
        time.sleep(1.5)                 # Vm.Pass is done, Vm.Hang hangs
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 130, err)
        with open(os.path.join(out, "report.json")) as f:
            doc = json.load(f)
        self.assertTrue(doc["run"]["interrupted"])
        got = {c["name"]: c["status"] for c in doc["cases"]}
        self.assertEqual(got["Vm.Pass"], "pass")
        self.assertEqual(got["Vm.Pass2"], "not_run")
        for pid in os.listdir(pids):
            self.assertTrue(process_gone(int(pid)), "fake QEMU %s still runs" % pid)

    def vm_env(self):
        return {"PATH": self.qbin + os.pathsep + os.environ.get("PATH", ""),
                "PERFTEST_KERNEL_CACHE": os.path.join(self.tree.root, "cache"),
                "PERFTEST_VM_BUSYBOX": self.busybox, "FAKE_QEMU_PIDS": self.pids}

    def test_doctor_describes_the_guest(self):
        p = self.tree.perftest("doctor", "--vm=%s" % self.image, "--arch=arm64",
                               "--vm-bin=%s" % self.tree.bin, **self.vm_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("guest kernel: 6.1.0-fake (aarch64)", p.stdout)
        self.assertIn("hardware PMU: armv8_pmuv3", p.stdout)
        self.assertIn("-cpu max,pauth-impdef=on -smp 1 -icount shift=0", p.stdout)
        p = self.tree.perftest("doctor", "--json", "--vm=%s" % self.image, "--vm-accel=tcg",
                               "--vm-bin=%s" % self.tree.bin, **self.vm_env())
        doc = json.loads(p.stdout)
        self.assertEqual(doc["vm"]["accel"], "tcg")
        self.assertTrue(doc["probe"]["perf_event_open"])

    def test_fidelity_runs_in_the_guest_with_its_files(self):
        prof = os.path.join(self.tree.root, "prof.json")
        with open(prof, "w") as f:
            f.write("{}")
        p = self.tree.perftest("fidelity", "--vm=%s" % self.image, "--vm-accel=tcg",
                               "--vm-bin=%s" % self.tree.bin, "--profile=%s" % prof,
                               "--count=5", **self.vm_env())
        self.assertEqual(p.returncode, 3, p.stderr)          # the tool's exit status
        self.assertIn("ran: /tmp/pt/bin/perftest_fidelity --profile=/tmp/pt/job/in/0-prof.json "
                      "--count=5", p.stdout)
        self.assertIn("inputs: 0-prof.json", p.stdout)
        self.assertIn("(in the guest: 6.1.0-fake x86_64, QEMU tcg max)", p.stdout)

    def test_bad_input_is_exit_2(self):
        p = self.tree.perftest("run", "--vm=debian:six")
        self.assertEqual(p.returncode, 2)
        self.assertIn("debian:VERSION", p.stderr)
        p = self.tree.perftest("run", "--vm=%s" % self.image, "--backend=mock")
        self.assertEqual(p.returncode, 2)
        p = self.tree.perftest("run", "--vm=%s" % self.image, "--arch=sparc")
        self.assertEqual(p.returncode, 2)
        p = self.tree.perftest("run", "--vm=%s" % self.image, "--vm-bin=/nonexistent")
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent", p.stderr)


if __name__ == "__main__":
    unittest.main()
