"""Bench ratios from real Google Benchmark 1.7 JSON (tests/data/gbench_1.7.json)."""

import json
import os
import unittest

from perftest import bench

from .support import DATA, FakeTree


def bm(name, **kw):
    d = {"name": name, "run_name": name, "run_type": "iteration", "repetition_index": 0,
         "real_time": 10.0, "cpu_time": 10.0, "time_unit": "ns"}
    d.update(kw)
    return d


class CompareRealOutputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(DATA, "gbench_1.7.json")) as f:
            cls.benchmarks = json.load(f)["benchmarks"]
        cls.rows = {r["name"]: r for r in bench.compare(cls.benchmarks)}
        cls.by_name = {b["name"]: b for b in cls.benchmarks}

    def test_pairs_by_argument_suffix(self):
        for arg in ("64", "4096"):
            row = self.rows["BM_Copy/%s" % arg]
            self.assertEqual(row["baseline"], "BM_Baseline_Memcpy/%s" % arg)
            expected = (self.by_name["BM_Copy/%s" % arg]["bytes_per_second"] /
                        self.by_name["BM_Baseline_Memcpy/%s" % arg]["bytes_per_second"])
            self.assertAlmostEqual(row["ratio"], expected)
        self.assertAlmostEqual(self.rows["BM_Copy/64"]["ratio"], 0.050054, places=5)

    def test_baselines_and_errors(self):
        self.assertTrue(self.rows["BM_Baseline_Memcpy/64"]["is_baseline"])
        self.assertIsNone(self.rows["BM_Baseline_Memcpy/64"]["ratio"])
        err = self.rows["BM_Err"]
        self.assertEqual(err["error"], "no perf here")
        self.assertIsNone(err["ratio"])          # no suffix-less baseline to pair with

    def test_table(self):
        table = bench.format_table(bench.compare(self.benchmarks))
        lines = table.splitlines()
        self.assertTrue(lines[0].startswith("benchmark"))
        row = next(l for l in lines if l.startswith("BM_Copy/64 "))
        self.assertIn("590.13 MB/s", row)
        self.assertIn("0.050x BM_Baseline_Memcpy/64", row)
        base = next(l for l in lines if l.startswith("BM_Baseline_Memcpy/4096"))
        self.assertIn("56.84 GB/s", base)
        self.assertIn("13.88 M/s", base)
        self.assertTrue(base.endswith("baseline"))
        self.assertIn("ERROR: no perf here", table)


class CountersTest(unittest.TestCase):
    def test_user_counters_follow_the_ratio(self):
        base = bm("BM_Baseline_PerfScript/i100ibe", items_per_second=0.1)
        base.update({"cpu_s": 10.0, "samples": 399173.0})
        x = bm("BM_PtDecode/i100ibe", items_per_second=0.5)
        x.update({"cpu_s": 2.0, "samples": 399173.0})
        rows = bench.compare([base, x])
        self.assertEqual(rows[1]["counters"], {"cpu_s": 2.0, "samples": 399173.0})
        lines = bench.format_table(rows).splitlines()
        self.assertIn("5.000x BM_Baseline_PerfScript/i100ibe  [cpu_s=2 samples=399173]", lines[-1])
        self.assertIn("baseline  [cpu_s=10 samples=399173]", lines[-2])


class RatioRulesTest(unittest.TestCase):
    def test_items_then_time(self):
        base = bm("BM_Baseline", items_per_second=100.0)
        x = bm("BM_X", items_per_second=50.0)
        self.assertEqual(bench.ratio(x, base), 0.5)
        base = bm("BM_Baseline", cpu_time=10.0)
        x = bm("BM_X", cpu_time=40.0)
        self.assertEqual(bench.ratio(x, base), 0.25)
        x = bm("BM_X/real_time", real_time=5.0, cpu_time=100.0)
        base = bm("BM_Baseline/real_time", real_time=10.0, cpu_time=1.0)
        self.assertEqual(bench.ratio(x, base), 2.0)

    def test_time_units(self):
        base = bm("BM_Baseline", cpu_time=1.0, time_unit="us")
        x = bm("BM_X", cpu_time=500.0, time_unit="ns")
        self.assertEqual(bench.ratio(x, base), 2.0)

    def test_suffixless_baseline_is_fallback(self):
        rows = bench.compare([bm("BM_Baseline_Syscall", cpu_time=100.0),
                              bm("BM_Read/8", cpu_time=200.0)])
        self.assertEqual(rows[1]["baseline"], "BM_Baseline_Syscall")
        self.assertEqual(rows[1]["ratio"], 0.5)

    def test_no_baseline(self):
        rows = bench.compare([bm("BM_Baseline/4096"), bm("BM_X/64")])
        self.assertIsNone(rows[1]["baseline"])
        self.assertIn(" -", bench.format_table(rows).splitlines()[-1])

    def test_aggregates_pair_with_same_aggregate(self):
        def agg(name, kind, t):
            return {"name": "%s_%s" % (name, kind), "run_name": name, "run_type": "aggregate",
                    "aggregate_name": kind, "cpu_time": t, "real_time": t, "time_unit": "ns"}
        data = [agg("BM_Baseline/1", "mean", 10.0), agg("BM_Baseline/1", "stddev", 1.0),
                agg("BM_X/1", "mean", 20.0), agg("BM_X/1", "stddev", 3.0)]
        rows = {r["name"]: r for r in bench.compare(data)}
        self.assertEqual(rows["BM_X/1_mean"]["baseline"], "BM_Baseline/1_mean")
        self.assertEqual(rows["BM_X/1_mean"]["ratio"], 0.5)
        self.assertIsNone(rows["BM_X/1_stddev"]["ratio"])

    def test_formats(self):
        self.assertEqual(bench.format_bytes_rate(1.2e10), "12.00 GB/s")
        self.assertEqual(bench.format_bytes_rate(5.9e8), "590.00 MB/s")
        self.assertEqual(bench.format_bytes_rate(None), "-")
        self.assertEqual(bench.format_items_rate(1.5e6), "1.50 M/s")
        self.assertEqual(bench.format_time(1500.0), "1.50 us")


class BenchCommandTest(unittest.TestCase):
    def setUp(self):
        self.tree = FakeTree()

    def tearDown(self):
        self.tree.cleanup()

    def test_runs_binary_with_json_format_and_extra_args(self):
        p = self.tree.perftest("bench", "fake", "--", "--benchmark_filter=Copy")
        # the canned output contains a benchmark that reported an error -> exit 1
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(os.path.join(self.tree.state, "bench_argv.json")) as f:
            self.assertEqual(json.load(f), ["--benchmark_format=json", "--benchmark_filter=Copy"])
        self.assertIn("0.050x BM_Baseline_Memcpy/64", p.stdout)
        self.assertNotIn("Traceback", p.stderr)

    def test_unknown_bench(self):
        p = self.tree.perftest("bench", "nope")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown benchmark 'nope'", p.stderr)
        self.assertIn("known benchmarks: fake", p.stderr)

    def test_bad_output_is_harness_error(self):
        p = self.tree.perftest("bench", "fake", FAKE_BENCH_JSON=os.path.join(DATA, "README.md"))
        self.assertEqual(p.returncode, 3)
        self.assertIn("did not print Google Benchmark JSON", p.stderr)


if __name__ == "__main__":
    unittest.main()
