"""perftest runner: runs the perf_event conformance suites and writes reports.

The package is driven by the ``./perftest`` launcher at the repository root
(``perftest.cli.main``). Modules, one concept each:

  errors    the exception root (PerftestError) and the exit codes
  layout    where things are: repo, build tree, suite/bench binaries, profiles
  duration  "30", "30s", "2m", "500ms" -> seconds
  procs     run a command in its own process group with a timeout
  gtest     GoogleTest 1.12 JSON output -> one case's status
  suite     the protocol with a suite binary (--perftest_list/_probe, one case)
  host      facts about this machine for the report's "host" block
  schema    a small JSON Schema subset validator (stdlib only)
  report    the report document: build, summarize, validate, load, write
  render    renderer registry: md, html, junit, ktap, json, text
  expectations  expectation lists: per case, with a reason: not run, expected to
            fail, expected to skip, retried (timing-sensitive kernel cases)
  progress  run's progress output: terminal status line or plain lines
  run       the "run" command: choose the backend, run cases, write the report
  diff      the "diff" command: the porting check between two reports
  doctor    the "doctor" command: what this machine allows, and why
  bench     the "bench" command: Google Benchmark JSON -> ratios to baseline
  cli       argparse entry point
"""

__version__ = "0.2.0"
