"""Kernel health around each case: taint flags and the kernel log.

kselftest and LTP's kirk check, around every test, whether the kernel
tainted itself or logged a WARN/BUG/oops: a perf_event case that makes the
kernel warn is a finding even when its own assertions pass. This module
reads the same two sources and turns them into the report's ``health``
objects (runner/SCHEMA.md, "Kernel health").

Pure functions, for any kernel whose values arrive as text (a guest's
``/proc/sys/kernel/tainted`` and serial console log, a saved dmesg):

  parse_tainted(text) -> int | None       "/proc/sys/kernel/tainted" content
  taint_letters(value) -> str              4608 -> "WO" (tainted-kernels.rst)
  taint_names(value) -> [str]              one phrase per set bit
  scan_log(text_or_lines) -> [event]       kernel log lines that matter,
                                           each {"kind", "line"}; kmsg records,
                                           dmesg "[  1.23] ..." and console
                                           lines are all accepted
  case_health(before, after, log) -> dict  a case's ``health`` object from its
                                           tainted values and the log lines
                                           that appeared while it ran
  case_health_from_text(before_text, after_text, console)
                                           the same, with the tainted values as
                                           the file's text (a guest's cat output)
  merge(healths) -> dict | None            one object for the runs of a case
  run_health(...) -> dict                  the report's top-level ``health``

On the host, ``HostMonitor`` reads the sources for the runner:

  m = HostMonitor.open()                   start of the run
  mark = m.before()                        before a case
  h = m.after(mark)                        after it: case_health(...)
  m.summary(cases, policy)                 end of the run: run_health(...)

Sources (overridable, for tests and for reading another kernel's files):
``$PERFTEST_TAINTED_FILE`` (default ``/proc/sys/kernel/tainted``) and
``$PERFTEST_KMSG`` (default ``/dev/kmsg``; a regular file is read as a
growing log, one record or dmesg line per line). ``/dev/kmsg`` needs
CAP_SYSLOG when ``kernel.dmesg_restrict`` is 1 (kernel/printk/printk.c,
devkmsg_open -> check_syslog_permissions); when it cannot be read the
report says why and only the taint value is checked.

Taint bits: Documentation/admin-guide/tainted-kernels.rst (include/linux/panic.h
TAINT_*). Log patterns: the headlines of WARN() (kernel/panic.c __warn:
"WARNING: CPU: N PID: P at FILE:LINE"), BUG()/oops (arch die(): "Oops:",
"kernel BUG at", "BUG: ..."), panic ("Kernel panic"), RCU/soft-lockup
stalls, and perf's own lines: "perf: interrupt took too long (A > B),
lowering kernel.perf_event_max_sample_rate to N"
(kernel/events/core.c perf_sample_event_took) and the NMI handler duration
note of arch/x86/kernel/nmi.c ("INFO: NMI handler (perf_event_nmi_handler)
took too long to run").
"""

import errno
import os
import re
import threading

DEFAULT_TAINTED = "/proc/sys/kernel/tainted"
DEFAULT_KMSG = "/dev/kmsg"
DMESG_RESTRICT = "/proc/sys/kernel/dmesg_restrict"

POLICIES = ("fail", "warn", "ignore")
DEFAULT_POLICY = "warn"
POLICY_MEANING = {
    "fail": "--taint=fail: a case during which the kernel tainted itself or logged a "
            "WARN/BUG/oops fails the run (exit 1)",
    "warn": "--taint=warn (default): kernel health problems are reported and flagged, "
            "the exit code is not changed",
    "ignore": "--taint=ignore: kernel health is recorded but does not change the verdict",
}

# (bit, letter, meaning), Documentation/admin-guide/tainted-kernels.rst.
TAINT_FLAGS = (
    (0, "P", "proprietary module loaded"),
    (1, "F", "module force loaded"),
    (2, "S", "running on an out-of-specification system"),
    (3, "R", "module force unloaded"),
    (4, "M", "machine check exception"),
    (5, "B", "bad page referenced or unexpected page flags"),
    (6, "U", "taint requested by userspace"),
    (7, "D", "kernel died recently (OOPS or BUG)"),
    (8, "A", "ACPI table overridden"),
    (9, "W", "kernel issued a warning"),
    (10, "C", "staging driver loaded"),
    (11, "I", "workaround for a platform firmware bug"),
    (12, "O", "out-of-tree module loaded"),
    (13, "E", "unsigned module loaded"),
    (14, "L", "soft lockup occurred"),
    (15, "K", "kernel live patched"),
    (16, "X", "auxiliary taint (distribution-defined)"),
    (17, "T", "built with the struct randomization plugin"),
    (18, "N", "an in-kernel test has run"),
    (19, "J", "userspace used a mutating fwctl debug operation"),
)

# Kinds of log event. "perf" lines (throttling, slow NMI handler) are
# recorded but do not make a case unhealthy: sampling at a high frequency
# legitimately makes the kernel lower perf_event_max_sample_rate.
PROBLEM_KINDS = ("warning", "bug", "oops", "panic", "stall")
KINDS = PROBLEM_KINDS + ("perf",)
_PATTERNS = (
    ("panic", re.compile(r"^Kernel panic\b")),
    ("oops", re.compile(r"^(Oops\b|Internal error: Oops\b|general protection fault\b)")),
    ("bug", re.compile(r"^(kernel BUG at\b|BUG: |Unable to handle kernel\b|"
                       r"[\w-]*: BUG: |UBSAN: |KASAN: )")),
    ("warning", re.compile(r"^(WARNING: |\S+: WARNING: )")),
    ("stall", re.compile(r"(detected stalls? on CPUs|self-detected stall on CPU|"
                         r"blocked for more than \d+ seconds)")),
    ("perf", re.compile(r"^(perf: |perf_event: |INFO: NMI handler \(perf_event_nmi_handler\))")),
)
MAX_EVENTS = 20          # per case; the rest are counted in events_dropped
MAX_LINE = 400

_KMSG_RECORD = re.compile(r"^(\d+),(\d+),(\d+),[^;]*;(.*)$")
_DMESG_PREFIX = re.compile(r"^(<\d+>)?\[\s*\d+\.\d+\]\s?")
_COMM = re.compile(r"^CPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (\S+)")


def parse_tainted(text):
    """The integer in /proc/sys/kernel/tainted's content, or None when text
    is not one (an unsigned decimal, include/linux/panic.h TAINT_FLAGS_COUNT
    bits)."""
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def taint_letters(value):
    """The letters of the set taint bits, in bit order ("" for 0 or None);
    an unknown bit shows as "?"."""
    if not value:
        return ""
    known = {bit: letter for bit, letter, _ in TAINT_FLAGS}
    return "".join(known.get(bit, "?") for bit in range(value.bit_length()) if value >> bit & 1)


def taint_names(value):
    """['W: kernel issued a warning', ...] for the set bits; 'bit N' for unknown ones."""
    if not value:
        return []
    known = {bit: (letter, meaning) for bit, letter, meaning in TAINT_FLAGS}
    out = []
    for bit in range(value.bit_length()):
        if value >> bit & 1:
            letter, meaning = known.get(bit, ("?", "bit %d (unknown to this perftest)" % bit))
            out.append("%s: %s" % (letter, meaning))
    return out


def message_of(line):
    """The message part of one kernel log line: a /dev/kmsg record
    ("6,1234,5678,-;text"), a dmesg/console line ("[   12.34] text",
    "<4>[ 1.2] text") or bare text. Continuation lines of a kmsg record
    (" SUBSYSTEM=...") give None."""
    line = line.rstrip("\r\n")
    if line.startswith(" "):
        return None
    m = _KMSG_RECORD.match(line)
    if m:
        return m.group(4)
    return _DMESG_PREFIX.sub("", line, count=1)


def classify(message):
    """The event kind of one log message (KINDS), or None for an ordinary line."""
    for kind, pattern in _PATTERNS:
        if pattern.search(message):
            return kind
    return None


def scan_log(log):
    """[{"kind", "line"[, "pid", "comm"]}] for the lines of log (a str or an
    iterable of lines) that matter. The "CPU: N PID: P Comm: NAME" line that
    follows a WARNING/BUG/oops headline names the task: it is added to that
    event as pid and comm."""
    lines = log.splitlines() if isinstance(log, str) else list(log)
    events = []
    last = None
    for raw in lines:
        msg = message_of(raw)
        if msg is None:
            continue
        msg = msg.strip()
        kind = classify(msg)
        if kind:
            last = {"kind": kind, "line": msg[:MAX_LINE]}
            events.append(last)
            continue
        m = _COMM.match(msg)
        if m and last is not None and last["kind"] in PROBLEM_KINDS and "comm" not in last:
            last["pid"] = int(m.group(1))
            last["comm"] = m.group(2)
    return events


def _state(new_bits, events):
    if new_bits:
        return "tainted"
    if any(e["kind"] in PROBLEM_KINDS for e in events):
        return "warned"
    return "healthy"


def case_health(tainted_before, tainted_after, log=(), events=None):
    """A case's ``health`` object (SCHEMA.md) from the tainted values read
    before and after it (int or None when unreadable) and the kernel log
    lines that appeared meanwhile (text or lines; or ready ``events``).

    state: "tainted" when a taint bit was newly set, else "warned" when a
    WARNING/BUG/oops/panic/stall line appeared, else "healthy" ("perf:"
    throttling lines are listed but keep a case healthy)."""
    if events is None:
        events = scan_log(log)
    new_bits = 0
    if tainted_before is not None and tainted_after is not None:
        new_bits = tainted_after & ~tainted_before
    h = {"state": _state(new_bits, events), "tainted_before": tainted_before,
         "tainted_after": tainted_after, "new_taint": taint_letters(new_bits)}
    if events:
        h["events"] = events[:MAX_EVENTS]
        if len(events) > MAX_EVENTS:
            h["events_dropped"] = len(events) - MAX_EVENTS
    return h


def case_health_from_text(tainted_before_text, tainted_after_text, log):
    """case_health for a kernel read from the outside: a guest prints
    /proc/sys/kernel/tainted before and after the case, and its serial console
    carries the kernel's messages printed meanwhile (dmesg-style lines,
    ``[  12.345678] WARNING: ...``). Unparsable tainted text counts as unread."""
    return case_health(parse_tainted(tainted_before_text), parse_tainted(tainted_after_text), log)


def is_flagged(health):
    """True when a health object says the kernel tainted itself or warned."""
    return bool(health) and health.get("state") not in (None, "healthy")


def merge(healths):
    """One health object for the runs of a case (``--repeat``): the first
    tainted value before, the last after, new taint and events of all runs.
    None when no run has one."""
    healths = [h for h in healths if h]
    if not healths:
        return None
    if len(healths) == 1:
        return healths[0]
    events = [e for h in healths for e in h.get("events", [])]
    letters = "".join(sorted({ch for h in healths for ch in h.get("new_taint", "")},
                             key=lambda ch: "PFSRMBUDAWCIOELKXTNJ?".find(ch)))
    state = "tainted" if letters else ("warned" if any(
        h.get("state") != "healthy" for h in healths) else "healthy")
    out = {"state": state, "tainted_before": healths[0].get("tainted_before"),
           "tainted_after": healths[-1].get("tainted_after"), "new_taint": letters}
    if events:
        out["events"] = events[:MAX_EVENTS]
        dropped = len(events) - MAX_EVENTS + sum(h.get("events_dropped", 0) for h in healths)
        if dropped > 0:
            out["events_dropped"] = dropped
    return out


def describe(health):
    """One line: "tainted W (kernel issued a warning): WARNING: CPU: ..." /
    "warned: BUG: ..." / "healthy"."""
    if not health:
        return "not checked"
    state = health.get("state", "healthy")
    problems = [e for e in health.get("events", []) if e["kind"] in PROBLEM_KINDS]
    perf = [e for e in health.get("events", []) if e["kind"] == "perf"]
    if state == "tainted":
        new = health.get("new_taint") or ""
        meanings = dict((letter, meaning) for _, letter, meaning in TAINT_FLAGS)
        text = "tainted %s (%s)" % (new, "; ".join(meanings.get(ch, "?") for ch in new))
    elif state == "warned":
        text = "warned"
    else:
        text = "healthy"
    if problems:
        text += ": " + problems[0]["line"]
        if len(problems) > 1:
            text += " (+%d more)" % (len(problems) - 1)
    elif perf:
        text += "; perf: %d log line%s (%s)" % (len(perf), "" if len(perf) == 1 else "s",
                                                perf[0]["line"])
    return text


def run_health(policy, tainted_start, tainted_end, source, cases, jobs=1, run_events=None):
    """The report's top-level ``health`` object (SCHEMA.md): the sources and
    whether the log could be read, the taint at start and end of the run, the
    cases flagged, the policy, and a one-line verdict. run_events: the log
    events of the whole run (scan_log), between cases included."""
    flagged = [c for c in cases if is_flagged(c.get("health"))]
    checked = sum(1 for c in cases if c.get("health"))
    new_bits = 0
    if tainted_start is not None and tainted_end is not None:
        new_bits = tainted_end & ~tainted_start
    problems = sum(1 for e in run_events or [] if e["kind"] in PROBLEM_KINDS)
    healthy = not flagged and not new_bits and not problems
    h = {
        "policy": policy,
        "policy_reason": POLICY_MEANING[policy],
        "healthy": healthy,
        "tainted_start": tainted_start,
        "tainted_end": tainted_end,
        "taint_flags_start": taint_letters(tainted_start),
        "taint_flags_end": taint_letters(tainted_end),
        "new_taint": taint_letters(new_bits),
        "cases_checked": checked,
        "cases_tainted": sum(1 for c in flagged if c["health"]["state"] == "tainted"),
        "cases_warned": sum(1 for c in flagged if c["health"]["state"] == "warned"),
        "cases_with_perf_lines": sum(1 for c in cases if any(
            e["kind"] == "perf" for e in (c.get("health") or {}).get("events", []))),
    }
    if run_events is not None:
        h["log_problems"] = problems
    h.update(source)
    if jobs > 1:
        h["attribution"] = ("%d cases ran in parallel: a log line or taint bit is attributed "
                            "to every case running when it appeared" % jobs)
    h["summary"] = summary_line(h)
    return h


def summary_line(h):
    """The run-level verdict in words."""
    taint = "taint %s" % h["tainted_end"] if h.get("tainted_end") is not None else \
        "taint unreadable"
    if h.get("tainted_end"):
        taint += " (%s)" % h["taint_flags_end"]
    log = "kernel log read" if h.get("log_readable") else "kernel log not readable"
    if h["healthy"]:
        text = "the kernel stayed healthy: %s, no new taint; %s" % (taint, log)
        if h.get("log_readable"):
            text += ", no WARN/BUG/oops"
    else:
        parts = []
        if h["cases_tainted"]:
            parts.append("%d case%s tainted the kernel" % (
                h["cases_tainted"], "" if h["cases_tainted"] == 1 else "s"))
        if h["cases_warned"]:
            parts.append("%d case%s made it warn" % (
                h["cases_warned"], "" if h["cases_warned"] == 1 else "s"))
        if h.get("new_taint"):
            parts.append("new taint %s during the run" % h["new_taint"])
        if h.get("log_problems") and not h["cases_tainted"] + h["cases_warned"]:
            parts.append("%d WARN/BUG/oops line%s between cases" % (
                h["log_problems"], "" if h["log_problems"] == 1 else "s"))
        text = "the kernel did NOT stay healthy: %s; %s; %s" % (", ".join(parts), taint, log)
    if h.get("cases_with_perf_lines"):
        text += "; perf: lines during %d case%s" % (
            h["cases_with_perf_lines"], "" if h["cases_with_perf_lines"] == 1 else "s")
    return text


def health_fails(doc):
    """True when the report's health policy is "fail" and the kernel did not
    stay healthy (a flagged case, or new taint during the run)."""
    h = doc.get("health")
    return bool(h) and h.get("policy") == "fail" and not h.get("healthy", True)


def case_health_fails(doc, case):
    """True when this case's health counts as a failure under the report's policy."""
    h = doc.get("health")
    return bool(h) and h.get("policy") == "fail" and is_flagged(case.get("health"))


def _read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def read_tainted(path=None):
    """(value or None, problem or None) from the tainted file."""
    path = path or os.environ.get("PERFTEST_TAINTED_FILE") or DEFAULT_TAINTED
    try:
        value = parse_tainted(_read_text(path))
    except OSError as e:
        return None, "%s: %s" % (path, e.strerror or e)
    if value is None:
        return None, "%s: not an unsigned integer" % path
    return value, None


def dmesg_restrict():
    try:
        return parse_tainted(_read_text(DMESG_RESTRICT))
    except OSError:
        return None


class _KmsgSource:
    """/dev/kmsg: one record per read(2), non-blocking; positioned at the end
    when opened so only new records are read (Documentation/ABI/testing/dev-kmsg)."""

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        os.lseek(self.fd, 0, os.SEEK_END)
        self.lost = 0

    def read_new(self):
        lines = []
        while True:
            try:
                chunk = os.read(self.fd, 16384)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:      # records overwritten before we read them
                    self.lost += 1
                    continue
                if e.errno == errno.EINTR:
                    continue
                raise
            if not chunk:
                break
            lines += chunk.decode("utf-8", "replace").splitlines()
        return lines

    def close(self):
        os.close(self.fd)


class _FileSource:
    """A regular file read as a growing kernel log (tests; a saved log)."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            self.offset = f.tell()
        self.lost = 0

    def read_new(self):
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        cut = data.rfind(b"\n") + 1          # leave a half-written line for later
        self.offset += cut
        return data[:cut].decode("utf-8", "replace").splitlines()

    def close(self):
        pass


def _log_unreadable_reason(path, err, restrict, in_container):
    why = "%s: %s" % (path, err.strerror or err)
    if err.errno in (errno.EPERM, errno.EACCES) and restrict:
        why += " (kernel.dmesg_restrict=1: reading the kernel log needs CAP_SYSLOG)"
    elif err.errno == errno.ENOENT and in_container:
        why += " (in a container: the host's kernel log is not exposed)"
    return why


class HostMonitor:
    """Reads this machine's tainted value and kernel log around cases.
    Thread-safe: with --jobs the cases share it. A log line is attributed
    to every case that was running when it was read."""

    def __init__(self, tainted_path, log_source, source_info):
        self.tainted_path = tainted_path
        self._log = log_source
        self._lock = threading.Lock()
        self._lines = []             # every log line read so far, in order
        self.source = source_info
        self.tainted_start, problem = read_tainted(tainted_path)
        if problem:
            self.source["tainted_problem"] = problem

    @classmethod
    def open(cls, container=None):
        """Open this machine's sources (or $PERFTEST_TAINTED_FILE/$PERFTEST_KMSG);
        never raises: what cannot be read is said in the summary. container:
        whether we run in one (default: host.detect_container), for the note."""
        if container is None:
            from .host import detect_container
            try:
                container = bool(detect_container()[0])
            except Exception:        # a note's wording must not cost the run
                container = False
        tainted_path = os.environ.get("PERFTEST_TAINTED_FILE") or DEFAULT_TAINTED
        log_path = os.environ.get("PERFTEST_KMSG") or DEFAULT_KMSG
        restrict = dmesg_restrict()
        info = {"tainted_source": tainted_path, "log_source": log_path,
                "dmesg_restrict": restrict, "log_readable": False}
        source = None
        try:
            if os.path.isfile(log_path):
                source = _FileSource(log_path)
            else:
                source = _KmsgSource(log_path)
            info["log_readable"] = True
            if restrict:
                info["log_note"] = ("kernel.dmesg_restrict=1: the kernel log is read with "
                                    "this process's CAP_SYSLOG")
        except OSError as e:
            info["log_note"] = _log_unreadable_reason(log_path, e, restrict, container) + \
                "; only the taint value is checked"
        return cls(tainted_path, source, info)

    def _poll(self):
        if self._log is None:
            return
        try:
            new = self._log.read_new()
        except OSError as e:
            self.source["log_note"] = "reading %s failed: %s" % (self._log.path, e)
            self._log = None
            return
        # Only the lines scan_log can use are kept (headlines and the task
        # line after them), so a long run on a chatty kernel stays small.
        for line in new:
            msg = message_of(line)
            if msg is not None and (classify(msg.strip()) or _COMM.match(msg.strip())):
                self._lines.append(line)

    def before(self):
        """A mark: (tainted value, log position) before a case."""
        with self._lock:
            self._poll()
            value, _ = read_tainted(self.tainted_path)
            return value, len(self._lines)

    def after(self, mark):
        """The case's health object, from the mark to now."""
        tainted_before, start = mark
        with self._lock:
            self._poll()
            value, _ = read_tainted(self.tainted_path)
            lines = self._lines[start:]
        return case_health(tainted_before, value, lines)

    def summary(self, cases, policy, jobs=1):
        with self._lock:
            self._poll()
            end, _ = read_tainted(self.tainted_path)
        if self._log is not None and self._log.lost:
            self.source["log_note"] = (self.source.get("log_note", "") +
                                       "; %d kernel log records were overwritten before "
                                       "they were read" % self._log.lost).lstrip("; ")
        events = scan_log(self._lines) if self.source.get("log_readable") else None
        return run_health(policy, self.tainted_start, end, dict(self.source), cases, jobs,
                          events)

    def close(self):
        if self._log is not None:
            self._log.close()
            self._log = None
