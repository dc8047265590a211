"""`perftest profile` end to end (tools/profile, build/bin/perftest_profile).

On the kernel: while tools/profile/testdata's profile_cpu_hog runs, the
profile shows its hot function with its callers; -K, -U, -p, -d do what
bcc's profile.py documents; the top folded stacks agree with
`perf record -F 99 -g` + `perf script` taken at the same time. On the mock:
the exact profile of the simulated task. --format=svg: a flame graph that
headless Chromium draws. Kernel cases skip, saying why, when the tool or the
test program is not built, when perf_event_open is not allowed here, or
(for the comparison) when perf is not installed.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from perftest import layout
from tests.chromium import CHROMIUM, SKIP_REASON, run_headless
from tests.png import colours_in

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAUNCHER = os.path.join(REPO, "perftest")
BIN = layout.bin_dir()
PROFILER = os.path.join(BIN, "perftest_profile")
HOG = os.path.join(BIN, "profile_cpu_hog")
HOG_NOFP = os.path.join(BIN, "profile_cpu_hog_nofp")
PERF = shutil.which("perf")

HOG_STACK = ["__libc_start_call_main", "main", "hog_loop", "hog_hot"]


def _perftest(*args, timeout=120):
    return subprocess.run([sys.executable, LAUNCHER, "profile"] + list(args), capture_output=True,
                          text=True, timeout=timeout)


def _kernel_unavailable():
    """Why kernel profiling cannot run here, or None."""
    if not os.path.isfile(PROFILER):
        return "%s not built (needs libdw-dev; scripts/install-deps)" % PROFILER
    if not os.path.isfile(HOG):
        return "%s not built" % HOG
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read())
    except OSError:
        return "no /proc/sys/kernel/perf_event_paranoid: perf_event_open not available"
    if paranoid > 0 and os.geteuid() != 0:
        return "CPU-wide cpu-clock sampling needs CAP_PERFMON or perf_event_paranoid <= 0 (it is %d)" % paranoid
    # A container's seccomp filter may deny perf_event_open whatever the sysctl says.
    probe = subprocess.run([PROFILER, "-K", "-f", "-F", "1", "0.1"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return "perftest_profile cannot sample here: %s" % probe.stderr.strip()[:300]
    return None


def parse_folded(text):
    """{tuple(frames): count} of folded lines `a;b;c N`."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(.*) (\d+)$", line)
        if m:
            key = tuple(m.group(1).split(";"))
            out[key] = out.get(key, 0) + int(m.group(2))
    return out


class Hog:
    """profile_cpu_hog running (longer than any profile of it), killed at exit."""

    def __init__(self, path=HOG):
        self.path = path

    def __enter__(self):
        self.proc = subprocess.Popen([self.path, "300"])
        time.sleep(0.2)
        return self.proc

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


KERNEL_UNAVAILABLE = _kernel_unavailable()


@unittest.skipIf(KERNEL_UNAVAILABLE, KERNEL_UNAVAILABLE or "")
class KernelProfile(unittest.TestCase):
    def profile(self, *args):
        r = _perftest(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def hog_stacks(self, folded, comm="profile_cpu_hog"):
        return {k: v for k, v in parse_folded(folded).items() if k[0] == comm}

    def test_hot_function_holds_90_percent_of_the_program_with_its_callers(self):
        with Hog():
            r = self.profile("-F", "99", "-f", "5")
        hog = self.hog_stacks(r.stdout)
        total = sum(hog.values())
        # Up to 495 samples when it has a CPU to itself; far fewer on a loaded machine.
        self.assertGreaterEqual(total, 50, "too few samples of the test program:\n" + r.stdout[-3000:])
        hot = sum(n for k, n in hog.items() if list(k[1:5]) == HOG_STACK)
        print("hog_hot with its callers: %d of %d samples (%.1f%%)" % (hot, total, 100.0 * hot / total))
        self.assertGreaterEqual(hot / total, 0.90, r.stdout[-3000:])

    def test_kernel_stacks_only(self):
        with Hog():
            r = self.profile("-K", "-f", "-F", "99", "2")
        hog = self.hog_stacks(r.stdout)
        self.assertTrue(hog, r.stdout[-2000:])
        for frames in hog:
            self.assertFalse(set(frames) & set(HOG_STACK), frames)
        # A CPU-bound user program is mostly interrupted in user mode: no kernel stack.
        self.assertIn(("profile_cpu_hog",), hog)

    def test_user_stacks_only(self):
        with Hog():
            r = self.profile("-U", "-f", "-F", "99", "2")
        hog = self.hog_stacks(r.stdout)
        self.assertIn(tuple(["profile_cpu_hog"] + HOG_STACK), hog)
        for frames in hog:
            self.assertTrue(frames[1:2] in (("__libc_start_call_main",), ("[unknown]",), ()), frames)
            self.assertFalse([f for f in frames if f.startswith(("asm_", "entry_SYSCALL", "__x64_sys"))], frames)

    def test_pid_only_that_process(self):
        with Hog() as hog:
            r = self.profile("-p", str(hog.pid), "-F", "99", "2")
        self.assertIn("Sampling at 99 Hertz of PID %d by user + kernel stack for 2 secs." % hog.pid, r.stdout)
        owners = re.findall(r"^    -\s+(\S+) \((\d+)\)$", r.stdout, re.M)
        self.assertTrue(owners, r.stdout[-2000:])
        self.assertEqual({int(p) for _, p in owners}, {hog.pid})
        self.assertIn("    hog_hot+0x", r.stdout)

    def test_delimited(self):
        # A CPU-wide profile has stacks with both parts (sleeping or interrupted
        # tasks): -d puts "-" (folded) / "--" (text) between them, never elsewhere.
        # A task that lives in read()/write() makes sure such stacks exist on
        # an idle machine too (a user-mode hog's samples have no kernel part).
        syscalls = subprocess.Popen(["dd", "if=/dev/zero", "of=/dev/null", "bs=1"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            r = self.profile("-d", "-f", "-F", "99", "1")
            both = [k for k in parse_folded(r.stdout) if "-" in k]
            self.assertTrue(both, r.stdout[-2000:])
            for k in parse_folded(r.stdout):
                self.assertLessEqual(k.count("-"), 1, k)
            r = self.profile("-F", "99", "1")
            self.assertNotIn("    --\n", r.stdout)
            r = self.profile("-d", "-F", "99", "1")
            self.assertIn("    --\n", r.stdout)
        finally:
            syscalls.kill()
            syscalls.wait()

    def test_bpf_mode_gives_the_same_top_stacks_as_ring_mode(self):
        with Hog() as hog:
            bpf = subprocess.Popen([sys.executable, LAUNCHER, "profile", "--mode=bpf", "-p", str(hog.pid), "-F", "99",
                                    "-f", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            ring = _perftest("-p", str(hog.pid), "-F", "99", "-f", "10")
            bpf_out, bpf_err = bpf.communicate(timeout=120)
        if bpf.returncode == 2 and "not built" in bpf_err:
            self.skipTest(bpf_err.strip())
        self.assertEqual(bpf.returncode, 0, bpf_err)
        self.assertEqual(ring.returncode, 0, ring.stderr)
        mine, theirs = parse_folded(bpf_out), parse_folded(ring.stdout)
        self.assertGreaterEqual(sum(mine.values()), 50, bpf_out)
        top = lambda d: max(d.items(), key=lambda kv: kv[1])[0]
        self.assertEqual(top(mine), tuple(["profile_cpu_hog"] + HOG_STACK))
        self.assertEqual(top(theirs), top(mine))
        compare = top_stacks_agree(mine, theirs, 10)
        print("bpf: %d samples, ring: %d samples" % (sum(mine.values()), sum(theirs.values())))
        for line in compare["table"]:
            print(line.replace(" perf ", " ring ").replace(" perftest ", " bpf "))
        self.assertFalse(compare["bad"], "\n".join(compare["table"]))

    @unittest.skipUnless(os.path.isfile(HOG_NOFP), "%s not built" % HOG_NOFP)
    def test_dwarf_call_graph_unwinds_code_without_frame_pointers(self):
        # profile_cpu_hog_nofp: the same program built with -fomit-frame-pointer.
        # The kernel's frame-pointer walk cannot find hog_hot's callers there;
        # --call-graph=dwarf unwinds the copied user stack with .eh_frame.
        with Hog(HOG_NOFP) as hog:
            dwarf = self.profile("-p", str(hog.pid), "-F", "99", "-f", "--call-graph=dwarf", "4")
            fp = self.profile("-p", str(hog.pid), "-F", "99", "-f", "2")
        called = ["__libc_start_call_main", "main", "hog_loop", "hog_hot"]

        def with_callers(stacks):
            """Samples whose user stack has hog_hot called by hog_loop called by main, of those in hog_hot."""
            hot = {k: n for k, n in stacks.items() if "hog_hot" in k}
            ok = sum(n for k, n in hot.items() if any(list(k[i:i + 4]) == called for i in range(len(k))))
            return ok, sum(hot.values())

        ok, hot = with_callers(self.hog_stacks(dwarf.stdout))
        print("--call-graph=dwarf: hog_hot with main;hog_loop as callers in %d of %d samples" % (ok, hot))
        self.assertGreaterEqual(hot, 20, dwarf.stdout[-3000:] + dwarf.stderr[-1000:])
        self.assertGreaterEqual(ok / hot, 0.90, dwarf.stdout[-3000:])
        fp_ok, fp_hot = with_callers(self.hog_stacks(fp.stdout))
        print("frame pointers: hog_hot with its callers in %d of %d samples" % (fp_ok, fp_hot))
        self.assertGreater(fp_hot, 0, fp.stdout[-3000:])
        self.assertLess(fp_ok / fp_hot, 0.5, "the test program is meant to have no frame pointers:\n" + fp.stdout)

    def test_dwarf_call_graph_bad_values_exit_2(self):
        for value in ("dwarf,100", "dwarf,0", "dwarf,65536", "lbr", "dwarfx"):
            r = _perftest("--call-graph=" + value, "1")
            self.assertEqual(r.returncode, 2, (value, r.stderr))
            self.assertIn("--call-graph=" + value, r.stderr)
        r = _perftest("--call-graph=dwarf", "--backend=mock", "1")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--backend=kernel", r.stderr)

    @unittest.skipUnless(PERF, "perf not installed (Debian: linux-perf)")
    def test_top_stacks_agree_with_perf_record(self):
        tmp = tempfile.mkdtemp(prefix="perftest-profile-perf-")
        try:
            data = os.path.join(tmp, "perf.data")
            with Hog() as hog:
                # -e cpu-clock: the event perftest profile samples (perf's default,
                # cycles, only where a hardware PMU exists).
                perf = subprocess.Popen([PERF, "record", "-q", "-e", "cpu-clock", "-F", "99", "-g", "-p",
                                         str(hog.pid), "-o", data, "--", "sleep", "10"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                # 10 s: on a loaded machine the program gets ~25 samples/s, and
                # two independent samplers' shares differ by binomial noise
                # (sd ~2 points at 200 samples each) besides any real difference.
                ours = _perftest("-p", str(hog.pid), "-F", "99", "-f", "10")
                perf_out, perf_err = perf.communicate(timeout=60)
            self.assertEqual(ours.returncode, 0, ours.stderr)
            if perf.returncode != 0:
                self.skipTest("perf record failed here: %s" % perf_err.decode(errors="replace")[-500:])
            script = subprocess.run([PERF, "script", "-i", data, "-F", "comm,ip,sym"], capture_output=True,
                                    text=True, timeout=120)
            self.assertEqual(script.returncode, 0, script.stderr[-1000:])
            theirs = fold_perf_script(script.stdout)
            mine = parse_folded(ours.stdout)
            compare = top_stacks_agree(mine, theirs, 10)
            print("perftest profile: %d samples, perf: %d samples" % (sum(mine.values()), sum(theirs.values())))
            for line in compare["table"]:
                print(line)
            self.assertGreaterEqual(sum(theirs.values()), 50, "too few perf samples to compare")
            self.assertFalse(compare["bad"], "\n".join(compare["table"]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@unittest.skipIf(KERNEL_UNAVAILABLE, KERNEL_UNAVAILABLE or "")
@unittest.skipUnless(PERF, "perf not installed (Debian: linux-perf)")
class PerfDataOutput(unittest.TestCase):
    """--format=perf.data / -o FILE: a file perf report and perf script read,
    with the stacks perftest profile itself shows for the same samples."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="perftest-profile-data-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, hog, data, *extra, seconds="8"):
        """One run: folded stacks on stdout and the same samples in `data` (-o)."""
        r = _perftest("-p", str(hog.pid), "-F", "99", "-f", "-o", data, *extra, seconds)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"wrote (\S+) \((\d+) samples, (\d+) records\)", r.stderr)
        self.assertTrue(m, r.stderr)
        return int(m.group(2)), parse_folded(r.stdout)

    def perf_script(self, data):
        r = subprocess.run([PERF, "script", "-i", data, "-F", "comm,ip,sym"], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return fold_perf_script(r.stdout)

    def test_perf_report_shows_the_same_top_stacks(self):
        data = os.path.join(self.tmp, "perf.data")
        with Hog() as hog:
            samples, mine = self.record(hog, data)
        self.assertGreaterEqual(samples, 50, "too few samples to compare")
        theirs = self.perf_script(data)
        self.assertEqual(sum(theirs.values()), samples, "perf script reads every sample written")
        self.assertEqual(sum(mine.values()), samples, "the folded output counts the samples written")
        # The same samples on both sides: what differs is only how perf and
        # perftest name the frames.
        compare = top_stacks_agree(mine, theirs, 10)
        print("perf script on perftest's perf.data: %d samples; perftest profile -f, same run: %d" %
              (sum(theirs.values()), sum(mine.values())))
        for line in compare["table"]:
            print(line.replace(" perf ", " perf.data ").replace(" perftest ", " folded "))
        self.assertFalse(compare["bad"], "\n".join(compare["table"]))
        self.assertEqual(max(theirs.items(), key=lambda kv: kv[1])[0], tuple(["profile_cpu_hog"] + HOG_STACK))
        report = subprocess.run([PERF, "report", "-i", data, "--stdio", "--no-children", "--sort", "comm,sym",
                                 "-g", "none"], capture_output=True, text=True, timeout=120)
        self.assertEqual(report.returncode, 0, report.stderr[-2000:])
        self.assertIn("# Samples: %d  of event 'cpu-clock'" % samples, report.stdout)
        top = [l for l in report.stdout.splitlines() if l.strip() and not l.startswith("#")][0]
        print("perf report: " + top.strip())
        m = re.match(r"\s*([\d.]+)%\s+profile_cpu_hog\s+\[\.\] hog_hot\s*$", top)
        self.assertTrue(m, report.stdout[:3000])
        self.assertGreaterEqual(float(m.group(1)), 90.0)

    @unittest.skipUnless(os.path.isfile(HOG_NOFP), "%s not built" % HOG_NOFP)
    def test_dwarf_samples_unwind_in_perf_too(self):
        # The stack copies are in the file: perf unwinds them itself (it finds
        # .eh_frame_hdr through the MMAP_DATA mappings written for it).
        data = os.path.join(self.tmp, "perf.data")
        with Hog(HOG_NOFP) as hog:
            samples, mine = self.record(hog, data, "--call-graph=dwarf", seconds="4")
        theirs = self.perf_script(data)
        self.assertEqual(sum(theirs.values()), samples)
        hot = {k: n for k, n in theirs.items() if k[-1] == "hog_hot"}
        ok = sum(n for k, n in hot.items() if k[-3:] == ("main", "hog_loop", "hog_hot"))
        print("perf script on --call-graph=dwarf perf.data: hog_hot with its callers in %d of %d" %
              (ok, sum(hot.values())))
        self.assertGreaterEqual(sum(hot.values()), 20, theirs)
        self.assertGreaterEqual(ok / sum(hot.values()), 0.9, theirs)

    def test_perf_data_arguments(self):
        for args, needle in ((["--format=perf.data", "--backend=mock", "1"], "--backend=kernel"),
                             (["-o", os.path.join(self.tmp, "x"), "--mode=bpf", "1"], "--mode=ring")):
            r = _perftest(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(needle, r.stderr)

    def test_format_perf_data_prints_no_stacks(self):
        data = os.path.join(self.tmp, "only.data")
        with Hog() as hog:
            r = _perftest("-p", str(hog.pid), "-F", "99", "--format=perf.data", "-o", data, "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "", "perf.data goes to -o, nothing to stdout")
        self.assertIn("wrote %s (" % data, r.stderr)
        self.assertTrue(os.path.getsize(data) > 104)


def fold_perf_script(text):
    """perf script -F comm,ip,sym output folded as stackcollapse-perf.pl does:
    comm;outermost;...;innermost (offsets and "[unknown]" kept as names)."""
    out = {}
    for block in text.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines:
            continue
        comm = lines[0].strip().split()[0] if not lines[0].startswith(("\t", " ")) else None
        frames = []
        for l in lines[1:] if comm else lines:
            parts = l.strip().split(None, 1)
            name = parts[1] if len(parts) > 1 else "[unknown]"
            name = re.sub(r"\+0x[0-9a-f]+$", "", name)
            frames.append(name)
        key = tuple([comm or "?"] + frames[::-1])
        out[key] = out.get(key, 0) + 1
    return out


def top_stacks_agree(mine, theirs, n, points=5.0):
    """The top n stacks of `theirs` by count, each within `points` percentage
    points in `mine` (both as shares of their own totals)."""
    tm, tt = sum(mine.values()) or 1, sum(theirs.values()) or 1
    table, bad = [], []
    for key, count in sorted(theirs.items(), key=lambda kv: -kv[1])[:n]:
        p_theirs = 100.0 * count / tt
        p_mine = 100.0 * mine.get(key, 0) / tm
        row = "%6.2f%% perf  %6.2f%% perftest  %s" % (p_theirs, p_mine, ";".join(key))
        table.append(row)
        if abs(p_theirs - p_mine) > points:
            bad.append(row)
    return {"table": table, "bad": bad}


@unittest.skipUnless(os.path.isfile(PROFILER), "%s not built (needs libdw-dev)" % PROFILER)
class MockProfile(unittest.TestCase):
    def test_exact_folded_profile(self):
        r = _perftest("--backend=mock", "-f", "-d", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout,
                         "perftest;__libc_start_call_main;main;run_workload;spin 98\n"
                         "swapper/1;start_secondary;cpu_startup_entry;do_idle;default_idle_call;default_idle 98\n")

    def test_exact_text_profile(self):
        r = _perftest("--backend=mock", "--profile=arm64-pmuv3", "-u", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout,
                         "Sampling at 49 Hertz of user threads by user + kernel stack for 1 secs.\n\n"
                         "    spin+0x48\n    run_workload+0x64\n    main+0x2\n    __libc_start_call_main+0x8f\n"
                         "    -                perftest (4242)\n        49\n\n")

    def test_bad_arguments_exit_2_naming_them(self):
        for args, needle in ((["-F", "0", "1"], "frequency"), (["-U", "-K", "1"], "kernel-stacks-only"),
                             (["--mode=gpu", "1"], "mode"), (["--backend=mock"], "duration"),
                             (["--backend=mock", "--mode=bpf", "1"], "--backend=kernel"),
                             (["--format=png", "1"], "format"), (["-f", "--format=svg", "1"], "-f")):
            r = _perftest(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(needle, r.stderr, args)


@unittest.skipUnless(os.path.isfile(PROFILER), "%s not built (needs libdw-dev)" % PROFILER)
@unittest.skipUnless(CHROMIUM, SKIP_REASON)
class FlameGraphInChromium(unittest.TestCase):
    def test_svg_draws_every_frame_colour(self):
        tmp = tempfile.mkdtemp(prefix="perftest-profile-svg-")
        try:
            r = _perftest("--backend=mock", "--format=svg", "2")
            self.assertEqual(r.returncode, 0, r.stderr)
            svg = os.path.join(tmp, "flame.svg")
            with open(svg, "w") as f:
                f.write(r.stdout)
            self.assertNotIn("http://", r.stdout.replace("http://www.w3.org/2000/svg", ""))  # self-contained
            fills = set(re.findall(r'fill="rgb\((\d+),(\d+),(\d+)\)"', r.stdout))
            self.assertGreaterEqual(len(fills), 10, "one colour per distinct frame name expected")
            png = os.path.join(tmp, "shot.png")
            p = run_headless(svg, os.path.join(tmp, "profile"), "--screenshot=%s" % png, "--window-size=1200,300",
                             "--force-device-scale-factor=1")
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            seen = colours_in(png, 0, 300, 0, 1200)
            self.assertIn((0xf8, 0xf8, 0xf0), seen, "background not drawn")
            for rgb in fills:
                self.assertIn(tuple(int(c) for c in rgb), seen, "frame colour rgb%s not in the screenshot" % (rgb,))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
