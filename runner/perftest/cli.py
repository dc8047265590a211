"""``perftest`` command line (argparse): list, run, report, diff, doctor, bench.

main(argv=None) -> exit code. Every PerftestError is printed as
"perftest: error: <message>" without a traceback and mapped to its exit
code (see errors.py); argparse usage errors exit 2.
"""

import argparse
import json
import os
import shlex
import sys

from . import __version__, layout
from .duration import DEFAULT_CASE_TIMEOUT_S, parse_duration
from .errors import EXIT_HARNESS, EXIT_INTERRUPTED, EXIT_OK, PerftestError, UsageError
from .render import RENDERERS

# The commands' modules are imported when a command runs, so `perftest
# --help` and the light commands start fast.

EPILOG = """\
exit codes:
  0    every case passed (skips allowed, unless --strict); diff: nothing regressed
  1    some case failed, errored, timed out or crashed (with --strict: or skipped
       without an expectation list declaring it, or an expected skip passed);
       diff: something regressed
  2    bad usage or bad input (unknown suite, backend, profile or format;
       unwritable --output; missing suite binary; a file that is not a valid
       perftest report; a bad expectation list line)
  3    harness error (a binary that cannot be run, listing or probe failed)
  130  interrupted by Ctrl-C (143: SIGTERM); the partial report is written,
       unfinished cases marked not_run

environment:
  PERFTEST_BUILD_DIR     build tree holding bin/suite_* and bin/bench_* (default <repo>/build)
  PERFTEST_PROFILES_DIR  mock profiles (default <repo>/fixtures/profiles)
  PERFTEST_EXPECTATIONS_DIR  expectation lists for --expect=auto (default <repo>/ci/expectations;
                         the older name PERFTEST_DENYLIST_DIR is still read)
"""


def _duration(text):
    try:
        return parse_duration(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _count(flag):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%s takes a whole number, got %r" % (flag, text)) \
                from None
        if value < 1:
            raise argparse.ArgumentTypeError("%s must be at least 1, got %d" % (flag, value))
        return value
    return parse


def add_vm_arguments(sp, run=True):
    """--vm and its companions (vm/README.md), for run, doctor."""
    g = sp.add_argument_group("guests (vm/README.md)")
    g.add_argument("--vm", metavar="KERNEL",
                   help="run inside a QEMU guest booted with KERNEL: debian:VERSION[-FLAVOUR] "
                        "(debian:6.1, debian:6.12, debian:6.1-cloud; fetched once into "
                        "~/.cache/perftest/kernels) or a kernel image path")
    g.add_argument("--arch", metavar="ARCH",
                   help="guest arch: x86_64 (default: this host's), arm64, riscv64")
    g.add_argument("--vm-bin", metavar="DIR",
                   help="the guest's suite binaries (default: the build's bin/ for this "
                        "host's arch, <repo>/build-aarch64/bin for arm64, "
                        "<repo>/build-riscv64/bin for riscv64)")
    g.add_argument("--vm-accel", choices=("auto", "kvm", "tcg"), default="auto",
                   help="auto (default): KVM where it boots a stock kernel (probed once, "
                        "cached), else TCG")
    g.add_argument("--vm-paranoid", metavar="N|host|keep", default="host",
                   help="perf_event_paranoid in the guest: a level, 'host' (default: this "
                        "host's, so host and guest reports compare like with like) or 'keep' "
                        "(the guest kernel's own; Debian's is 3)")
    g.add_argument("--vm-modules", metavar="DIR",
                   help="modules (lib/modules/RELEASE) for a kernel image path")
    g.add_argument("--vm-icount", metavar="SPEC|off",
                   help="QEMU -icount under TCG (default shift=0: the guest clock counts "
                        "instructions, so timing cases hold whatever the host's load; "
                        "'off' for real-time clocks)")
    g.add_argument("--vm-append", metavar="ARGS", help="extra guest kernel command line")


def build_parser():
    p = argparse.ArgumentParser(
        prog="perftest",
        description="Conformance harness for the Linux perf_event interface: "
                    "run the suites, write compatibility reports.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version="perftest %s" % __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def add(name, help_, description, add_help=True):
        return sub.add_parser(name, help=help_, description=description, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              add_help=add_help)

    sp = add("list", "list suites, cases, feature ids and spec references",
             "List the suites in the build tree with their cases (from --perftest_list).")
    sp.add_argument("--suite", action="append", metavar="NAME[,NAME...]",
                    help="only these suites (repeatable; default: all)")
    sp.add_argument("--json", action="store_true", help="print the listing as JSON")

    sp = add("run", "run suites and write a report",
             "Run every case of the selected suites, each in its own process group with a "
             "timeout, and write DIR/report.json with its renderings report.md, "
             "report.html, report.junit.xml and report.ktap.")
    sp.add_argument("--suite", action="append", metavar="NAME[,NAME...]",
                    help="suites to run (repeatable; default: every suite_* in the build tree)")
    sp.add_argument("--all", action="store_true",
                    help="run every suite in the build tree (the default without --suite)")
    sp.add_argument("--backend", choices=("auto", "kernel", "mock"), default="auto",
                    help="auto (default): kernel if perf_event_open works here "
                         "(probed with the first suite), else mock")
    sp.add_argument("--profile", metavar="NAME",
                    help="mock machine profile: a name from fixtures/profiles or a path to "
                         "a profile JSON (mock backend only; default %s)" % layout.DEFAULT_PROFILE)
    sp.add_argument("--output", metavar="DIR",
                    help="report directory (default ./perftest-out/<suites>-<backend>)")
    sp.add_argument("--timeout", type=_duration, default=DEFAULT_CASE_TIMEOUT_S, metavar="DUR",
                    help="per-case time limit: 30, 30s, 500ms, 2m (default 60s)")
    sp.add_argument("--filter", metavar="GLOB[,GLOB...]",
                    help="only cases whose feature id or test name matches a glob, "
                         "e.g. 'ringbuffer.*' or 'RingBuffer.Wrap*'")
    sp.add_argument("-j", "--jobs", type=_count("--jobs"), default=1, metavar="N",
                    help="run N cases in parallel, each still in its own process group "
                         "(default 1); the report keeps the listing order")
    sp.add_argument("--repeat", type=_count("--repeat"), default=1, metavar="N",
                    help="run each case N times; cases whose runs disagree are marked flaky "
                         "(status: the first failing run)")
    sp.add_argument("--expect", "--denylist", dest="expect", action="append",
                    metavar="FILE[,FILE...]|auto",
                    help="expectation list(s), one line per case with its reason: cases not "
                         "to run (denylisted), expected failures, expected skips, retries of "
                         "timing-sensitive kernel cases; 'auto' picks the files in "
                         "ci/expectations whose '# match:' line fits this run's environment "
                         "(format: ci/expectations/README.md); --denylist is the older name")
    sp.add_argument("--strict", action="store_true",
                    help="a skip no expectation list declares fails the run (exit 1), and so "
                         "does an expected skip that passed")
    sp.add_argument("--taint", choices=("fail", "warn", "ignore"), default="warn",
                    help="kernel health verdict: the taint value and kernel log (WARN/BUG/oops) "
                         "are read around every case; warn (default): flag the cases in the "
                         "report; fail: such a case fails the run (exit 1); ignore: record only")
    sp.add_argument("-q", "--quiet", action="store_true", help="no per-case progress output")
    add_vm_arguments(sp)

    sp = add("report", "re-render a saved report",
             "Validate a saved report.json and render it.")
    sp.add_argument("report", metavar="REPORT.json")
    sp.add_argument("--format", choices=sorted(RENDERERS), default="md",
                    help="; ".join("%s: %s" % (k, RENDERERS[k].description)
                                   for k in sorted(RENDERERS)))
    sp.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    sp = add("diff", "compare two reports: the porting check",
             "Compare two saved reports case by case, matched by feature id: what NEW "
             "gained, lost or changed against BASE (two kernels, a machine and a mock "
             "profile, two arch profiles). Exit 0 when nothing regressed, 1 when something "
             "did (a case that passed in BASE fails in NEW, a skipped one now fails, a new "
             "case fails), 2 on bad input.")
    sp.add_argument("base", metavar="BASE.json")
    sp.add_argument("new", metavar="NEW.json")
    sp.add_argument("--format", choices=("text", "md", "json"), default="text",
                    help="text (default), md (Markdown, e.g. for a CI job summary), json")
    sp.add_argument("--strict", action="store_true",
                    help="also count lost coverage as a regression: pass -> skip/not_run, "
                         "and a removed case that passed")
    sp.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    sp = add("matrix", "one compatibility matrix from many reports",
             "Merge any number of reports (kernels, arches, bare-metal runners, guests, mock "
             "profiles) into one compatibility matrix: a row per behaviour (feature id, "
             "grouped by suite), a column per report (backend or mock profile, kernel "
             "release, arch, CPU), a cell per case with its status, skip class, reason and "
             "kernel health; a behaviour a report lacks is 'missing'. Writes DIR/matrix.json, "
             "matrix.md and matrix.html. Exit 0; 2 on bad input (no reports, a file that is "
             "not a report, two reports with the same column identity).")
    sp.add_argument("reports", nargs="*", metavar="REPORT",
                    help="report.json files, or directories holding one")
    sp.add_argument("--output", metavar="DIR",
                    help="where to write matrix.{json,md,html} (default ./perftest-out/matrix)")

    sp = add("doctor", "what this machine allows perf_event_open to do, and why",
             "Explain this machine: perf_event_paranoid and what it means for this user, "
             "capabilities, mlock limits, seccomp, PMUs (hardware PMU, intel_pt), tracefs, "
             "container or VM, the kernel probe of a suite binary, and the backend "
             "`perftest run --backend=auto` would choose. Exit 0; 3 when the probe binary "
             "misbehaves.")
    sp.add_argument("--json", action="store_true", help="print the facts as JSON")
    sp.add_argument("--suite", metavar="NAME",
                    help="suite binary to probe with (default: ringbuffer, else the first built)")
    sp.add_argument("--write-profile", metavar="FILE",
                    help="probe this machine (sysfs, sysctls, real perf_event_open calls) and write a mock "
                         "arch profile to FILE, for `perftest run --backend=mock --profile=FILE`")
    add_vm_arguments(sp)

    sp = add("bench", "run Google Benchmarks, print ratios against their baselines",
             "Run <build>/bin/bench_NAME --benchmark_format=json and print each benchmark's "
             "time, bytes/s, items/s and speed relative to the baseline (a benchmark whose "
             "name contains 'Baseline', paired by argument suffix). Arguments after -- go "
             "to the benchmark binary, e.g. perftest bench ringbuffer -- "
             "--benchmark_filter=Read.")
    sp.add_argument("name", nargs="?", metavar="NAME",
                    help="benchmark binary bench_NAME (default: every bench_*)")

    sp = add("pt", "Intel PT: dump packets, decode, record (build/bin/perftest_pt)",
             "Forwarded to <build>/bin/perftest_pt: `perftest pt dump FILE` prints the "
             "packets like `perf script -D`; `perftest pt decode FILE --itrace=ibe` the flow "
             "(FILE: raw trace with --image ADDR:FILE, or a `perftest pt record` capture); "
             "`perftest pt --help` for all of it.",
             add_help=False)
    sp.add_argument("args", nargs=argparse.REMAINDER, help="arguments for perftest_pt")

    sp = add("data", "perf.data files: list every record, rewrite (build/bin/perftest_data)",
             "Forwarded to <build>/bin/perftest_data: `perftest data dump FILE` lists every "
             "record of a perf.data file as `perf report -D` does; `perftest data rewrite IN "
             "OUT [--pipe]` writes it back; `perftest data --help` for all of it.",
             add_help=False)
    sp.add_argument("args", nargs=argparse.REMAINDER, help="arguments for perftest_data")

    sp = add("fidelity", "mock vs kernel: the same calls, the agreement figure",
             "Forwarded to <build>/bin/perftest_fidelity: runs seeded random call sequences "
             "on the kernel and on the mock with this host's profile and reports every "
             "disagreement, e.g. perftest fidelity --count=10000 --seed=1.", add_help=False)
    sp.add_argument("args", nargs=argparse.REMAINDER, help="arguments for perftest_fidelity")

    sp = add("profile", "CPU profiler: stack samples at F Hz, bcc profile.py's interface",
             "Forwarded to <build>/bin/perftest_profile (bcc-profile-rfc.txt on the harness): "
             "[-p PID | -u | -k] [-U | -K] [-F HZ] [-d] [-f] [--stack-storage-size N] "
             "[--backend=kernel|mock [--profile=P]] [--mode=ring|bpf] [--format=bcc|folded|svg] "
             "[duration], e.g. perftest profile -F 99 -f 5; `perftest profile --help` for all of it.",
             add_help=False)
    sp.add_argument("args", nargs=argparse.REMAINDER, help="arguments for perftest_profile")

    sp = add("exec", "run an unmodified program with its perf syscalls served by the mock",
             "Forwarded to <build>/bin/perftest_exec (tools/exec): [--profile=NAME|PATH] "
             "[--log=FILE] [--inject=CALL:ERRNO[@N]]... -- PROG [ARGS], e.g. perftest exec "
             "--profile=x86_64-intel -- perf stat -e cycles -- ls; works where seccomp denies "
             "perf_event_open. Exit status: PROG's.", add_help=False)
    sp.add_argument("args", nargs=argparse.REMAINDER, help="options, then -- PROG [ARGS]")
    return p


def cmd_list(args):
    from .run import split_list
    from .suite import SuiteBinary
    binaries = layout.resolve_suites(split_list(args.suite))
    listing = []
    for name, path in binaries.items():
        cases = SuiteBinary(name, path).list_cases()
        listing.append((name, path, cases))
    if args.json:
        print(json.dumps([{"suite": n, "binary": p, "cases": [
            {"test": c.test, "feature": c.feature, "spec": c.spec} for c in cs]}
            for n, p, cs in listing], indent=2))
        return EXIT_OK
    total = 0
    for name, path, cases in listing:
        total += len(cases)
        print("suite %s: %d cases (%s)" % (name, len(cases), path))
        rows = [("FEATURE", "TEST", "SPEC")] + [
            (c.feature or "-", c.test, c.spec or "-") for c in cases]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        for r in rows:
            print("  %-*s  %-*s  %s" % (w0, r[0], w1, r[1], r[2]))
        print()
    print("%d suites, %d cases" % (len(listing), total))
    return EXIT_OK


def _emit(text, output):
    if output:
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise UsageError("cannot write %s: %s" % (output, e.strerror or e)) from None
    else:
        sys.stdout.write(text)


def cmd_report(args):
    from . import report
    doc = report.load_report(args.report)
    _emit(RENDERERS[args.format].render(doc), args.output)
    return EXIT_OK


def cmd_diff(args):
    from . import diff
    base, new = diff.load_pair(args.base, args.new)
    result = diff.compare(base, new, args.base, args.new, strict=args.strict)
    _emit(diff.FORMATS[args.format](result), args.output)
    return diff.exit_code(result)


def cmd_doctor_vm(args):
    """doctor --vm: describe the guest (and --write-profile: probe it)."""
    from . import vmrun
    if args.write_profile:
        arch = args.arch or os.uname().machine
        if arch not in ("x86_64", "amd64"):
            raise UsageError("doctor --vm --write-profile runs `perftest doctor "
                             "--write-profile` (Python) in the guest, which has Python only in "
                             "an x86_64 guest (the host's root over 9p); not for --arch=%s"
                             % arch)
        dest = os.path.abspath(args.write_profile)
        name = os.path.basename(dest)      # the profile is named after its file
        cmd = "python3 %s doctor --write-profile=$O/%s" % (
            os.path.join(layout.repo_root(), "perftest"), shlex.quote(name))
        rc, output, host, _, kept = vmrun.run_in_guest(args, cmd, 600, {name: dest})
        sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
        if rc != 0 or not kept:
            print("perftest: error: doctor --write-profile in the guest exited %d" % rc,
                  file=sys.stderr)
            return EXIT_HARNESS
        print("perftest doctor: the guest's profile (%s, %s) is in %s"
              % (host["kernel_release"], host["arch"], dest))
        return EXIT_OK
    suite = args.suite or "ringbuffer"
    cmd = "$P/bin/suite_%s --perftest_probe || ls $P/bin" % suite
    rc, output, host, _, _ = vmrun.run_in_guest(args, cmd, 300)
    try:
        from .suite import _first_json_object
        host["probe"] = _first_json_object(output)
    except ValueError:
        host["probe"] = {"error": output.strip()[-300:]}
    if args.json:
        print(json.dumps(host, indent=2))
    else:
        sys.stdout.write(vmrun.describe_guest(host))
        print("kernel probe (suite_%s --perftest_probe in the guest): %s"
              % (suite, json.dumps(host["probe"])))
    return EXIT_OK


def guest_profile(vm_args):
    """The profile that matches the guest of --vm/--arch, from the profiles
    directory and its guests/ subdirectory (profiles of a guest kernel's
    layout, which the suites' mock runs and the fleet matrix do not take):
    its "arch" the guest's and its "kernel_release" of the guest kernel's
    major.minor (vmkernel.resolve(); a kernel image path has no known release),
    or None. `fidelity --vm` compares the guest kernel with the mock on it."""
    from . import vmkernel
    arch = vmkernel.normalize_arch(vm_args.arch or vmkernel.host_arch())
    release = vmkernel.resolve(vm_args.vm, arch, getattr(vm_args, "vm_modules", None)).get("release")
    if not release:
        return None

    def major_minor(r):
        return ".".join(str(r).split("-")[0].split(".")[:2])

    gnu = {"arm64": "aarch64"}.get(arch, arch)
    for pdir in (layout.profiles_dir(), os.path.join(layout.profiles_dir(), "guests")):
        for name in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(pdir, name)) as f:
                    p = json.load(f)
            except (OSError, ValueError):
                continue
            if p.get("arch") == gnu and p.get("kernel_release") and \
                    major_minor(p["kernel_release"]) == major_minor(release):
                return os.path.join(pdir, name)
    return None


def vm_tool(command, args):
    """`perftest fidelity --vm=KERNEL [--arch=A] ARGS`: the tool in a guest."""
    from . import vmrun
    p = argparse.ArgumentParser(prog="perftest %s" % command, add_help=False)
    add_vm_arguments(p)
    vm_args, rest = p.parse_known_args(args)
    vm_args.backend, vm_args.profile = "kernel", None
    binary = {"fidelity": "perftest_fidelity", "pt": "perftest_pt"}[command]
    if command == "fidelity" and not any(a == "--profile" or a.startswith("--profile=") for a in rest):
        profile = guest_profile(vm_args)
        if profile:
            print("vm: mock profile %s (arch and kernel release of the guest; --profile overrides)"
                  % os.path.basename(profile), file=sys.stderr, flush=True)
            rest = ["--profile=" + profile] + rest
    # Files the arguments name (--profile=host.json, --replay files) are
    # copied into the job share: the guest's /tmp and cwd are its own.
    inputs, words = {}, []
    for a in rest:
        flag, eq, value = a.partition("=") if a.startswith("--") else ("", "", a)
        if value and os.path.isfile(value):
            name = "%d-%s" % (len(inputs), os.path.basename(value))
            inputs[name] = value
            words.append(shlex.quote(flag + eq) + "$P/job/in/" + shlex.quote(name))
        else:
            words.append(shlex.quote(a))
    cmd = "$P/bin/%s %s" % (binary, " ".join(words))
    rc, output, host, setup, _ = vmrun.run_in_guest(vm_args, cmd, 3600, inputs=inputs)
    sys.stdout.write(output if output.endswith("\n") or not output else output + "\n")
    print("(in the guest: %s %s, QEMU %s %s)" % (host["kernel_release"], host["arch"],
                                                setup.accel, host["vm"]["cpu"]))
    return rc


def cmd_doctor(args):
    from . import doctor
    if args.vm:
        return cmd_doctor_vm(args)
    if args.write_profile:
        from . import profile_probe
        profile = profile_probe.write_profile(args.write_profile)
        print("perftest doctor: wrote profile %r to %s (%d PMUs: %s)" % (
            profile["name"], args.write_profile, len(profile["pmus"]),
            ", ".join(p["name"] for p in profile["pmus"])))
        print("  use it: perftest run --suite=NAME --backend=mock --profile=%s" % args.write_profile)
        return 0
    from .suite import SuiteBinary
    binary = None
    if args.suite:
        path = layout.resolve_suites([args.suite])[args.suite]
        binary = SuiteBinary(args.suite, path)
    facts = doctor.gather(binary=binary)
    sys.stdout.write(doctor.render_json(facts) if args.json else doctor.render_text(facts))
    if facts.get("probe_harness_error"):
        print("perftest: error: %s" % facts["probe_error"], file=sys.stderr)
        return EXIT_HARNESS
    return EXIT_OK


def cmd_bench(args, extra):
    from .bench import run_bench
    names = [args.name] if args.name else list(layout.discover_benches())
    if not names:
        raise UsageError("no benchmark binaries in %s (%s)" % (layout.bin_dir(), layout.BUILD_HINT))
    code = EXIT_OK
    for n in names:
        code = max(code, run_bench(n, extra))
    return code


def _main(argv):
    if argv and argv[0] in ("pt", "fidelity"):
        # Forwarded whole (options included) to the C++ tool; argparse would
        # take the tool's options for its own.
        from .tools import run_tool
        args = argv[1:]
        if args[:1] == ["--"]:
            args = args[1:]
        if any(a == "--vm" or a.startswith("--vm=") for a in args):
            return vm_tool(argv[0], args)
        return run_tool(argv[0], args)
    if argv and argv[0] == "data":
        from . import data
        args = argv[1:]
        if args[:1] == ["--"]:
            args = args[1:]
        return data.run(args)
    if argv and argv[0] == "profile":
        from .cpu_profile import run_profile
        return run_profile(argv[1:])
    if argv and argv[0] == "exec":
        from .exec_cmd import run_exec
        return run_exec(argv[1:])
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    if extra and args.command != "bench":
        parser.error("arguments after -- are only for `perftest bench`: %s" % " ".join(extra))
    if args.command == "list":
        return cmd_list(args)
    if args.command == "run":
        from .run import run_command
        return run_command(args, ["perftest"] + list(argv))
    if args.command == "report":
        return cmd_report(args)
    if args.command == "diff":
        return cmd_diff(args)
    if args.command == "doctor":
        return cmd_doctor(args)
    if args.command == "matrix":
        from .matrix import matrix_command
        return matrix_command(args)
    if args.command == "bench":
        return cmd_bench(args, extra)
    parser.error("unknown command %r" % args.command)


def main(argv=None):
    """Entry point of ./perftest; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    except PerftestError as e:
        print("perftest: error: %s" % e, file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("\nperftest: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Output closed early (e.g. `perftest list | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
