#!/usr/bin/env bash
# The gcspy CLI frame, `gcspy dump` and `gcspy run`:
#   - --help / --version / unknown command or option (exit 2, one line);
#   - dump of a builder-made trace (build/tests/mktrace) prints exactly the
#     expected lines; a truncated copy prints the readable part, then one
#     stderr line with the damage offset, exit 2; other bad input likewise;
#   - run: LD_PRELOAD, GCSPY_OUTPUT and GCSPY_QUIET reach the command, exit
#     statuses pass through, a missing command is 127 (checked with a stand-in
#     library in a temporary install tree, so it runs without the shim), and
#     with the real build/libgcspy.so when it exists.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=$PWD/build/gcspy
MK=$PWD/build/tests/mktrace
for f in "$G" "$MK"; do
  [ -x "$f" ] || { echo "$f not built (make build/gcspy build/tests/mktrace)"; exit 1; }
done
T=$(mktemp -d /tmp/gcspy-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS NAME CMD... : runs CMD, output in $T/out and $T/err.
expect() {
  local want=$1 name=$2; shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "$name: exit $rc, expected $want (stderr: $(head -3 "$T/err"))"
}
# one_line NAME REGEX: stderr is exactly one line matching REGEX.
one_line() {
  local n; n=$(wc -l <"$T/err")
  [ "$n" -eq 1 ] || fail "$1: $n lines on stderr, expected 1: $(cat "$T/err")"
  grep -Eq "$2" "$T/err" || fail "$1: stderr '$(cat "$T/err")' does not match /$2/"
}

# ---- CLI frame --------------------------------------------------------------
expect 0 "--help" "$G" --help
grep -q '^usage: gcspy COMMAND' "$T/out" || fail "--help: no usage line"
for c in run dump options; do
  grep -Eq "^  $c " "$T/out" || fail "--help does not list '$c'"
done
expect 0 "--version" "$G" --version
grep -Eq '^gcspy [0-9]+\.[0-9]+\.[0-9]+ \(trace format 2\.1\)$' "$T/out" || fail "--version: $(cat "$T/out")"
expect 2 "no command" "$G";                   one_line "no command" '^gcspy: missing command'
expect 2 "unknown command" "$G" frobnicate;   one_line "unknown command" "^gcspy: unknown command 'frobnicate'"
expect 2 "unknown option" "$G" --frobnicate;  one_line "unknown option" "^gcspy: unknown option '--frobnicate'"
expect 2 "dump unknown option" "$G" dump --x t; one_line "dump unknown option" "^gcspy dump: unknown option '--x'"
expect 2 "run unknown option" "$G" run --x -- true; one_line "run unknown option" "^gcspy run: unknown option '--x'"
for c in run dump options; do
  expect 0 "$c --help" "$G" "$c" --help
  grep -q "^usage: gcspy $c" "$T/out" || fail "$c --help: no usage line"
done

# run --help and options list every option of include/gcspy/options.def.
envs=$(sed -n 's/^GS_OPT([a-z_]*, *"\(GCSPY_[A-Z_]*\)".*/\1/p' include/gcspy/options.def)
nopts=$(wc -w <<<"$envs")
[ "$nopts" -ge 10 ] || fail "only $nopts options parsed from options.def"
"$G" run --help >"$T/runhelp"
"$G" options --markdown >"$T/md"
for e in $envs; do
  grep -q "^  $e (" "$T/runhelp" || fail "run --help lacks $e"
  grep -q "^| \`$e\` |" "$T/md" || fail "options --markdown lacks $e"
done
rows=$(grep -c '^| `GCSPY_' "$T/md")
[ "$rows" -eq "$nopts" ] || fail "options --markdown has $rows rows, options.def $nopts"
head -2 "$T/md" | tr -d '\n' | grep -q '^| Variable | Type | Default | Description ||---|---|---|---|$' \
  || fail "options --markdown header: $(head -2 "$T/md")"
grep -q '^| `GCSPY_FLUSH_MS` | integer | `100` | How often buffered events' "$T/md" \
  || fail "options --markdown GCSPY_FLUSH_MS row"

# ---- dump -------------------------------------------------------------------
"$MK" full "$T/full.trace" || fail "mktrace full"
cat >"$T/want" <<EOF
trace version=2.1 file="$T/full.trace"
timebase t=0
process pid=4242 ppid=1 wall_ns=1700000000000000000 exe="/usr/bin/python3" argv="python3 train.py --name=a\x20b" host="node7" rank=0 local_rank=- world_size=1 flags=0x0 version="0.1.0" unwinder=fp depth=64 page_size=4096
module t=5 id=1 base=0x7f0000000000 path="/usr/lib/libc.so.6" build_id=abcd01 segs=0x0+0x2000:r-x,0x3000+0x1000:rw-
thread_start t=6 index=1 tid=4243
stack id=1 parent=0 ip=0x7f0000001234
stack id=2 parent=1 ip=0x800000030000002a pycode=3 line=42
pycode id=3 file="train.py" function="step\t\"q\"" firstline=40
alloc t=100 thread=1 addr=0x555555550000 size=64 stack=2
realloc t=110 thread=1 addr=0x555555550000 size=128 stack=2
alloc_ex t=120 thread=1 addr=0x7f1000000000 size=1048576 stack=1 kind=device fn=cuda_runtime device=0 stream=0x10 dur_ns=500
timebase t=120
free t=200 addr=0x555555550000
free_ex t=210 thread=1 addr=0x7f1000000000 kind=device fn=cuda_runtime dur_ns=40
sample t=220 rss=1000000 arena=200000 ordblks=3 hblks=1 hblkhd=65536 uordblks=1000 fordblks=2000 keepcost=100
marker t=230 thread=1 kind=step label="epoch 1\n"
pause t=240 t_end=250 kind=python_gc thread=1 a=2 b=17
scan_begin t=260 id=1 trigger=exit mode=0
scan_block id=1 addr=0x555555560000 size=32 stack=1 kind=host class=definite
scan_end id=1 t_start=260 t_stopped=261 t_marked=270 t_end=280 threads=1 bytes_scanned=4096 blocks_visited=2 live_blocks=1 live_bytes=32 definite_blocks=1 definite_bytes=32 indirect_blocks=0 indirect_bytes=0 possible_blocks=0 possible_bytes=0 reachable_blocks=0 reachable_bytes=0
device_sample t=290 device=0 kind=device reserved=2097152 in_use=0 segments=1 largest_free=2097152
module_unload t=295 id=1
thread_exit t=296 index=1
stopped t=297 dropped=0 reason="disabled"
exec t=298 path="/bin/true"
exit t=299 status=0 how=normal
trace_end t=300 allocs=2 frees=2 bytes_allocated=1048704 live_blocks=0 live_bytes=0
end chunks=2 records=26 complete=yes
EOF
expect 0 "dump full" "$G" dump "$T/full.trace"
diff -u "$T/want" "$T/out" >"$T/diff" || { fail "dump full differs:"; cat "$T/diff"; }
[ -s "$T/err" ] && fail "dump full wrote to stderr: $(cat "$T/err")"

# The worked example in docs/trace-format.md shows what dump prints.
"$MK" small "$T/small.trace" || fail "mktrace small"
(cd "$T" && "$G" dump small.trace) >"$T/small.out" || fail "dump small: exit $?"
awk '/^`gcspy dump small.trace` prints:$/ { m = 1; next }
     m == 1 && /^```$/ { m = 2; next }
     m == 2 && /^```$/ { exit }
     m == 2 { print }' docs/trace-format.md >"$T/small.doc"
[ -s "$T/small.doc" ] || fail "docs/trace-format.md: no dump example found"
diff -u "$T/small.doc" "$T/small.out" >"$T/diff" || { fail "docs/trace-format.md dump example is out of date:"; cat "$T/diff"; }
# ... byte for byte as its hex listing shows, and a valid trace
/usr/bin/python3 - "$T/small.trace" docs/trace-format.md <<'PY' || fail "docs/trace-format.md: the worked example's bytes are out of date"
import re, sys
d = open(sys.argv[1], 'rb').read()
doc = open(sys.argv[2]).read()
rows = re.findall(r'^([0-9a-f]{8}): ((?:[0-9a-f]{2} ){1,15}[0-9a-f]{2})  ', doc, re.M)
got = bytes(int(x, 16) for _, r in rows for x in r.split())
if got != d:
    sys.exit('listing %d bytes, file %d bytes; first difference at %d' % (len(got), len(d),
             next((i for i in range(min(len(got), len(d))) if got[i] != d[i]), min(len(got), len(d)))))
PY
"$G" report --no-symbols -o /dev/null "$T/small.trace" || fail "the worked example is not a valid trace (report exit $?)"

# The same from standard input.
expect 0 "dump stdin" "$G" dump - <"$T/full.trace"
sed '1s|file=".*"|file="<stdin>"|' "$T/want" | diff -q - "$T/out" >/dev/null || fail "dump - differs"

# Truncated inside chunk 1: chunk 0 printed, end line says incomplete, one
# stderr line with chunk 1's offset and the byte counts.
c1=$(LC_ALL=C grep -obUa GSCK "$T/full.trace" | sed -n 2p | cut -d: -f1)
size=$(stat -c %s "$T/full.trace")
comp=$(od -An -tu4 -j $((c1 + 8)) -N4 "$T/full.trace" | tr -d ' ')
head -c $((size - 5)) "$T/full.trace" >"$T/cut.trace"
expect 2 "dump truncated" "$G" dump "$T/cut.trace"
one_line "dump truncated" "^gcspy dump: $T/cut.trace: offset $c1: chunk 1: truncated chunk \(payload has $((comp - 5)) of $comp bytes\)$"
head -11 "$T/want" | sed "1s|full.trace|cut.trace|" >"$T/want_cut"
echo "end chunks=1 records=10 complete=no" >>"$T/want_cut"
diff -u "$T/want_cut" "$T/out" >"$T/diff" || { fail "dump truncated stdout differs:"; cat "$T/diff"; }

# Cut at the chunk boundary: a clean but incomplete trace (exit 0).
head -c "$c1" "$T/full.trace" >"$T/cut0.trace"
expect 0 "dump cut at chunk boundary" "$G" dump "$T/cut0.trace"
tail -1 "$T/out" | grep -qx 'end chunks=1 records=10 complete=no' || fail "cut0 end line: $(tail -1 "$T/out")"

# A flipped payload byte: CRC mismatch at chunk 1.
cp "$T/full.trace" "$T/crc.trace"
printf '\x00' | dd of="$T/crc.trace" bs=1 seek=$((size - 1)) conv=notrunc status=none
expect 2 "dump crc" "$G" dump "$T/crc.trace"
one_line "dump crc" "^gcspy dump: $T/crc.trace: offset $c1: chunk 1: payload CRC mismatch$"

# A newer major version is refused up front.
cp "$T/full.trace" "$T/v3.trace"
printf '\x03' | dd of="$T/v3.trace" bs=1 seek=8 conv=notrunc status=none
expect 2 "dump v3" "$G" dump "$T/v3.trace"
one_line "dump v3" "^gcspy dump: $T/v3.trace: offset 8: trace format version 3\.[0-9]+ is newer than this gcspy reads \(1\.x to 2\.x\); upgrade gcspy$"
[ -s "$T/out" ] && fail "dump v3 printed records"

# Not a trace; no such file; no argument.
echo "hello world, this is not a trace at all" >"$T/text"
expect 2 "dump text" "$G" dump "$T/text"
one_line "dump text" "^gcspy dump: $T/text: offset 0: not a gcspy trace \(bad magic\)$"
expect 2 "dump missing" "$G" dump "$T/nope.trace"
one_line "dump missing" "^gcspy dump: $T/nope.trace: No such file or directory$"
expect 2 "dump no file" "$G" dump
one_line "dump no file" '^gcspy dump: missing trace file'

# ---- run, with a stand-in library ---------------------------------------------
# An installed layout (bin/gcspy, lib/gcspy/libgcspy.so) whose library is an
# empty shared object: run's own work (finding it, LD_PRELOAD, variables,
# exec, statuses) is checked without depending on the shim.
mkdir -p "$T/inst/bin" "$T/inst/lib/gcspy"
cp "$G" "$T/inst/bin/gcspy"
echo 'int gcspy_stand_in;' >"$T/stub.c"
if cc -shared -fPIC -o "$T/inst/lib/gcspy/libgcspy.so" "$T/stub.c"; then
  GI=$T/inst/bin/gcspy
  LIB=$T/inst/lib/gcspy/libgcspy.so
  expect 0 "run env" env -u LD_PRELOAD -u GCSPY_OUTPUT -u GCSPY_QUIET \
    "$GI" run -o "$T/x-%p.trace" --quiet -- sh -c 'printf "%s|%s|%s\n" "$LD_PRELOAD" "$GCSPY_OUTPUT" "$GCSPY_QUIET"'
  [ "$(cat "$T/out")" = "$LIB|$T/x-%p.trace|1" ] || fail "run env: '$(cat "$T/out")'"
  # An existing LD_PRELOAD is kept after ours; without -o/--quiet nothing is set.
  expect 0 "run env keep" env -u GCSPY_OUTPUT -u GCSPY_QUIET LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 \
    "$GI" run sh -c 'printf "%s|%s|%s\n" "$LD_PRELOAD" "${GCSPY_OUTPUT-unset}" "${GCSPY_QUIET-unset}"'
  [ "$(cat "$T/out")" = "$LIB:/lib/x86_64-linux-gnu/libm.so.6|unset|unset" ] || fail "run env keep: '$(cat "$T/out")'"
  expect 7 "run exit 7 (stand-in)" "$GI" run -- sh -c 'exit 7'
  expect 0 "run args pass through" "$GI" run -- printf '%s,' a 'b c' -- --help
  [ "$(cat "$T/out")" = "a,b c,--,--help," ] || fail "run args: '$(cat "$T/out")'"
  expect 127 "run missing command (stand-in)" "$GI" run -- /nonexistent/cmd
  one_line "run missing command" '^gcspy run: /nonexistent/cmd: command not found$'
  expect 2 "run no command" "$GI" run --quiet
  one_line "run no command" '^gcspy run: missing command'
  # Killed by a signal: the shell sees the signal status, not a gcspy one.
  { "$GI" run -- sh -c 'kill -TERM $$'; rc=$?; } 2>/dev/null
  [ "$rc" -eq 143 ] || fail "run killed by SIGTERM: exit $rc, expected 143"
  # No library anywhere near the binary: one line, exit 2.
  mkdir -p "$T/bare"; cp "$G" "$T/bare/gcspy"
  expect 2 "run without library" "$T/bare/gcspy" run -- true
  one_line "run without library" '^gcspy run: libgcspy\.so not found'
else
  fail "cannot build the stand-in library with cc"
fi

# ---- run, with the real shim ---------------------------------------------------
if [ -f build/libgcspy.so ]; then
  expect 7 "run exit 7" "$G" run --quiet -- sh -c 'exit 7'
  expect 127 "run /nonexistent" "$G" run -- /nonexistent
  one_line "run /nonexistent" '^gcspy run: /nonexistent: command not found$'
  (cd "$T" && "$G" run -o "$T/real.trace" --quiet -- true) || fail "run true under the shim"
  if [ -f "$T/real.trace" ]; then
    expect 0 "dump of a shim trace" "$G" dump "$T/real.trace"
    head -1 "$T/out" | grep -q '^trace version=2\.' || fail "shim trace: $(head -1 "$T/out")"
  else
    fail "run -o $T/real.trace wrote no trace: $(ls "$T")"
  fi
else
  echo "note: build/libgcspy.so not built; run checked with the stand-in library only"
fi

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "cli_basics: all checks passed"
