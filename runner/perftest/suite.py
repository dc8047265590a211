"""The protocol between the runner and a suite binary (a GoogleTest binary).

  suite_X --perftest_list
      stdout: {"suite": "X", "cases": [{"test": "Suite.Name",
               "feature": "x.feature_id", "spec": "reference"}, ...]}
  suite_X --perftest_probe
      stdout: {"perf_event_open": bool, "errno": int, "errno_name": str,
               "reason": str}; exit 0 either way
  suite_X --backend=kernel|mock [--profile=PROFILE.json]
          --gtest_filter=Suite.Name --gtest_output=json:FILE
      runs one case; the runner starts each case in its own session and
      process group, in a scratch working directory, with a timeout.

Errors: HarnessError (exit 3) when the binary cannot be executed, times
out, or prints something that is not the expected JSON; the message names
the binary and shows the start of what it printed.
"""

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from . import gtest
from .errors import HarnessError
from .procs import run_isolated, signal_description

QUERY_TIMEOUT_S = 60.0


@dataclass
class CaseInfo:
    """One case from --perftest_list."""

    suite: str
    test: str          # GoogleTest full name, Suite.Name
    feature: object    # str or None
    spec: object       # str or None


@dataclass
class CaseResult:
    suite: str
    name: str
    feature: object
    spec: object
    status: str
    skip_class: object
    reason: str
    duration_s: float
    log: object = None   # path of the saved output of a non-pass case
    extra: dict = None   # keys added to the case's JSON (repeats, flaky, denylist keys)

    def to_json(self, log_base=None):
        d = {
            "suite": self.suite,
            "name": self.name,
            "feature": self.feature,
            "spec": self.spec,
            "status": self.status,
            "skip_class": self.skip_class,
            "reason": self.reason,
            "duration_s": round(self.duration_s, 3),
        }
        if self.log:
            d["log"] = os.path.relpath(self.log, log_base) if log_base else self.log
        if self.extra:
            d.update(self.extra)
        return d


def _first_json_object(text):
    """Decode the first JSON object in text (tolerates a banner line before)."""
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text, start)
            return obj
        except ValueError:
            start = text.find("{", start + 1)
    raise ValueError("no JSON object found")


def _snippet(text, limit=300):
    return gtest.one_line(text, limit) or "(nothing)"


def _write_log(path, argv, output):
    """Save a non-pass case's command line and output; the path, or None."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("$ %s\n" % " ".join(argv))
            f.write(output)
        return path
    except OSError:
        return None


class SuiteBinary:
    """A suite_<name> binary in the build tree."""

    def __init__(self, name, path):
        self.name = name
        self.path = path

    def _query(self, flag):
        """Run `binary flag`, return the first JSON object it prints."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                proc = run_isolated([self.path, flag], timeout_s=QUERY_TIMEOUT_S,
                                    stdout=out, stderr=err)
            except OSError as e:
                raise HarnessError("cannot run %s %s: %s" % (self.path, flag, e)) from None
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
        if proc.timed_out:
            raise HarnessError("%s %s did not finish within %gs"
                               % (self.path, flag, QUERY_TIMEOUT_S))
        if proc.signal is not None:
            raise HarnessError("%s %s was killed by %s; stderr: %s"
                               % (self.path, flag, signal_description(proc.signal),
                                  _snippet(stderr)))
        try:
            obj = _first_json_object(stdout)
        except ValueError:
            raise HarnessError(
                "%s %s did not print a JSON object (exit status %d); stdout: %s; stderr: %s"
                % (self.path, flag, proc.returncode, _snippet(stdout), _snippet(stderr))
            ) from None
        if not isinstance(obj, dict):
            raise HarnessError("%s %s printed JSON that is not an object" % (self.path, flag))
        return obj

    def list_cases(self):
        """[CaseInfo] from --perftest_list. HarnessError on a bad listing."""
        doc = self._query("--perftest_list")
        cases = doc.get("cases")
        if not isinstance(cases, list):
            raise HarnessError("%s --perftest_list: no \"cases\" list in its JSON" % self.path)
        out = []
        for i, c in enumerate(cases):
            if not isinstance(c, dict) or not isinstance(c.get("test"), str) or "." not in c["test"]:
                raise HarnessError(
                    "%s --perftest_list: cases[%d] has no \"test\": \"Suite.Name\" string: %s"
                    % (self.path, i, _snippet(json.dumps(c), 120)))
            feature = c.get("feature")
            spec = c.get("spec")
            out.append(CaseInfo(
                suite=self.name,
                test=c["test"],
                feature=feature if isinstance(feature, str) and feature else None,
                spec=spec if isinstance(spec, str) and spec else None,
            ))
        return out

    def probe(self):
        """The --perftest_probe answer: its four keys normalised, scalar extras kept
        (e.g. "seccomp_mode")."""
        doc = self._query("--perftest_probe")
        if not isinstance(doc.get("perf_event_open"), bool):
            raise HarnessError("%s --perftest_probe: no boolean \"perf_event_open\" in %s"
                               % (self.path, _snippet(json.dumps(doc), 200)))
        errno_val = doc.get("errno")
        probe = {k: v for k, v in doc.items() if isinstance(v, (str, int, float, bool))}
        probe.update({
            "perf_event_open": doc["perf_event_open"],
            "errno": errno_val if isinstance(errno_val, int) and not isinstance(errno_val, bool)
            else 0,
            "errno_name": str(doc.get("errno_name") or ""),
            "reason": str(doc.get("reason") or ""),
        })
        return probe

    def run_case(self, case, *, backend, profile_path, timeout_s, scratch_root, log_path=None,
                 tracker=None):
        """Run one case isolated; returns a CaseResult (never raises for the
        case's own misbehaviour; a binary that cannot be executed is an
        ``error`` case)."""
        scratch = tempfile.mkdtemp(prefix="case-", dir=scratch_root)
        try:
            json_path = os.path.join(scratch, "gtest.json")
            argv = [self.path, "--backend=%s" % backend]
            if profile_path:
                argv.append("--profile=%s" % profile_path)
            argv += ["--gtest_filter=%s" % case.test, "--gtest_output=json:%s" % json_path]
            out_path = os.path.join(scratch, "output.log")
            with open(out_path, "wb") as out:
                try:
                    proc = run_isolated(argv, timeout_s=timeout_s, stdout=out,
                                        stderr=subprocess.STDOUT, cwd=scratch, tracker=tracker)
                except OSError as e:
                    return CaseResult(case.suite, case.test, case.feature, case.spec,
                                      "error", None, "cannot execute %s: %s" % (self.path, e), 0.0)
            with open(out_path, "rb") as f:
                output = f.read().decode("utf-8", "replace")
            doc, problem = gtest.load_json(json_path)
            v = gtest.classify(case.test, proc, doc, problem, output, timeout_s)
            log = None
            if log_path and v.status != "pass":
                log = _write_log(log_path, argv, output)
            return CaseResult(
                suite=case.suite,
                name=case.test,
                feature=v.feature or case.feature,
                spec=v.spec or case.spec,
                status=v.status,
                skip_class=v.skip_class,
                reason=v.reason,
                duration_s=proc.duration_s,
                log=log,
                extra={"divergence": v.divergence} if v.divergence else None,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
