"""Durations on the command line: ``30`` (seconds), ``30s``, ``500ms``, ``2m``, ``1h``.

parse_duration(text) -> float seconds (> 0); raises UsageError naming the text.
"""

import re

from .errors import UsageError

DEFAULT_CASE_TIMEOUT_S = 60.0     # perftest run --timeout default

_UNITS = {"": 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}
_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|min|s|m|h)?\s*$", re.IGNORECASE)


def parse_duration(text):
    """Parse a duration; returns seconds as a float greater than zero."""
    m = _RE.match(str(text))
    if not m:
        raise UsageError(
            "invalid duration %r: use a number of seconds or a number with "
            "a unit ms, s, m or h (e.g. 30, 30s, 500ms, 2m)" % (text,)
        )
    value = float(m.group(1)) * _UNITS[(m.group(2) or "").lower()]
    if value <= 0:
        raise UsageError("invalid duration %r: must be greater than zero" % (text,))
    return value


def format_duration(seconds):
    """Short human form: 0.5 -> '500ms', 60 -> '60s', 90.0 -> '90s'."""
    if seconds < 1:
        return "%dms" % round(seconds * 1000)
    if float(seconds).is_integer():
        return "%ds" % seconds
    return "%gs" % seconds
