#!/bin/sh
# tools.data.cli: perftest_data's exit codes and messages, no perf needed
# (input: harness/perf_data/fuzz/seeds, written by perf 6.1 and by the writer).
#   0 for a good file (every cut of it that still reads is 0 too), 2 and an
#   "offset 0x..." message naming the record for a truncated or corrupt one,
#   2 for a missing file or bad usage; never a crash (exit >= 128).
set -u
tool="$1"
seeds="$2"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$work"' EXIT

for f in "$seeds"/*; do
  "$tool" dump "$f" >/dev/null 2>"$work/err" || fail "dump $f: exit $?: $(cat "$work/err")"
done

f="$seeds/cpu_clock_g.data"
size=$(wc -c <"$f")
checked=0
n=0
while [ "$n" -lt "$size" ]; do
  head -c "$n" "$f" >"$work/cut.data"
  "$tool" dump "$work/cut.data" >/dev/null 2>"$work/err"
  rc=$?
  [ "$rc" = 2 ] || fail "dump of the first $n bytes: exit $rc, want 2"
  grep -q 'offset 0x' "$work/err" || fail "dump of the first $n bytes: no offset in: $(cat "$work/err")"
  checked=$((checked + 1))
  n=$((n + 97))
done

# The first record's header.size (ID_INDEX at data.offset 0x108) set to 4.
cp "$f" "$work/bad.data"
printf '\004\000' | dd of="$work/bad.data" bs=1 seek=$((0x108 + 6)) conv=notrunc 2>/dev/null
"$tool" dump "$work/bad.data" >/dev/null 2>"$work/err"
rc=$?
[ "$rc" = 2 ] || fail "corrupt header.size: exit $rc, want 2"
grep -q 'offset 0x108: PERF_RECORD_ID_INDEX: header.size=4' "$work/err" || fail "corrupt header.size: $(cat "$work/err")"

"$tool" dump "$work/missing.data" >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "missing file: exit $rc, want 2"
"$tool" dump >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "no FILE: exit $rc, want 2"
"$tool" --help >/dev/null 2>&1 || fail "--help: exit $?"
echo "PASS: seeds read; $checked truncations and a corrupt header.size exit 2 naming the offset"
