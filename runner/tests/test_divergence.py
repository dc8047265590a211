"""Documented-versus-actual divergences: from gtest properties to the report."""

import unittest

from perftest import gtest, report
from perftest.procs import ProcResult
from perftest.render import RENDERERS

PROPS = {"feature": "prctl.all_events", "spec": "perf-design.txt 'prctl'",
         "divergence_id": "prctl.not_only_leaders",
         "divergence_documented": "acts on group leaders only (perf-design.txt)",
         "divergence_actual": "acts on every event the task created (perf_event_for_each_child)"}


def _doc(props):
    tc = dict(name="AllEvents", status="RUN", result="COMPLETED", **props)
    return {"testsuites": [{"name": "Prctl", "testsuite": [tc]}]}


def _case(**kw):
    c = {"suite": "prctl", "name": "Prctl.AllEvents", "feature": "prctl.all_events", "spec": "s",
         "status": "pass", "skip_class": None, "reason": "", "duration_s": 0.1}
    c.update(kw)
    return c


class GtestUtf8Test(unittest.TestCase):
    # As gtest 1.12 writes an em dash in a RecordProperty value (seen in
    # suite_ioctl's divergence_actual).
    RAW = '{"a": "says \\u00E2\\u0080\\u0094 an event", "b": ["caf\\u00C3\\u00A9"], "c": "plain"}'

    def test_bytewise_escaped_utf8_is_repaired_on_load(self):
        import json, os, tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(self.RAW)
        try:
            doc, problem = gtest.load_json(f.name)
        finally:
            os.unlink(f.name)
        self.assertIsNone(problem)
        self.assertEqual(doc, {"a": "says \u2014 an event", "b": ["caf\u00e9"], "c": "plain"})

    def test_genuine_latin1_text_that_is_not_utf8_is_kept(self):
        self.assertEqual(gtest.repair_utf8("na\u00efve \u00ff"), "na\u00efve \u00ff")
        self.assertEqual(gtest.repair_utf8("\u2014 already fine"), "\u2014 already fine")


class DivergenceTest(unittest.TestCase):
    def test_classify_reads_the_divergence_properties(self):
        v = gtest.classify("Prctl.AllEvents", ProcResult(0, False, 0.1), _doc(PROPS), None, "")
        self.assertEqual(v.status, "pass")
        self.assertEqual(v.divergence, {"id": "prctl.not_only_leaders",
                                        "documented": PROPS["divergence_documented"],
                                        "actual": PROPS["divergence_actual"]})

    def test_no_divergence_without_an_id(self):
        props = {k: v for k, v in PROPS.items() if k != "divergence_id"}
        v = gtest.classify("Prctl.AllEvents", ProcResult(0, False, 0.1), _doc(props), None, "")
        self.assertIsNone(v.divergence)

    def test_report_collects_and_renders_divergences(self):
        div = {"id": "prctl.not_only_leaders", "documented": "d", "actual": "a"}
        cases = [_case(divergence=div), _case(name="Prctl.Other", feature="prctl.other")]
        run = {"backend": "kernel", "backend_reason": "r", "profile": None, "suites": ["prctl"],
               "started": "2026-01-01T00:00:00Z", "duration_s": 1.0, "perftest_version": "x",
               "command": ["perftest"]}
        doc = report.build_report(run, {}, cases)
        self.assertEqual(doc["divergences"], [{"id": "prctl.not_only_leaders", "suite": "prctl",
                                               "name": "Prctl.AllEvents", "feature": "prctl.all_events",
                                               "status": "pass", "documented": "d", "actual": "a"}])
        md = RENDERERS["md"].render(doc)
        self.assertIn("Documented versus actual behaviour", md)
        self.assertIn("prctl.not_only_leaders", md)
        html = RENDERERS["html"].render(doc)
        self.assertIn("<code>prctl.not_only_leaders</code>", html)


if __name__ == "__main__":
    unittest.main()


class AttrSizeTest(unittest.TestCase):
    def test_sizes_come_from_the_probe(self):
        from perftest.run import attr_sizes
        self.assertEqual(attr_sizes({"attr_size_uapi": 128, "attr_size_kernel": 136}, None),
                         {"attr_size_uapi": 128, "attr_size_kernel": 136})

    def test_unknown_kernel_size_is_null_and_mock_runs_probe_anyway(self):
        from perftest.run import attr_sizes

        class Binary:
            def probe(self):
                return {"attr_size_uapi": 128, "attr_size_kernel": 0}
        self.assertEqual(attr_sizes(None, Binary()), {"attr_size_uapi": 128, "attr_size_kernel": None})

    def test_rendered_line(self):
        from perftest.render import common
        self.assertEqual(common.attr_size_line({"attr_size_uapi": 128, "attr_size_kernel": None}),
                         "UAPI 128 bytes, kernel ?")
