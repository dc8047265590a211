"""Run one command isolated: own session and process group, a timeout, and
the whole group killed afterwards.

run_isolated(argv, timeout_s, stdout, stderr, cwd, env) -> ProcResult

The child is started with ``start_new_session=True`` so it leads a new
process group (pgid == pid). The runner waits for the child's exit *without
reaping it* (pidfd poll, or waitid(WNOWAIT) polling where pidfds are not
available): the unreaped zombie keeps the pgid from being reused while the
runner sends SIGKILL to the group (``killpg(pid, SIGKILL)``), which removes any
children the command leaked, after a normal exit as after a timeout. Only
then is the child reaped. A descendant that made its own session (setsid)
escapes the group and is not killed.

Raises OSError when the command cannot be executed (the caller decides how
to report it). KeyboardInterrupt/Interrupted while waiting kills the group
and re-raises.

Parallel runs pass a ProcessTracker: run_isolated registers each child's
process group with it, and ``tracker.stop()`` (from the main thread, on
Ctrl-C) kills every registered group and refuses new ones, so worker
threads return promptly.
"""

import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass


class ProcessTracker:
    """The process groups currently running, for stopping them all at once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._groups = set()
        self.stopping = False

    def add(self, pgid):
        """Register a group; if stop() already ran, kill it and return False."""
        with self._lock:
            if not self.stopping:
                self._groups.add(pgid)
                return True
        kill_group(pgid)
        return False

    def discard(self, pgid):
        with self._lock:
            self._groups.discard(pgid)

    def stop(self):
        """Refuse new groups and SIGKILL every registered one."""
        with self._lock:
            self.stopping = True
            groups = list(self._groups)
        for g in groups:
            kill_group(g)


@dataclass
class ProcResult:
    returncode: int          # as subprocess: >= 0 exit status, < 0 -signal
    timed_out: bool
    duration_s: float

    @property
    def signal(self):
        """Terminating signal number, or None when the process exited."""
        return -self.returncode if self.returncode < 0 else None


def kill_group(pgid):
    """SIGKILL every process in the group; a group already gone is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_exited_pidfd(pid, timeout_s):
    """True once pid has exited (not reaped), False on timeout.

    Raises OSError when pidfd_open is unavailable (caller falls back).
    """
    fd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if deadline is None:
                ms = None
            else:
                ms = max(0, int((deadline - time.monotonic()) * 1000) + 1)
            if poller.poll(ms):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
    finally:
        os.close(fd)


def _wait_exited_polling(pid, timeout_s):
    """Fallback: waitid(WEXITED|WNOHANG|WNOWAIT) in a sleep loop."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    delay = 0.001
    while True:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def wait_exited(pid, timeout_s):
    """Wait until the child pid exits, leaving it unreaped. True if it exited."""
    if hasattr(os, "pidfd_open"):
        try:
            return _wait_exited_pidfd(pid, timeout_s)
        except OSError:
            pass
    return _wait_exited_polling(pid, timeout_s)


def run_isolated(argv, *, timeout_s=None, stdout=None, stderr=None, cwd=None, env=None,
                 tracker=None):
    """Run argv in a new session; kill its process group when it ends.

    stdout/stderr: file objects or subprocess constants (stdin is /dev/null).
    timeout_s: seconds or None for no limit. On timeout the group is killed
    and ``timed_out`` is True. ``duration_s`` is wall-clock from start to
    exit (or to the timeout). tracker: a ProcessTracker to register the
    group with while it runs.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    if tracker is not None:
        tracker.add(proc.pid)
    try:
        exited = wait_exited(proc.pid, timeout_s)
        duration = time.monotonic() - start
    except BaseException:
        kill_group(proc.pid)
        proc.wait()
        raise
    finally:
        if tracker is not None:
            tracker.discard(proc.pid)
    kill_group(proc.pid)
    proc.wait()
    return ProcResult(returncode=proc.returncode, timed_out=not exited, duration_s=duration)


def signal_name(signum):
    """'SIGSEGV' for 11; 'signal 99' for numbers Python does not name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


def signal_description(signum):
    """'SIGSEGV (Segmentation fault)' where the C library has a description."""
    name = signal_name(signum)
    try:
        desc = signal.strsignal(signum)
    except (ValueError, AttributeError):
        desc = None
    return "%s (%s)" % (name, desc) if desc else name
