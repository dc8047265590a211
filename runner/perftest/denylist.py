"""Deny lists: cases not to run on a given kernel/arch, each with its reason
(the libbpf CI practice), and expected failures.

File format (ci/denylists/*.txt, UTF-8, one entry per line):

  # comment lines and blank lines are ignored
  # match: kernel=6.1.* arch=x86_64 backend=kernel
  FEATURE-GLOB  [class=CLASS | xfail]  REASON...

- ``FEATURE-GLOB`` (fnmatch) matches a feature id (``ringbuffer.aux_*``) or a
  GoogleTest name (``RingBuffer.Aux*``), as ``--filter`` does.
- ``class=CLASS``: the case is not run; it is reported as ``skip`` with that
  ``skip_class`` (one of unsupported, permission, sandbox, kernel_version;
  default unsupported), ``denylisted: true``, and the reason.
- ``xfail``: the case runs; if it fails (fail/error/timeout/crash) the run
  still passes: the case has ``xfail: true`` (KTAP XFAIL, JUnit skipped).
- ``REASON``: the rest of the line, required: why this case is denied here
  (a bug and its fix, a missing feature). A line without one is an error.
- ``# match:`` (optional, once): the machines ``--denylist=auto`` applies the
  file to: ``kernel`` (glob on ``uname -r``), ``arch`` (glob on ``uname -m``),
  ``backend`` (``kernel``, ``mock`` or a glob); a value may list
  alternatives separated by commas (``kernel=3.*,4.0.*``); a missing key
  matches anything. A file without ``# match:`` is used only when named
  explicitly.

The first matching entry over all files (in the order given) decides.
Errors: UsageError (exit 2) naming FILE:LINE and what is wrong.

load(path) -> DenyList; auto_paths(kernel_release, arch, backend, directory)
-> [path]; DenyLists(lists).match(case) -> Entry or None.
"""

import fnmatch
import glob
import os
import re
from dataclasses import dataclass, field

from . import layout
from .errors import UsageError

SKIP_CLASSES = ("unsupported", "permission", "sandbox", "kernel_version")
DEFAULT_CLASS = "unsupported"
MATCH_KEYS = ("kernel", "arch", "backend")
_GLOB_RE = re.compile(r"^[A-Za-z0-9_.*?\[\]!/:-]+$")
_OPTION_RE = re.compile(r"^([A-Za-z_]+)=(\S*)$")
FORMAT_HINT = "every entry is 'FEATURE-GLOB [class=CLASS|xfail] REASON'"


@dataclass
class Entry:
    pattern: str
    skip_class: str          # for a denied (not run) case
    xfail: bool              # run it; a failure is expected
    reason: str
    source: str              # FILE:LINE

    def matches(self, case):
        """case: an object with .test and .feature (suite.CaseInfo)."""
        return fnmatch.fnmatchcase(case.test, self.pattern) or bool(
            case.feature and fnmatch.fnmatchcase(case.feature, self.pattern))


@dataclass
class DenyList:
    path: str
    match: dict = field(default_factory=dict)      # {} = no "# match:" line
    entries: list = field(default_factory=list)

    def applies_to(self, kernel_release, arch, backend):
        """True when the "# match:" line matches this machine (False without one)."""
        if not self.match:
            return False
        values = {"kernel": kernel_release, "arch": arch, "backend": backend}
        return all(any(fnmatch.fnmatchcase(values[k], g) for g in globs.split(","))
                   for k, globs in self.match.items())


def _error(path, lineno, msg):
    return UsageError("deny list %s:%d: %s" % (path, lineno, msg))


def parse(text, path):
    """Parse a deny list's text; UsageError naming path:line on any problem."""
    dl = DenyList(path)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            if body.lower().startswith("match:"):
                if dl.match:
                    raise _error(path, lineno, "a second '# match:' line (one per file)")
                dl.match = _parse_match(body[len("match:"):], path, lineno)
            continue
        tokens = line.split(None, 1)
        pattern = tokens[0]
        rest = tokens[1].strip() if len(tokens) > 1 else ""
        if not _GLOB_RE.match(pattern):
            raise _error(path, lineno, "%r is not a feature-id or test-name glob (%s)"
                         % (pattern, FORMAT_HINT))
        skip_class, xfail = DEFAULT_CLASS, False
        seen_class = False
        while rest:
            word, _, tail = rest.partition(" ")
            if word == "xfail":
                xfail = True
            else:
                m = _OPTION_RE.match(word)
                if not m:
                    break
                key, value = m.groups()
                if key != "class":
                    raise _error(path, lineno, "unknown option %r in %r (only class=CLASS "
                                 "or xfail; %s)" % (key, word, FORMAT_HINT))
                if value not in SKIP_CLASSES:
                    raise _error(path, lineno, "class=%s: not a skip class; use one of %s"
                                 % (value, ", ".join(SKIP_CLASSES)))
                skip_class, seen_class = value, True
            rest = tail.strip()
        if xfail and seen_class:
            raise _error(path, lineno, "%s: 'xfail' runs the case, 'class=' is for cases "
                         "that are not run; use one of them" % pattern)
        if not rest:
            raise _error(path, lineno, "entry %r has no reason: say why it is denied here "
                         "(%s)" % (pattern, FORMAT_HINT))
        dl.entries.append(Entry(pattern, skip_class, xfail, rest, "%s:%d" % (path, lineno)))
    return dl


def _parse_match(text, path, lineno):
    out = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if not sep or not value:
            raise _error(path, lineno, "'# match:' takes key=GLOB words (%s), got %r"
                         % (", ".join(MATCH_KEYS), token))
        if key not in MATCH_KEYS:
            raise _error(path, lineno, "'# match:' key %r is not one of %s"
                         % (key, ", ".join(MATCH_KEYS)))
        out[key] = value
    if not out:
        raise _error(path, lineno, "empty '# match:' line")
    return out


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise UsageError("deny list does not exist: %s" % path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("cannot read deny list %s: %s" % (path, getattr(e, "strerror", None) or e)) \
            from None
    return parse(text, path)


def directory():
    """Where --denylist=auto looks: $PERFTEST_DENYLIST_DIR or <repo>/ci/denylists."""
    env = os.environ.get("PERFTEST_DENYLIST_DIR")
    return os.path.abspath(env) if env else os.path.join(layout.repo_root(), "ci", "denylists")


def auto_paths(kernel_release, arch, backend, where=None):
    """Files in the deny list directory whose '# match:' line matches."""
    where = where or directory()
    out = []
    for path in sorted(glob.glob(os.path.join(where, "*.txt"))):
        if load(path).applies_to(kernel_release, arch, backend):
            out.append(path)
    return out


class DenyLists:
    """Several deny lists; the first matching entry decides."""

    def __init__(self, lists):
        self.lists = list(lists)

    @property
    def paths(self):
        return [dl.path for dl in self.lists]

    def match(self, case):
        for dl in self.lists:
            for e in dl.entries:
                if e.matches(case):
                    return e
        return None


def resolve(specs, kernel_release, arch, backend):
    """--denylist values (paths and 'auto') -> DenyLists; UsageError on bad files."""
    paths = []
    for spec in specs:
        if spec == "auto":
            paths += auto_paths(kernel_release, arch, backend)
        else:
            paths.append(os.path.abspath(spec))
    seen, lists = set(), []
    for p in paths:
        if p not in seen:
            seen.add(p)
            lists.append(load(p))
    return DenyLists(lists)
