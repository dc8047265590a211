"""The ``run`` command: choose the backend, run every selected case in its
own process group, write the report, print the summary.

Order of work, so bad input fails fast (exit 2) before anything runs:
resolve suites -> check --jobs/--repeat, --profile, explicit --expect
files, --output (when given) -> list cases -> apply --filter -> choose the
backend (probe) -> pick --expect=auto files -> run -> report.

Running: every (case, repeat) is a unit of work on a pool of --jobs threads;
each unit is one isolated process (suite.SuiteBinary.run_case). Results are
reported in selection order whatever order they finish in; the progress
output (progress.py) labels each finished case. The expectation lists
(expectations.py) decide per case: a ``class=`` (deny) entry means it is not
run (a skip with ``denylisted``); ``xfail`` runs it and marks it; ``retry=N``
runs a failing attempt again (``run_with_retries``); ``skip=CLASS`` makes its
skip expected, judged after the run (``expectations.judge``). With --repeat N
the runs of a case are folded by ``aggregate``.

Ctrl-C / SIGTERM: the handler only records the signal; the main loop then
kills every running case's process group (procs.ProcessTracker), cancels the
queued ones, and writes the partial report: finished cases keep their
result, the others are ``not_run``; exit 130 (143).

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

import concurrent.futures
import datetime
import fnmatch
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

from . import __version__, expectations, health, layout, report
from .duration import DEFAULT_CASE_TIMEOUT_S, format_duration
from .errors import HarnessError, Interrupted, UsageError
from .host import collect_host
from .procs import ProcessTracker
from .progress import make_progress
from .render import RENDERERS, RUN_FORMATS
from .suite import CaseResult, SuiteBinary

DEFAULT_TIMEOUT_S = DEFAULT_CASE_TIMEOUT_S


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


def attr_sizes(probe, binary):
    """host.attr_size_uapi / attr_size_kernel: the perf_event_attr size the
    suites were built with (UAPI header) and the one the running kernel knows
    (from the probe; null when perf_event_open is denied). The mock backend
    does not probe to choose, so the first suite binary is asked here."""
    if probe is None:
        try:
            probe = binary.probe()
        except Exception:  # a probe failure must not cost the report
            probe = {}
    out = {}
    for key in ("attr_size_uapi", "attr_size_kernel"):
        value = probe.get(key)
        out[key] = value if isinstance(value, int) and value > 0 else None
    return out


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


def _log_path(outdir, case, repeat_index=None):
    safe = case.test.replace("/", "_").replace(os.sep, "_")
    if repeat_index is not None:
        safe += ".%d" % repeat_index
    return os.path.join(outdir, "logs", case.suite, safe + ".log")


def _now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _SignalsToFlag:
    """During the run, SIGINT and SIGTERM only record the signal; the main
    loop notices within a fraction of a second, stops the running cases and
    writes the partial report."""

    def __init__(self):
        self.signum = None

    def __enter__(self):
        def handler(signum, frame):
            if self.signum is None:
                self.signum = signum
        self.saved = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        for s, h in self.saved.items():
            signal.signal(s, h)
        return False


def aggregate(case, runs):
    """One CaseResult from the runs of a case (``--repeat``; see SCHEMA.md).

    All runs agree: that result (mean duration). They differ: ``flaky``; the
    status of the first failing run (else skip), its reason prefixed with
    "flaky (k of N runs passed): "."""
    if len(runs) == 1:
        return runs[0]
    statuses = [r.status for r in runs]
    repeats = []
    for r in runs:
        d = {"status": r.status, "duration_s": round(r.duration_s, 3)}
        if r.status != "pass":
            d["reason"] = r.reason
        repeats.append(d)
    mean = sum(r.duration_s for r in runs) / len(runs)
    extra = {"repeats": repeats, "flaky": len(set(statuses)) > 1}
    folded = health.merge([(r.extra or {}).get("health") for r in runs])
    if folded:
        extra["health"] = folded
    if not extra["flaky"]:
        chosen, reason = runs[0], runs[0].reason
    else:
        chosen = next((r for r in runs if r.status in report.FAILING), None) or next(
            r for r in runs if r.status == "skip")
        passed = statuses.count("pass")
        reason = "flaky (%d of %d runs passed): %s" % (passed, len(runs), chosen.reason)
    return CaseResult(case.suite, case.test, chosen.feature, chosen.spec, chosen.status,
                      chosen.skip_class, reason, mean, chosen.log, extra)


def run_record(args, command, *, backend, backend_reason, profile, suites, started, t0,
               interrupted, build_dir, expected, env):
    """The report's ``run`` block (SCHEMA.md) for host and guest runs alike:
    what ran, how (the options in ``args``), when, for how long (since the
    monotonic ``t0``), which expectation lists applied and the environment
    they were matched against."""
    return {
        "backend": backend,
        "backend_reason": backend_reason,
        "profile": profile,
        "suites": list(suites),
        "started": started,
        "duration_s": round(time.monotonic() - t0, 3),
        "perftest_version": __version__,
        "command": command,
        "strict": bool(args.strict),
        "timeout_s": args.timeout,
        "filter": args.filter,
        "interrupted": interrupted is not None,
        "build_dir": build_dir,
        "jobs": args.jobs,
        "repeat": args.repeat,
        "denylists": expected.paths,
        "expectations": expected.paths,
        "environment": env.values(),
    }


def finish_run(doc, outdir, args, interrupted, notes=()):
    """Write the report ``doc`` and its renderings to ``outdir``, print the
    summary (then ``notes``, one line each) and the paths written; return the
    run's exit code (README "Exit codes"). UsageError when outdir cannot be
    written."""
    try:
        paths = report.write_report(doc, outdir, RUN_FORMATS)
    except OSError as e:
        raise UsageError("cannot write report to %s: %s" % (outdir, e)) from None
    say("")
    say(RENDERERS["text"].render(doc), end="")
    for line in notes:
        say(line)
    say("report: %s" % "\n        ".join(paths))
    if interrupted:
        return interrupted.exit_code
    return report.exit_code(doc, strict=args.strict)


def fold_case(case, runs, entry, strict):
    """The reported CaseResult of a finished case: its runs (``--repeat``)
    folded by :func:`aggregate`, then the expectation entry that matched it
    (or None) applied: ``xfail`` marked, and ``expectations.judge()``'s
    verdict (expected/unexpected skip, unexpected pass) under ``strict``.
    Host runs and guest runs (vmrun.py) both report through this."""
    r = aggregate(case, runs)
    if entry is not None and entry.xfail:
        r.extra = dict(r.extra or {}, xfail=True, denylist_reason=entry.reason,
                       denylist_entry=entry.source)
    r.extra = dict(r.extra or {}, **expectations.judge(r, entry, strict))
    return r


def denied_result(case, entry):
    return CaseResult(case.suite, case.test, case.feature, case.spec, "skip", entry.skip_class,
                      "denylisted: %s" % entry.reason, 0.0, None,
                      {"denylisted": True, "denylist_reason": entry.reason,
                       "denylist_entry": entry.source, "expectation_entry": entry.source,
                       "expectation_reason": entry.reason})


def run_with_retries(run_once, entry, stopping, log_base=None):
    """One run of a case; with a ``retry=N`` entry (a timing-sensitive kernel
    case), a failing attempt is run again, up to N more times, and the last
    attempt is the result. run_once(attempt) -> CaseResult (attempt 0, 1, ...).
    More than one attempt: ``retried: true`` and ``attempts`` (each attempt's
    status, duration_s, reason when not a pass, log relative to log_base)
    on the result."""
    limit = entry.retries if entry is not None and entry.verdict == expectations.RETRY else 0
    attempts = [run_once(0)]
    while attempts[-1] is not None and attempts[-1].status == "fail" and \
            len(attempts) <= limit and not stopping():
        attempts.append(run_once(len(attempts)))
    last = attempts[-1]
    if last is None or len(attempts) == 1:
        return last
    out = []
    for r in attempts:
        d = {"status": r.status, "duration_s": round(r.duration_s, 3)}
        if r.status != "pass":
            d["reason"] = r.reason
        if r.log:
            d["log"] = os.path.relpath(r.log, log_base) if log_base else r.log
        out.append(d)
    last.extra = dict(last.extra or {}, retried=True, attempts=out)
    return last


def _validate_counts(args):
    if args.jobs < 1:
        raise UsageError("--jobs=%d: must be at least 1" % args.jobs)
    if args.repeat < 1:
        raise UsageError("--repeat=%d: must be at least 1" % args.repeat)


def run_command(args, command):
    """Execute ``perftest run``; returns the exit code. ``command`` is the
    argv recorded in run.command."""
    if getattr(args, "vm", None):
        from .vmrun import run_vm       # the same suites in QEMU guests (vm/README.md)
        return run_vm(args, command)
    requested = split_list(args.suite)
    if getattr(args, "all", False) and requested:
        raise UsageError("--all runs every suite; drop it or --suite=%s" % ",".join(requested))
    _validate_counts(args)
    binaries = layout.resolve_suites(requested)
    suite_names = list(binaries)

    profile_name = profile_path = profile_doc = None
    if args.profile:
        if args.backend == "kernel":
            raise UsageError("--profile=%s selects a mock machine, but --backend=kernel "
                             "runs on this one; drop one of them" % args.profile)
        profile_name, profile_path, profile_doc = layout.load_profile(args.profile)

    expect_specs = split_list(args.expect)
    expectations.check_files(expect_specs)  # bad files fail before anything runs

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
                profile_name, profile_path, profile_doc = layout.load_profile(layout.DEFAULT_PROFILE)
            except UsageError as e:
                raise HarnessError("default mock profile: %s" % e) from None
    elif args.profile:
        say("note: --profile=%s ignored: the kernel backend was chosen" % args.profile)
        profile_name = profile_path = None

    env = expectations.environment(backend, profile_doc)
    expected = expectations.resolve(expect_specs, env)
    if "auto" in expect_specs and not any(
            os.path.dirname(p) == expectations.directory() for p in expected.paths):
        say("note: --expect=auto: no expectation list in %s matches %s"
            % (expectations.directory(), env.describe()))

    if outdir is None:
        outdir = report.check_output_dir(
            default_output_dir(suite_names, not requested, backend))
    shutil.rmtree(os.path.join(outdir, "logs"), ignore_errors=True)

    say("backend: %s (%s)" % (backend, backend_reason))
    if profile_name:
        say("profile: %s (%s)" % (profile_name, profile_path))
    for path in expected.paths:
        say("expectations: %s" % path)
    how = "timeout %s per case" % format_duration(args.timeout)
    if args.repeat > 1:
        how += ", %d runs of each" % args.repeat
    if args.jobs > 1:
        how += ", %d in parallel" % args.jobs
    say("running %d cases from %s, %s" % (len(selected), ", ".join(suite_names), how))

    started = _now_iso()
    t0 = time.monotonic()
    monitor = health.HostMonitor.open()
    outcome = _run_cases(args, suites, selected, expected, backend, profile_path, outdir,
                         monitor)
    results, interrupted = outcome

    # From here on a second Ctrl-C must not lose the partial report.
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if interrupted:
            print("", file=sys.stderr)
            not_run = sum(1 for r in results if r is None)
            warn("%s: writing a partial report; %d cases not run" % (interrupted, not_run))
        final = []
        for case, r in zip(selected, results):
            if r is None:
                r = CaseResult(case.suite, case.test, case.feature, case.spec,
                               report.NOT_RUN, None, "not run: %s" % interrupted, 0.0)
            final.append(r)
        run = run_record(args, command, backend=backend, backend_reason=backend_reason,
                         profile=profile_name, suites=suite_names, started=started, t0=t0,
                         interrupted=interrupted, build_dir=layout.build_dir(),
                         expected=expected, env=env)
        if probe is not None:
            run["probe"] = probe
        host = collect_host()
        host.update(attr_sizes(probe, suites[suite_names[0]]))
        cases_json = [r.to_json(log_base=outdir) for r in final]
        doc = report.build_report(run, host, cases_json,
                                  health=monitor.summary(cases_json, args.taint, args.jobs))
        monitor.close()
        return finish_run(doc, outdir, args, interrupted)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _run_cases(args, suites, selected, expected, backend, profile_path, outdir, monitor=None):
    """Run every (case, repeat) unit on a pool of ``args.jobs`` threads, each
    unit its own isolated process. Returns ([CaseResult or None per selected
    case, in selection order], Interrupted or None); None = not run."""
    n = args.repeat
    results = [None] * len(selected)
    runs = [dict() for _ in selected]
    progress = make_progress(sys.stdout, len(selected), quiet=args.quiet)
    tracker = ProcessTracker()
    running = {}                       # unit -> case, for the progress line
    lock = threading.Lock()
    scratch_root = tempfile.mkdtemp(prefix="perftest-run-")

    def work(index, k):
        case = selected[index]
        if tracker.stopping:
            return None
        with lock:
            running[(index, k)] = case

        def run_once(attempt):
            log = _log_path(outdir, case, k if n > 1 else None)
            if attempt:
                log = log[:-len(".log")] + ".attempt%d.log" % (attempt + 1)
            return suites[case.suite].run_case(
                case, backend=backend, profile_path=profile_path, timeout_s=args.timeout,
                scratch_root=scratch_root, log_path=log, tracker=tracker)
        mark = monitor.before() if monitor else None      # around all the attempts
        try:
            r = run_with_retries(run_once, entries[index], lambda: tracker.stopping, outdir)
        finally:
            with lock:
                running.pop((index, k), None)
        # A case killed because the run was interrupted has no trustworthy result.
        if tracker.stopping:
            return None
        if monitor:
            r.extra = dict(r.extra or {}, health=monitor.after(mark))
        return r

    def finish_case(index):
        case = selected[index]
        r = fold_case(case, [runs[index][k] for k in range(n)], entries[index], args.strict)
        results[index] = r
        progress.case_done(case, r)

    entries = [expected.match(case) for case in selected]
    units = []
    for i, case in enumerate(selected):
        if entries[i] is not None and entries[i].denies:
            results[i] = denied_result(case, entries[i])
            continue
        units += [(i, k) for k in range(n)]

    interrupted = None
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs,
                                                 thread_name_prefix="perftest-case")
    try:
        with _SignalsToFlag() as sig:
            # Denied cases are reported first, as they are decided.
            for i, r in enumerate(results):
                if r is not None:
                    progress.case_done(selected[i], r)
            futures = {pool.submit(work, i, k): (i, k) for i, k in units}
            pending = set(futures)
            try:
                while pending:
                    done, pending = concurrent.futures.wait(
                        pending, timeout=0.1, return_when=concurrent.futures.FIRST_COMPLETED)
                    for f in sorted(done, key=lambda f: futures[f]):
                        i, k = futures[f]
                        r = f.result()
                        if r is None:
                            continue
                        runs[i][k] = r
                        if len(runs[i]) == n:
                            finish_case(i)
                    if sig.signum is not None:
                        interrupted = Interrupted(sig.signum)
                        break
                    with lock:
                        now = list(running.values())
                    progress.tick(now)
            except KeyboardInterrupt:
                interrupted = Interrupted(signal.SIGINT)
            if interrupted is not None:
                tracker.stop()
                pool.shutdown(wait=True, cancel_futures=True)
    finally:
        tracker.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        progress.finish()
        shutil.rmtree(scratch_root, ignore_errors=True)
    # A case is finished only with all its repeats; the others stay None (not run).
    return results, interrupted
