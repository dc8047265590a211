"""GoogleTest 1.12 output -> the status of one case.

What gtest 1.12 writes with ``--gtest_output=json:FILE`` (checked against
libgtest-dev 1.12.1), per test under ``testsuites[].testsuite[]``:

  passed    "status": "RUN", "result": "COMPLETED", no "failures" key
  failed    "status": "RUN", "result": "COMPLETED",
            "failures": [{"failure": "file.cc:4\\nmessage...", "type": ""}, ...]
  skipped   "status": "RUN", "result": "SKIPPED"; the GTEST_SKIP() message is
            NOT in the JSON, only on stdout as "file.cc:5: Skipped\\n<msg>\\n"
  disabled  "status": "NOTRUN", "result": "SUPPRESSED"
  RecordProperty(key, value) -> an extra key on the test object, value
            always a string (RecordProperty("n", 5) gives "n": "5").

Quirks that matter: a failure in SetUpTestSuite() marks the tests
"SKIPPED" with no "failures" key but the binary exits 1; GTEST_SKIP() in
SetUpTestSuite() is ignored in 1.12 (the test runs). A filter that matches
nothing writes ``"testsuites": []`` and exits 0.

classify(...) -> Verdict(status, reason, skip_class, feature, spec).
"""

import json
import re
from dataclasses import dataclass

from .procs import signal_description

SKIP_CLASSES = ("unsupported", "permission", "sandbox", "kernel_version")
REASON_MAX = 1000

# Keys gtest itself writes on a test object; everything else is a property.
_GTEST_KEYS = frozenset(
    ("name", "file", "line", "status", "result", "timestamp", "time",
     "classname", "failures", "type_param", "value_param")
)

_SKIP_RE = re.compile(r"^[^\n]*: Skipped\n(.*?)\n?\[  SKIPPED \] ", re.MULTILINE | re.DOTALL)


@dataclass
class Verdict:
    status: str
    reason: str
    skip_class: object = None
    feature: object = None
    spec: object = None
    # {"id", "documented", "actual"} when the case records that the kernel
    # diverges from the document it cites (suite properties divergence_*).
    divergence: object = None


def trim(text, limit=REASON_MAX):
    """Strip and cut text to limit characters, marking the cut."""
    text = (text or "").strip()
    if len(text) > limit:
        text = text[: limit - 15].rstrip() + " …[truncated]"
    return text


def one_line(text, limit=None):
    """Collapse whitespace to single spaces; optionally cut to limit."""
    text = " ".join((text or "").split())
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def repair_utf8(value):
    """Undo GoogleTest 1.12's JSON escaping of UTF-8: its writer escapes every
    byte of a multi-byte character on its own ("\u00E2\u0080\u0094" for an
    em dash), so the parsed string holds the bytes as code points 0x80-0xFF.
    Such a string is re-decoded as UTF-8; anything else is returned as is.
    Applied to every string of a parsed document (dicts and lists too)."""
    if isinstance(value, str):
        if any(0x80 <= ord(ch) <= 0xFF for ch in value) and all(ord(ch) <= 0xFF for ch in value):
            try:
                return value.encode("latin-1").decode("utf-8")
            except UnicodeDecodeError:
                return value
        return value
    if isinstance(value, dict):
        return {repair_utf8(k): repair_utf8(v) for k, v in value.items()}
    if isinstance(value, list):
        return [repair_utf8(v) for v in value]
    return value


def load_json(path):
    """Parsed gtest JSON (strings repaired by repair_utf8), or (None, why)
    when missing or unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return repair_utf8(json.load(f)), None
    except FileNotFoundError:
        return None, "no gtest JSON written"
    except (OSError, ValueError) as e:
        return None, "gtest JSON unreadable (%s)" % e


def find_case(doc, full_name):
    """The test object for 'Suite.Name' in a gtest JSON document, or None."""
    if not isinstance(doc, dict):
        return None
    for ts in doc.get("testsuites") or []:
        if not isinstance(ts, dict):
            continue
        for tc in ts.get("testsuite") or []:
            if not isinstance(tc, dict):
                continue
            name = tc.get("name")
            for prefix in (ts.get("name"), tc.get("classname")):
                if prefix and "%s.%s" % (prefix, name) == full_name:
                    return tc
    return None


def properties(tc):
    """RecordProperty values of a test object: {key: str}."""
    return {k: v for k, v in tc.items() if k not in _GTEST_KEYS and isinstance(v, (str, int, float))}


def skip_message(output):
    """The GTEST_SKIP() message from gtest's console output, or ''."""
    if not output:
        return ""
    for m in _SKIP_RE.finditer(output):
        msg = m.group(1).strip()
        if msg:
            return msg
    return ""


def last_output_line(output, limit=200):
    """Last non-empty line of a process's output, for crash/error reasons."""
    for line in reversed((output or "").splitlines()):
        line = line.strip()
        if line:
            return one_line(line, limit)
    return ""


def _with_tail(reason, output):
    tail = last_output_line(output)
    return "%s; last output: %s" % (reason, tail) if tail else reason


def divergence_of(props):
    """The documented-versus-actual divergence a case recorded, or None.

    Suites record GoogleTest properties divergence_id, divergence_documented
    and divergence_actual (suites/common/suite.h); an id without both texts
    is kept with the missing text as ''."""
    did = props.get("divergence_id")
    if not did:
        return None
    return {"id": str(did),
            "documented": str(props.get("divergence_documented") or ""),
            "actual": str(props.get("divergence_actual") or "")}


def classify(full_name, proc, doc, doc_problem, output, timeout_s=None):
    """Decide one case's status from how its process ended and gtest's JSON.

    full_name: 'Suite.Name'; proc: procs.ProcResult; doc: parsed gtest JSON
    or None (doc_problem says why); output: the case's stdout+stderr text.

    Rules: timeout -> timeout; killed by a signal -> crash; no JSON and
    non-zero exit -> crash; no JSON and exit 0 -> error; test absent from
    the JSON -> error; failures -> fail; SKIPPED -> skip; COMPLETED -> pass;
    but a non-zero exit with a JSON saying pass or skip -> error.
    """
    tc = find_case(doc, full_name) if doc is not None else None
    props = properties(tc) if tc else {}
    feature = props.get("feature")
    spec = props.get("spec")
    divergence = divergence_of(props)

    def verdict(status, reason, skip_class=None):
        return Verdict(status, trim(reason), skip_class, feature, spec, divergence)

    if proc.timed_out:
        limit = ("%gs" % timeout_s) if timeout_s is not None else "the time limit"
        return verdict("timeout", "timed out after %s; process group killed" % limit)
    if proc.signal is not None:
        reason = "killed by %s" % signal_description(proc.signal)
        if tc is not None:
            reason += " after gtest reported %s" % (tc.get("result") or "a result").lower()
        return verdict("crash", _with_tail(reason, output))
    code = proc.returncode
    if doc is None:
        if code != 0:
            return verdict("crash", _with_tail(
                "exited with status %d without writing gtest JSON" % code, output))
        return verdict("error", _with_tail("exited 0 but %s" % doc_problem, output))
    if tc is None:
        reason = "test %s not found in gtest output (no test matched --gtest_filter)" % full_name
        if code != 0:
            reason += "; exit status %d" % code
        return verdict("error", _with_tail(reason, output))

    failures = [f for f in (tc.get("failures") or []) if isinstance(f, dict)]
    result = tc.get("result")
    status = tc.get("status")
    if failures:
        reason = str(failures[0].get("failure") or "failed (no message)").strip()
        if len(failures) > 1:
            reason = trim(reason, REASON_MAX - 30) + " (+%d more failures)" % (len(failures) - 1)
        return verdict("fail", reason)
    if result == "SKIPPED" or status == "NOTRUN":
        if code != 0:
            return verdict("error", _with_tail(
                "exit status %d but gtest reports the test skipped (a failure outside "
                "the test body, e.g. in SetUpTestSuite or an Environment?)" % code, output))
        if status == "NOTRUN":
            return verdict("skip", "test is disabled in the binary (DISABLED_ prefix)", "unsupported")
        reason = props.get("skip_reason") or skip_message(output) or "skipped (no reason given)"
        skip_class = props.get("skip_class")
        if skip_class not in SKIP_CLASSES:
            note = ("no skip_class recorded" if skip_class is None
                    else "unknown skip_class %r" % skip_class)
            reason = "%s [%s; assumed unsupported]" % (reason, note)
            skip_class = "unsupported"
        return verdict("skip", reason, skip_class)
    if result == "COMPLETED" or status == "RUN":
        if code != 0:
            return verdict("error", _with_tail(
                "exit status %d but gtest reports pass" % code, output))
        return verdict("pass", "")
    return verdict("error", "unrecognised gtest result %r / status %r" % (result, status))
