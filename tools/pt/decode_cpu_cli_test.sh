#!/bin/sh
# `perftest_pt decode --cpu F/M/S` applies that CPU's errata workarounds
# (harness/pt/cpu.h). The trace: PSB, PSBEND, then 0Fh 02h F3h 00h — a CYC
# whose first byte is followed by an OVF (erratum SKD007, Skylake 6/0x4e):
# without --cpu a 2-byte CYC and a 1-byte CYC (no event); with it the OVF at
# offset 0x13 (libipt: pt_pkt_handle_skd007 / 2.0.5 check_erratum_skd007).
# A malformed --cpu exits 2 naming the bad field.
set -u
tool=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
printf '\002\202\002\202\002\202\002\202\002\202\002\202\002\202\002\202\002\043\017\002\363\000' > "$dir/skd007.bin"

"$tool" decode --itrace=e "$dir/skd007.bin" > "$dir/plain.txt" 2>/dev/null || fail "plain decode exited $?"
grep -q EOVERFLOW "$dir/plain.txt" && fail "overflow without --cpu: $(cat "$dir/plain.txt")"

"$tool" decode --cpu=6/0x4e/3 --itrace=e "$dir/skd007.bin" > "$dir/skl.txt" 2>/dev/null || fail "--cpu decode exited $?"
grep -q "EOVERFLOW at offset 0x13" "$dir/skl.txt" || fail "no overflow at 0x13 with --cpu 6/0x4e: $(cat "$dir/skl.txt")"

# A CPU without SKD007 (Broadwell 6/0x3d): the plain decode.
"$tool" decode --cpu=6/61/4 --itrace=e "$dir/skd007.bin" > "$dir/bdw.txt" 2>/dev/null || fail "--cpu 6/61/4 exited $?"
cmp -s "$dir/plain.txt" "$dir/bdw.txt" || fail "6/61/4 differs from no --cpu"

"$tool" decode --cpu=6/x "$dir/skd007.bin" > /dev/null 2> "$dir/err.txt"
rc=$?
[ "$rc" -eq 2 ] || fail "--cpu 6/x exited $rc, expected 2"
grep -q "model 'x'" "$dir/err.txt" || fail "error does not name the model: $(cat "$dir/err.txt")"
# A perf.data file's HEADER_CPUID names the CPU when --cpu is not given:
# the recorded host's string replaced in place by a Skylake's (NUL-padded).
"$tool" record --backend=mock --instructions=2000 --no-truth -o "$dir/t.data" >/dev/null 2>&1 || fail "record"
at=$(grep -abo 'AuthenticAMD,[0-9,]*\|GenuineIntel,[0-9,]*' "$dir/t.data" | head -1)
[ -n "$at" ] || fail "no HEADER_CPUID string in the recording"
off=${at%%:*}
len=$((${#at} - ${#off} - 1))
new='GenuineIntel,6,78,3'
[ "$len" -ge ${#new} ] || fail "HEADER_CPUID '$at' shorter than the replacement"
{ printf '%s' "$new"; head -c $((len - ${#new})) /dev/zero; } |
  dd of="$dir/t.data" bs=1 seek="$off" conv=notrunc 2>/dev/null
"$tool" decode --itrace=e "$dir/t.data" > /dev/null 2> "$dir/cpuid.txt" || fail "decode of the perf.data exited $?"
grep -q "CPU 6/78/3 (HEADER_CPUID GenuineIntel,6,78,3): errata bdm70,skd007,skd022,skd010,skl014,skl168" \
  "$dir/cpuid.txt" || fail "HEADER_CPUID not taken: $(cat "$dir/cpuid.txt")"
"$tool" decode --cpu=6/61/4 --itrace=e "$dir/t.data" > /dev/null 2> "$dir/given.txt" || fail "decode --cpu exited $?"
grep -q "HEADER_CPUID" "$dir/given.txt" && fail "--cpu did not override HEADER_CPUID: $(cat "$dir/given.txt")"
echo "ok"
