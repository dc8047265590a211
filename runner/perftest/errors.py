"""The one exception root of the runner, and the process exit codes.

Every error the runner reports to a user is a PerftestError (or subclass)
carrying the exit code the CLI returns; ``cli.main`` prints its message
without a traceback.

Exit codes (also in ``perftest --help`` and runner/README.md):
  0    every case passed (skips allowed unless --strict); diff: no regression
  1    some case failed, errored, timed out or crashed (or skipped, --strict);
       diff: a regression
  2    bad usage or bad input (unknown suite/profile/backend/format, bad
       --output, missing suite binary, a file that is not a valid perftest
       report, a bad deny list)
  3    harness error (a binary that cannot be run, listing/probe failed)
  130  interrupted by SIGINT (Ctrl-C); 143 for SIGTERM. A partial report
       is written first.
"""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_HARNESS = 3
EXIT_INTERRUPTED = 130


class PerftestError(Exception):
    """Root of every runner error. ``exit_code`` is what the CLI returns."""

    exit_code = EXIT_HARNESS


class UsageError(PerftestError):
    """Bad usage or bad input: the message names what was wrong. Exit 2."""

    exit_code = EXIT_USAGE


class HarnessError(PerftestError):
    """The harness itself failed (a binary could not run, bad protocol). Exit 3."""

    exit_code = EXIT_HARNESS


class Interrupted(PerftestError):
    """The run was stopped by a signal (SIGINT or SIGTERM). Exit 128+signum."""

    def __init__(self, signum):
        import signal as _signal

        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__("interrupted by %s" % _signal.Signals(signum).name)
