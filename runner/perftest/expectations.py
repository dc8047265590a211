"""Expectation lists: the one place where a known divergence of a case from
"it passes here" is declared, one line per case with its reason (libbpf's
DENYLIST practice). ci/expectations/README.md is the user documentation.

File format (ci/expectations/*.txt, UTF-8, one entry per line):

  # comment lines and blank lines are ignored
  # match: backend=kernel hwpmu=no
  CASE-GLOB  [VERDICT]  REASON...

- ``CASE-GLOB`` (fnmatch) matches a feature id (``ringbuffer.aux_*``) or a
  GoogleTest name (``RingBuffer.Aux*``), as ``--filter`` does.
- ``VERDICT`` (at most one):
    ``class=CLASS``  deny: the case is not run; reported as ``skip`` with that
                     ``skip_class``, ``denylisted: true`` (the default verdict
                     when none is given is ``class=unsupported``)
    ``xfail``        the case runs; a failing status does not fail the run
    ``skip=CLASS``   expected skip: the case runs and is expected to skip
                     with that class; under ``--strict`` a skip nobody
                     declared fails the run, and so does an expected skip
                     that passes (the entry is stale)
    ``retry=N``      timing-sensitive kernel case: a failing attempt is run
                     again, up to N more times; every attempt is in the
                     report. Only in files whose match line says
                     ``backend=kernel``.
- ``REASON``: the rest of the line, required.
- ``# match:`` (optional, once): the environments ``--expect=auto`` applies
  the file to. Keys (each a glob; a value may list alternatives separated by
  commas; a missing key matches anything): ``kernel`` (``uname -r``),
  ``arch`` (the machine's arch: ``uname -m``, or the mock profile's
  ``arch``), ``backend`` (``kernel``, ``mock``), ``profile`` (the mock
  profile's name; empty on the kernel backend), ``hwpmu`` (``yes``/``no``:
  the machine has a hardware PMU: the host's sysfs PMUs, or the profile's),
  ``intel_pt`` (``yes``/``no``: it has the intel_pt PMU), ``privileged``
  (``yes``/``no``: CAP_PERFMON or CAP_SYS_ADMIN effective on the host; the
  profile's ``privileged`` on the mock). A value starting with ``!`` matches
  when none of its globs does (``arch=!x86_64``). A file without a match
  line is used only when named explicitly.

The first matching entry over all files (in the order given; ``auto`` files
in name order) decides. Within one file a glob appears once.
Errors: UsageError (exit 2) naming FILE:LINE and what is wrong.

  load(path) -> ExpectationList
  environment(backend, profile_doc) -> Environment
  auto_paths(env, directory) -> [path]
  resolve(specs, env) -> Expectations; Expectations.match(case) -> Entry or None
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
MATCH_KEYS = ("kernel", "arch", "backend", "profile", "hwpmu", "intel_pt", "privileged")
# The verdicts an entry can carry (Entry.verdict).
DENY, XFAIL, SKIP, RETRY = "deny", "xfail", "skip", "retry"
MAX_RETRY = 5
_GLOB_RE = re.compile(r"^[A-Za-z0-9_.*?\[\]!/:-]+$")
_OPTION_RE = re.compile(r"^([A-Za-z_]+)=(\S*)$")
FORMAT_HINT = "every entry is 'CASE-GLOB [class=CLASS|xfail|skip=CLASS|retry=N] REASON'"


@dataclass
class Entry:
    pattern: str
    verdict: str             # DENY, XFAIL, SKIP or RETRY
    skip_class: str          # DENY: the class reported; SKIP: the class expected; else None
    retries: int             # RETRY: extra attempts after a failing one; else 0
    reason: str
    source: str              # FILE:LINE

    @property
    def xfail(self):
        return self.verdict == XFAIL

    @property
    def denies(self):
        return self.verdict == DENY

    def matches(self, case):
        """case: an object with .test and .feature (suite.CaseInfo)."""
        return fnmatch.fnmatchcase(case.test, self.pattern) or bool(
            case.feature and fnmatch.fnmatchcase(case.feature, self.pattern))


@dataclass
class Environment:
    """What ``# match:`` lines are matched against: the machine the cases
    run on (the host for the kernel backend, the profile for the mock)."""
    kernel: str
    arch: str
    backend: str
    profile: str = ""
    hwpmu: str = "no"
    intel_pt: str = "no"
    privileged: str = "no"

    def values(self):
        return {k: getattr(self, k) for k in MATCH_KEYS}

    def describe(self):
        return " ".join("%s=%s" % (k, v) for k, v in self.values().items() if v != "")


def _yes_no(flag):
    return "yes" if flag else "no"


def environment(backend, profile_doc=None):
    """This run's Environment. kernel: the host (uname, the sysfs PMUs,
    CAP_PERFMON or CAP_SYS_ADMIN effective); mock: uname -r and the profile's
    name, arch, PMUs and ``privileged``."""
    from . import host
    from .doctor import is_hardware_pmu
    u = os.uname()
    if backend == "mock":
        doc = profile_doc or {}
        pmus = [p for p in doc.get("pmus") or [] if isinstance(p, dict) and "name" in p]
        return Environment(u.release, str(doc.get("arch") or ""), "mock", str(doc.get("name") or ""),
                           _yes_no(any(is_hardware_pmu(p) for p in pmus)),
                           _yes_no(any(p["name"] == "intel_pt" for p in pmus)),
                           _yes_no(doc.get("privileged", True)))
    caps = host.capabilities(host.read_text("/proc/self/status"))
    pmus = host.pmus()
    return Environment(u.release, u.machine, backend, "",
                       _yes_no(any(is_hardware_pmu(p) for p in pmus)),
                       _yes_no(any(p["name"] == "intel_pt" for p in pmus)),
                       _yes_no(caps.get("cap_perfmon") or caps.get("cap_sys_admin")))


@dataclass
class ExpectationList:
    path: str
    match: dict = field(default_factory=dict)      # {} = no "# match:" line
    entries: list = field(default_factory=list)

    def applies_to(self, env):
        """True when the "# match:" line matches env (False without one)."""
        if not self.match:
            return False
        values = env.values()
        return all(_value_matches(values[k], globs) for k, globs in self.match.items())


def _value_matches(value, globs):
    """'a*,b' matches a value any glob matches; '!a*,b' one that none matches."""
    negate = globs.startswith("!")
    hit = any(fnmatch.fnmatchcase(value, g) for g in globs.lstrip("!").split(","))
    return hit != negate


def _error(path, lineno, msg):
    return UsageError("expectation list %s:%d: %s" % (path, lineno, msg))


def _parse_verdict(rest, pattern, path, lineno):
    """(verdict, skip_class, retries, reason) from the text after the glob."""
    verdicts = []
    while rest:
        word, _, tail = rest.partition(" ")
        if word == "xfail":
            verdicts.append((XFAIL, None, 0))
        else:
            m = _OPTION_RE.match(word)
            if not m:
                break
            key, value = m.groups()
            if key in ("class", "skip"):
                if value not in SKIP_CLASSES:
                    raise _error(path, lineno, "%s=%s: not a skip class; use one of %s"
                                 % (key, value, ", ".join(SKIP_CLASSES)))
                verdicts.append((DENY if key == "class" else SKIP, value, 0))
            elif key == "retry":
                if not value.isdigit() or not 1 <= int(value) <= MAX_RETRY:
                    raise _error(path, lineno, "retry=%s: the extra attempts, 1 to %d"
                                 % (value, MAX_RETRY))
                verdicts.append((RETRY, None, int(value)))
            else:
                raise _error(path, lineno, "unknown option %r in %r (%s)" % (key, word, FORMAT_HINT))
        rest = tail.strip()
    if len(verdicts) > 1:
        raise _error(path, lineno, "%s: one verdict per entry (class=, xfail, skip= or retry=), "
                     "got %d" % (pattern, len(verdicts)))
    if not rest:
        raise _error(path, lineno, "entry %r has no reason: say why it is declared here (%s)"
                     % (pattern, FORMAT_HINT))
    verdict, skip_class, retries = verdicts[0] if verdicts else (DENY, DEFAULT_CLASS, 0)
    return verdict, skip_class, retries, rest


def parse(text, path):
    """Parse a list's text; UsageError naming path:line on any problem."""
    el = ExpectationList(path)
    seen = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            if body.lower().startswith("match:"):
                if el.match:
                    raise _error(path, lineno, "a second '# match:' line (one per file)")
                el.match = _parse_match(body[len("match:"):], path, lineno)
            continue
        tokens = line.split(None, 1)
        pattern = tokens[0]
        if not _GLOB_RE.match(pattern):
            raise _error(path, lineno, "%r is not a feature-id or test-name glob (%s)"
                         % (pattern, FORMAT_HINT))
        if pattern in seen:
            raise _error(path, lineno, "%r is already declared at line %d (one entry per case)"
                         % (pattern, seen[pattern]))
        seen[pattern] = lineno
        verdict, skip_class, retries, reason = _parse_verdict(
            tokens[1].strip() if len(tokens) > 1 else "", pattern, path, lineno)
        if verdict == RETRY and el.match.get("backend") != "kernel":
            raise _error(path, lineno, "retry= is only for timing-sensitive kernel cases: the "
                         "file's '# match:' line (before the entries) must say backend=kernel")
        el.entries.append(Entry(pattern, verdict, skip_class, retries, reason,
                                "%s:%d" % (path, lineno)))
    return el


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
        raise UsageError("expectation list does not exist: %s" % path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("cannot read expectation list %s: %s"
                         % (path, getattr(e, "strerror", None) or e)) from None
    return parse(text, path)


def directory():
    """Where ``auto`` looks: $PERFTEST_EXPECTATIONS_DIR (or the older
    $PERFTEST_DENYLIST_DIR), else <repo>/ci/expectations."""
    env = os.environ.get("PERFTEST_EXPECTATIONS_DIR") or os.environ.get("PERFTEST_DENYLIST_DIR")
    return os.path.abspath(env) if env else os.path.join(layout.repo_root(), "ci", "expectations")


def auto_paths(env, where=None):
    """Files in the expectations directory whose '# match:' line matches env."""
    where = where or directory()
    return [path for path in sorted(glob.glob(os.path.join(where, "*.txt")))
            if load(path).applies_to(env)]


class Expectations:
    """Several lists; the first matching entry decides."""

    def __init__(self, lists):
        self.lists = list(lists)

    @property
    def paths(self):
        return [el.path for el in self.lists]

    def match(self, case):
        for el in self.lists:
            for e in el.entries:
                if e.matches(case):
                    return e
        return None


def check_files(specs):
    """Load every explicitly named file (not 'auto') so a bad one fails
    before anything runs."""
    for spec in specs:
        if spec != "auto":
            load(spec)


def resolve(specs, env):
    """--expect values (paths and 'auto') -> Expectations; UsageError on bad files."""
    paths = []
    for spec in specs:
        if spec == "auto":
            paths += auto_paths(env)
        else:
            paths.append(os.path.abspath(spec))
    seen, lists = set(), []
    for p in paths:
        if p not in seen:
            seen.add(p)
            lists.append(load(p))
    return Expectations(lists)


# --- verdicts on a finished case (report keys, runner/SCHEMA.md 1.2) ---

def judge(result, entry, strict):
    """The expectation keys for a finished (run) case's JSON: ``expected_skip``,
    ``unexpected_skip`` (only under strict: a skip no entry declared, or
    declared with another class), ``unexpected_pass`` (an expected skip that
    passed), and the entry's ``expectation_entry``/``expectation_reason``.
    result: suite.CaseResult; entry: the matching Entry or None."""
    out = {}
    if entry is not None:
        out["expectation_entry"] = entry.source
        out["expectation_reason"] = entry.reason
    expected = entry is not None and entry.verdict == SKIP
    if result.status == "skip":
        if entry is not None and entry.verdict == DENY:
            pass                              # not run: declared, reported as denylisted
        elif expected and result.skip_class == entry.skip_class:
            out["expected_skip"] = True
        elif strict:
            out["unexpected_skip"] = True
    elif expected and result.status == "pass":
        out["unexpected_pass"] = True
    return out


def unexpected_skip_reason(case_json):
    """Why a skip is unexpected, for messages: the declared class differs, or
    nothing declared it."""
    if case_json.get("expectation_entry"):
        return "declared at %s with another class" % case_json["expectation_entry"]
    return "no expectation list declares it"
