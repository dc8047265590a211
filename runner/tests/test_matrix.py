"""perftest matrix: reports of different versions and case sets merged into
one matrix; bad input; the JSON round-trip; the Markdown and the HTML page
(parsed, then shown in headless Chromium with a screenshot)."""

import copy
import html.parser
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from perftest import health, matrix, report
from perftest.errors import UsageError
from perftest.render import matrix_html, matrix_md

from .chromium import CHROMIUM, SKIP_REASON, run_headless
from .png import colours_in
from .support import LAUNCHER, minimal_report, run_main
from .test_health import WARN_LINES


def _case(suite, name, feature, status, skip_class=None, reason="", **extra):
    c = {"suite": suite, "name": name, "feature": feature, "spec": "spec of %s" % name,
         "status": status, "skip_class": skip_class, "reason": reason, "duration_s": 0.01}
    c.update(extra)
    return c


def reports():
    """Three reports: a 1.0 mock report, a 1.2 kernel report on another
    kernel and arch with a different case set and a case that tainted the
    kernel, and a 1.1 mock report of another profile."""
    a = minimal_report()                                  # 1.0, mock software-only, 6.1.0
    b = minimal_report()
    b["schema_version"] = "1.2"
    b["run"].update(backend="kernel", profile=None, suites=["ringbuffer", "groups"])
    b["host"].update(kernel_release="6.8.0-arm", arch="aarch64", cpu_model="Neoverse-N1")
    b["cases"] = [
        _case("ringbuffer", "RingBuffer.MmapSizeRule", "ringbuffer.mmap_size_rule", "pass",
              health=health.case_health(0, 512, WARN_LINES)),
        _case("ringbuffer", "RingBuffer.Wraps", "ringbuffer.wraparound", "pass",
              health=health.case_health(512, 512, "")),
        _case("groups", "Groups.Leader", "groups.leader", "timeout",
              reason="timed out after 60s", health=health.case_health(512, 512, "")),
    ]
    b["summary"] = report.summarize(b["cases"])
    b["health"] = health.run_health("warn", 0, 512, {"log_readable": True}, b["cases"])
    c = copy.deepcopy(a)
    c["schema_version"] = "1.1"
    c["run"]["profile"] = "arm64-pmuv3"
    c["cases"][1].update(status="pass", reason="")
    c["summary"] = report.summarize(c["cases"])
    b["run"]["vm"] = {"kernel": "debian:6.8", "arch": "arm64"}     # as perftest run --vm writes
    b["host"]["vm"] = {"accel": "tcg", "qemu": "qemu-system-aarch64"}
    for doc in (a, b, c):
        assert report.validate_report(doc) == [], report.validate_report(doc)
    return [("a/report.json", a), ("b/report.json", b), ("c/report.json", c)]


class BuildTest(unittest.TestCase):
    def test_rows_columns_and_missing_cells(self):
        m = matrix.build(reports(), generated="2026-01-01T00:00:00Z")
        self.assertEqual(validate(m), [])
        self.assertEqual([c["label"] for c in m["columns"]],
                         ["mock software-only", "guest debian:6.8 (tcg)", "mock arm64-pmuv3"])
        self.assertEqual(m["columns"][1]["guest"], {"kernel": "debian:6.8", "accel": "tcg"})
        self.assertIsNone(m["columns"][0]["guest"])
        self.assertEqual(m["suites"], ["ringbuffer", "groups"])
        rows = {r["feature"]: r for r in m["rows"]}
        self.assertEqual([r["feature"] for r in m["rows"]],
                         ["ringbuffer.aux", "ringbuffer.mmap_size_rule", "ringbuffer.wraparound",
                          "groups.leader"])
        self.assertEqual([c["status"] for c in rows["ringbuffer.aux"]["cells"]],
                         ["skip", "missing", "skip"])
        self.assertEqual(rows["ringbuffer.aux"]["cells"][0]["skip_class"], "permission")
        self.assertEqual([c["status"] for c in rows["groups.leader"]["cells"]],
                         ["missing", "timeout", "missing"])
        self.assertEqual([c["status"] for c in rows["ringbuffer.wraparound"]["cells"]],
                         ["fail", "pass", "pass"])
        self.assertTrue(rows["ringbuffer.wraparound"]["differs"])
        self.assertTrue(rows["ringbuffer.aux"]["differs"])           # missing in one
        self.assertFalse(rows["ringbuffer.mmap_size_rule"]["differs"])
        tainted = rows["ringbuffer.mmap_size_rule"]["cells"][1]
        self.assertEqual((tainted["health"], tainted["new_taint"]), ("tainted", "W"))
        self.assertIn("WARNING: CPU: 1 PID: 4242", tainted["kernel_log"][0])
        self.assertTrue(rows["ringbuffer.mmap_size_rule"]["flagged"])
        self.assertIsNone(m["columns"][0]["health"])                   # 1.0: not checked
        self.assertFalse(m["columns"][1]["health"]["healthy"])
        self.assertEqual(m["counts"]["cells"]["missing"], 3)
        self.assertEqual((m["counts"]["rows_differing"], m["counts"]["rows_flagged"]), (3, 1))

    def test_duplicate_feature_in_one_report_is_told_apart(self):
        (path, doc), = reports()[:1]
        doc["cases"].append(dict(doc["cases"][0], name="RingBuffer.Other", status="fail",
                                 reason="x"))
        doc["summary"] = report.summarize(doc["cases"])
        m = matrix.build([(path, doc)])
        names = [r["feature"] for r in m["rows"]]
        self.assertIn("ringbuffer.mmap_size_rule (RingBuffer.Other)", names)
        self.assertIn("ringbuffer.mmap_size_rule (RingBuffer.MmapSizeRule)", names)


def validate(m):
    return matrix.validate_matrix(m)


class CommandTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perftest-matrix-")
        self.paths = []
        for rel, doc in reports():
            path = os.path.join(self.dir, rel)
            os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                json.dump(doc, f)
            self.paths.append(path)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_writes_three_renderings_that_round_trip(self):
        out = os.path.join(self.dir, "m")
        # a directory stands for its report.json
        code, stdout, stderr = run_main("matrix", self.paths[0], os.path.dirname(self.paths[1]),
                                        self.paths[2], "--output=%s" % out)
        self.assertEqual(code, 0, stderr)
        self.assertIn("matrix: 4 behaviours x 3 columns; 3 rows differ", stdout)
        self.assertIn("kernel NOT healthy (1 case flagged)", stdout)
        self.assertEqual(sorted(os.listdir(out)), ["matrix.html", "matrix.json", "matrix.md"])
        with open(os.path.join(out, "matrix.json")) as f:
            text = f.read()
        loaded = matrix.load_matrix(os.path.join(out, "matrix.json"))
        self.assertEqual(matrix.to_json(loaded), text)
        self.assertEqual(loaded["columns"][1]["source"], self.paths[1])
        for fmt, name in (("md", "matrix.md"), ("html", "matrix.html")):
            with open(os.path.join(out, name)) as f:
                self.assertEqual(matrix.render(loaded, fmt), f.read(), name)
        broken = dict(loaded, rows=[dict(loaded["rows"][0], cells=[])])
        self.assertIn("$.rows[0].cells: 0 cells for 3 columns", validate(broken))

    def test_bad_input_is_exit_2(self):
        code, _, err = run_main("matrix")
        self.assertEqual(code, 2)
        self.assertIn("perftest matrix needs at least one report", err)

        not_report = os.path.join(self.dir, "notes.json")
        with open(not_report, "w") as f:
            json.dump({"hello": 1}, f)
        code, _, err = run_main("matrix", self.paths[0], not_report,
                                "--output=%s" % os.path.join(self.dir, "x"))
        self.assertEqual(code, 2)
        self.assertIn("%s is not a perftest report" % not_report, err)

        code, _, err = run_main("matrix", self.paths[0], os.path.join(self.dir, "nowhere"))
        self.assertEqual(code, 2)
        self.assertIn("report file does not exist: %s" % os.path.join(self.dir, "nowhere"), err)

        twin = os.path.join(self.dir, "twin.json")
        shutil.copy(self.paths[0], twin)
        code, _, err = run_main("matrix", self.paths[0], self.paths[1], twin)
        self.assertEqual(code, 2)
        self.assertIn("%s and %s have the same column identity (mock profile software-only, "
                      "kernel 6.1.0, x86_64, CPU Some CPU)" % (self.paths[0], twin), err)

    def test_launcher(self):
        out = os.path.join(self.dir, "m2")
        p = subprocess.run([LAUNCHER, "matrix"] + self.paths + ["--output=%s" % out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "matrix.html")))


class SchemaDocTest(unittest.TestCase):
    def test_schema_md_documents_every_matrix_key(self):
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "SCHEMA.md")) as f:
            text = f.read().split("## Matrix", 1)[1]
        s = matrix.matrix_schema()
        keys = set(s["properties"]) | set(s["properties"]["counts"]["properties"])
        for d in s["$defs"].values():
            keys |= set(d["properties"])
        keys |= set(s["$defs"]["column"]["properties"]["health"]["properties"])
        for k in sorted(keys):
            self.assertTrue("`%s`" % k in text or '"%s"' % k in text,
                            "SCHEMA.md, Matrix, does not document %r" % k)


class MarkdownTest(unittest.TestCase):
    def test_tables_and_reasons(self):
        text = matrix_md.render(matrix.build(reports(), generated="2026-01-01T00:00:00Z"))
        self.assertIn("**3 reports × 4 behaviours in 2 suites: 3 rows differ between reports, "
                      "3 missing cells; kernel health: 1 report NOT healthy.**", text)
        self.assertIn("| `ringbuffer.aux` | ⏭️ permission | — | ⏭️ permission |", text)
        self.assertIn("| `ringbuffer.mmap_size_rule` | ✅ | ✅ ☢️ tainted W | ✅ |", text)
        self.assertIn("| `groups.leader` | — | ⏱️ timeout | — |", text)
        self.assertIn("not checked (report before schema 1.2)", text)
        self.assertIn("☢️ NOT healthy: 1 case flagged, new taint W", text)
        self.assertIn("- `ringbuffer.wraparound` c1 ❌ fail: rb.cc:10 Expected \\| equality", text)
        self.assertIn("kernel log: WARNING: CPU: 1 PID: 4242", text)


class _Page(html.parser.HTMLParser):
    VOID = {"meta", "br", "input", "link", "img"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.external, self.cells = [], [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "link", "img") and (a.get("src") or a.get("href")):
            self.external.append(tag)
        if tag == "td" and "cell" in (a.get("class") or ""):
            self.cells.append(a["data-status"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unexpected </%s>, open: %s" % (tag, self.stack[-3:]))
        else:
            self.stack.pop()


class HtmlTest(unittest.TestCase):
    def test_self_contained_grid(self):
        text = matrix_html.render(matrix.build(reports()))
        p = _Page()
        p.feed(text)
        self.assertEqual((p.errors, p.stack, p.external), ([], [], []))
        self.assertEqual(len(p.cells), 12)
        self.assertEqual(p.cells.count("missing"), 3)
        for needle in ('<select id="suite">', 'id="differs"', 'id="flagged"', 'data-col="2"',
                       'class="detail"', "☢ kernel NOT healthy: 1 case flagged, new taint W",
                       "kernel health not checked (schema 1.0)", "this report has no such case",
                       "☢ WARNING: CPU: 1 PID: 4242"):
            self.assertIn(needle, text)


def _rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


@unittest.skipUnless(CHROMIUM, SKIP_REASON)
class HtmlInChromiumTest(unittest.TestCase):
    """The matrix page as a browser shows it: the script runs, the grid is
    drawn in its colours with the kernel health flag visible."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="perftest-matrix-html-")
        cls.page = os.path.join(cls.dir, "matrix.html")
        with open(cls.page, "w", encoding="utf-8") as f:
            f.write(matrix_html.render(matrix.build(reports())))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def chromium(self, *args):
        return run_headless(self.page, os.path.join(self.dir, "profile"), *args)

    def test_script_runs(self):
        p = self.chromium("--dump-dom")
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertIn("4 of 4 behaviours shown", p.stdout)
        self.assertRegex(p.stdout, r'<html lang="en" class="[^"]*\bjs\b')

    def test_screenshot_shows_the_grid(self):
        png = os.path.join(self.dir, "shot.png")
        p = self.chromium("--screenshot=%s" % png, "--window-size=900,760",
                          "--force-device-scale-factor=1")
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        seen = colours_in(png, 0, 760, 0, 900)
        wanted = {"pass cell": (0xd3, 0xf3, 0xdb), "fail": _rgb(matrix_html.STYLE["fail"][1]),
                  "skip": _rgb(matrix_html.STYLE["skip"][1]),
                  "timeout": _rgb(matrix_html.STYLE["timeout"][1]),
                  "missing hatch": (0xea, 0xee, 0xf2),
                  "kernel health flag": _rgb(matrix_html.HEALTH_COLOUR)}
        for what, rgb in wanted.items():
            self.assertIn(rgb, seen, "%s colour %s not in the screenshot" % (what, rgb))


if __name__ == "__main__":
    unittest.main()
