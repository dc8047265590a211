#!/usr/bin/env python3
"""perf script as a second reference for `perftest pt decode`.

Records the mock's simulated task with `perftest_pt record --backend=mock`
(perf.data), decodes it with `perf script --itrace=SPEC --ns` (perf's own
Intel PT decoder, tools/perf/util/intel-pt-decoder) and with
`perftest_pt decode --itrace=SPEC`, and compares the two sample by sample:
the event (instructions / branches), ip, and for branches addr. Decode
errors: both must report none. `perf report --itrace=i100i --stdio` must
name the simulated program's functions (the ELF file beside the capture).

Declared difference (counted and printed, not failed on):
  time  perf stamps a sample with the decoder's sample_timestamp, which
        intel_pt_decode() updates only in some packet states
        (intel_pt_sample_time(): not while walking TNT/TIP/FUP), so a sample
        carries the time of an earlier timing packet; perftest decode stamps
        it with the latest one. Compared after converting perftest's TSC
        with the file's TIME_CONV (perf's tsc_to_perf_time()).
  i with a time period (i10us, the default i100us of --itrace=bi): which
        instructions are sampled depends on each decoder's estimate of the
        TSC between timing packets (perf: INTEL_PT_PERIOD_TICKS on its
        estimated timestamp, intel-pt-decoder.c), so the instruction samples
        differ (counts printed; the branch samples are compared as above).
  lost  a recording whose AUX area filled (t2.data: --aux-pages=2, the
        mock stops the trace, PERF_AUX_FLAG_TRUNCATED): both report each
        "Lost trace data" error (checked: the same count), but perf places
        it at the AUX record's time among the samples (intel_pt_lost(),
        ordered by perf time), perftest at its trace offset. The trace before
        each loss ends inside a packet: perf still walks the TNT bits it got
        (a branch more) and reports "Bad packet" (sometimes with "Trace
        doesn't match instruction"), perftest reports "truncated packet"; and
        perf keeps counting toward the next i100 sample across the loss
        where perftest starts over, so the instruction samples after the
        first loss are other instructions. Branch samples are compared with
        the errors taken out (differences counted, declared); the counts are
        printed.
Not compared: the layout of the line (perftest prints its own columns) and
the flags column (perf's default fields have none).

usage: perf_script_parity_test.py PERFTEST_PT PERFTEST_DATA [--keep DIR]
Exit: 0 all samples equal; 1 a difference; 77 skip (no perf, or perf
without Intel PT decoding support), with the reason on stdout.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SPECS = ["i100ibe", "be", "i1000i"]
DECLARED = ["i10usb"]  # compared on branches only; instruction counts printed

PERF_LINE = re.compile(
    r"^\s*\S+\s+\d+\s+(\d+)\.(\d+):\s+\d+\s+(\w+)(?::\w+)?:\s+([0-9a-f]+)\s.*?(?:=>\s+([0-9a-f]+)\s|$)")
PERF_ERROR = re.compile(r"^\s*instruction trace error")
MINE_LINE = re.compile(r"^\s*(\d+)\s+(\w+)\s*:\s*(\S*)\s+([0-9a-f]+)(?:\s+=>\s+([0-9a-f]+))?")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def time_conv(perftest_data, path):
    out = run([perftest_data, "dump", path]).stdout
    conv = {}
    for key, name in (("shift", "Time Shift"), ("mult", "Time Muliplier"), ("zero", "Time Zero")):
        m = re.search(r"^\.\.\. " + name + r"\s+(\d+)", out, re.M)
        if not m:
            raise SystemExit(f"FAIL: no TIME_CONV {name} in perftest_data dump {path}")
        conv[key] = int(m[1])
    return conv


def tsc_to_perf_time(conv, tsc):
    quot, rem = tsc >> conv["shift"], tsc & ((1 << conv["shift"]) - 1)
    return (conv["zero"] + quot * conv["mult"] + ((rem * conv["mult"]) >> conv["shift"])) % (1 << 64)


def perf_samples(text):
    samples, errors, other = [], [], []
    for line in text.splitlines():
        m = PERF_LINE.match(line)
        if m:
            samples.append((int(m[1]) * 10**9 + int(m[2]), m[3], int(m[4], 16), int(m[5], 16) if m[5] else None))
        elif PERF_ERROR.match(line):
            errors.append(line.strip())
        elif line.strip():
            other.append(line)
    return samples, errors, other


def perftest_samples(text, conv):
    samples, errors = [], []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = MINE_LINE.match(line)
        if m and m[2] in ("instructions", "branches"):
            samples.append((tsc_to_perf_time(conv, int(m[1])), m[2], int(m[4], 16), int(m[5], 16) if m[5] else None))
        elif line.strip():
            errors.append(line.strip())
    return samples, errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perftest_pt")
    ap.add_argument("perftest_data")
    ap.add_argument("--keep", help="record into this directory and keep it")
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        print("SKIP: perf is not installed (Debian: linux-perf): no second reference")
        return 77
    work = args.keep or tempfile.mkdtemp(prefix="pt_perf_parity_")
    os.makedirs(work, exist_ok=True)
    try:
        data = os.path.join(work, "t.data")
        r = run([args.perftest_pt, "record", "--backend=mock", "-o", data, "--no-truth"])
        if r.returncode != 0:
            print(f"FAIL: perftest_pt record exit {r.returncode}: {r.stderr}")
            return 1
        conv = time_conv(args.perftest_data, data)
        failed = False
        # perftest data dump lists every record of it as perf report -D does (offset, time, type).
        dump = run([args.perftest_data, "dump", data]).stdout
        ours = {m[2]: (int(m[1]), m[3])
                for m in re.finditer(r"^(\d+) (0x[0-9a-f]+) \[0x[0-9a-f]+\]: (PERF_RECORD_\w+)", dump, re.M)}
        rd = run([perf, "report", "-D", "-i", data]).stdout
        perfs = {m[2]: (int(m[1]), m[3])  # "[CPU] TIME OFFSET [SIZE]: TYPE"
                 for m in re.finditer(r"^(?:\d+ )?(\d+) (0x[0-9a-f]+) \[0x[0-9a-f]+\]: (PERF_RECORD_\w+)", rd, re.M)}
        print(f"perftest data dump: {len(ours)} records, perf report -D: {len(perfs)}; "
              f"{'the same offsets, times and types' if ours == perfs else 'DIFFERENT'}")
        if ours != perfs or not ours:
            failed = True
            for off in sorted(set(ours) | set(perfs))[:400]:
                if ours.get(off) != perfs.get(off):
                    print(f"  {off}: perftest {ours.get(off)} perf {perfs.get(off)}")
                    break
        for spec in SPECS:
            p = run([perf, "script", "-i", data, f"--itrace={spec}", "--ns"])
            if p.returncode != 0:
                if "intel_pt" in p.stderr.lower() and "not" in p.stderr.lower():
                    print(f"SKIP: this perf cannot decode Intel PT: {p.stderr.strip()}")
                    return 77
                print(f"FAIL: perf script --itrace={spec} exit {p.returncode}: {p.stderr.strip()[:400]}")
                return 1
            ps, perrors, other = perf_samples(p.stdout)
            t = run([args.perftest_pt, "decode", data, f"--itrace={spec}"])
            if t.returncode != 0:
                print(f"FAIL: perftest_pt decode --itrace={spec} exit {t.returncode}: {t.stderr.strip()}")
                return 1
            ms, merrors = perftest_samples(t.stdout, conv)
            same = sum(1 for a, b in zip(ps, ms) if a[1:] == b[1:])
            time_diff = sum(1 for a, b in zip(ps, ms) if a[1:] == b[1:] and a[0] != b[0])
            first = next((i for i, (a, b) in enumerate(zip(ps, ms)) if a[1:] != b[1:]), None)
            ok = len(ps) == len(ms) and same == len(ps) and not perrors and not merrors and not other and ps
            print(f"--itrace={spec}: perf script {len(ps)} samples, perftest decode {len(ms)}; "
                  f"{same} equal in event/ip/addr; time differs on {time_diff} (declared); "
                  f"errors: perf {len(perrors)}, perftest {len(merrors)}")
            if not ok:
                failed = True
                if first is not None:
                    print(f"  first difference at sample {first}: perf {ps[first]} perftest {ms[first]}")
                for line in (perrors + merrors + other)[:5]:
                    print(f"  {line}")
        for spec in DECLARED:
            p = run([perf, "script", "-i", data, f"--itrace={spec}", "--ns"])
            t = run([args.perftest_pt, "decode", data, f"--itrace={spec}"])
            ps, perrors, _ = perf_samples(p.stdout)
            ms, merrors = perftest_samples(t.stdout, conv)
            pb = [s[1:] for s in ps if s[1] == "branches"]
            mb = [s[1:] for s in ms if s[1] == "branches"]
            pi = sum(1 for s in ps if s[1] == "instructions")
            mi = sum(1 for s in ms if s[1] == "instructions")
            print(f"--itrace={spec} (declared: time-period i): branches perf {len(pb)}, perftest {len(mb)}, "
                  f"{'equal' if pb == mb else 'DIFFERENT'}; instruction samples perf {pi}, perftest {mi}")
            if pb != mb or not pb or perrors or merrors:
                failed = True
        # Data lost: a full AUX area.
        lost = os.path.join(work, "t2.data")
        r = run([args.perftest_pt, "record", "--backend=mock", "-o", lost, "--no-truth", "--aux-pages=2",
                 "--instructions=400000"])
        if r.returncode != 0:
            print(f"FAIL: perftest_pt record --aux-pages=2 exit {r.returncode}: {r.stderr}")
            return 1
        conv2 = time_conv(args.perftest_data, lost)
        p = run([perf, "script", "-i", lost, "--itrace=i100ibe", "--ns"])
        t = run([args.perftest_pt, "decode", lost, "--itrace=i100ibe"])
        ps, perrors, other = perf_samples(p.stdout)
        ms, merrors = perftest_samples(t.stdout, conv2)
        plost = sum(1 for e in perrors if "Lost trace data" in e)
        mlost = sum(1 for e in merrors if "Lost trace data" in e)
        pb = [a[1:] for a in ps if a[1] == "branches"]
        mb = [b[1:] for b in ms if b[1] == "branches"]
        print(f"t2.data (AUX area full) --itrace=i100ibe: perf script {len(ps)} samples + {len(perrors)} errors, "
              f"perftest decode {len(ms)} + {len(merrors)}; branch samples perf {len(pb)}, perftest {len(mb)} "
              f"({'equal' if pb == mb else 'differ: declared, packets cut at each loss'}); "
              f"Lost trace data: perf {plost}, perftest {mlost}")
        if plost == 0 or plost != mlost or other or abs(len(pb) - len(mb)) > 2 * plost:
            failed = True
        rep = run([perf, "report", "-i", data, "--itrace=i100i", "--stdio"])
        names = sorted(set(re.findall(r"\[\.\]\s+(\S+)", rep.stdout)))
        print(f"perf report --itrace=i100i: functions {names}")
        if "mock_task" not in names:
            print("FAIL: perf report does not name the simulated program's entry function mock_task")
            failed = True
        return 1 if failed else 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
