"""Ids name one thing each: feature ids are unique across the suites,
divergence ids do not take another case's feature id, fidelity's known
disagreements live under "fidelity.", and every expectation list entry
matches a case (a typo or a removed case would otherwise leave a line that
declares nothing). Read from the sources, so no build is needed.
See ci/expectations/README.md, "How this relates"."""

import fnmatch
import glob
import os
import re
import unittest

from perftest import expectations

from .support import REPO

CASE_RE = re.compile(r'PERFTEST_CASE\(\s*(\w+)\s*,\s*(\w+)\s*,\s*"([^"]+)"')
DIVERGENCE_RE = re.compile(r'RecordDivergence\(\s*"([^"]+)"')
FIDELITY_ID_RE = re.compile(r'^\s*\{"([^"]+)",\s*$', re.M)


def suite_cases():
    """[(file, test name, feature id, source offset)] of every PERFTEST_CASE."""
    out = []
    for path in sorted(glob.glob(os.path.join(REPO, "suites", "*", "*_test.cc"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in CASE_RE.finditer(text):
            out.append((path, "%s.%s" % (m.group(1), m.group(2)), m.group(3), m.start()))
    return out


class IdsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cases = suite_cases()

    def test_sources_found(self):
        self.assertGreater(len(self.cases), 300, "PERFTEST_CASE not found: did the macro change?")

    def test_feature_ids_are_unique(self):
        seen = {}
        for path, test, feature, _ in self.cases:
            with self.subTest(feature=feature):
                self.assertNotIn(feature, seen, "%s (%s) and %s (%s)"
                                 % (test, os.path.relpath(path, REPO), *seen.get(feature, ("", ""))))
                seen[feature] = (test, os.path.relpath(path, REPO))
                self.assertRegex(feature, r"^[a-z0-9_]+\.[a-z0-9_]+$")
                self.assertFalse(feature.startswith("fidelity."))

    def test_divergence_ids(self):
        features = {c[2] for c in self.cases}
        seen = set()
        for path in sorted(glob.glob(os.path.join(REPO, "suites", "*", "*_test.cc"))):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            starts = [(c[3], c[2]) for c in self.cases if c[0] == path]
            for m in DIVERGENCE_RE.finditer(text):
                div = m.group(1)
                enclosing = [feature for at, feature in starts if at < m.start()][-1]
                with self.subTest(divergence=div):
                    self.assertNotIn(div, seen, "a divergence id recorded twice")
                    seen.add(div)
                    if div in features:
                        self.assertEqual(div, enclosing, "a divergence id that is another case's "
                                                         "feature id names two things")

    def test_fidelity_ids_have_their_namespace(self):
        with open(os.path.join(REPO, "fidelity", "known_disagreements.cc"), encoding="utf-8") as f:
            ids = FIDELITY_ID_RE.findall(f.read())
        self.assertTrue(ids, "no ids found in fidelity/known_disagreements.cc")
        self.assertEqual(len(ids), len(set(ids)))
        for i in ids:
            self.assertRegex(i, r"^fidelity\.[a-z0-9_]+$")

    def test_every_expectation_entry_matches_a_case(self):
        names = [(c[1], c[2]) for c in self.cases]
        paths = sorted(glob.glob(os.path.join(REPO, "ci", "expectations", "*.txt")))
        self.assertTrue(paths)
        for path in paths:
            for e in expectations.load(path).entries:
                with self.subTest(entry=e.source):
                    self.assertTrue(any(fnmatch.fnmatchcase(t, e.pattern) or fnmatch.fnmatchcase(f, e.pattern)
                                        for t, f in names),
                                    "%s: %r matches no case" % (e.source, e.pattern))


if __name__ == "__main__":
    unittest.main()
