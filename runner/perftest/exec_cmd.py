"""`perftest exec [OPTIONS] -- PROG [ARGS]`: an unmodified program with its
perf_event_open(2), the calls on its perf fds and the perf prctls served by
the mock (tools/exec, <build>/bin/perftest_exec).

Options (passed through): --profile=NAME|PATH (default: this arch's profile,
x86_64-intel on x86_64), --log=FILE (every served call, '-' for stderr),
--inject=CALL:ERRNO[@N] (repeatable), --intercept=auto|seccomp|syscall,
--no-sysfs-view. The runner replaces itself with the tool (execv), so
signals reach it directly and its exit status is PROG's: 128+N when signal
N killed PROG; 2 bad usage; 125 PROG could not be started; 127 PROG not
found.
"""

import os

from . import layout
from .errors import UsageError

BINARY = "perftest_exec"


def exec_path():
    """Path of perftest_exec; UsageError when it is not built."""
    path = os.path.join(layout.bin_dir(), BINARY)
    if not os.path.isfile(path):
        raise UsageError("`perftest exec` needs %s, which is not built (%s; it needs "
                         "libseccomp-dev and an x86_64 build, see scripts/install-deps)"
                         % (path, layout.BUILD_HINT))
    if not os.access(path, os.X_OK):
        raise UsageError("%s is not executable" % path)
    return path


def run_exec(args):
    """Replaces this process with perftest_exec ARGS (never returns on success)."""
    args = list(args)
    if "--" not in args and not any(a in ("-h", "--help", "--version") for a in args):
        raise UsageError("perftest exec: no program given: perftest exec [--profile=P] "
                         "[--log=FILE] [--inject=SPEC]... -- PROG [ARGS]")
    path = exec_path()
    os.execv(path, [path] + args)
