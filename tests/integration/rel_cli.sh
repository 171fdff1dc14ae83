#!/usr/bin/env bash
# The CLI's bounded answers (docs/reliability.md, "The CLI: bounded
# answers"): every input gets an answer, an exit status and at most one
# error line, within a bounded time and memory. Each case once hung, grew
# without bound or broke its output format:
#   time-top       a trace whose times come within a step of 2^64: report
#                  (text, JSON, HTML) answers, exit 0; check gives a
#                  verdict (0 or 1)
#   block-top      a valid block ending just below 2^64: the HTML report
#                  answers, exit 0
#   pycode-sparse  20,000 PYCODE records with ids spread up to 2^30 (an
#                  87 KB trace): report answers within 256 MiB of address
#                  space (it grew one array to 24 GB)
#   fifo           a FIFO as the trace, as a MODULE path the symbolizer
#                  opens, as a suppressions file and as report -o: each
#                  answers at once, the inputs with "not a regular file"
#   symlink        report -o and check --junit to a symbolic link: refused
#                  with one line, the link's target unchanged
#   junit          a trace whose argv holds an overlong form, a surrogate,
#                  U+FFFE, U+FFFF and a code point past U+10FFFF: the JUnit
#                  file is well-formed XML (Python's expat parses it), the
#                  JSON report valid JSON
#   c1             C1 controls (raw 0x80..0x9F and U+0080..U+009F) in trace
#                  strings never reach the terminal in the text report or
#                  check's verdict line; a bad suppressions line is echoed
#                  without control bytes
#   pool-2-63      a 2^63-byte tensor block in one caching-allocator
#                  snapshot, gone in the next: peak 2^63, nothing live at
#                  the end (its size, as an int64_t delta, was negative:
#                  the block counted as a free, and stayed live at the end)
#   ubsan          (when the libFuzzer targets are built: ASan+UBSan, every
#                  finding fatal) that trace, and a leak whose stack has no
#                  frame, symbolized: no UBSan report
# `timeout` turns a hang into a failure (exit 124), never a figure.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_cli
gs_need rel_clitraces rel_mktraces
T=$GS_T
G=$GS_CLI
mkfifo "$T/fifo" || { echo "mkfifo failed"; exit 2; }
"$GS_PROGS/rel_clitraces" "$T" "$T/fifo" || { echo "rel_clitraces failed"; exit 1; }

# one line of stderr at most, naming the problem
one_line() { [ "$(wc -l <"$1")" -le 1 ]; }

# ---- time-top, block-top: answers, exit 0, valid JSON ----
# 512 MiB of address space (the looping replay also grew without bound),
# except for an ASan build (make asan), whose shadow needs terabytes of it
LIM=(prlimit --as=$((512 << 20))) LIM256=(prlimit --as=$((256 << 20)))
ldd "$G" 2>/dev/null | grep -q libasan && LIM=() LIM256=()
for f in time-top block-top; do
  for fmt in text json html; do
    timeout 30 "${LIM[@]}" "$G" report --no-symbols --format $fmt -o "$T/$f.$fmt" "$T/$f.trace" 2>"$T/$f.$fmt.err"
    rc=$?
    [ $rc -eq 0 ] || fail "$f: report --format $fmt exit $rc (124: no answer in 30 s, within 512 MiB): $(head -1 "$T/$f.$fmt.err")"
  done
  timeout 30 "${LIM[@]}" "$G" check --no-symbols "$T/$f.trace" >"$T/$f.check" 2>&1
  rc=$?
  # a verdict, whatever it is (these traces have no leak scan, which the
  # gate may count against them): never an error or no answer
  [ $rc -le 1 ] || fail "$f: check exit $rc (124: no answer in 30 s)"
  gs_py -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$T/$f.json" ||
    fail "$f: JSON report not valid"
done

# ---- pycode-sparse: memory follows the records, not the largest id ----
timeout 120 "${LIM256[@]}" "$G" report --no-symbols -o /dev/null "$T/pycode-sparse.trace" 2>"$T/py.err"
rc=$?
[ $rc -eq 0 ] || fail "pycode-sparse: report exit $rc within 256 MiB: $(head -1 "$T/py.err")"
echo "figure: pycode-sparse: $(stat -c %s "$T/pycode-sparse.trace") bytes, 20000 PYCODE records"

# ---- fifo: as a trace, a MODULE, suppressions, an output ----
timeout 20 "$G" report --no-symbols "$T/fifo" >/dev/null 2>"$T/fifo.err"
rc=$?
{ [ $rc -eq 2 ] && one_line "$T/fifo.err" && grep -q "fifo: not a regular file" "$T/fifo.err"; } ||
  fail "FIFO as the trace: exit $rc, '$(head -1 "$T/fifo.err")'"
timeout 20 "$G" check "$T/fifo" >"$T/fifo.err" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "fifo: not a regular file" "$T/fifo.err" || fail "FIFO as check's trace: exit $rc"
# with symbols on: the MODULE record names the FIFO, a leak's stack is in it
for cmd in report check; do
  timeout 20 "$G" $cmd "$T/module-fifo.trace" >"$T/mf.out" 2>"$T/mf.err"
  rc=$?
  want=0; [ $cmd = check ] && want=1
  [ $rc -eq $want ] || fail "MODULE naming a FIFO: $cmd exit $rc, wanted $want (124: no answer in 20 s)"
done
timeout 20 "$G" report "$T/module-fifo.trace" 2>/dev/null | grep -q "fifo: not a regular file" ||
  fail "MODULE naming a FIFO: the report does not say 'not a regular file'"
timeout 20 "$G" check --suppressions "$T/fifo" "$T/block-top.trace" >/dev/null 2>"$T/fifo.err"
rc=$?
{ [ $rc -eq 2 ] && one_line "$T/fifo.err" && grep -q "not a regular file" "$T/fifo.err"; } ||
  fail "FIFO as suppressions: exit $rc, '$(head -1 "$T/fifo.err")'"
timeout 20 "$G" report --no-symbols -o "$T/fifo" "$T/block-top.trace" 2>"$T/fifo.err"
rc=$?
{ [ $rc -eq 2 ] && one_line "$T/fifo.err"; } || fail "report -o FIFO nobody reads: exit $rc"

# ---- symlink: never followed for an output ----
echo victim >"$T/victim"
ln -s "$T/victim" "$T/link"
timeout 20 "$G" report --no-symbols -o "$T/link" "$T/block-top.trace" 2>"$T/ln.err"
rc=$?
{ [ $rc -eq 2 ] && one_line "$T/ln.err" && grep -q "symbolic link" "$T/ln.err"; } ||
  fail "report -o LINK: exit $rc, '$(head -1 "$T/ln.err")'"
timeout 20 "$G" check --no-symbols --junit "$T/link" "$T/block-top.trace" >/dev/null 2>"$T/ln.err"
rc=$?
[ $rc -eq 2 ] && grep -q "symbolic link" "$T/ln.err" || fail "check --junit LINK: exit $rc"
[ "$(cat "$T/victim")" = victim ] || fail "the link's target was overwritten"
timeout 20 "$G" report --no-symbols -o /dev/null "$T/block-top.trace" || fail "report -o /dev/null refused"

# ---- junit: well-formed XML for any argv ----
timeout 20 "$G" check --no-symbols --junit "$T/u.xml" --json "$T/u.json" "$T/utf8-argv.trace" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "utf8-argv: check exit $rc, wanted 1 (its leak fails the gate)"
gs_py - "$T/u.xml" "$T/u.json" <<'PY' || fail "utf8-argv: JUnit or JSON not well-formed"
import json, sys, xml.dom.minidom
x = open(sys.argv[1], 'rb').read()
xml.dom.minidom.parseString(x)
if b'argv-ok' not in x:
    raise SystemExit('the well-formed part of argv is missing from the XML')
json.loads(open(sys.argv[2], 'rb').read().decode('utf-8'))
PY

# ---- c1: nothing a terminal obeys ----
timeout 20 "$G" report --no-symbols "$T/utf8-argv.trace" >"$T/c1.txt" 2>/dev/null
timeout 20 "$G" report --no-symbols "$T/c1.trace" >>"$T/c1.txt" 2>/dev/null
timeout 20 "$G" check --no-symbols "$T/c1.trace" >>"$T/c1.txt" 2>/dev/null   # the verdict line
gs_py - "$T/c1.txt" <<'PY' || fail "c1: the text report holds control bytes"
import sys
b = open(sys.argv[1], 'rb').read()
bad = [x for x in b if (x < 0x20 and x not in (9, 10)) or x == 0x7f]
s = b.decode('utf-8')               # not UTF-8: a raw 0x80..0x9F passed
c1 = [c for c in s if 0x80 <= ord(c) <= 0x9f]
if bad or c1:
    raise SystemExit('C0/DEL bytes %d, C1 characters %d' % (len(bad), len(c1)))
if 'c1-ok' not in s:
    raise SystemExit('the printable part of the command is missing')
PY
# the long host name (4-byte sequences) passes whole, wherever stdio's
# buffer cuts it: four trace names of lengths 1 apart move the cut through
# every byte of a sequence
for x in "" x xx xxx; do
  [ -z "$x" ] || cp "$T/c1.trace" "$T/c1$x.trace"
  timeout 20 "$G" report --no-symbols "$T/c1$x.trace" >"$T/c1$x.txt" 2>/dev/null
  gs_py - "$T/c1$x.txt" <<'PY' || fail "c1: the long host name did not pass the text filter whole (trace name c1$x)"
import sys
s = open(sys.argv[1], 'rb').read().decode('utf-8')
host = [l for l in s.split('\n') if ', host x' in l]
if not host or host[0].count('\U0001f600') != 7499 or '?' in host[0]:
    raise SystemExit(1)
PY
done
printf 'leak:fine\n\033]0;title\007\302\233\2332J bad\n' >"$T/bad.supp"
timeout 20 "$G" check --no-symbols --suppressions "$T/bad.supp" "$T/block-top.trace" >/dev/null 2>"$T/supp.err"
rc=$?
[ $rc -eq 2 ] && one_line "$T/supp.err" && grep -q "bad.supp:2: expected 'leak:PATTERN'" "$T/supp.err" ||
  fail "bad suppressions line: exit $rc, '$(head -1 "$T/supp.err")'"
gs_py - "$T/supp.err" <<'PY' || fail "bad suppressions line echoed with control bytes"
import sys
b = open(sys.argv[1], 'rb').read().rstrip(b'\n')
s = b.decode('utf-8')
if [c for c in s if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f]:
    raise SystemExit(1)
PY

# ---- pool-2-63: a 2^63-byte tensor block counts as one, then as gone ----
timeout 20 "$G" report --no-symbols --format json -o "$T/pool.json" "$T/pool-2-63.trace" 2>/dev/null
gs_py - "$T/pool.json" <<'PY' || fail "pool-2-63: the caching allocator's totals are wrong"
import json, sys
c = [p for p in json.load(open(sys.argv[1]))['processes']][0]['fragmentation']['caching_allocator']
got = (c['live_blocks'], c['live_bytes'], c['peak_bytes'])
if got != (0, 0, 1 << 63):
    raise SystemExit('live blocks, live bytes, peak: %r, wanted (0, 0, 2^63)' % (got,))
PY

# ---- ubsan: through the sanitized fuzz target, every finding fatal ----
F=$GS_ROOT/build/tests/fuzz/fuzz_analyze
if [ -x "$F" ]; then
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 timeout 120 "$F" -rss_limit_mb=2048 \
    "$T/pool-2-63.trace" "$T/empty-arrays.trace" "$T/block-top.trace" "$T/block-top.trace" \
    >"$T/ubsan.log" 2>&1 || fail "fuzz_analyze (UBSan): $(grep -aE -m2 'runtime error|ERROR' "$T/ubsan.log" | tr '\n' '|')"
else
  echo "fuzz_analyze not built (clang with libFuzzer missing): UBSan cases skipped"
fi
gs_done
