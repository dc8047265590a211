#!/usr/bin/env python3
"""A fake Google Benchmark binary: prints tests/data/gbench_1.7.json when
given --benchmark_format=json; records its argv in $FAKE_STATE_DIR/bench_argv.json."""

import json
import os
import sys

DATA = os.environ["FAKE_BENCH_JSON"]

if __name__ == "__main__":
    if os.environ.get("FAKE_STATE_DIR"):
        with open(os.path.join(os.environ["FAKE_STATE_DIR"], "bench_argv.json"), "w") as f:
            json.dump(sys.argv[1:], f)
    if "--benchmark_format=json" not in sys.argv:
        print("BM_... (console format)")
        sys.exit(0)
    print("Run on (2 X 2000 MHz CPU s)", file=sys.stderr)
    with open(DATA) as f:
        sys.stdout.write(f.read())
