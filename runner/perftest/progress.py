"""Progress output of ``perftest run``.

  make_progress(stream, total, quiet) -> Progress
  LineProgress   output is not a terminal (CI logs, pipes): one plain line
                 per finished case, "[ 3/16] pass    feature (Test.Name) 0.01s",
                 in completion order (with --jobs the counter counts finished
                 cases; the feature id and test name label each line)
  TtyProgress    a terminal: a status line rewritten in place (case counter,
                 elapsed time, counts so far, what is running) and a full line
                 for each case that does not pass or skip, as it happens
  Progress       -q: nothing

Methods: case_done(case, result), tick(running) (called a few times a
second with the cases running now), finish().
"""

import shutil
import time

from .gtest import one_line

FAILING = ("fail", "error", "timeout", "crash")


class Progress:
    def __init__(self, stream, total):
        self.stream = stream
        self.total = total
        self.done = 0
        self.t0 = time.monotonic()
        self.counts = {}

    def case_done(self, case, result):
        self.done += 1
        self.counts[result.status] = self.counts.get(result.status, 0) + 1

    def tick(self, running):
        pass

    def finish(self):
        pass


def _annotation(result):
    extra = result.extra or {}
    notes = []
    if extra.get("flaky"):
        notes.append("flaky: %s" % ", ".join(r["status"] for r in extra["repeats"]))
    elif extra.get("repeats"):
        notes.append("%d runs" % len(extra["repeats"]))
    if extra.get("denylisted"):
        notes.append("denylisted")
    if extra.get("xfail") and result.status in FAILING:
        notes.append("expected failure")
    if extra.get("retried"):
        notes.append("retried: %s" % ", ".join(r["status"] for r in extra["attempts"]))
    if extra.get("expected_skip"):
        notes.append("expected skip (%s)" % extra["expectation_entry"])
    if extra.get("unexpected_skip"):
        notes.append("UNEXPECTED skip")
    if extra.get("unexpected_pass"):
        notes.append("expected skip PASSED (%s)" % extra["expectation_entry"])
    h = extra.get("health") or {}
    if h.get("state") == "tainted":
        notes.append("KERNEL TAINTED %s" % h.get("new_taint", ""))
    elif h.get("state") == "warned":
        notes.append("KERNEL WARNED")
    return ("  " + "; ".join(notes)) if notes else ""


class LineProgress(Progress):
    def case_done(self, case, result):
        super().case_done(case, result)
        width = len(str(self.total))
        self.stream.write("[%*d/%d] %-7s %s (%s) %.2fs%s\n" % (
            width, self.done, self.total, result.status, case.feature or "-", case.test,
            result.duration_s, _annotation(result)))
        self.stream.flush()


class TtyProgress(Progress):
    """Status line at the bottom; failures printed above it as they happen."""

    def __init__(self, stream, total):
        super().__init__(stream, total)
        self.running = []
        self.last_draw = 0.0

    def _width(self):
        try:
            return shutil.get_terminal_size((100, 24)).columns
        except (OSError, ValueError):
            return 100

    def _status_line(self):
        elapsed = time.monotonic() - self.t0
        parts = ["[%d/%d]" % (self.done, self.total), "%.1fs" % elapsed]
        counts = ", ".join("%d %s" % (self.counts[k], k) for k in
                           ("pass", "fail", "skip", "error", "timeout", "crash")
                           if self.counts.get(k))
        if counts:
            parts.append(counts)
        if self.running:
            names = [c.feature or c.test for c in self.running]
            parts.append("running: %s" % ", ".join(names))
        line = "  ".join(parts)
        width = self._width() - 1
        return line if len(line) <= width else line[: max(0, width - 1)] + "…"

    def _draw(self):
        self.stream.write("\r\x1b[K" + self._status_line())
        self.stream.flush()
        self.last_draw = time.monotonic()

    def case_done(self, case, result):
        super().case_done(case, result)
        extra = result.extra or {}
        flagged = (extra.get("health") or {}).get("state") in ("tainted", "warned")
        if (result.status in FAILING and not extra.get("xfail")) or flagged or \
                extra.get("unexpected_skip") or extra.get("unexpected_pass"):
            head = "%-7s %s (%s) %.2fs%s" % (result.status.upper(), case.feature or "-",
                                              case.test, result.duration_s, _annotation(result))
            text = result.reason
            if flagged:
                from .health import describe
                text = ("%s; kernel %s" % (text, describe(result.extra["health"]))).lstrip("; ")
            reason = one_line(text, max(30, self._width() - 12))
            self.stream.write("\r\x1b[K%s\n        %s\n" % (head, reason))
        self._draw()

    def tick(self, running):
        self.running = running
        if time.monotonic() - self.last_draw >= 0.2:
            self._draw()

    def finish(self):
        self.stream.write("\r\x1b[K")
        self.stream.write("ran %d of %d cases in %.1fs\n" % (self.done, self.total,
                                                           time.monotonic() - self.t0))
        self.stream.flush()


def make_progress(stream, total, quiet=False):
    if quiet:
        return Progress(stream, total)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return TtyProgress(stream, total) if tty else LineProgress(stream, total)
