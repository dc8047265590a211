#!/bin/sh
# tools.data.perf_roundtrip: perftest_data against real perf (Debian's
# linux-perf) on this kernel.
#   1. `perf record -e cpu-clock -g -o p.data -- ls`: `perftest_data dump`
#      lists every record perf counts, with 0 unknown records and features.
#   2. `perftest_data rewrite` of it is byte-identical, so `perf report -D`,
#      `perf report --header-only` (but "captured on", the file's mtime) and
#      `perf script` print the same for both.
#   3. The same in pipe mode (`perf record -o -`) rewritten as a file, and the
#      file rewritten as a pipe: `perf report -D` lists the same records with
#      the same contents; offsets differ and the pipe-only records (ATTR,
#      FEATURE) move into the header (harness/perf_data/writer.h).
#   4. `perf record -z`: the dump decompresses PERF_RECORD_COMPRESSED and
#      lists what perf counts; the rewrite is byte-identical.
# Exit 77 (ctest: skipped) with the reason when perf is missing or cannot
# record here.
set -u
tool="$1"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

command -v perf >/dev/null 2>&1 || skip "perf is not installed (Debian: apt-get install linux-perf; scripts/install-deps)"
perf version >/dev/null 2>&1 || skip "perf does not run: $(perf version 2>&1 | head -1)"
work=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$work"' EXIT
mkdir "$work/a" "$work/b"
cd "$work/a" || fail "cd"

if ! perf record -q -e cpu-clock -g -o p.data -- ls >/dev/null 2>rec.err; then
  if grep -qiE 'permission|not permitted|paranoid|Operation not|No permission|Access to performance monitoring' rec.err; then
    skip "perf record cannot open cpu-clock here (perf_event_open denied): $(head -3 rec.err | tr '\n' ' ')"
  fi
  fail "perf record failed: $(cat rec.err)"
fi

# 1. Every record, none unknown.
"$tool" dump p.data >dump.txt 2>dump.err || fail "dump p.data: $(cat dump.err)"
grep -q 'unknown records: 0  unknown features: 0$' dump.txt || fail "dump p.data: unknown records or features: $(tail -1 dump.txt)"
ours=$(grep -cE '^[0-9]+ 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_' dump.txt)
perfs=$(perf report -D -i p.data 2>/dev/null | sed -n 's/^ *TOTAL events: *\([0-9]*\).*/\1/p')
[ -n "$perfs" ] || fail "perf report -D printed no TOTAL events"
[ "$ours" = "$perfs" ] || fail "dump lists $ours records, perf report -D counts $perfs"
# ... each at the same offset with the same time and type as perf report -D
# lists it ("[CPU] TIME OFFSET [SIZE]: TYPE").
sed -n 's/^\([0-9]*\) \(0x[0-9a-f]*\) \[0x[0-9a-f]*\]: \(PERF_RECORD_[A-Z_0-9]*\).*/\2 \1 \3/p' dump.txt | sort >ours.T
perf report -D -i p.data 2>/dev/null |
  sed -n -E 's/^([0-9]+ )?([0-9]+) (0x[0-9a-f]+) \[0x[0-9a-f]+\]: (PERF_RECORD_[A-Z_0-9]+).*/\3 \2 \4/p' | sort >perf.T
[ -s ours.T ] && cmp -s ours.T perf.T || fail "dump p.data: offsets, times or types differ from perf report -D: $(diff ours.T perf.T | head -5)"
echo "p.data: $ours records listed, perf counts $perfs, 0 unknown; the same offsets, times and types"

# 2. Rewrite: same bytes, same perf output.
"$tool" rewrite p.data ../b/p.data 2>rw.err || fail "rewrite: $(cat rw.err)"
cmp -s p.data ../b/p.data || fail "rewrite of p.data differs from perf's file: $(cmp p.data ../b/p.data)"
perf report -D -i p.data >a.D 2>/dev/null
(cd ../b && perf report -D -i p.data >../a/b.D 2>/dev/null)
cmp -s a.D b.D || fail "perf report -D differs after rewrite: $(diff a.D b.D | head -5)"
perf report --header-only -i p.data 2>/dev/null | grep -v '^# captured on' >a.H
(cd ../b && perf report --header-only -i p.data 2>/dev/null) | grep -v '^# captured on' >b.H
cmp -s a.H b.H || fail "perf report --header-only differs after rewrite: $(diff a.H b.H | head -5)"
perf script -i p.data >a.S 2>/dev/null
(cd ../b && perf script -i p.data >../a/b.S 2>/dev/null)
cmp -s a.S b.S || fail "perf script differs after rewrite: $(diff a.S b.S | head -5)"
echo "rewrite: byte-identical; perf report -D ($(wc -l <a.D) lines), --header-only, perf script identical"

# The records perf report -D lists, offsets left out, pipe-only ones dropped.
records() {
  perf report -D -i "$1" 2>/dev/null |
    sed -n 's/^\([0-9]*\) 0x[0-9a-f]* \(\[0x[0-9a-f]*\]: PERF_RECORD_\)/\1 \2/p' |
    grep -vE 'PERF_RECORD_(ATTR|FEATURE|HEADER_ATTR|HEADER_FEATURE|EVENT_TYPE|TRACING_DATA)'
}

# 3. Pipe mode, and conversions both ways.
perf record -q -e cpu-clock -g -o - -- ls 2>rec.err >p.pipe || fail "perf record -o - failed: $(cat rec.err)"
"$tool" dump p.pipe >pdump.txt 2>dump.err || fail "dump p.pipe: $(cat dump.err)"
grep -q 'unknown records: 0  unknown features: 0$' pdump.txt || fail "dump p.pipe: $(tail -1 pdump.txt)"
"$tool" rewrite p.pipe p2.data 2>rw.err || fail "rewrite pipe -> file: $(cat rw.err)"
records p.pipe >pipe.R
records p2.data >p2.R
[ -s pipe.R ] || fail "perf report -D lists no records of p.pipe"
cmp -s pipe.R p2.R || fail "pipe -> file: records differ: $(diff pipe.R p2.R | head -5)"
"$tool" rewrite --pipe p.data p3.pipe 2>rw.err || fail "rewrite file -> pipe: $(cat rw.err)"
records p.data >file.R
records p3.pipe >p3.R
cmp -s file.R p3.R || fail "file -> pipe: records differ: $(diff file.R p3.R | head -5)"
echo "pipe: $(wc -l <pipe.R) records equal after pipe -> file; $(wc -l <file.R) equal after file -> pipe"

# Tracing data (a tracepoint event): a file feature, a pipe record.
if perf record -q -e sched:sched_process_exec -o t.data -- ls >/dev/null 2>trec.err; then
  "$tool" rewrite --pipe t.data t.pipe 2>rw.err || fail "rewrite t.data -> pipe: $(cat rw.err)"
  perf script -i t.data >t.S 2>/dev/null
  perf script -i t.pipe >tp.S 2>/dev/null
  [ -s t.S ] || fail "perf script printed nothing for t.data"
  cmp -s t.S tp.S || fail "tracepoint file -> pipe: perf script differs: $(diff t.S tp.S | head -5)"
  echo "tracepoint: perf script identical after file -> pipe ($(wc -l <t.S) lines)"
else
  echo "tracepoint: not checked: perf cannot record sched:sched_process_exec here: $(head -1 trec.err)"
fi

# 4. perf record -z (PERF_RECORD_COMPRESSED, zstd): the dump lists what perf
#    counts, decompressed records included; the rewrite is byte-identical.
if perf record -q -z -e cpu-clock -g -o z.data -- ls >/dev/null 2>zrec.err; then
  "$tool" dump z.data >zdump.txt 2>dump.err || fail "dump z.data: $(cat dump.err)"
  grep -q 'unknown records: 0  unknown features: 0$' zdump.txt || fail "dump z.data: $(tail -1 zdump.txt)"
  ours=$(grep -cE '^[0-9]+ 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_' zdump.txt)
  perfs=$(perf report -D -i z.data 2>/dev/null | sed -n 's/^ *TOTAL events: *\([0-9]*\).*/\1/p')
  [ "$ours" = "$perfs" ] || fail "z.data: dump lists $ours records, perf report -D counts $perfs"
  grep -q 'PERF_RECORD_COMPRESSED' zdump.txt || fail "z.data: no PERF_RECORD_COMPRESSED listed"
  "$tool" rewrite z.data ../b/z.data 2>rw.err || fail "rewrite z.data: $(cat rw.err)"
  cmp -s z.data ../b/z.data || fail "rewrite of z.data differs: $(cmp z.data ../b/z.data)"
  echo "z.data (perf record -z): $ours records listed (decompressed), perf counts $perfs; rewrite byte-identical"
else
  echo "z.data: not checked: this perf cannot record -z: $(head -1 zrec.err)"
fi
echo PASS
