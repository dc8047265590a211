"""Kernel health (perftest/health.py): the taint value and the kernel log
around each case. The pure functions on text; the host reader on files the
test controls (a fake suite that "taints the kernel" by writing to them);
the real /proc/sys/kernel/tainted and /dev/kmsg of this machine, read for
real; and every rendering showing a flagged case."""

import errno
import json
import os
import shutil
import tempfile
import unittest
import uuid
import xml.etree.ElementTree as ET

from perftest import health, report
from perftest.render import RENDERERS

from . import ktap_grammar
from .support import HERE, FakeTree, install_script, minimal_report

WARN_LINES = [
    "4,9001,123456789,-;------------[ cut here ]------------",
    "4,9002,123456790,-;WARNING: CPU: 1 PID: 4242 at kernel/events/core.c:1234 "
    "perf_event_fake+0x12/0x30",
    "4,9004,123456792,-;CPU: 1 PID: 4242 Comm: suite_health Not tainted 6.1.0 #1",
    " SUBSYSTEM=cpu",
]


class TaintTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(health.parse_tainted("0\n"), 0)
        self.assertEqual(health.parse_tainted("4608\n"), 4608)
        self.assertIsNone(health.parse_tainted("-1"))
        self.assertIsNone(health.parse_tainted(""))
        self.assertIsNone(health.parse_tainted("W"))

    def test_letters_follow_tainted_kernels_rst(self):
        self.assertEqual(health.taint_letters(0), "")
        self.assertEqual(health.taint_letters(None), "")
        self.assertEqual(health.taint_letters(1 << 9), "W")
        self.assertEqual(health.taint_letters(1 << 7 | 1 << 9 | 1 << 12), "DWO")
        self.assertEqual(health.taint_letters(1 << 0), "P")
        self.assertEqual(health.taint_letters(1 << 18), "N")
        self.assertEqual(health.taint_letters(1 << 25), "?")
        self.assertEqual(health.taint_names(1 << 9), ["W: kernel issued a warning"])
        self.assertEqual(len({letter for _, letter, _ in health.TAINT_FLAGS}), 20)


class ScanLogTest(unittest.TestCase):
    def test_kmsg_records_with_task(self):
        events = health.scan_log(WARN_LINES)
        self.assertEqual(events, [{
            "kind": "warning", "pid": 4242, "comm": "suite_health",
            "line": "WARNING: CPU: 1 PID: 4242 at kernel/events/core.c:1234 "
                    "perf_event_fake+0x12/0x30"}])

    def test_dmesg_and_console_lines(self):
        text = "\n".join([
            "[   12.345678] BUG: kernel NULL pointer dereference, address: 0000000000000008",
            "<4>[   12.400000] Oops: 0002 [#1] PREEMPT SMP NOPTI",
            "[   13.000000] perf: interrupt took too long (2502 > 2500), lowering "
            "kernel.perf_event_max_sample_rate to 79000",
            "[   13.1] INFO: NMI handler (perf_event_nmi_handler) took too long to run: 1.2 msecs",
            "kernel BUG at kernel/events/ring_buffer.c:200!",
            "Kernel panic - not syncing: Fatal exception",
            "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
            "Internal error: Oops: 96000004 [#1] PREEMPT SMP",
            "[    1.0] virtio_blk virtio1: [vda] 536870912 512-byte logical blocks",
            "[    2.0] EXT4-fs (vda): mounted filesystem",
            "[    3.0] perftest: not a perf line",
        ])
        kinds = [e["kind"] for e in health.scan_log(text)]
        self.assertEqual(kinds, ["bug", "oops", "perf", "perf", "bug", "panic", "stall", "oops"])

    def test_case_health_states(self):
        h = health.case_health(0, 512, WARN_LINES)
        self.assertEqual((h["state"], h["new_taint"]), ("tainted", "W"))
        self.assertEqual(h["events"][0]["kind"], "warning")
        # W already set: no new bit, but the WARNING line still flags the case
        h = health.case_health(512, 512, WARN_LINES)
        self.assertEqual((h["state"], h["new_taint"]), ("warned", ""))
        h = health.case_health(0, 0, ["6,1,2,-;perf: interrupt took too long (3 > 2), "
                                      "lowering kernel.perf_event_max_sample_rate to 1"])
        self.assertEqual(h["state"], "healthy")
        self.assertEqual(h["events"][0]["kind"], "perf")
        self.assertEqual(health.case_health(0, 0, ""), {
            "state": "healthy", "tainted_before": 0, "tainted_after": 0, "new_taint": ""})
        self.assertEqual(health.case_health(None, None, "")["state"], "healthy")
        many = ["WARNING: CPU: 0 PID: %d at x.c:1 f+0x1/0x2" % i for i in range(30)]
        h = health.case_health(0, 0, many)
        self.assertEqual((len(h["events"]), h["events_dropped"]), (20, 10))

    def test_guest_console(self):
        """What a guest runner passes: the tainted file's text before and
        after, and the console lines of the case (prefixed by the serial
        console's timestamps; run-cases markers and shell noise around)."""
        console = ("PERFTEST-CASE-BEGIN 3\n"
                   "[   41.100000] ------------[ cut here ]------------\n"
                   "[   41.100100] WARNING: CPU: 0 PID: 77 at kernel/events/core.c:2050 "
                   "perf_group_detach+0x1/0x2\n"
                   "[   41.100200] CPU: 0 PID: 77 Comm: suite_groups Tainted: G W 6.1.0-18-arm64\n"
                   "PERFTEST-CASE-END 3 0\n")
        h = health.case_health_from_text("0\n", "512\n", console)
        self.assertEqual((h["state"], h["new_taint"]), ("tainted", "W"))
        self.assertEqual(h["events"], [{
            "kind": "warning", "pid": 77, "comm": "suite_groups",
            "line": "WARNING: CPU: 0 PID: 77 at kernel/events/core.c:2050 "
                    "perf_group_detach+0x1/0x2"}])
        h = health.case_health_from_text("cat: can't open\n", "", "")
        self.assertEqual((h["state"], h["tainted_before"], h["tainted_after"]),
                         ("healthy", None, None))

    def test_merge_runs(self):
        a = health.case_health(0, 0, "")
        b = health.case_health(0, 512, WARN_LINES)
        m = health.merge([a, b])
        self.assertEqual((m["state"], m["new_taint"], m["tainted_after"]), ("tainted", "W", 512))
        self.assertEqual(health.merge([a, a]), {"state": "healthy", "tainted_before": 0,
                                                "tainted_after": 0, "new_taint": ""})
        self.assertIsNone(health.merge([None, None]))

    def test_run_health(self):
        cases = [{"health": health.case_health(0, 0, "")},
                 {"health": health.case_health(0, 512, WARN_LINES)}, {}]
        h = health.run_health("warn", 0, 512, {"log_readable": True}, cases)
        self.assertFalse(h["healthy"])
        self.assertEqual((h["cases_checked"], h["cases_tainted"], h["new_taint"]), (2, 1, "W"))
        self.assertIn("did NOT stay healthy: 1 case tainted the kernel", h["summary"])
        h = health.run_health("warn", 4096, 4096, {"log_readable": True}, cases[:1])
        self.assertTrue(h["healthy"])
        # a WARNING between cases (no case's window, W already set): the run is not healthy
        between = health.scan_log(WARN_LINES)
        h2 = health.run_health("fail", 512, 512, {"log_readable": True}, cases[:1],
                               run_events=between)
        self.assertEqual((h2["healthy"], h2["log_problems"]), (False, 1))
        self.assertIn("1 WARN/BUG/oops line between cases", h2["summary"])
        self.assertTrue(health.health_fails({"health": h2}))
        self.assertEqual(h["taint_flags_start"], "O")
        self.assertIn("stayed healthy", h["summary"])


class FileSourceTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perftest-health-")
        self.tainted = os.path.join(self.dir, "tainted")
        self.kmsg = os.path.join(self.dir, "kmsg")
        with open(self.tainted, "w") as f:
            f.write("0\n")
        with open(self.kmsg, "w") as f:
            f.write("4,1,1,-;WARNING: CPU: 0 PID: 1 at old.c:1 before_the_run+0x0/0x1\n")
        self.env = {"PERFTEST_TAINTED_FILE": self.tainted, "PERFTEST_KMSG": self.kmsg}

    def tearDown(self):
        shutil.rmtree(self.dir)

    def monitor(self):
        from unittest import mock
        with mock.patch.dict(os.environ, self.env):
            return health.HostMonitor.open()

    def test_only_lines_after_the_mark_count(self):
        m = self.monitor()
        mark = m.before()
        self.assertEqual(m.after(mark)["state"], "healthy")     # the old WARNING is not new
        mark = m.before()
        with open(self.kmsg, "a") as f:
            f.write("\n".join(WARN_LINES) + "\n4,9,9,-;WARNING: CPU: 0 PID: 1 at half")  # no \n yet
        with open(self.tainted, "w") as f:
            f.write("512\n")
        h = m.after(mark)
        self.assertEqual((h["state"], h["new_taint"], len(h["events"])), ("tainted", "W", 1))
        mark = m.before()
        with open(self.kmsg, "a") as f:
            f.write(" ok\n")                                    # the half line completes
        self.assertEqual(m.after(mark)["state"], "warned")
        s = m.summary([{"health": h}], "fail")
        self.assertEqual((s["tainted_start"], s["tainted_end"], s["healthy"]), (0, 512, False))
        self.assertEqual(s["log_problems"], 2)
        self.assertEqual((s["log_source"], s["log_readable"]), (self.kmsg, True))
        m.close()

    def test_unreadable_sources_are_said(self):
        self.env["PERFTEST_KMSG"] = os.path.join(self.dir, "absent")
        self.env["PERFTEST_TAINTED_FILE"] = os.path.join(self.dir, "absent-tainted")
        m = self.monitor()
        self.assertEqual(m.after(m.before())["state"], "healthy")
        s = m.summary([], "warn")
        self.assertFalse(s["log_readable"])
        self.assertIn("absent: No such file or directory", s["log_note"])
        self.assertTrue(s["log_note"].endswith("; only the taint value is checked"))
        self.assertIn("absent-tainted: No such file or directory", s["tainted_problem"])
        self.assertIsNone(s["tainted_start"])
        self.assertIn("taint unreadable", s["summary"])

    def test_restricted_log_names_dmesg_restrict(self):
        err = OSError(errno.EPERM, "Operation not permitted")
        why = health._log_unreadable_reason("/dev/kmsg", err, 1, False)
        self.assertIn("kernel.dmesg_restrict=1: reading the kernel log needs CAP_SYSLOG", why)
        err = OSError(errno.ENOENT, "No such file or directory")
        self.assertIn("in a container", health._log_unreadable_reason("/dev/kmsg", err, 0, True))


class RealHostTest(unittest.TestCase):
    """This machine's own /proc/sys/kernel/tainted and /dev/kmsg, read for
    real (nothing here can taint or warn the kernel)."""

    def setUp(self):
        from unittest import mock
        self.patch = mock.patch.dict(os.environ)
        self.patch.start()
        os.environ.pop("PERFTEST_TAINTED_FILE", None)
        os.environ.pop("PERFTEST_KMSG", None)

    def tearDown(self):
        self.patch.stop()

    def test_tainted_value_is_the_kernels(self):
        with open("/proc/sys/kernel/tainted") as f:
            expected = int(f.read())
        m = health.HostMonitor.open()
        try:
            self.assertEqual(m.tainted_start, expected)
            h = m.after(m.before())
            self.assertEqual(h["tainted_before"], expected)
            s = m.summary([{"health": h}], "warn")
        finally:
            m.close()
        self.assertEqual(s["tainted_source"], "/proc/sys/kernel/tainted")
        self.assertEqual(s["log_source"], "/dev/kmsg")
        try:
            os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
            readable = True
        except OSError:
            readable = False
        self.assertEqual(s["log_readable"], readable)
        if not readable:
            self.assertIn("only the taint value is checked", s["log_note"])
        with open("/proc/sys/kernel/dmesg_restrict") as f:
            self.assertEqual(s["dmesg_restrict"], int(f.read()))

    def test_kmsg_reader_sees_a_new_record(self):
        try:
            source = health._KmsgSource("/dev/kmsg")
        except OSError as e:
            self.skipTest("/dev/kmsg not readable here: %s" % e)
        try:
            token = "perftest health self-test %s" % uuid.uuid4().hex
            try:
                # A userspace record (facility user, info): harmless, and no
                # pattern of the health reader matches it.
                with open("/dev/kmsg", "w") as f:
                    f.write("<14>%s\n" % token)
            except OSError as e:
                self.skipTest("/dev/kmsg not writable here (needs root): %s" % e)
            lines = source.read_new()
        finally:
            source.close()
        self.assertTrue(any(line.endswith(token) for line in lines), lines[-5:])
        msg = health.message_of([line for line in lines if line.endswith(token)][0])
        self.assertEqual(msg, token)
        self.assertIsNone(health.classify(msg))


def health_report(policy="warn"):
    """A 1.2 report: a pass that tainted the kernel, a skip during which it
    warned, a healthy pass."""
    doc = minimal_report()
    doc["schema_version"] = "1.2"
    doc["cases"][0]["health"] = health.case_health(0, 512, WARN_LINES)
    doc["cases"][1]["health"] = health.case_health(0, 0, "")
    doc["cases"][2]["health"] = health.case_health(512, 512, [
        "BUG: sleeping function called from invalid context at kernel/events/core.c:99"])
    doc["cases"][1]["status"] = "pass"
    doc["cases"][1]["reason"] = ""
    doc["summary"] = report.summarize(doc["cases"])
    doc["health"] = health.run_health(policy, 0, 512, {"log_readable": True,
                                                       "log_source": "/dev/kmsg"},
                                      doc["cases"])
    return doc


class RenderTest(unittest.TestCase):
    def test_report_is_valid_and_consistent(self):
        doc = health_report()
        self.assertEqual(report.validate_report(doc), [])
        bad = health_report()
        bad["health"]["cases_tainted"] = 0
        self.assertIn("$.health.cases_tainted: 0, but 1 cases have health.state 'tainted'",
                      report.validate_report(bad))
        bad = health_report()
        bad["cases"][0]["health"]["state"] = "sick"
        self.assertTrue(any("cases[0].health.state" in p for p in report.validate_report(bad)))

    def test_exit_code_per_policy(self):
        self.assertEqual(report.exit_code(health_report("warn")), 0)
        self.assertEqual(report.exit_code(health_report("ignore")), 0)
        self.assertEqual(report.exit_code(health_report("fail")), 1)

    def test_every_rendering_shows_the_flag(self):
        doc = health_report("warn")
        for fmt in ("md", "html", "text"):
            with self.subTest(fmt=fmt):
                text = RENDERERS[fmt].render(doc)
                self.assertIn("kernel tainted W", text)
                self.assertIn("kernel warned", text)
                self.assertIn("did NOT stay healthy", text)
                self.assertIn("WARNING: CPU: 1 PID: 4242 at kernel/events/core.c:1234", text)
        self.assertIn("## Kernel health", RENDERERS["md"].render(doc))
        self.assertIn("PASSED", RENDERERS["text"].render(doc))

    def test_junit_property_or_failure(self):
        root = ET.fromstring(RENDERERS["junit"].render(health_report("warn")))
        tcs = root.findall(".//testcase")
        props = tcs[0].findall("properties/property")
        self.assertEqual(props[0].get("name"), "kernel_health")
        self.assertTrue(props[0].get("value").startswith("tainted W (kernel issued a warning)"))
        self.assertIsNone(tcs[0].find("failure"))
        self.assertEqual(root.get("failures"), "0")
        suite_props = {p.get("name"): p.get("value")
                       for p in root.findall("testsuite/properties/property")}
        self.assertIn("did NOT stay healthy", suite_props["kernel_health"])

        root = ET.fromstring(RENDERERS["junit"].render(health_report("fail")))
        tcs = root.findall(".//testcase")
        f = tcs[0].find("failure")
        self.assertEqual(f.get("type"), "kernel-health")
        self.assertIn("WARNING: CPU: 1 PID: 4242", f.text)
        self.assertEqual(tcs[2].find("failure").get("type"), "kernel-health")  # the skip
        self.assertIsNone(tcs[1].find("failure"))
        self.assertEqual(root.get("failures"), "2")
        self.assertIn("kernel health: healthy", tcs[1].find("system-out").text)

    def test_ktap_diagnostics(self):
        text = RENDERERS["ktap"].render(health_report("warn"))
        ktap_grammar.parse(text)
        self.assertIn("  # kernel health: tainted W", text)
        self.assertIn("  # kernel log: WARNING: CPU: 1 PID: 4242", text)
        self.assertIn("  ok 1 ringbuffer.mmap_size_rule\n", text)
        text = RENDERERS["ktap"].render(health_report("fail"))
        ktap_grammar.parse(text)
        self.assertIn("  not ok 1 ringbuffer.mmap_size_rule # kernel health (case pass)", text)
        self.assertIn("not ok 1 ringbuffer", text)
        self.assertIn("# Totals: pass:1 fail:2", text)

    def test_diff_notes_an_unhealthy_run(self):
        from perftest import diff
        r = diff.compare(minimal_report(), health_report(), "BASE", "NEW")
        self.assertIn("kernel health of the NEW run: the kernel did NOT stay healthy: 1 case "
                      "tainted the kernel", " ".join(r["notes"]))
        self.assertFalse(any("kernel health" in n for n in diff.compare(
            minimal_report(), minimal_report())["notes"]))

    def test_older_reports_render_without_health(self):
        doc = minimal_report()
        for fmt, r in RENDERERS.items():
            with self.subTest(fmt=fmt):
                self.assertNotIn("kernel health", r.render(doc).lower().replace(
                    "kernel_health", ""))


class RunTest(unittest.TestCase):
    """`perftest run` on the fake health suite: its cases write to the
    taint file and kernel log the runner is pointed at."""

    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree(suites=(), benches=())
        install_script(os.path.join(HERE, "fakes", "suite_health.py"),
                       os.path.join(cls.tree.bin, "suite_health"))

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    def run_health(self, *args, real=False):
        tainted = os.path.join(self.tree.state, "tainted")
        kmsg = os.path.join(self.tree.state, "kmsg")
        with open(tainted, "w") as f:
            f.write("4096\n")                     # O: an out-of-tree module, before the run
        with open(kmsg, "w") as f:
            f.write("4,1,1,-;WARNING: CPU: 0 PID: 1 at old.c:1 earlier+0x0/0x1\n")
        out = os.path.join(self.tree.root, "out-%s" % uuid.uuid4().hex[:8])
        env = {} if real else {"PERFTEST_TAINTED_FILE": tainted, "PERFTEST_KMSG": kmsg}
        p = self.tree.perftest("run", "--suite=health", "--backend=mock",
                               "--output=%s" % out, *args, **env)
        with open(os.path.join(out, "report.json")) as f:
            doc = json.load(f)
        return p, doc, out

    def test_tainting_case_is_flagged(self):
        p, doc, out = self.run_health()
        self.assertEqual(p.returncode, 1, p.stderr)            # Health.Bug fails by itself
        self.assertEqual(report.validate_report(doc), [])
        states = {c["name"]: c["health"]["state"] for c in doc["cases"]}
        self.assertEqual(states, {"Health.Quiet": "healthy", "Health.Warns": "tainted",
                                  "Health.Throttled": "healthy", "Health.Bug": "warned"})
        warns = doc["cases"][1]
        self.assertEqual(warns["status"], "pass")
        self.assertEqual((warns["health"]["tainted_before"], warns["health"]["tainted_after"],
                          warns["health"]["new_taint"]), (4096, 4608, "W"))
        self.assertEqual(warns["health"]["events"][0]["comm"], "suite_health")
        self.assertEqual(doc["cases"][2]["health"]["events"][0]["kind"], "perf")
        self.assertEqual([e["kind"] for e in doc["cases"][3]["health"]["events"]], ["bug", "oops"])
        h = doc["health"]
        self.assertEqual((h["policy"], h["healthy"], h["taint_flags_start"], h["new_taint"],
                          h["cases_tainted"], h["cases_warned"], h["cases_with_perf_lines"]),
                         ("warn", False, "O", "W", 1, 1, 1))
        self.assertIn("kernel health: the kernel did NOT stay healthy", p.stdout)
        self.assertRegex(p.stdout, r"pass +health\.warns \(Health\.Warns\) [0-9.]+s  KERNEL TAINTED W\n")
        self.assertRegex(p.stdout, r"fail +health\.bug \(Health\.Bug\) [0-9.]+s  KERNEL WARNED\n")
        with open(os.path.join(out, "report.md")) as f:
            self.assertIn("kernel tainted W", f.read())
        with open(os.path.join(out, "report.ktap")) as f:
            self.assertIn("# kernel health: tainted W", f.read())

    def test_taint_policy_sets_the_exit_code(self):
        only_passes = "--filter=health.quiet,health.warns,health.throttled"
        p, doc, _ = self.run_health(only_passes)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(doc["cases"][1]["health"]["state"], "tainted")
        p, doc, _ = self.run_health(only_passes, "--taint=fail")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("FAILED (--taint=fail", p.stdout)
        p, doc, _ = self.run_health(only_passes, "--taint=ignore")
        self.assertEqual((p.returncode, doc["health"]["policy"]), (0, "ignore"))
        p = self.tree.perftest("run", "--suite=health", "--taint=sometimes")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--taint: invalid choice: 'sometimes'", p.stderr)

    def test_real_sources_without_overrides(self):
        p, doc, _ = self.run_health("--filter=health.quiet", real=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open("/proc/sys/kernel/tainted") as f:
            real = int(f.read())
        h = doc["health"]
        self.assertEqual((h["tainted_source"], h["log_source"]),
                         ("/proc/sys/kernel/tainted", "/dev/kmsg"))
        self.assertEqual(h["tainted_start"], real)
        self.assertEqual(doc["cases"][0]["health"]["tainted_before"], real)


if __name__ == "__main__":
    unittest.main()
