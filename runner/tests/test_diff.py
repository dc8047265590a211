"""perftest diff: categories, verdict, exit codes, formats, bad input."""

import copy
import json
import os
import shutil
import tempfile
import unittest

from perftest import diff, report

from .support import DATA, FakeTree, minimal_report, mixed_report, run_main

REAL_1_0 = os.path.join(DATA, "report_1.0_ringbuffer_kernel.json")


def case(feature, status, skip_class=None, reason="", suite="s", name=None, **extra):
    c = {"suite": suite, "name": name or "S.%s" % feature.split(".")[-1].title(),
         "feature": feature, "spec": None, "status": status, "skip_class": skip_class,
         "reason": reason, "duration_s": 0.01}
    c.update(extra)
    return c


def doc_with(cases, **run):
    d = minimal_report(cases=cases, summary=report.summarize(cases))
    d["run"]["suites"] = sorted({c["suite"] for c in cases}) or ["s"]
    d["run"].update(run)
    return d


class ClassifyTest(unittest.TestCase):
    def check(self, base, new, expected, regression, strict=False):
        b = case("x.y", *base) if base else None
        n = case("x.y", *new) if new else None
        self.assertEqual(diff.classify(b, n, strict), (expected, regression), (base, new))

    def test_table(self):
        for base, new, expected, regression in [
            (("pass",), ("pass",), "unchanged", False),
            (("pass",), ("fail",), "lost", True),
            (("pass",), ("crash",), "lost", True),
            (("pass",), ("timeout",), "lost", True),
            (("pass",), ("error",), "lost", True),
            (("skip", "permission"), ("fail",), "newly_failing", True),
            (("not_run",), ("crash",), "newly_failing", True),
            (("skip", "unsupported"), ("pass",), "gained", False),
            (("fail",), ("pass",), "gained", False),
            (("crash",), ("pass",), "gained", False),
            (("pass",), ("skip", "unsupported"), "changed", False),
            (("fail",), ("crash",), "changed", False),
            (("fail",), ("skip", "sandbox"), "changed", False),
            (("fail",), ("fail",), "unchanged", False),
            (("skip", "permission", "a"), ("skip", "sandbox", "a"), "skip_changed", False),
            (("skip", "permission", "a"), ("skip", "permission", "b"), "skip_changed", False),
            (("skip", "permission", "a"), ("skip", "permission", "a"), "unchanged", False),
            (None, ("pass",), "new", False),
            (None, ("fail",), "new", True),
            (("pass",), None, "removed", False),
        ]:
            self.check(base, new, expected, regression)

    def test_strict_counts_lost_coverage(self):
        self.check(("pass",), ("skip", "unsupported"), "changed", True, strict=True)
        self.check(("pass",), None, "removed", True, strict=True)
        self.check(("skip", "unsupported"), None, "removed", False, strict=True)

    def test_xfail_in_new_is_not_a_regression(self):
        b = case("x.y", "pass")
        n = case("x.y", "fail", xfail=True, denylist_reason="known")
        self.assertEqual(diff.classify(b, n), ("changed", False))


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.base = doc_with([
            case("s.keep", "pass"), case("s.lose", "pass"), case("s.gain", "skip", "unsupported", "no PMU"),
            case("s.fix", "fail", reason="x.cc:1\nbad"), case("s.reclass", "skip", "permission", "paranoid"),
            case("s.gone", "pass"), case("s.newfail", "skip", "unsupported", "no PT"),
        ])
        self.new = doc_with([
            case("s.keep", "pass"), case("s.lose", "crash", reason="killed by SIGSEGV"),
            case("s.gain", "pass"), case("s.fix", "pass"),
            case("s.reclass", "skip", "sandbox", "seccomp"), case("s.newfail", "fail", reason="pt.cc:9\nno"),
            case("s.added", "pass"),
        ])

    def test_categories_and_verdict(self):
        r = diff.compare(self.base, self.new, "b.json", "n.json")
        keys = {cat: [e["key"] for e in r["changes"][cat]] for cat in diff.CATEGORIES}
        self.assertEqual(keys, {"lost": ["s.lose"], "newly_failing": ["s.newfail"],
                                "gained": ["s.gain", "s.fix"], "changed": [],
                                "skip_changed": ["s.reclass"], "new": ["s.added"],
                                "removed": ["s.gone"]})
        self.assertEqual(r["verdict"], "regressed")
        self.assertEqual(r["counts"]["regressions"], 2)
        self.assertEqual(r["counts"]["unchanged"], 1)
        self.assertEqual(diff.exit_code(r), 1)
        self.assertEqual(r["headline"], "REGRESSED: 2 regressions (1 lost, 1 newly failing)")

    def test_no_regressions_and_identical(self):
        new = copy.deepcopy(self.base)
        r = diff.compare(self.base, new)
        self.assertEqual((r["verdict"], diff.exit_code(r)), ("identical", 0))
        self.assertEqual(r["headline"], "IDENTICAL: 7 cases, same results")
        new["cases"][2] = case("s.gain", "pass")
        new["summary"] = report.summarize(new["cases"])
        r = diff.compare(self.base, new)
        self.assertEqual((r["verdict"], diff.exit_code(r)), ("no_regressions", 0))
        self.assertEqual(r["headline"], "NO REGRESSIONS: 1 gained")

    def test_notes_say_how_the_runs_differ(self):
        new = copy.deepcopy(self.base)
        new["run"].update(backend="kernel", profile=None)
        new["host"].update(kernel_release="6.6.0", arch="aarch64")
        new["schema_version"] = "1.1"
        r = diff.compare(self.base, new)
        notes = " | ".join(r["notes"])
        self.assertIn("different backends: BASE ran on mock (profile software-only), NEW on kernel",
                      notes)
        self.assertIn("different kernels: 6.1.0 (BASE) vs 6.6.0 (NEW)", notes)
        self.assertIn("different architectures: x86_64 (BASE) vs aarch64 (NEW)", notes)
        self.assertIn("schema versions differ: 1.0 (BASE) vs 1.1 (NEW)", notes)

    def test_duplicate_and_missing_feature_ids(self):
        cases = [case("d.same", "pass", suite="a", name="A.One"),
                 case("d.same", "pass", suite="b", name="A.One"),
                 dict(case("d.none", "pass", name="N.None"), feature=None)]
        base = doc_with(cases)
        new = copy.deepcopy(base)
        new["cases"][1]["status"] = "fail"
        new["summary"] = report.summarize(new["cases"])
        r = diff.compare(base, new)
        self.assertEqual([e["key"] for e in r["changes"]["lost"]], ["d.same [b:A.One]"])
        self.assertEqual(r["counts"]["unchanged"], 2)

    def test_removed_suite_is_explained(self):
        new = doc_with([c for c in self.base["cases"] if c["feature"] != "s.gone"])
        new["cases"] = [dict(c, suite="t") for c in new["cases"]]
        new["run"]["suites"] = ["t"]
        r = diff.compare(self.base, new)
        self.assertEqual(r["changes"]["removed"][0]["note"], "suite s not run in NEW")

    def test_renderings(self):
        r = diff.compare(self.base, self.new, "b.json", "n.json")
        text = diff.render_text(r, width=120)
        self.assertTrue(text.startswith("perftest diff: REGRESSED: 2 regressions"))
        self.assertIn("Lost: passed in BASE, fails in NEW (1):", text)
        self.assertRegex(text, r"! s\.lose +pass -> crash +killed by SIGSEGV")
        self.assertRegex(text, r"  s\.gain +skip \[unsupported\] -> pass +was: no PMU")
        self.assertIn("now: seccomp", text)
        md = diff.render_markdown(r)
        self.assertIn("# perftest diff", md)
        self.assertIn("## Lost: passed in BASE, fails in NEW (1)", md)
        self.assertIn("| `s.lose` **(regression)** | pass | crash | killed by SIGSEGV |", md)
        j = json.loads(diff.render_json(r))
        self.assertEqual(j["verdict"], "regressed")
        self.assertEqual(j["changes"]["lost"][0]["new"]["status"], "crash")
        self.assertEqual(j["base"]["path"], "b.json")


class DiffCommandTest(unittest.TestCase):
    """./perftest diff end to end: exit codes 0/1/2, 1.0 reports, bad input."""

    @classmethod
    def setUpClass(cls):
        cls.tree = FakeTree()
        cls.dir = tempfile.mkdtemp(prefix="perftest-diff-")

    @classmethod
    def tearDownClass(cls):
        cls.tree.cleanup()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def write(self, name, doc):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_real_1_0_against_1_1(self):
        with open(REAL_1_0) as f:
            old = json.load(f)
        new = copy.deepcopy(old)
        new["schema_version"] = "1.1"
        new["cases"][6]["status"] = "fail"
        new["cases"][6]["reason"] = "ringbuffer_test.cc:250\nrecord torn at the wrap"
        new["summary"] = report.summarize(new["cases"])
        path = self.write("new.json", new)
        p = self.tree.perftest("diff", REAL_1_0, path)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("REGRESSED: 1 regression (1 lost)", p.stdout)
        self.assertIn("ringbuffer.wraparound", p.stdout)
        self.assertIn("schema versions differ: 1.0 (BASE) vs 1.1 (NEW)", p.stdout)
        p = self.tree.perftest("diff", REAL_1_0, REAL_1_0, "--format=json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["verdict"], "identical")
        out = os.path.join(self.dir, "d.md")
        p = self.tree.perftest("diff", REAL_1_0, path, "--format=md", "-o", out)
        self.assertEqual(p.returncode, 1)
        with open(out) as f:
            self.assertIn("## Lost", f.read())

    def test_bad_input_exit_2(self):
        good = self.write("good.json", mixed_report())
        missing = os.path.join(self.dir, "missing.json")
        corrupt = self.write("corrupt.json", '{"schema_version": "1.0", "run": ')
        future = self.write("future.json", minimal_report(schema_version="2.0"))
        other = self.write("other.json", {"tests": 3})
        for args, needle in [
            ((good, missing), "NEW: report file does not exist: %s" % missing),
            ((missing, good), "BASE: report file does not exist"),
            ((good, corrupt), "NEW: %s is not a perftest report: not valid JSON" % corrupt),
            ((future, good), "BASE: %s: unsupported schema_version '2.0'" % future),
            ((good, other), "no \"schema_version\" key"),
            ((good, good, "--format=pdf"), "invalid choice: 'pdf'"),
            ((good,), "the following arguments are required: NEW.json"),
        ]:
            with self.subTest(args=args):
                code, out, err = run_main("diff", *args)
                self.assertEqual(code, 2, out + err)
                self.assertIn(needle, err)
                self.assertNotIn("Traceback", err)


if __name__ == "__main__":
    unittest.main()
