"""The ``run`` command: choose the backend, run every selected case in its
own process group, write the report, print the summary.

Order of work, so bad input fails fast (exit 2) before anything runs:
resolve suites -> check --profile -> check --output (when given) -> list
cases -> apply --filter -> choose the backend (probe) -> run -> report.

Backend choice (recorded as run.backend / run.backend_reason):
  mock    as requested; no probe.
  kernel  as requested; the first suite is probed and a failing probe is a
          warning (cases then skip or fail truthfully).
  auto    probe the first suite binary with --perftest_probe: kernel when
          perf_event_open works, else mock, saying why.

Default output directory: ./perftest-out/<suites>-<backend> under the
current directory (<suites> is the suite name, names joined by "+", or
"all" when --suite was not given); it is reused (overwritten) by the next
run with the same suites and backend.
"""

import datetime
import fnmatch
import os
import shutil
import signal
import sys
import tempfile
import time

from . import __version__, layout, report
from .duration import format_duration
from .errors import HarnessError, Interrupted, UsageError
from .host import collect_host
from .render import RENDERERS, RUN_FORMATS
from .suite import CaseResult, SuiteBinary

DEFAULT_TIMEOUT_S = 60.0


def say(*parts, **kw):
    print(*parts, flush=True, **kw)


def warn(msg):
    print("perftest: warning: %s" % msg, file=sys.stderr, flush=True)


def split_list(values):
    """['a,b', 'c'] -> ['a', 'b', 'c'] (repeated and comma-separated flags)."""
    out = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def filter_cases(cases, patterns):
    """Cases whose feature id or test name matches any glob in patterns."""
    if not patterns:
        return list(cases)
    return [c for c in cases
            if any(fnmatch.fnmatchcase(c.test, p) or
                   (c.feature and fnmatch.fnmatchcase(c.feature, p)) for p in patterns)]


def default_output_dir(suite_names, all_suites, backend):
    label = "all" if all_suites else "+".join(suite_names)
    if len(label) > 60:
        label = "%d-suites" % len(suite_names)
    return os.path.join(os.getcwd(), "perftest-out", "%s-%s" % (label, backend))


def probe_reason(probe):
    why = probe.get("errno_name") or ("errno %d" % probe["errno"] if probe.get("errno") else "")
    text = "perf_event_open failed"
    if why:
        text += " with %s" % why
    if probe.get("reason"):
        text += ": %s" % probe["reason"]
    return text


def choose_backend(requested, binary):
    """(backend, reason, probe or None) per the rules in the module doc."""
    if requested == "mock":
        return "mock", "requested with --backend=mock", None
    probe = binary.probe()
    if requested == "kernel":
        reason = "requested with --backend=kernel"
        if not probe["perf_event_open"]:
            warn("--backend=kernel but %s; cases will skip or fail" % probe_reason(probe))
            reason += "; %s" % probe_reason(probe)
        return "kernel", reason, probe
    if probe["perf_event_open"]:
        works = "auto: perf_event_open works"
        if probe.get("reason"):
            works += " (%s)" % probe["reason"]
        return "kernel", works, probe
    return "mock", "auto: %s" % probe_reason(probe), probe


def _log_path(outdir, case):
    safe = case.test.replace("/", "_").replace(os.sep, "_")
    return os.path.join(outdir, "logs", case.suite, safe + ".log")


def _now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _SignalsToInterrupted:
    """During the run, SIGINT and SIGTERM raise Interrupted(signum)."""

    def __enter__(self):
        def handler(signum, frame):
            raise Interrupted(signum)
        self.saved = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        for s, h in self.saved.items():
            signal.signal(s, h)
        return False


def run_command(args, command):
    """Execute ``perftest run``; returns the exit code. ``command`` is the
    argv recorded in run.command."""
    requested = split_list(args.suite)
    binaries = layout.resolve_suites(requested)
    suite_names = list(binaries)

    profile_name = profile_path = None
    if args.profile:
        if args.backend == "kernel":
            raise UsageError("--profile=%s selects a mock machine, but --backend=kernel "
                             "runs on this one; drop one of them" % args.profile)
        profile_name, profile_path, _ = layout.load_profile(args.profile)

    outdir = report.check_output_dir(args.output) if args.output else None

    suites = {name: SuiteBinary(name, path) for name, path in binaries.items()}
    cases = []
    for name, binary in suites.items():
        listed = binary.list_cases()
        cases += listed
    patterns = split_list([args.filter]) if args.filter else []
    selected = filter_cases(cases, patterns)
    if patterns and not selected:
        raise UsageError("--filter=%s matched none of the %d cases in %s (patterns match "
                         "feature ids or test names; see `perftest list`)"
                         % (args.filter, len(cases), ", ".join(suite_names)))
    if not selected:
        warn("no cases listed by %s" % ", ".join(suite_names))

    backend, backend_reason, probe = choose_backend(args.backend, suites[suite_names[0]])
    if backend == "mock":
        if profile_name is None:
            try:
                profile_name, profile_path, _ = layout.load_profile(layout.DEFAULT_PROFILE)
            except UsageError as e:
                raise HarnessError("default mock profile: %s" % e) from None
    elif args.profile:
        say("note: --profile=%s ignored: the kernel backend was chosen" % args.profile)
        profile_name = profile_path = None

    if outdir is None:
        outdir = report.check_output_dir(
            default_output_dir(suite_names, not requested, backend))
    shutil.rmtree(os.path.join(outdir, "logs"), ignore_errors=True)

    say("backend: %s (%s)" % (backend, backend_reason))
    if profile_name:
        say("profile: %s (%s)" % (profile_name, profile_path))
    say("running %d cases from %s, timeout %s per case"
        % (len(selected), ", ".join(suite_names), format_duration(args.timeout)))

    started = _now_iso()
    t0 = time.monotonic()
    results = []
    interrupted = None
    scratch_root = tempfile.mkdtemp(prefix="perftest-run-")
    width = len(str(len(selected)))
    try:
        with _SignalsToInterrupted():
            try:
                for i, case in enumerate(selected, 1):
                    r = suites[case.suite].run_case(
                        case, backend=backend, profile_path=profile_path,
                        timeout_s=args.timeout, scratch_root=scratch_root,
                        log_path=_log_path(outdir, case))
                    results.append(r)
                    if not args.quiet:
                        say("[%*d/%d] %-7s %s (%s) %.2fs" % (
                            width, i, len(selected), r.status, case.feature or "-",
                            case.test, r.duration_s))
            except KeyboardInterrupt:
                interrupted = Interrupted(signal.SIGINT)
            except Interrupted as e:
                interrupted = e
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)

    # From here on a second Ctrl-C must not lose the partial report.
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if interrupted:
            print("", file=sys.stderr)
            warn("%s: writing a partial report; %d cases not run"
                 % (interrupted, len(selected) - len(results)))
            for case in selected[len(results):]:
                results.append(CaseResult(case.suite, case.test, case.feature, case.spec,
                                          report.NOT_RUN, None, "not run: %s" % interrupted, 0.0))
        run = {
            "backend": backend,
            "backend_reason": backend_reason,
            "profile": profile_name,
            "suites": suite_names,
            "started": started,
            "duration_s": round(time.monotonic() - t0, 3),
            "perftest_version": __version__,
            "command": command,
            "strict": bool(args.strict),
            "timeout_s": args.timeout,
            "filter": args.filter,
            "interrupted": interrupted is not None,
            "build_dir": layout.build_dir(),
        }
        if probe is not None:
            run["probe"] = probe
        doc = report.build_report(run, collect_host(),
                                  [r.to_json(log_base=outdir) for r in results])
        try:
            paths = report.write_report(doc, outdir, RUN_FORMATS)
        except OSError as e:
            raise UsageError("cannot write report to %s: %s" % (outdir, e)) from None
        say("")
        say(RENDERERS["text"].render(doc), end="")
        say("report: %s" % "\n        ".join(paths))
        if interrupted:
            return interrupted.exit_code
        return report.exit_code(doc, strict=args.strict)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
