#!/usr/bin/env bash
# Damaged, truncated and foreign input to `gcspy report` and `gcspy check`:
# a cut or corrupted trace yields everything before the damage and the
# report says where it stopped (byte offset) and why; a cut trace (the file
# ends inside a chunk, or between chunks without TRACE_END) is incomplete
# (exit 0, a warning), a corrupted one is malformed (the report is still
# written, marked so; one error line; exit 2); a trace of a newer
# format version, an empty file or a non-trace is refused with one clear
# line and exit status 2. The leaks trace of build/tests/analyzer_mktraces
# has three chunks: allocations, the scan, the rest and TRACE_END.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy MK=build/tests/analyzer_mktraces PY=/usr/bin/python3
[ -x "$G" ] && [ -x "$MK" ] || { echo "not built: $G $MK"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$MK" "$T" || { echo "mktraces failed"; exit 1; }
L=$T/leaks.trace

# chunk offsets from the chunk headers
read -r C0 C1 C2 END < <($PY - "$L" <<'X'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, offs = 32, []
while off < len(d):
    offs.append(off)
    off += 24 + struct.unpack("<I", d[off + 8:off + 12])[0]
print(*offs, len(d))
X
)
[ -n "${END:-}" ] || { echo "could not read chunk offsets"; exit 1; }

# json FILE EXPR: evaluates a Python expression on the report's first process (p)
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); p=d['processes'][0]; sys.exit(0 if ($2) else 1)" "$1"; }

# Cut inside chunk 2 (the scan's chunk): chunk 1 survives; no scan, so the
# six blocks live at the end of chunk 1 are not freed; the damage is named.
head -c $((C2 + 30)) "$L" >"$T/cut2.trace"
"$G" report --format json -o "$T/cut2.json" "$T/cut2.trace" 2>"$T/cut2.err"
[ $? = 0 ] || fail "cut2: report exit status"
grep -q "warning: $T/cut2.trace is incomplete: offset $C2: chunk 2: truncated chunk" "$T/cut2.err" ||
  fail "cut2 warning: $(cat "$T/cut2.err")"
json "$T/cut2.json" "p['complete'] is False and p['damage'].startswith('offset $C2: chunk 2: truncated')" ||
  fail "cut2: complete/damage"
json "$T/cut2.json" "p['last_scan'] is not None and p['events']['chunks'] == 2" || fail "cut2: chunks before the cut"
json "$T/cut2.json" "p['summary']['definite']['total']['bytes'] == 1052772 and p['freed_after_last_scan'] == 0" || fail "cut2: leaks of scan 1 (the libfake block not yet freed)"

head -c $((C1 + 30)) "$L" >"$T/cut1.trace"
"$G" report --format json -o "$T/cut1.json" -q "$T/cut1.trace" 2>"$T/cut1.err" || fail "cut1: exit status"
[ -s "$T/cut1.err" ] && fail "cut1: -q still warned"
json "$T/cut1.json" "p['last_scan'] is None and p['summary']['not-freed']['total']['blocks'] == 7" ||
  fail "cut1: not-freed blocks"
json "$T/cut1.json" "p['pid'] == 100 and p['events']['allocs'] == 8 and p['events']['frees'] == 1" ||
  fail "cut1: events before the cut"
# Text says it too.
"$G" report "$T/cut1.trace" 2>/dev/null | grep -q "   INCOMPLETE: offset $C1: chunk 1: truncated chunk" ||
  fail "cut1: text INCOMPLETE line"

# Cut exactly between chunks: a clean end without TRACE_END.
head -c "$C2" "$L" >"$T/cut_clean.trace"
"$G" report --format json -q -o "$T/clean.json" "$T/cut_clean.trace" || fail "clean cut: exit"
json "$T/clean.json" "'without TRACE_END' in p['damage'] and p['damage'].startswith('offset $C2:')" ||
  fail "clean cut: damage message"

# Header only; header cut short.
head -c 32 "$L" >"$T/hdr.trace"
"$G" report --format json -q -o "$T/hdr.json" "$T/hdr.trace" || fail "header only: exit"
json "$T/hdr.json" "p['pid'] is None and p['complete'] is False" || fail "header only: fields"
head -c 20 "$L" >"$T/short.trace"
"$G" report "$T/short.trace" >/dev/null 2>"$T/short.err"; rc=$?
[ $rc = 2 ] || fail "short header: exit $rc"
grep -q "offset" "$T/short.err" || fail "short header message: $(cat "$T/short.err")"

# A flipped byte in chunk 1's payload: CRC damage at chunk 1's offset;
# chunk 0 is reported.
$PY - "$L" "$T/crc.trace" "$C1" <<'X'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[int(sys.argv[3]) + 24 + 5] ^= 0x40
open(sys.argv[2], "wb").write(d)
X
"$G" report --format json -q -o "$T/crc.json" "$T/crc.trace" 2>"$T/crc.err"; rc=$?
[ $rc = 2 ] || fail "crc: exit $rc, expected 2 (malformed)"
[ "$(wc -l <"$T/crc.err")" = 1 ] && grep -q "^gcspy report: $T/crc.trace: malformed trace: offset $C1: chunk 1: payload CRC mismatch$" "$T/crc.err" ||
  fail "crc: error line (even with -q): $(cat "$T/crc.err")"
json "$T/crc.json" "p['damage'].startswith('offset $C1: chunk 1') and 'CRC' in p['damage'].upper()" ||
  fail "crc: damage message: $($PY -c "import json;print(json.load(open('$T/crc.json'))['processes'][0]['damage'])")"
json "$T/crc.json" "p['malformed'] is True and p['problems'] == 1 and p['problem'] == p['damage']" ||
  fail "crc: not marked malformed"
json "$T/crc.json" "p['events']['allocs'] == 8" || fail "crc: chunk 0 lost"
# the cuts above are not malformed
for c in cut2 cut1 clean; do
  json "$T/$c.json" "p['malformed'] is False and p['problems'] == 0 and p['problem'] is None" ||
    fail "$c: a cut trace marked malformed"
done

# A newer major version is refused; so are empty files and non-traces.
$PY -c "
import sys; d = bytearray(open('$L','rb').read()); d[8] = 3; open('$T/v3.trace','wb').write(d)"
"$G" report "$T/v3.trace" >/dev/null 2>"$T/v3.err"; rc=$?
[ $rc = 2 ] || fail "v3: exit $rc"
grep -qE "offset 8: trace format version 3\.[0-9]+ is newer than this gcspy reads \(1\.x to 2\.x\); upgrade gcspy$" "$T/v3.err" || fail "v3 message: $(cat "$T/v3.err")"
[ "$(wc -l <"$T/v3.err")" = 1 ] || fail "v3: not one line"
: >"$T/empty.trace"
"$G" report "$T/empty.trace" 2>/dev/null; [ $? = 2 ] || fail "empty: exit"
printf 'hello\n' >"$T/text.trace"
"$G" report "$T/text.trace" 2>/dev/null; [ $? = 2 ] || fail "text: exit"
"$G" report "$T/nope.trace" 2>"$T/nope.err"; [ $? = 2 ] || fail "missing: exit"
grep -q "nope.trace" "$T/nope.err" || fail "missing: message"

# report: other errors
# --format html: a page when the HTML reporter is built in, else a clear refusal
"$G" report --format html -o "$T/r.html" "$L" 2>"$T/html.err"; rc=$?
if [ $rc = 0 ]; then
  grep -qi "<html" "$T/r.html" || fail "html: no page written"
else
  [ $rc = 2 ] || fail "html: exit $rc"
  grep -q "not available yet" "$T/html.err" || fail "html message: $(cat "$T/html.err")"
fi
"$G" report --format xml "$L" 2>/dev/null; [ $? = 2 ] || fail "unknown format: exit"
"$G" report 2>/dev/null; [ $? = 2 ] || fail "no trace: exit"
"$G" report --bogus "$L" 2>/dev/null; [ $? = 2 ] || fail "bad option: exit"
"$G" report -o /nonexistent/dir/r.txt "$L" 2>/dev/null; [ $? = 2 ] || fail "unwritable output: exit"
"$G" report --help | grep -q "^usage: gcspy report" || fail "report --help"
"$G" check --help | grep -q "^usage: gcspy check" || fail "check --help"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "analyzer damage: all checks passed"
