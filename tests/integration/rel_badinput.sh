#!/usr/bin/env bash
# The analyzer under bad input.
#   framing   every kind of malformed trace, made from a valid one (mktrace
#             full: 2 chunks) or written uncompressed byte by byte: wrong
#             magic, newer version, chunk length past the end, header and
#             payload checksum mismatches, sizes over the limits, chunks out
#             of order, raw size mismatch, bad zstd data, an unknown record
#             type, an over-long varint, a record length past the payload:
#             `gcspy dump` prints what precedes the damage and exits 2 with
#             one line naming the byte offset; `gcspy check` exits 2 naming
#             it too; `gcspy report` exits 2 after one line naming it: for
#             an unreadable header without a report, otherwise with the
#             report of what precedes the damage, marked malformed. Two
#             cuts (the file ends inside chunk 1's header, or its payload,
#             as a kill while writing leaves it) are incomplete, not
#             malformed: report exit 0 with a warning naming the offset,
#             check not an error unless --require-complete.
#   content   well-framed traces whose content breaks the format's
#             promises (rel_mktraces semantic, and one written byte by byte
#             here): `gcspy report` (text and JSON) and `gcspy check` exit 2
#             after exactly one line naming the first problem at the byte
#             offset where the generator wrote that record; the report is
#             written all the same, marked malformed; `gcspy dump` (which
#             does not replay) exits 0. The odd but valid ones (an
#             allocation over a live block, a TIMEBASE going back, events
#             after a thread's exit) exit 0 with no problem.
#   strings   hostile bytes in every trace-provided string (rel_mktraces
#             weird): the JSON report is valid UTF-8 and valid JSON and
#             keeps the text; the text report writes no terminal control
#             bytes; the HTML report never lets trace text close its script
#             element or open a tag.
#   huge      a 64 MiB trace (11 million events) analysed by `gcspy report`
#             and `gcspy check` within a 24 MiB address-space limit: memory
#             does not grow with the trace.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_badinput
gs_need rel_mktraces
MK=$GS_ROOT/build/tests/mktrace
[ -x "$MK" ] || { echo "$MK missing (make test-build)"; exit 1; }
G=$GS_CLI
T=$GS_T
"$MK" full "$T/full.trace" || { echo "mktrace failed"; exit 1; }

# ---- framing ----
# The mutations: each writes $T/NAME.trace and a line "NAME OFFSET BEFORE
# REGEX": where the damage must be reported, whether a good chunk precedes
# it (its records must be printed), and what the message must say.
gs_py - "$T" <<'PY' >"$T/cases" || { echo "mutations failed"; exit 1; }
import struct, sys, zlib
sys.path.insert(0, 'tests/support')
from trace_bytes import crc32c, plain
T = sys.argv[1]
d = open(T + '/full.trace', 'rb').read()

def chunks(d):
    off, out = 32, []
    while off < len(d):
        m, seq, cl, rl, crc, hcrc = struct.unpack('<6I', d[off:off + 24])
        out.append((off, seq, cl, rl))
        off += 24 + cl
    return out

def reseal(b, off, payload=True):
    m, seq, cl, rl, crc, hcrc = struct.unpack('<6I', bytes(b[off:off + 24]))
    if payload and off + 24 + cl <= len(b):
        crc = crc32c(bytes(b[off + 24:off + 24 + cl]))
    b[off:off + 20] = struct.pack('<5I', m, seq, cl, rl, crc)
    b[off + 20:off + 24] = struct.pack('<I', crc32c(bytes(b[off:off + 20])))

(c0, _, cl0, rl0), (c1, _, cl1, rl1) = chunks(d)
cases = []
def case(name, data, off, regex, before=0):
    open('%s/%s.trace' % (T, name), 'wb').write(bytes(data))
    cases.append('%s %d %d %s' % (name, off, before, regex))

b = bytearray(d); b[0:8] = b'NOTATRCE'
case('magic', b, 0, 'not a gcspy trace')
b = bytearray(d); b[8] = 3
case('version', b, 8, 'version 3\\.[0-9]+ is newer than this gcspy reads \\(1\\.x to 2\\.x\\)')
# a length past the end with the whole payload there (it matches its CRC)
b = bytearray(d); b[c1 + 8:c1 + 12] = struct.pack('<I', cl1 + 5000); reseal(b, c1, payload=False)
case('length-past-end', b, c1, 'chunk 1: chunk length %d runs past the end of the file' % (cl1 + 5000), 1)
# cuts: the file ends inside chunk 1 (a kill while it was written)
case('cut-payload', d[:c1 + 24 + cl1 // 2], c1, 'chunk 1: truncated chunk \\(payload has %d of %d bytes\\)' % (cl1 // 2, cl1), 1)
case('cut-header', d[:c1 + 10], c1, 'chunk 1: truncated chunk \\(header has 10 of 24 bytes\\)', 1)
b = bytearray(d); b[c0 + 4] ^= 1
case('header-crc', b, c0, 'chunk 0: chunk header CRC mismatch')
b = bytearray(d); b[c1 + 24 + 7] ^= 0x10
case('payload-crc', b, c1, 'chunk 1: payload CRC mismatch', 1)
b = bytearray(d); b[c1 + 12:c1 + 16] = struct.pack('<I', (16 << 20) + 1); reseal(b, c1)
case('raw-too-big', b, c1, 'chunk 1: raw size 16777217 exceeds the limit', 1)
b = bytearray(d); b[c1 + 8:c1 + 12] = struct.pack('<I', 0x7fffffff); reseal(b, c1, payload=False)
case('comp-too-big', b, c1, 'chunk 1: compressed size 2147483647 exceeds the limit', 1)
b = bytearray(d[:32] + d[c1:] + d[c0:c1])
case('out-of-order', b, c0, 'chunks out of order \\(seq 1 where 0 was expected\\)')
b = bytearray(d); b[c1 + 12:c1 + 16] = struct.pack('<I', rl1 - 10); reseal(b, c1)
case('raw-mismatch', b, c1, 'chunk 1: raw size mismatch', 1)
b = bytearray(d); b[c1 + 24:c1 + 24 + cl1] = bytes((i * 37) & 0xff for i in range(cl1)); reseal(b, c1)
case('bad-zstd', b, c1, 'chunk 1: bad zstd data', 1)

# uncompressed traces (file flags 0): record-level damage, byte by byte
def rec_len(t, body):
    return bytes([t, len(body)]) + body
# TIMEBASE 0; PROCESS_START (pid 5, empty strings); THREAD_START 1
good = bytes([0x01, 0x00]) + rec_len(0x20, bytes([5, 1] + [0] * 12)) + rec_len(0x24, bytes([1, 5, 0]))
case('unknown-hot', plain([good, bytes([0x01, 0x00, 0x1f])]), 32 + 24 + len(good),
     'chunk 1, record at payload offset 2: unknown hot record type \\(type 0x1f\\)', 1)
case('long-varint', plain([good, bytes([0x01, 0x00, 0x06]) + b'\x80' * 11 + b'\x01']),
     32 + 24 + len(good), 'chunk 1, record at payload offset 2: varint longer than 10 bytes', 1)
case('length-past-payload', plain([good, bytes([0x01, 0x00, 0x27, 100, 1, 2, 3])]),
     32 + 24 + len(good), 'chunk 1, record at payload offset 2: record length 100 runs past payload end', 1)
case('no-timebase', plain([good, bytes([0x03, 0x00, 0x00])]), 32 + 24 + len(good),
     'payload does not start with TIMEBASE', 1)
print('\n'.join(cases))
PY

while read -r name off before regex; do
  f=$T/$name.trace
  "$G" dump "$f" >"$T/$name.dump" 2>"$T/$name.err"; rc=$?
  [ $rc -eq 2 ] || fail "$name: gcspy dump exit $rc, expected 2"
  [ "$(wc -l <"$T/$name.err")" -eq 1 ] || fail "$name: dump: $(wc -l <"$T/$name.err") lines on stderr"
  grep -Eq "^gcspy dump: .*offset $off: .*$regex|^gcspy dump: .*$regex.*offset $off" "$T/$name.err" ||
    fail "$name: dump error should name offset $off and /$regex/: $(cat "$T/$name.err")"
  if [ "$before" = 1 ]; then
    grep -Eq '^(process|thread_start) ' "$T/$name.dump" || fail "$name: the good chunk before the damage was not printed"
  fi
  "$G" check --require-complete --no-symbols "$f" >"$T/$name.chk" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "$name: gcspy check --require-complete exit $rc, expected 2"
  grep -q "offset $off" "$T/$name.chk" || fail "$name: check does not name offset $off: $(head -2 "$T/$name.chk" | tr '\n' '|')"
  "$G" check --no-symbols --fail-on definite "$f" >"$T/$name.chk2" 2>&1; crc=$?
  "$G" report --no-symbols -o "$T/$name.rep" "$f" 2>"$T/$name.rerr"; rc=$?
  case $name in
    magic|version)
      [ $crc -eq 2 ] || fail "$name: gcspy check exit $crc, expected 2"
      [ $rc -eq 2 ] || fail "$name: gcspy report exit $rc, expected 2"
      [ "$(wc -l <"$T/$name.rerr")" -eq 1 ] || fail "$name: report: more than one line on stderr" ;;
    cut-*)
      [ $crc -ne 2 ] || fail "$name: gcspy check exit 2 for a cut trace (an error only with --require-complete)"
      [ $rc -eq 0 ] || fail "$name: gcspy report exit $rc, expected 0 (a cut trace is incomplete, not malformed)"
      [ "$(wc -l <"$T/$name.rerr")" -eq 1 ] && grep -Eq "^gcspy report: $f: warning: .* is incomplete: offset $off: .*$regex" "$T/$name.rerr" ||
        grep -Eq "^gcspy report: warning: $f is incomplete: offset $off: .*$regex" "$T/$name.rerr" ||
        fail "$name: report warning: $(cat "$T/$name.rerr")" ;;
    *)
      [ $crc -eq 2 ] && grep -Eq "^ERROR $f \(pid [0-9]+ .*\): malformed trace: offset $off: .*$regex" "$T/$name.chk2" ||
        fail "$name: gcspy check exit $crc, expected 2 with a malformed verdict: $(head -1 "$T/$name.chk2")"
      [ $rc -eq 2 ] || fail "$name: gcspy report exit $rc, expected 2 (malformed: the report is written, marked so)"
      [ "$(wc -l <"$T/$name.rerr")" -eq 1 ] && grep -Eq "^gcspy report: $f: malformed trace: offset $off: .*$regex" "$T/$name.rerr" ||
        fail "$name: report error line: $(cat "$T/$name.rerr")"
      grep -q "^   MALFORMED: offset $off: " "$T/$name.rep" || fail "$name: the report written is not marked malformed" ;;
  esac
done <"$T/cases"
echo "framing: $(wc -l <"$T/cases") damaged traces checked"

# ---- content ----
"$GS_PROGS/rel_mktraces" semantic "$T/sem" || fail "rel_mktraces semantic"
# One written byte by byte, uncompressed, so its offsets are known here and
# not taken from the generator: PROCESS_START, THREAD_START 1, STACK 1,
# ALLOC 0x1000, then a FREE of 0x9000 at a payload offset computed below.
gs_py - "$T/sem" <<'PY' >>"$T/sem/cases" || fail "plain semantic trace"
import sys
sys.path.insert(0, 'tests/support')
from trace_bytes import plain
def u(v):
    out = bytearray()
    while True:
        b = v & 0x7f; v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
def s(v):
    return u((v << 1) ^ (v >> 63) if v >= 0 else ((v << 1) ^ -1) & (2**64 - 1))
def st(b):
    return u(len(b)) + b
def lengthed(t, body):
    return bytes([t]) + u(len(body)) + body
proc = lengthed(0x20, u(55) + u(1) + u(0) + st(b'/bin/plain') + st(b'plain') + st(b'h') +
                u(0) + u(0) + u(0) + u(0) + st(b'0.1.0') + u(0) + u(64) + u(4096))
payload = bytes([0x01]) + u(0) + proc + lengthed(0x24, u(1) + u(55) + u(0))
payload += bytes([0x06]) + u(1) + u(0) + u(0x401000)
payload += bytes([0x02]) + u(10) + u(1) + s(0x1000) + u(64) + u(1)      # a = 0x1000
at = len(payload)
payload += bytes([0x03]) + u(5) + s(0x9000 - 0x1000)                    # FREE 0x9000
payload += lengthed(0x21, u(20) + s(0) + u(0)) + lengthed(0x2f, u(30) + u(1) + u(0) + u(64) + u(1) + u(64))
open(sys.argv[1] + '/plain-free-unknown.trace', 'wb').write(plain([payload]))
print('plain-free-unknown 2 32 0 %d FREE of 0x9000 that is not live' % at)
PY
malformed=0 valid=0
while read -r name status off chunk at msg; do
  f=$T/sem/$name.trace
  loc="offset $off: chunk $chunk, record at payload offset $at"
  "$G" report --no-symbols -o "$T/$name.txt" "$f" 2>"$T/$name.err"; rc=$?
  "$G" report --no-symbols --format json -o "$T/$name.json" "$f" 2>"$T/$name.jerr"; jrc=$?
  "$G" check --no-symbols "$f" >"$T/$name.chk" 2>"$T/$name.chkerr"; crc=$?
  "$G" dump "$f" >/dev/null 2>"$T/$name.derr"; drc=$?
  [ $drc -eq 0 ] || fail "$name: gcspy dump exit $drc on a well-framed trace: $(cat "$T/$name.derr")"
  if [ "$status" = 2 ]; then
    malformed=$((malformed + 1))
    want="gcspy report: $f: malformed trace: $loc: $msg"
    [ $rc -eq 2 ] || fail "$name: gcspy report exit $rc, expected 2"
    [ "$(cat "$T/$name.err")" = "$want" ] || fail "$name: report stderr:
      got:  $(cat "$T/$name.err")
      want: $want"
    [ $jrc -eq 2 ] && [ "$(wc -l <"$T/$name.jerr")" -eq 1 ] || fail "$name: JSON report exit $jrc: $(cat "$T/$name.jerr")"
    grep -qF "   MALFORMED: $loc: ${msg% (and *}" "$T/$name.txt" || fail "$name: text report not marked malformed"
    [ $crc -eq 2 ] || fail "$name: gcspy check exit $crc, expected 2"
    grep -qF "ERROR $f (pid " "$T/$name.chk" && grep -qF "): malformed trace: $loc: $msg" "$T/$name.chk" ||
      fail "$name: check verdict: $(head -1 "$T/$name.chk")"
    [ "$(cat "$T/$name.chkerr")" = "gcspy check: $f: malformed trace: $loc: $msg" ] ||
      fail "$name: check stderr: $(cat "$T/$name.chkerr")"
    echo "$name: $(cat "$T/$name.err")"
  else
    valid=$((valid + 1))
    [ $rc -eq 0 ] && [ $jrc -eq 0 ] && [ ! -s "$T/$name.err" ] ||
      fail "$name: a valid trace: report exit $rc/$jrc: $(cat "$T/$name.err")"
    [ $crc -ne 2 ] || fail "$name: check exit 2 on a valid trace: $(head -1 "$T/$name.chk")"
  fi
  gs_py - "$T/$name.json" "$name" "$status" "$loc: $msg" <<'PY' || fail "$name: JSON report, see above"
import json, re, sys
name, status, want = sys.argv[2], sys.argv[3], sys.argv[4]
p = json.load(open(sys.argv[1]))['processes'][0]
if status == '2':
    m = re.match(r'(.*) \(and (\d+) more problems?\)$', want)
    first, n = (m.group(1), int(m.group(2)) + 1) if m else (want, 1)
    assert p['malformed'] is True and p['problem'] == first and p['problems'] == n, \
        (p['malformed'], p['problem'], p['problems'], first, n)
else:
    assert p['malformed'] is False and p['problems'] == 0 and p['problem'] is None, p['problem']
    if name == 'alloc-twice':
        assert p['events']['replaced_allocs'] == 1, p['events']
PY
done <"$T/sem/cases"
[ "$malformed" -ge 20 ] && [ "$valid" -eq 3 ] || fail "content: $malformed malformed and $valid valid cases, expected 20+ and 3"
echo "content: $malformed malformed traces named at their record, $valid odd but valid ones accepted"

# ---- strings ----
"$GS_PROGS/rel_mktraces" weird "$T/weird.trace" || fail "rel_mktraces weird"
"$G" report --format json --show-reachable -o "$T/weird.json" "$T/weird.trace" 2>"$T/weird.jerr" ||
  fail "weird: JSON report failed: $(head -2 "$T/weird.jerr")"
gs_py - "$T/weird.json" <<'PY' || fail "weird: JSON output"
import json, sys
raw = open(sys.argv[1], 'rb').read()
try:
    text = raw.decode('utf-8')
except UnicodeDecodeError as e:
    raise SystemExit('JSON is not valid UTF-8 at byte %d: %r' % (e.start, raw[e.start - 30:e.start + 8]))
d = json.loads(text)           # strict: raw control characters are errors
p = d['processes'][0]
assert 'alert(1)' in p['exe'] and '"quote"' in p['exe'] and '\x1b[31m' in p['exe'], 'exe lost its text'
mods = [f.get('module') for l in p['leaks'] for f in l['stack']]
assert any(m and 'alert(1)' in m for m in mods), 'module path missing from the leak stacks'
funcs = [f.get('function') for l in p['leaks'] for f in l['stack']]
assert any(fn and 'alert(1)' in fn for fn in funcs), 'Python function name missing from the leak stacks'
PY
"$G" report --show-reachable -o "$T/weird.txt" "$T/weird.trace" 2>/dev/null || fail "weird: text report failed"
gs_py - "$T/weird.txt" <<'PY' || fail "weird: text report writes terminal control bytes from the trace"
import sys
raw = open(sys.argv[1], 'rb').read()
bad = sorted({b for b in raw if (b < 0x20 and b not in (9, 10)) or b == 0x7f})
assert not bad, 'control bytes %s, e.g. %r' % (bad, raw[raw.index(bytes([bad[-1]])) - 20:][:40])
PY
if "$G" report --format html -o "$T/weird.html" "$T/weird.trace" 2>"$T/weird.herr"; then
  "$MK" small "$T/small.trace"
  "$G" report --format html -o "$T/small.html" "$T/small.trace" 2>/dev/null
  gs_py - "$T/weird.html" "$T/small.html" <<'PY' || fail "weird: HTML report"
import sys, re
w = open(sys.argv[1], 'rb').read().lower()
s = open(sys.argv[2], 'rb').read().lower()
assert b'<script>alert(1)' not in w, 'trace text opened a script element'
for tag in (b'<script', b'</script', b'<!--'):
    assert w.count(tag) == s.count(tag), '%r appears %d times, %d in a plain report' % (tag, w.count(tag), s.count(tag))
PY
else
  grep -q "not available" "$T/weird.herr" && echo "html: not available yet, not checked" ||
    fail "weird: HTML report failed: $(head -2 "$T/weird.herr")"
fi

# ---- huge ----
"$GS_PROGS/rel_mktraces" big "$T/big.trace" 64 >"$T/big.out" || fail "rel_mktraces big"
events=$(sed -n 's/^events=\([0-9]*\).*/\1/p' "$T/big.out")
limit=$((24 << 20))
# An ASan build (make asan runs this suite with one) reserves terabytes of
# address space for its shadow: no address-space limit then.
LIM=(prlimit --as=$limit)
ldd "$G" 2>/dev/null | grep -q libasan && LIM=()
"${LIM[@]}" "$G" report --format json -o "$T/big.json" "$T/big.trace" 2>"$T/big.err"; rc=$?
[ $rc -eq 0 ] || fail "huge: report of a $(($(stat -c %s "$T/big.trace") >> 20)) MiB trace within 24 MiB of address space: exit $rc: $(head -2 "$T/big.err")"
[ $rc -eq 0 ] && gs_py - "$T/big.json" "$events" <<'PY' || fail "huge: report content"
import json, sys
p = json.load(open(sys.argv[1]))['processes'][0]
ev = p['events']
assert p['complete'], p['damage']
assert ev['allocs'] + ev['frees'] == int(sys.argv[2]), (ev['allocs'], ev['frees'], sys.argv[2])
assert p['summary']['not-freed']['total']['blocks'] == 1000, p['summary']['not-freed']
PY
"${LIM[@]}" "$G" check --no-symbols --allow-no-scan --fail-on definite "$T/big.trace" >/dev/null 2>&1; rc=$?
[ $rc -eq 0 ] || fail "huge: check within 24 MiB: exit $rc"
echo "huge: $(($(stat -c %s "$T/big.trace") >> 20)) MiB, $events events analysed within 24 MiB of address space"
gs_done
