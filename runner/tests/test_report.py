"""Report schema validation, loading, exit codes and renderings."""

import json
import os
import shutil
import tempfile
import unittest

from perftest import report, schema
from perftest.errors import UsageError
from perftest.host import collect_host
from perftest.render import RENDERERS

from .support import DATA, DELETE, minimal_report, mixed_report, run_main


class SchemaFileTest(unittest.TestCase):
    def test_schema_lists_every_contract_key(self):
        s = report.report_schema()
        self.assertEqual(set(s["required"]), {"schema_version", "run", "host", "summary", "cases"})
        self.assertTrue({"backend", "backend_reason", "profile", "suites", "started",
                         "duration_s", "perftest_version", "command"}
                        <= set(s["properties"]["run"]["required"]))
        case = s["$defs"]["case"]
        self.assertEqual(set(case["required"]), {"suite", "name", "feature", "spec", "status",
                                                 "skip_class", "reason", "duration_s"})
        self.assertEqual(set(case["properties"]["status"]["enum"]) - {"not_run"},
                         set(report.STATUSES))
        self.assertEqual(set(case["properties"]["skip_class"]["enum"]) - {None},
                         set(report.SKIP_CLASSES))

    def test_schema_md_documents_every_schema_key(self):
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "SCHEMA.md")
        with open(path) as f:
            text = f.read()
        s = report.report_schema()
        keys = set(s["properties"])
        for section in ("run", "host", "summary", "health"):
            keys |= set(s["properties"][section]["properties"])
        for d in s["$defs"].values():
            keys |= set(d["properties"])
        for k in sorted(keys):
            self.assertIn("`%s`" % k, text, "SCHEMA.md does not document %r" % k)


class ValidateTest(unittest.TestCase):
    def test_valid(self):
        self.assertEqual(report.validate_report(minimal_report()), [])

    def test_real_host_block_is_valid(self):
        doc = minimal_report(host=collect_host())
        self.assertEqual(report.validate_report(doc), [])

    def test_problems_name_the_path(self):
        cases = [
            ({"run.backend": "qemu"}, "$.run.backend: 'qemu' is not one of"),
            ({"run.profile": DELETE}, "$.run: missing required key 'profile'"),
            ({"cases.1.status": "flaky"}, "$.cases[1].status"),
            ({"cases.0.duration_s": "fast"}, "$.cases[0].duration_s: expected number"),
            ({"cases.0.duration_s": -1}, "$.cases[0].duration_s: -1 is less than 0"),
            ({"host.ncpus": True}, "$.host.ncpus: expected integer"),
            ({"host.pmus": [{"name": "cpu", "type": 4, "caps": {"x": 1}}]},
             "$.host.pmus[0].caps.x: expected string"),
            ({"schema_version": "2.0"}, "$.schema_version"),
            ({"run.started": "yesterday"}, "$.run.started"),
            ({"cases.2.skip_class": None}, "a skip needs a skip_class"),
            ({"cases.0.skip_class": "permission"}, "must be null for status 'pass'"),
            ({"summary.pass": 7}, "$.summary.pass: 7, but the cases count 1"),
            ({"summary.crash": DELETE}, "missing required key 'crash'"),
            ({"cases.0.denylisted": True}, "a denylisted case must be a skip, not 'pass'"),
            ({"cases.1.flaky": True}, "a flaky case needs repeats with differing statuses"),
            ({"cases.1.repeats": [{"status": "flaky", "duration_s": 0}]},
             "$.cases[1].repeats[0].status"),
            ({"summary.flaky": 2}, "$.summary.flaky: 2, but the cases count 0"),
            ({"run.jobs": 0}, "$.run.jobs: 0 is less than 1"),
            ({"cases.2.denylist_reason": ""}, "$.cases[2].denylist_reason: shorter than 1"),
        ]
        for overrides, expected in cases:
            with self.subTest(overrides=overrides):
                problems = report.validate_report(minimal_report(**overrides))
                self.assertTrue(any(expected in p for p in problems), problems)

    def test_validator_subset(self):
        s = {"type": "object", "required": ["a"], "additionalProperties": False,
             "properties": {"a": {"type": ["integer", "null"]}}}
        self.assertEqual(schema.validate({"a": None}, s), [])
        self.assertEqual(schema.validate({"a": 1}, s), [])
        self.assertTrue(schema.validate({"a": 1.5}, s))
        self.assertTrue(schema.validate({"a": True}, s))
        self.assertEqual(schema.validate({"a": 1, "b": 2}, s), ["$.b: unexpected key"])
        self.assertEqual(schema.validate([], s), ["$: expected object, got []"])


class LoadReportTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_roundtrip(self):
        doc = minimal_report()
        path = self.write("r.json", json.dumps(doc))
        self.assertEqual(report.load_report(path), doc)

    def test_missing_file(self):
        path = os.path.join(self.dir, "nope.json")
        with self.assertRaises(UsageError) as cm:
            report.load_report(path)
        self.assertIn("does not exist: %s" % path, str(cm.exception))

    def test_not_json(self):
        path = self.write("x.json", "{not json")
        with self.assertRaisesRegex(UsageError, "is not a perftest report: not valid JSON"):
            report.load_report(path)

    def test_other_json(self):
        path = self.write("x.json", json.dumps({"tests": 1, "testsuites": []}))
        with self.assertRaisesRegex(UsageError, "no \"schema_version\""):
            report.load_report(path)

    def test_future_major_version(self):
        path = self.write("x.json", json.dumps(minimal_report(schema_version="2.0")))
        with self.assertRaisesRegex(UsageError, "unsupported schema_version '2.0'"):
            report.load_report(path)

    def test_invalid_report_names_problem(self):
        path = self.write("x.json", json.dumps(minimal_report(**{"cases.0.status": "meh"})))
        with self.assertRaisesRegex(UsageError, r"\$\.cases\[0\]\.status"):
            report.load_report(path)

    def test_write_report(self):
        paths = report.write_report(minimal_report(), self.dir, ("md",))
        self.assertEqual([os.path.basename(p) for p in paths], ["report.json", "report.md"])
        self.assertEqual(report.load_report(paths[0]), minimal_report())

    def test_output_dir_errors(self):
        blocker = self.write("file", "x")
        with self.assertRaises(UsageError) as cm:
            report.check_output_dir(os.path.join(blocker, "sub"))
        self.assertIn(os.path.join(blocker, "sub"), str(cm.exception))
        self.assertIn("Not a directory", str(cm.exception))


class SchemaVersionsTest(unittest.TestCase):
    def test_writes_1_3_reads_1_0(self):
        self.assertEqual(report.SCHEMA_VERSION, "1.3")
        self.assertEqual(report.build_report({}, {}, [])["schema_version"], "1.3")
        path = os.path.join(DATA, "report_1.0_ringbuffer_kernel.json")
        doc = report.load_report(path)
        self.assertEqual(doc["schema_version"], "1.0")
        for fmt in ("md", "html", "junit", "ktap", "json", "text"):
            with self.subTest(fmt=fmt):
                code, out, err = run_main("report", path, "--format=%s" % fmt)
                self.assertEqual(code, 0, err)
                self.assertTrue(out.endswith("\n"))

    def test_new_summary_counts(self):
        doc = mixed_report()
        self.assertEqual(report.validate_report(doc), [])
        s = doc["summary"]
        self.assertEqual((s["flaky"], s["denylisted"], s["xfail"], s["not_run"]), (1, 1, 1, 1))

    def test_strict_before_1_3_fails_every_skip(self):
        """A report without run.expectations (before 1.3) knew no expected skips."""
        doc = mixed_report()
        keep = [c for c in doc["cases"] if c["status"] in ("pass", "skip")]
        doc["cases"], doc["summary"] = keep, report.summarize(keep)
        doc["run"].pop("expectations", None)
        self.assertEqual(report.exit_code(doc, strict=True), 1)
        doc["run"]["expectations"] = []
        for c in keep:
            c.pop("unexpected_skip", None)
        self.assertEqual(report.exit_code(doc, strict=True), 0, "1.3: only undeclared skips fail")
        keep[-1]["status"], keep[-1]["skip_class"], keep[-1]["unexpected_skip"] = "skip", "unsupported", True
        self.assertEqual(report.exit_code(doc, strict=True), 1)

    def test_xfail_does_not_fail_the_run(self):
        doc = mixed_report()
        keep = [c for c in doc["cases"] if c["status"] in ("pass", "skip") or c.get("xfail")]
        doc["cases"], doc["summary"] = keep, report.summarize(keep)
        self.assertEqual(report.exit_code(doc), 0)
        keep[-1]["xfail"] = False
        self.assertEqual(report.exit_code(doc), 1)


class ExitCodeTest(unittest.TestCase):
    def test_codes(self):
        self.assertEqual(report.exit_code(minimal_report()), 1)
        ok = minimal_report(**{"cases.1.status": "pass", "summary.fail": 0, "summary.pass": 2})
        self.assertEqual(report.exit_code(ok), 0)
        self.assertEqual(report.exit_code(ok, strict=True), 1)
        for status in ("error", "timeout", "crash"):
            doc = minimal_report(**{"summary.fail": 0, "summary." + status: 1})
            self.assertEqual(report.exit_code(doc), 1)
        empty = minimal_report(cases=[], summary=report.summarize([]))
        self.assertEqual(report.exit_code(empty), 0)
        self.assertEqual(report.exit_code(empty, strict=True), 1)


class MarkdownTest(unittest.TestCase):
    def test_sections(self):
        md = RENDERERS["md"].render(minimal_report())
        self.assertTrue(md.startswith("# perftest report: ringbuffer (mock backend)\n"))
        for heading in ("## Run", "## Host", "## Summary", "## Suite `ringbuffer`",
                        "## Skips by class", "### permission"):
            self.assertIn(heading, md)
        self.assertIn("| `ringbuffer` | 3 | 1 | 1 | 1 | 0 | 0 | 0 |", md)
        self.assertIn("| FAIL | `ringbuffer.wraparound` | `RingBuffer.Wraps` | "
                      "rb.cc:10 Expected \\| equality | 0.020 s |", md)
        self.assertIn("- `ringbuffer.aux` (`RingBuffer.Aux`): needs CAP_PERFMON", md)
        self.assertIn("requested with --backend=mock", md)
        self.assertIn("cpu (type 4)", md)
        # failing cases come before passes in the suite table
        self.assertLess(md.index("| FAIL |"), md.index("| pass | `ringbuffer.mmap_size_rule`"))

    def test_every_renderer_renders(self):
        for name, r in RENDERERS.items():
            with self.subTest(renderer=name):
                self.assertTrue(r.render(minimal_report()).endswith("\n"))
        self.assertEqual(json.loads(RENDERERS["json"].render(minimal_report())), minimal_report())

    def test_text_summary(self):
        text = RENDERERS["text"].render(minimal_report(), width=100)
        self.assertIn("ringbuffer    3 cases:", text)
        self.assertIn("FAIL     ringbuffer.wraparound", text)
        self.assertIn("SKIP     ringbuffer.aux", text)
        self.assertIn("[permission] needs CAP_PERFMON", text)
        self.assertIn("result: FAILED", text)


if __name__ == "__main__":
    unittest.main()
