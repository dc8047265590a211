"""layout: the profile alias table is the one file mocks/profile.cc reads too."""

import os
import unittest
from unittest import mock

from perftest import layout


class ProfileAliasTest(unittest.TestCase):
    def test_aliases_come_from_the_shared_file(self):
        path = os.path.join(layout.repo_root(), "fixtures", "profiles", "aliases.txt")
        self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(layout.profile_aliases().get("software-only"), "sw-only")

    def test_an_alias_loads_its_profile(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("PERFTEST_PROFILES_DIR", None)
            name, path, doc = layout.load_profile("software-only")
        self.assertEqual(name, "software-only")
        self.assertEqual(os.path.basename(path), "sw-only.json")
        self.assertEqual(doc["arch"], "x86_64")


if __name__ == "__main__":
    unittest.main()
