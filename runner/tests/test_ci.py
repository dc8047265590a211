"""ci/: the CI definitions parse (PyYAML, when installed), have the shape
GitHub Actions and GitLab expect, and every ./perftest command in them is
accepted by perftest's own argument parser."""

import glob
import os
import re
import shlex
import unittest

from perftest.cli import build_parser

from .support import REPO

try:
    import yaml
except ImportError:          # test-time only; the runner itself never needs it
    yaml = None

CI = os.path.join(REPO, "ci")
WORKFLOWS = sorted(glob.glob(os.path.join(CI, "github", "*.yml")))
GITLAB = sorted(glob.glob(os.path.join(CI, "gitlab", "*.yml")))


def read(path):
    with open(path) as f:
        return f.read()


def perftest_commands(text, markdown=False):
    """Every './perftest ...' command in a CI file (YAML: script lines, not
    comments; Markdown: indented code lines), with continuation lines and
    folded scalars joined, comments cut, and ${{ }} expressions, $VARS and
    <placeholders> replaced by X."""
    text = re.sub(r"\\\n\s*", " ", text)
    lines = text.splitlines()
    joined = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not markdown and re.search(r":\s*>-?\s*$", line):     # run: >- folded scalar
            indent, parts = None, []
            i += 1
            while i < len(lines) and (not lines[i].strip() or indent is None
                                      or len(lines[i]) - len(lines[i].lstrip()) >= indent):
                if lines[i].strip():
                    indent = indent or len(lines[i]) - len(lines[i].lstrip())
                    parts.append(lines[i].strip())
                i += 1
            joined.append(" ".join(parts))
            continue
        joined.append(line)
        i += 1
    out = []
    for line in joined:
        if line.strip().startswith("#") or (markdown and not line.startswith("    ")):
            continue
        m = re.search(r"\./perftest\s+(.*)", line)
        if not m:
            continue
        args = re.split(r"\s#|\||;|&&|\s>", m.group(1))[0]
        args = re.sub(r"\$\{\{[^}]*\}\}", "X", args)
        args = re.sub(r"\$\{?[A-Za-z_][A-Za-z_0-9]*\}?", "X", args)
        args = re.sub(r"<[^>]*>", "X", args)
        out.append(shlex.split(args))
    return out


class CommandsTest(unittest.TestCase):
    def test_every_perftest_command_parses(self):
        files = WORKFLOWS + GITLAB + [os.path.join(CI, "README.md")]
        seen = 0
        for path in files:
            for argv in perftest_commands(read(path), markdown=path.endswith(".md")):
                with self.subTest(file=os.path.relpath(path, REPO), argv=argv):
                    if argv and argv[0] in ("run", "diff", "doctor", "report", "list"):
                        try:
                            build_parser().parse_args(argv)
                        except SystemExit as e:
                            self.fail("%s: perftest %s: argparse exit %s"
                                      % (path, " ".join(argv), e.code))
                        seen += 1
        self.assertGreaterEqual(seen, 10)


@unittest.skipIf(yaml is None, "PyYAML not installed (test-time only: apt-get install python3-yaml)")
class YamlTest(unittest.TestCase):
    def test_github_workflows(self):
        self.assertEqual([os.path.basename(p) for p in WORKFLOWS],
                         ["bare-metal-intel.yml", "container-mock.yml"])
        for path in WORKFLOWS:
            with self.subTest(path=os.path.basename(path)):
                doc = yaml.safe_load(read(path))
                on = doc.get("on", doc.get(True))         # YAML 1.1 reads "on" as true
                self.assertTrue(on)
                self.assertTrue(doc["name"])
                for name, job in doc["jobs"].items():
                    self.assertIn("runs-on", job)
                    for step in job["steps"]:
                        self.assertTrue("run" in step or "uses" in step, step)
                        if "uses" in step:
                            self.assertRegex(step["uses"], r"^[\w.-]+/[\w.-]+@v\d+$")
                text = read(path)
                self.assertIn("report.junit.xml", text)
                self.assertIn("actions/upload-artifact@v4", text)
                self.assertIn("mikepenz/action-junit-report@v4", text)

    def test_bare_metal_runs_kernel_and_diffs(self):
        doc = yaml.safe_load(read(os.path.join(CI, "github", "bare-metal-intel.yml")))
        job = doc["jobs"]["kernel"]
        self.assertIn("self-hosted", job["runs-on"])
        self.assertIn("intel", job["runs-on"])
        text = read(os.path.join(CI, "github", "bare-metal-intel.yml"))
        self.assertIn("--backend=kernel", text)
        self.assertIn("--expect=auto", text)
        self.assertIn("./perftest diff", text)
        self.assertIn("intel_pt", text)

    def test_container_runs_mock_unprivileged(self):
        doc = yaml.safe_load(read(os.path.join(CI, "github", "container-mock.yml")))
        job = doc["jobs"]["mock"]
        self.assertEqual(job["container"]["image"], "debian:12")
        run = "\n".join(s.get("run", "") for s in job["steps"])
        self.assertIn("runuser -u perftest -- ./perftest run --all --backend=mock", run)
        self.assertIn("--strict --expect=auto", run, "strict against the profile's expectation lists")

    def test_gitlab(self):
        for path in GITLAB:
            doc = yaml.safe_load(read(path))
            jobs = {k: v for k, v in doc.items() if isinstance(v, dict) and "script" in v}
            self.assertEqual(set(jobs), {"perftest:container", "perftest:bare-metal",
                                         "perftest:baseline-diff"})
            for name in ("perftest:container", "perftest:bare-metal"):
                self.assertTrue(jobs[name]["artifacts"]["reports"]["junit"].endswith(
                    "report.junit.xml"))
                self.assertEqual(jobs[name]["artifacts"]["when"], "always")
                self.assertIn(jobs[name]["stage"], doc["stages"])


if __name__ == "__main__":
    unittest.main()
