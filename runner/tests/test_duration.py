import unittest

from perftest.duration import format_duration, parse_duration
from perftest.errors import UsageError


class ParseDurationTest(unittest.TestCase):
    def test_forms(self):
        self.assertEqual(parse_duration("30"), 30.0)
        self.assertEqual(parse_duration("30s"), 30.0)
        self.assertEqual(parse_duration("2m"), 120.0)
        self.assertEqual(parse_duration("2min"), 120.0)
        self.assertAlmostEqual(parse_duration("500ms"), 0.5)
        self.assertEqual(parse_duration("1h"), 3600.0)
        self.assertEqual(parse_duration("1.5s"), 1.5)
        self.assertEqual(parse_duration(" 10S "), 10.0)

    def test_rejects(self):
        for bad in ("", "abc", "10x", "-5", "0", "0ms", "5 s s", "1e3"):
            with self.subTest(bad=bad):
                with self.assertRaises(UsageError) as cm:
                    parse_duration(bad)
                self.assertIn(repr(bad), str(cm.exception))

    def test_format(self):
        self.assertEqual(format_duration(0.5), "500ms")
        self.assertEqual(format_duration(60), "60s")
        self.assertEqual(format_duration(1.5), "1.5s")


if __name__ == "__main__":
    unittest.main()
