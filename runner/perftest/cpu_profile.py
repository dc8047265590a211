"""`perftest profile ARGS`: the bcc-style CPU profiler (tools/profile).

Forwards ARGS unchanged to <build>/bin/perftest_profile (profile.py's
interface: [-p PID | -u | -k] [-U | -K] [-F HZ] [-d] [-f]
[--stack-storage-size N] [--backend=kernel|mock [--profile=P]]
[--mode=ring|bpf] [--format=bcc|folded|svg] [duration]) and passes its
output and exit code through (0 ok, 1 the kernel refused, 2 bad arguments).
Ctrl-C goes to the tool, which then prints what it has collected, as
profile.py does.
"""

import os
import signal
import subprocess

from . import layout
from .errors import UsageError

BINARY = "perftest_profile"


def profiler_path():
    """Path of perftest_profile; UsageError when it is not built."""
    path = os.path.join(layout.bin_dir(), BINARY)
    if not os.path.isfile(path):
        raise UsageError("`perftest profile` needs %s, which is not built (%s; it also needs "
                         "libdw-dev, see scripts/install-deps)" % (path, layout.BUILD_HINT))
    if not os.access(path, os.X_OK):
        raise UsageError("%s is not executable" % path)
    return path


def run_profile(args):
    """Runs the profiler with `args`; returns its exit code (128+N when killed by signal N)."""
    proc = subprocess.Popen([profiler_path()] + list(args))
    # The terminal's SIGINT reaches the tool too (same process group); the
    # runner only waits, so the profile the tool prints on Ctrl-C is not cut.
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        rc = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)
    return 128 - rc if rc < 0 else rc
