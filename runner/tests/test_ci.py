"""ci/: the CI definitions parse (PyYAML, when installed: test time only,
python3-yaml in scripts/install-deps), have the shape GitHub Actions and
GitLab expect, and every ./perftest command in them is accepted by
perftest's own argument parser."""

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


COMMANDS = ("run", "diff", "doctor", "report", "list", "matrix")


def all_commands():
    """[(path, argv)] of every ./perftest command in ci/."""
    files = WORKFLOWS + GITLAB + [os.path.join(CI, "README.md")]
    return [(path, argv) for path in files
            for argv in perftest_commands(read(path), markdown=path.endswith(".md"))]


def uses_vm(argv):
    return any(a.startswith(("--vm", "--arch")) for a in argv)


def parser_has_vm():
    """True once `perftest run` has --vm (the guests work: runner/perftest/vm*.py)."""
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    return any("--vm" in a.option_strings for a in run._actions)


class CommandsTest(unittest.TestCase):
    def test_every_perftest_command_parses(self):
        seen = 0
        for path, argv in all_commands():
            if uses_vm(argv) and not parser_has_vm():
                continue                         # test_guest_commands_parse says so
            with self.subTest(file=os.path.relpath(path, REPO), argv=argv):
                if argv and argv[0] in COMMANDS:
                    try:
                        build_parser().parse_args(argv)
                    except SystemExit as e:
                        self.fail("%s: perftest %s: argparse exit %s"
                                  % (path, " ".join(argv), e.code))
                    seen += 1
        self.assertGreaterEqual(seen, 10)

    def test_fleet_commands(self):
        """The fleet workflows run the guests, the mock profiles and bare metal,
        then perftest matrix over what they uploaded."""
        for name in ("github/fleet-matrix.yml", "gitlab/fleet-matrix.gitlab-ci.yml"):
            with self.subTest(file=name):
                argvs = perftest_commands(read(os.path.join(CI, name)))
                firsts = [a[0] for a in argvs]
                self.assertIn("matrix", firsts)
                self.assertTrue(any(uses_vm(a) and "--all" in a for a in argvs))
                self.assertTrue(any("--backend=mock" in a for a in argvs))
                self.assertTrue(any("--backend=kernel" in a and "--taint=fail" in a
                                    for a in argvs))
                matrix = [a for a in argvs if a[0] == "matrix"][0]
                self.assertTrue(any(x.endswith("report.json") for x in matrix[1:]), matrix)

    def test_guest_commands_parse(self):
        guests = [(p, a) for p, a in all_commands() if uses_vm(a)]
        self.assertGreaterEqual(len(guests), 2)
        if not parser_has_vm():
            self.skipTest("perftest run has no --vm yet (the guests work, runner/perftest/vm*.py, "
                          "adds it): %d guest commands in ci/ not checked" % len(guests))
        for path, argv in guests:
            with self.subTest(file=os.path.relpath(path, REPO), argv=argv):
                try:
                    build_parser().parse_args(argv)
                except SystemExit as e:
                    self.fail("%s: perftest %s: argparse exit %s" % (path, " ".join(argv), e.code))


@unittest.skipIf(yaml is None, "PyYAML not installed (test-time only: apt-get install python3-yaml)")
class YamlTest(unittest.TestCase):
    def test_github_workflows(self):
        self.assertEqual([os.path.basename(p) for p in WORKFLOWS],
                         ["bare-metal-intel.yml", "container-mock.yml", "fleet-matrix.yml"])
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

    def test_fleet_github(self):
        doc = yaml.safe_load(read(os.path.join(CI, "github", "fleet-matrix.yml")))
        jobs = doc["jobs"]
        self.assertEqual(set(jobs), {"guest", "mock", "bare-metal", "matrix"})
        include = jobs["guest"]["strategy"]["matrix"]["include"]
        self.assertGreaterEqual({(i["kernel"], i["arch"]) for i in include},
                                {("debian:6.1", "x86_64"), ("debian:6.1", "arm64")})
        self.assertEqual(len({i["id"] for i in include}), len(include))
        profiles = sorted(os.path.basename(p)[:-5]
                          for p in glob.glob(os.path.join(REPO, "fixtures", "profiles", "*.json")))
        self.assertEqual(sorted(jobs["mock"]["strategy"]["matrix"]["profile"]), profiles)
        self.assertIn("self-hosted", jobs["bare-metal"]["runs-on"])
        m = jobs["matrix"]
        self.assertEqual(m["needs"], ["guest", "mock", "bare-metal"])
        self.assertEqual(m["if"], "always()")
        steps = {s.get("uses", "").split("@")[0]: s for s in m["steps"] if "uses" in s}
        self.assertEqual(steps["actions/download-artifact"]["with"]["pattern"],
                         "perftest-report-*")
        run = "\n".join(s.get("run", "") for s in m["steps"])
        self.assertIn('matrix.md >> "$GITHUB_STEP_SUMMARY"', run)
        self.assertIn("perftest-out/matrix", steps["actions/upload-artifact"]["with"]["path"])
        for name in ("guest", "mock", "bare-metal"):
            uploads = [s for s in jobs[name]["steps"]
                       if s.get("uses", "").startswith("actions/upload-artifact")]
            self.assertEqual(len(uploads), 1, name)
            self.assertTrue(uploads[0]["with"]["name"].startswith("perftest-report-"))
            self.assertEqual(uploads[0]["if"], "always()")

    def test_fleet_gitlab(self):
        doc = yaml.safe_load(read(os.path.join(CI, "gitlab", "fleet-matrix.gitlab-ci.yml")))
        jobs = {k: v for k, v in doc.items() if isinstance(v, dict) and "script" in v}
        self.assertEqual(set(jobs), {"perftest:guest", "perftest:mock", "perftest:bare-metal",
                                     "perftest:matrix"})
        guest = jobs["perftest:guest"]["parallel"]["matrix"]
        self.assertIn("debian:6.1", guest[0]["KERNEL"])
        self.assertIn("arm64", guest[0]["ARCH"])
        profiles = sorted(os.path.basename(p)[:-5]
                          for p in glob.glob(os.path.join(REPO, "fixtures", "profiles", "*.json")))
        self.assertEqual(sorted(jobs["perftest:mock"]["parallel"]["matrix"][0]["PROFILE"]),
                         profiles)
        m = jobs["perftest:matrix"]
        self.assertEqual({n["job"] for n in m["needs"]},
                         {"perftest:guest", "perftest:mock", "perftest:bare-metal"})
        self.assertEqual(m["when"], "always")
        self.assertEqual(m["artifacts"]["paths"], ["perftest-matrix/"])
        for name, job in jobs.items():
            self.assertIn(job["stage"], doc["stages"])
            if name != "perftest:matrix":
                self.assertEqual(job["artifacts"]["when"], "always")
                self.assertIn("report.junit.xml", job["artifacts"]["reports"]["junit"])

    def test_gitlab(self):
        for path in [os.path.join(CI, "gitlab", "perftest.gitlab-ci.yml")]:
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
