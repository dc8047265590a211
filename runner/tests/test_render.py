"""HTML, JUnit XML and KTAP renderings: structure checked by parsing each
format (XML parser, KTAP grammar, HTML parser, headless Chromium)."""

import copy
import html.parser
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

from perftest import report
from perftest.render import RENDERERS, RUN_FORMATS, html as html_render, junit, ktap

from . import ktap_grammar
from .chromium import CHROMIUM, SKIP_REASON, run_headless
from .png import colours_in
from .support import DATA, mixed_report, minimal_report

REAL_1_0 = os.path.join(DATA, "report_1.0_ringbuffer_kernel.json")
ISO_NO_ZONE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")


def load_real_1_0():
    return report.load_report(REAL_1_0)


class RegistryTest(unittest.TestCase):
    def test_run_writes_every_format(self):
        self.assertEqual(set(RUN_FORMATS), {"md", "html", "junit", "ktap"})
        tmp = tempfile.mkdtemp()
        try:
            paths = report.write_report(mixed_report(), tmp, RUN_FORMATS)
            self.assertEqual(sorted(os.path.basename(p) for p in paths),
                             ["report.html", "report.json", "report.junit.xml", "report.ktap",
                              "report.md"])
        finally:
            shutil.rmtree(tmp)

    def test_every_renderer_accepts_1_0_and_1_1(self):
        for doc in (minimal_report(), mixed_report(), load_real_1_0()):
            for name, r in RENDERERS.items():
                with self.subTest(renderer=name, schema=doc["schema_version"]):
                    self.assertTrue(r.render(copy.deepcopy(doc)).endswith("\n"))


def check_junit(test, text):
    """Structural checks of the dialect GitHub/GitLab/Jenkins read."""
    test.assertTrue(text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n'))
    root = ET.fromstring(text.encode("utf-8"))
    test.assertEqual(root.tag, "testsuites")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for ts in root:
        test.assertEqual(ts.tag, "testsuite")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for child in ts:
            if child.tag == "properties":
                for p in child:
                    test.assertEqual(p.tag, "property")
                    test.assertTrue(p.get("name") and p.get("value") is not None)
                continue
            test.assertEqual(child.tag, "testcase")
            test.assertEqual(child.get("classname"), ts.get("name"))
            test.assertTrue(child.get("name"))
            float(child.get("time"))
            counts["tests"] += 1
            outcomes = [e for e in child if e.tag in ("failure", "error", "skipped")]
            test.assertLessEqual(len(outcomes), 1, child.get("name"))
            for e in outcomes:
                key = {"failure": "failures", "error": "errors", "skipped": "skipped"}[e.tag]
                counts[key] += 1
                test.assertTrue(e.get("message"), ET.tostring(e))
                if e.tag != "skipped":
                    test.assertTrue(e.get("type"))
            for e in child:
                test.assertIn(e.tag, ("failure", "error", "skipped", "system-out", "system-err"))
        for k, v in counts.items():
            test.assertEqual(int(ts.get(k)), v, "%s %s" % (ts.get("name"), k))
            totals[k] += v
        float(ts.get("time"))
        if ts.get("timestamp"):
            test.assertRegex(ts.get("timestamp"), ISO_NO_ZONE)
    for k, v in totals.items():
        test.assertEqual(int(root.get(k)), v, k)
    return root


class JUnitTest(unittest.TestCase):
    def test_mixed(self):
        root = check_junit(self, junit.render(mixed_report()))
        self.assertEqual([ts.get("name") for ts in root], ["ringbuffer", "groups"])
        cases = {tc.get("name"): tc for tc in root.iter("testcase")}
        self.assertEqual(cases["ringbuffer.mmap_size_rule"].get("classname"), "ringbuffer")
        self.assertEqual(len(list(cases["ringbuffer.mmap_size_rule"])), 1)   # system-out only
        fail = cases["ringbuffer.wraparound"].find("failure")
        self.assertEqual(fail.get("type"), "fail")
        self.assertIn('a <b> & "c"', fail.text)          # escaped and parsed back
        self.assertIn("\ufffd\ufffdbad", fail.text)          # NUL, BEL replaced
        self.assertEqual(fail.get("message"), 'rb.cc:10 Expected equality of these values: '
                                              'a <b> & "c" \ufffd\ufffdbad')
        self.assertEqual(cases["ringbuffer.hang"].find("error").get("type"), "timeout")
        self.assertEqual(cases["RingBuffer.Crash"].find("error").get("type"), "crash")
        self.assertEqual(cases["ringbuffer.err"].find("error").get("type"), "error")
        self.assertEqual(cases["ringbuffer.aux"].find("skipped").get("message"),
                         "[permission] needs CAP_PERFMON # or paranoid <= 0")
        self.assertIn("[denylisted]", cases["groups.denied"].find("skipped").get("message"))
        self.assertTrue(cases["groups.known"].find("skipped").get("message").startswith(
            "expected failure (documented divergence): fail:"))
        self.assertIsNotNone(cases["groups.later"].find("skipped"))
        out = cases["groups.flaky"].find("system-out").text
        self.assertIn("repeats: pass, fail (flaky)", out)
        self.assertIn("log: logs/ringbuffer/RingBuffer.Hang.log",
                      cases["ringbuffer.hang"].find("system-out").text)
        self.assertEqual((root.get("tests"), root.get("failures"), root.get("errors"),
                          root.get("skipped")), ("10", "2", "3", "4"))
        props = {p.get("name"): p.get("value") for p in root.find("testsuite").iter("property")}
        self.assertEqual(props["backend"], "mock")
        self.assertEqual(props["kernel_release"], "6.1.0")

    def test_real_1_0_report(self):
        root = check_junit(self, junit.render(load_real_1_0()))
        self.assertEqual(root.get("tests"), "16")
        self.assertEqual(root.get("failures"), "0")


class KtapTest(unittest.TestCase):
    def test_mixed_parses_per_grammar(self):
        text = ktap.render(mixed_report())
        root = ktap_grammar.parse(text)
        self.assertEqual(root.plan, 2)
        rb, groups = root.children
        self.assertEqual((rb.description, rb.ok), ("ringbuffer", False))
        self.assertEqual(rb.plan, 6)
        by = {c.description: c for c in rb.children + groups.children}
        self.assertEqual((by["ringbuffer.mmap_size_rule"].ok, by["ringbuffer.mmap_size_rule"].directive),
                         (True, ""))
        wrap = by["ringbuffer.wraparound"]
        self.assertFalse(wrap.ok)
        self.assertEqual(wrap.diagnostics[:2], ["rb.cc:10", "Expected equality of these values:"])
        aux = by["ringbuffer.aux"]
        self.assertEqual((aux.ok, aux.directive), (True, "SKIP"))
        self.assertTrue(aux.data.startswith("[permission] needs CAP_PERFMON # or"))
        self.assertEqual((by["ringbuffer.hang"].ok, by["ringbuffer.hang"].directive),
                         (False, "TIMEOUT"))
        self.assertEqual(by["RingBuffer.Crash"].directive, "ERROR")
        self.assertTrue(by["RingBuffer.Crash"].data.startswith("crash: killed by SIGSEGV"))
        self.assertEqual(by["ringbuffer.err"].directive, "ERROR")
        self.assertEqual((by["groups.known"].ok, by["groups.known"].directive), (True, "XFAIL"))
        self.assertIn("expected: documented divergence", by["groups.known"].data)
        self.assertEqual(by["groups.denied"].directive, "SKIP")
        self.assertEqual(by["groups.later"].directive, "SKIP")
        self.assertEqual([c.number for c in groups.children], [1, 2, 3, 4])
        self.assertFalse(groups.ok)         # the flaky case failed
        self.assertTrue(text.rstrip("\n").endswith(
            "# Totals: pass:1 fail:2 xfail:1 xpass:0 skip:3 error:3"))

    def test_suite_results_bubble_up(self):
        doc = mixed_report()
        doc["cases"] = [c for c in doc["cases"]
                        if c["status"] in ("pass", "skip") or c.get("xfail")]
        doc["summary"] = report.summarize(doc["cases"])
        root = ktap_grammar.parse(ktap.render(doc))
        rb, groups = root.children
        self.assertEqual((rb.ok, rb.directive), (True, ""))
        self.assertEqual((groups.ok, groups.directive), (True, ""))   # xfail does not fail it
        only_skips = minimal_report()
        only_skips["cases"] = [only_skips["cases"][2]]
        only_skips["summary"] = report.summarize(only_skips["cases"])
        root = ktap_grammar.parse(ktap.render(only_skips))
        self.assertEqual((root.children[0].ok, root.children[0].directive), (True, "SKIP"))
        empty = minimal_report(cases=[], summary=report.summarize([]))
        root = ktap_grammar.parse(ktap.render(empty))
        self.assertEqual((root.children[0].plan, root.children[0].directive), (0, "SKIP"))

    def test_real_1_0_report(self):
        root = ktap_grammar.parse(ktap.render(load_real_1_0()))
        self.assertEqual(root.children[0].plan, 16)
        self.assertTrue(all(c.ok and not c.directive for c in root.children[0].children))

    def test_grammar_checker_rejects_violations(self):
        good = "KTAP version 1\n1..1\n  KTAP version 1\n  1..1\n  not ok 1 a\nnot ok 1 s\n"
        ktap_grammar.parse(good)
        bad = {
            "no version": "1..1\nok 1 a\n",
            "plan mismatch": "KTAP version 1\n1..2\nok 1 a\n",
            "numbering": "KTAP version 1\n1..2\nok 1 a\nok 3 b\n",
            "indent 4": "KTAP version 1\n1..1\n    KTAP version 1\n    1..0\nok 1 s\n",
            "parent ok": "KTAP version 1\n1..1\n  KTAP version 1\n  1..1\n  not ok 1 a\nok 1 s\n",
            "timeout ok": "KTAP version 1\n1..1\nok 1 a # TIMEOUT 3s\n",
            "garbage": "KTAP version 1\n1..1\nhello\nok 1 a\n",
            "no newline": "KTAP version 1\n1..0",
        }
        for what, text in bad.items():
            with self.subTest(what):
                with self.assertRaises(ktap_grammar.KtapError):
                    ktap_grammar.parse(text)


class _HtmlStructure(html.parser.HTMLParser):
    """Collects tags, external references and the text of the page."""

    VOID = {"meta", "input", "br", "img", "link", "rect", "path", "hr"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.external, self.rows = [], [], [], []
        self.text = []
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            v = a.get(key)
            if v and re.match(r"^(https?:)?//", v):
                self.external.append(v)
        if tag == "link" and a.get("rel") == "stylesheet":
            self.external.append(a.get("href"))
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "tr" and "data-status" in a:
            self.rows.append(a["data-status"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("unbalanced </%s> (open: %s)" % (tag, self.stack[-3:]))
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse_html(text):
    p = _HtmlStructure()
    p.feed(text)
    p.close()
    return p


class HtmlTest(unittest.TestCase):
    def test_self_contained_and_balanced(self):
        text = html_render.render(mixed_report())
        self.assertTrue(text.startswith("<!DOCTYPE html>"))
        p = parse_html(text)
        self.assertEqual(p.errors, [])
        self.assertEqual(p.stack, [])
        self.assertEqual(p.external, [])
        self.assertIn("<svg", text)
        self.assertIn("<script>", text)
        self.assertEqual(len(p.rows), 10)
        self.assertEqual(sorted(set(p.rows)),
                         ["crash", "error", "fail", "not_run", "pass", "skip", "timeout"])

    def test_content(self):
        text = html_render.render(mixed_report())
        body = "".join(parse_html(text).text)
        self.assertIn("perftest report: ringbuffer, groups (mock backend)", body)
        self.assertIn("FAILED", body)
        self.assertIn('a <b> & "c"', body)                 # escaped, then unescaped by the parser
        self.assertNotIn('a <b> & "c"', text)              # never raw in the markup
        self.assertIn("a &lt;b&gt; &amp; &quot;c&quot;", text)
        for needle in ("Suite ringbuffer", "Suite groups", "flaky: pass, fail", "denylisted",
                       "deny list: known kernel bug", "expected to fail", "Statuses by suite",
                       "kernel command line"):
            self.assertIn(needle, body)
        self.assertIn('href="logs/ringbuffer/RingBuffer.Hang.log"', text)
        # one bar segment per status present, with a tooltip
        self.assertIn("<title>ringbuffer: 1 timeout</title>", text)
        self.assertIn("<title>groups: 1 not run</title>", text)

    def test_failing_rows_first(self):
        p = parse_html(html_render.render(mixed_report()))
        first_suite = p.rows[:6]
        self.assertEqual(first_suite[0], "fail")
        self.assertEqual(first_suite[-1], "pass")

    def test_real_1_0_report(self):
        p = parse_html(html_render.render(load_real_1_0()))
        self.assertEqual(p.errors, [])
        self.assertEqual(p.rows, ["pass"] * 16)
        self.assertIn("PASSED", "".join(p.text))


@unittest.skipUnless(CHROMIUM, SKIP_REASON)
class HtmlInChromiumTest(unittest.TestCase):
    """The page as a browser shows it: the script runs, the summary is drawn."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="perftest-html-")
        cls.page = os.path.join(cls.dir, "report.html")
        with open(cls.page, "w", encoding="utf-8") as f:
            f.write(html_render.render(mixed_report()))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def chromium(self, *args):
        return run_headless(self.page, os.path.join(self.dir, "profile"), *args)

    def test_script_runs(self):
        p = self.chromium("--dump-dom")
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertIn("10 of 10 cases shown", p.stdout)
        self.assertRegex(p.stdout, r'<html lang="en" class="[^"]*\bjs\b')

    def test_screenshot_shows_summary(self):
        png = os.path.join(self.dir, "shot.png")
        p = self.chromium("--screenshot=%s" % png, "--window-size=1000,320",
                          "--force-device-scale-factor=1")
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        # The top of the page holds the verdict and the summary cards: the
        # pass, fail and skip colours must be drawn there.
        seen = colours_in(png, 0, 320, 0, 1000)
        for status in ("pass", "fail", "skip", "crash", "timeout"):
            rgb = tuple(int(html_render.STATUS_STYLE[status][1][i:i + 2], 16) for i in (1, 3, 5))
            self.assertIn(rgb, seen, "%s colour %s not in the screenshot's summary" % (status, rgb))


if __name__ == "__main__":
    unittest.main()
