#!/bin/sh
# pt.decode_perf_data_cli: `perftest_pt decode FILE.data` on a truncated or
# corrupt perf.data (a mock recording): exit 2 with an error naming the
# byte offset ("offset 0x...") and, for a bad record, the record; a byte
# changed anywhere: exit 0 or 2, never a crash (exit >= 128) or a hang.
set -u
tool="$1"
data_tool="$2"
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$work"' EXIT
"$tool" record --backend=mock --instructions=20000 --no-truth -o "$work/t.data" >/dev/null 2>"$work/err" ||
  fail "record: $(cat "$work/err")"
"$tool" decode "$work/t.data" --itrace=i100ibe >/dev/null 2>"$work/err" || fail "decode of the whole file: $(cat "$work/err")"

size=$(wc -c <"$work/t.data")
cuts=0
n=8  # shorter cuts lack perf.data's 8-byte magic: raw PT bytes to decode
while [ "$n" -lt "$size" ]; do
  head -c "$n" "$work/t.data" >"$work/cut.data"
  timeout 60 "$tool" decode "$work/cut.data" --itrace=i100ibe >/dev/null 2>"$work/err"
  rc=$?
  [ "$rc" = 2 ] || fail "decode of the first $n bytes: exit $rc, want 2: $(cat "$work/err")"
  grep -q 'offset 0x' "$work/err" || fail "decode of the first $n bytes: no offset in: $(cat "$work/err")"
  cuts=$((cuts + 1))
  n=$((n + 131))
done

# The COMM the recorder synthesizes (the 4th record: after TIME_CONV,
# AUXTRACE_INFO and ID_INDEX) with header.size 4.
off=$("$data_tool" dump "$work/t.data" | sed -n 's/^[0-9]* \(0x[0-9a-f]*\) \[0x[0-9a-f]*\]: PERF_RECORD_COMM.*/\1/p' | head -1)
[ -n "$off" ] || fail "no PERF_RECORD_COMM in the dump"
cp "$work/t.data" "$work/bad.data"
printf '\004\000' | dd of="$work/bad.data" bs=1 seek=$((off + 6)) conv=notrunc 2>/dev/null
"$tool" decode "$work/bad.data" --itrace=i100ibe >/dev/null 2>"$work/err"
rc=$?
[ "$rc" = 2 ] || fail "corrupt header.size: exit $rc, want 2"
grep -q "offset $off: PERF_RECORD_COMM: header.size=4" "$work/err" || fail "corrupt header.size: $(cat "$work/err")"

flips=0
n=0
while [ "$n" -lt "$size" ]; do
  cp "$work/t.data" "$work/flip.data"
  printf '\377' | dd of="$work/flip.data" bs=1 seek="$n" conv=notrunc 2>/dev/null
  timeout 60 "$tool" decode "$work/flip.data" --itrace=i100ibe >/dev/null 2>"$work/err"
  rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 2 ] || fail "byte $n set to 0xff: exit $rc (want 0 or 2): $(head -c 300 "$work/err")"
  flips=$((flips + 1))
  n=$((n + 61))
done
echo "PASS: $cuts truncations and a corrupt header.size exit 2 naming the offset; $flips changed bytes exit 0 or 2"
