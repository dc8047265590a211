"""Deny lists: the file format, its errors, auto selection, and a run that
applies one (denied cases skipped with a reason, xfail cases run)."""

import glob
import json
import os
import unittest

from perftest import denylist, report
from perftest.errors import UsageError
from perftest.suite import CaseInfo

from .support import REPO, FakeTree

GOOD = """\
# known problems on 6.1 x86_64
# match: kernel=6.1.* arch=x86_64 backend=kernel

ringbuffer.aux_*        class=unsupported  AUX area needs intel_pt, absent here
RingBuffer.Wakeup*      class=kernel_version  fixed in 6.2 (commit abc)
groups.leader_disable   xfail  kernel returns EINVAL, the man page says 0 (reported)
pt.*                    no PT on this runner's CPU # not an inline comment
"""


def info(test, feature):
    return CaseInfo("s", test, feature, None)


class ParseTest(unittest.TestCase):
    def test_good(self):
        dl = denylist.parse(GOOD, "x.txt")
        self.assertEqual(dl.match, {"kernel": "6.1.*", "arch": "x86_64", "backend": "kernel"})
        self.assertEqual([(e.pattern, e.skip_class, e.xfail, e.source) for e in dl.entries], [
            ("ringbuffer.aux_*", "unsupported", False, "x.txt:4"),
            ("RingBuffer.Wakeup*", "kernel_version", False, "x.txt:5"),
            ("groups.leader_disable", "unsupported", True, "x.txt:6"),
            ("pt.*", "unsupported", False, "x.txt:7"),
        ])
        self.assertEqual(dl.entries[3].reason, "no PT on this runner's CPU # not an inline comment")
        self.assertEqual(dl.entries[2].reason,
                         "kernel returns EINVAL, the man page says 0 (reported)")

    def test_errors_name_file_and_line(self):
        for text, needle in [
            ("ringbuffer.aux\n", "x.txt:1: entry 'ringbuffer.aux' has no reason"),
            ("\n\nringbuffer.aux   class=sandbox\n", "x.txt:3: entry 'ringbuffer.aux' has no reason"),
            ("a.b class=nope why\n", "x.txt:1: class=nope: not a skip class; use one of "
                                     "unsupported, permission, sandbox, kernel_version"),
            ("a.b clas=sandbox why\n", "x.txt:1: unknown option 'clas'"),
            ("a.b xfail class=sandbox why\n", "use one of them"),
            ('"a.b" why\n', "is not a feature-id or test-name glob"),
            ("# match: kernel=6.*\n# match: arch=x86_64\n", "x.txt:2: a second '# match:' line"),
            ("# match: os=linux\n", "'# match:' key 'os' is not one of kernel, arch, backend"),
            ("# match: kernel\n", "'# match:' takes key=GLOB words"),
        ]:
            with self.subTest(text=text):
                with self.assertRaises(UsageError) as cm:
                    denylist.parse(text, "x.txt")
                msg = str(cm.exception)
                self.assertIn(needle, msg)
                self.assertTrue(msg.startswith("deny list x.txt:"), msg)

    def test_matching(self):
        dls = denylist.DenyLists([denylist.parse(GOOD, "x.txt")])
        self.assertEqual(dls.match(info("RingBuffer.AuxWrap", "ringbuffer.aux_wrap")).source,
                         "x.txt:4")
        self.assertEqual(dls.match(info("RingBuffer.WakeupEvents", "ringbuffer.wakeup_events"))
                         .skip_class, "kernel_version")
        self.assertIsNone(dls.match(info("RingBuffer.Wraps", "ringbuffer.wraparound")))
        self.assertIsNone(dls.match(info("RingBuffer.X", None)))

    def test_applies_to(self):
        dl = denylist.parse(GOOD, "x.txt")
        self.assertTrue(dl.applies_to("6.1.0-18-amd64", "x86_64", "kernel"))
        self.assertFalse(dl.applies_to("6.1.0-18-amd64", "x86_64", "mock"))
        self.assertFalse(dl.applies_to("6.10.2", "x86_64", "kernel"))
        self.assertFalse(denylist.parse("a.b why\n", "y.txt").applies_to("6.1", "x86_64", "kernel"))
        two = denylist.parse("# match: kernel=3.*,4.0.*\n", "z.txt")
        self.assertTrue(two.applies_to("4.0.9", "aarch64", "kernel"))
        self.assertTrue(two.applies_to("3.10.0-1160.el7.x86_64", "x86_64", "kernel"))
        self.assertFalse(two.applies_to("4.1.0", "x86_64", "kernel"))

    def test_shipped_deny_lists_parse(self):
        paths = glob.glob(os.path.join(REPO, "ci", "denylists", "*.txt"))
        self.assertTrue(paths, "no deny lists in ci/denylists")
        for path in paths:
            with self.subTest(path=os.path.basename(path)):
                dl = denylist.load(path)
                self.assertTrue(dl.match, "%s has no '# match:' line" % path)
                for e in dl.entries:
                    self.assertGreater(len(e.reason), 10, e.source)


class DenylistRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree()
        cls.dir = os.path.join(cls.tree.root, "denylists")
        os.makedirs(cls.dir)
        cls.explicit = cls.write("explicit.txt", """\
# no match line: used only when named
fake.crash   class=sandbox  crashes under this seccomp profile (issue 12)
Fake.Fail    xfail          divergence documented in issue 7
""")
        cls.write("this-machine.txt", "# match: kernel=* arch=%s backend=mock\n"
                  "fake.skip  class=permission  needs a privileged runner\n" % os.uname().machine)
        cls.write("other-arch.txt", "# match: arch=sparc64\nfake.pass  never on sparc\n")

    @classmethod
    def write(cls, name, text):
        path = os.path.join(cls.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()

    def run_fake(self, *args):
        out = os.path.join(self.tree.root, "out")
        p = self.tree.perftest("run", "--suite=fake", "--backend=mock", "--output=%s" % out,
                               "--filter=fake.pass,fake.fail,fake.skip,fake.crash", *args,
                               PERFTEST_DENYLIST_DIR=self.dir)
        doc = None
        if os.path.exists(os.path.join(out, "report.json")):
            with open(os.path.join(out, "report.json")) as f:
                doc = json.load(f)
        return p, doc, out

    def test_explicit_and_auto(self):
        p, doc, out = self.run_fake("--denylist=%s,auto" % self.explicit)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)     # fail is expected, crash denied
        self.assertEqual(report.validate_report(doc), [])
        by = {c["feature"]: c for c in doc["cases"]}
        crash = by["fake.crash"]
        self.assertEqual((crash["status"], crash["skip_class"], crash["denylisted"]),
                         ("skip", "sandbox", True))
        self.assertEqual(crash["reason"], "denylisted: crashes under this seccomp profile (issue 12)")
        self.assertEqual(crash["denylist_entry"], "%s:2" % self.explicit)
        fail = by["fake.fail"]
        self.assertEqual((fail["status"], fail["xfail"]), ("fail", True))
        self.assertEqual(fail["denylist_reason"], "divergence documented in issue 7")
        self.assertEqual(by["fake.skip"]["skip_class"], "permission")     # from the auto file
        self.assertTrue(by["fake.skip"]["denylisted"])
        self.assertEqual(by["fake.pass"]["status"], "pass")              # sparc list not used
        self.assertEqual(doc["run"]["denylists"],
                         [self.explicit, os.path.join(self.dir, "this-machine.txt")])
        self.assertEqual((doc["summary"]["denylisted"], doc["summary"]["xfail"]), (2, 1))
        ran = [e["argv"][2] for e in self.tree.argv_log()]
        self.assertNotIn("--gtest_filter=Fake.Crash", ran)
        self.assertNotIn("--gtest_filter=Fake.Skip", ran)
        with open(os.path.join(out, "report.ktap")) as f:
            self.assertIn("ok 2 fake.fail # XFAIL fail:", f.read())
        self.assertIn("deny list: %s" % self.explicit, p.stdout)
        self.assertIn("result: PASSED", p.stdout)

    def test_bad_deny_list_is_exit_2_before_running(self):
        bad = os.path.join(self.tree.root, "bad.txt")
        with open(bad, "w") as f:
            f.write("fake.pass\n")
        before = len(self.tree.argv_log())
        p, _, _ = self.run_fake("--denylist=%s" % bad)
        self.assertEqual(p.returncode, 2)
        self.assertIn("deny list %s:1: entry 'fake.pass' has no reason" % bad, p.stderr)
        self.assertEqual(len(self.tree.argv_log()), before)
        p, _, _ = self.run_fake("--denylist=/nonexistent/x.txt")
        self.assertEqual(p.returncode, 2)
        self.assertIn("deny list does not exist: /nonexistent/x.txt", p.stderr)


if __name__ == "__main__":
    unittest.main()
