#!/usr/bin/env bash
# The program's descriptors and file limits are its own
# (tests/programs/rel_fds.c; issue 15, items 1, 2 and 11). Each run is in a
# directory of its own, where the program makes its files.
#   closerange  the program closes every descriptor from 3 up mid-run and
#               opens own.dat: own.dat holds exactly the program's 6 bytes
#               (gcspy used to write its chunks into it), and the trace is
#               complete with all 502 leaked blocks, definitely lost in the
#               exit scan (the trace used to lose everything, the report to
#               say no leak); valgrind, where installed, says the same 502.
#   dup2        the program dup2s own.dat onto the trace's own number (after
#               raising its descriptor limit): the same.
#   pyclose     python3 runs os.closerange(3, 65536) and writes own.dat:
#               the file holds its 6 bytes, the trace is complete and
#               consistent.
#   stdout      started with stdout closed, the program's write(1) fails
#               (status 3) as without gcspy (the trace took descriptor 1).
#   std         the program closes 0-2 and opens three data files: each
#               holds exactly its 5 bytes, with GCSPY_QUIET=0 (the exit
#               summary used to go into the third).
#   exec        a forked child closes 3 and up, opens child.out, execs: the
#               file holds its 6 bytes; the child's first trace has its 10
#               blocks and the exec record.
#   nofile      prlimit --nofile=4:64: the program's one open succeeds (the
#               trace took descriptor 3); the exit scan, which cannot open
#               /proc/self/maps, says so (it used to say "out of memory").
#               prlimit --nofile=4 (soft and hard): the open succeeds too;
#               gcspy holds its file only while writing, and says in one
#               line that the trace stops when the program holds every
#               descriptor. closerange under --nofile=5: the whole trace,
#               502 definite leaks, own.dat untouched.
#   fsize       ulimit -f 1 with the whole trace written at exit (flush
#               interval of an hour): status 0 (it used to be killed by
#               SIGXFSZ, 153) and one line "File too large"; the trace has
#               its header and no cut chunk. ulimit -f 64 with a trace of
#               200,000 allocations: status 0, one line, the trace within
#               the limit and made of whole chunks (a chunk that would pass
#               the limit is not written: no cut chunk).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_fds
gs_need rel_fds rel_tracecount
P=$GS_PROGS/rel_fds
COUNT=$GS_PROGS/rel_tracecount
kv() { sed -n "s/^$2=//p" "$1" | head -1; }

has() { [ "$(cat "$GS_DIR/$1" 2>/dev/null)" = "$2" ] && [ "$(wc -c <"$GS_DIR/$1")" = "$3" ]; }

for mode in closerange dup2; do
  GCSPY_QUIET=0 gs_run_here "$mode" "$P" "$mode"
  [ "$GS_RC" = 0 ] || fail "$mode: status $GS_RC"
  has own.dat OWNDAT 6 || fail "$mode: own.dat has $(wc -c <"$GS_DIR/own.dat") bytes: $(head -c 8 "$GS_DIR/own.dat" | od -c | head -1)"
  "$COUNT" --size 5000 5250 "$(gs_traces)" >"$GS_DIR/c" 2>&1 ||
    fail "$mode: trace check: $(grep -m4 -E '^error|complete' "$GS_DIR/c" | tr '\n' ';')"
  [ "$(kv "$GS_DIR/c" sel_allocs)" = 502 ] || fail "$mode: $(kv "$GS_DIR/c" sel_allocs) of the 502 allocations in the trace"
  [ "$(kv "$GS_DIR/c" last_scan_definite)" = 502 ] || fail "$mode: the exit scan finds $(kv "$GS_DIR/c" last_scan_definite) definite leaks, expected 502"
  grep -v '^gcspy: \(pid\|trace\)' "$GS_DIR/err" | grep -q . && fail "$mode: stderr: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
  echo "figure: $mode: own.dat $(wc -c <"$GS_DIR/own.dat") bytes, $(kv "$GS_DIR/c" sel_allocs) allocations, $(kv "$GS_DIR/c" last_scan_definite) definite"
done
if command -v valgrind >/dev/null; then
  (cd "$GS_DIR" && valgrind --leak-check=full "$P" closerange >/dev/null 2>vg)
  vg=$(sed -n 's/.*definitely lost: .* in \([0-9,]*\) blocks/\1/p' "$GS_DIR/vg")
  [ "$vg" = 502 ] || fail "valgrind says $vg definite blocks, gcspy 502"
  echo "figure: valgrind: $vg blocks definitely lost"
fi

# Python's os.closerange(3, 65536), then a file of its own
GS_DIR=$GS_T/pyclose; mkdir -p "$GS_DIR"
(cd "$GS_DIR" && timeout 60 env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$GS_DIR/%e-%p.trace" GCSPY_QUIET=1 \
  "$GS_PY" -c 'import os, time
x = [bytes(1000) for i in range(2000)]
time.sleep(0.3)
os.closerange(3, 65536)
with open("own.dat", "w") as f:
    f.write("OWNDAT")
y = [bytes(1000) for i in range(2000)]' 2>err) || fail "pyclose: status $?"
has own.dat OWNDAT 6 || fail "pyclose: own.dat has $(wc -c <"$GS_DIR/own.dat") bytes"
gs_one_trace && gs_check "$GS_DUMP"

GS_DIR=$GS_T/stdout; mkdir -p "$GS_DIR"
GS_RC=$(timeout 10 env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$GS_DIR/%e-%p.trace" "$P" stdout >&- 2>"$GS_DIR/err"; echo $?)
plain=$(timeout 10 "$P" stdout >&-; echo $?)
[ "$GS_RC" = 3 ] && [ "$plain" = 3 ] || fail "stdout closed: status $GS_RC under gcspy, $plain without (3: write(1) failed)"

GCSPY_QUIET=0 gs_run_here std "$P" std
[ "$GS_RC" = 0 ] || fail "std: status $GS_RC"
for f in d0 d1 d2; do
  has $f data 5 || fail "std: $f holds $(wc -c <"$GS_DIR/$f") bytes: $(tr '\n' '|' <"$GS_DIR/$f" | head -c 80)"
done

GCSPY_QUIET=0 gs_run_here exec "$P" exec
[ "$GS_RC" = 0 ] || fail "exec: status $GS_RC"
has child.out child 6 || fail "exec: child.out holds $(wc -c <"$GS_DIR/child.out") bytes"
first=$(grep -l . /dev/null $(gs_traces) | while read -r t; do "$GS_CLI" dump "$t" 2>/dev/null | grep -q '^exec ' && echo "$t"; done | head -1)
if [ -z "$first" ]; then
  fail "exec: no trace with the child's exec record"
else
  "$COUNT" --incomplete --size 5000 5009 "$first" >"$GS_DIR/c" 2>&1 || fail "exec: child trace check: $(grep -m3 '^error' "$GS_DIR/c" | tr '\n' ';')"
  [ "$(kv "$GS_DIR/c" sel_allocs)" = 10 ] || fail "exec: the child's trace has $(kv "$GS_DIR/c" sel_allocs) of its 10 blocks"
fi

GS_WRAP="prlimit --nofile=4:64" GCSPY_QUIET=0 gs_run_here nofile "$P" nofile
[ "$GS_RC" = 0 ] || fail "nofile: the program's open failed under --nofile=4:64 (status $GS_RC)"
grep -q 'out of memory' "$GS_DIR/err" && fail "nofile: $(grep 'out of memory' "$GS_DIR/err")"
grep -qx 'gcspy: scan skipped: /proc/self/maps cannot be read (Too many open files)' "$GS_DIR/err" ||
  fail "nofile: no line naming why the scan was skipped: $(head -2 "$GS_DIR/err" | tr '\n' '|')"

GS_WRAP="prlimit --nofile=4" GCSPY_QUIET=0 gs_run_here nofile4 "$P" nofile
[ "$GS_RC" = 0 ] || fail "nofile=4: the program's open failed (status $GS_RC)"
grep -q '^gcspy: writing trace .* failed: Too many open files; tracing stopped, the program runs on$' "$GS_DIR/err" ||
  fail "nofile=4: no line saying why the trace stops: $(head -2 "$GS_DIR/err" | tr '\n' '|')"
GS_WRAP="prlimit --nofile=5" gs_run_here closerange5 "$P" closerange
[ "$GS_RC" = 0 ] || fail "closerange, nofile=5: status $GS_RC"
has own.dat OWNDAT 6 || fail "closerange, nofile=5: own.dat has $(wc -c <"$GS_DIR/own.dat") bytes"
"$COUNT" --size 5000 5250 "$(gs_traces)" >"$GS_DIR/c" 2>&1 || fail "closerange, nofile=5: trace check: $(grep -m3 -E '^error|complete' "$GS_DIR/c" | tr '\n' ';')"
[ "$(kv "$GS_DIR/c" sel_allocs)/$(kv "$GS_DIR/c" last_scan_definite)" = 502/502 ] ||
  fail "closerange, nofile=5: $(kv "$GS_DIR/c" sel_allocs) allocations, $(kv "$GS_DIR/c" last_scan_definite) definite; expected 502, 502"

GS_WRAP="prlimit --fsize=1024" GCSPY_FLUSH_MS=3600000 GCSPY_QUIET=0 gs_run_here fsize1 "$P" big 2000
[ "$GS_RC" = 0 ] || fail "fsize 1 KiB: status $GS_RC (153: SIGXFSZ)"
n=$(grep -c '^gcspy: writing trace .* failed: File too large; tracing stopped, the program runs on$' "$GS_DIR/err")
[ "$n" = 1 ] || fail "fsize 1 KiB: $n 'File too large' lines: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
[ "$(wc -c <"$(gs_traces)")" = 32 ] || fail "fsize 1 KiB: the trace has $(wc -c <"$(gs_traces)") bytes, expected its 32-byte header alone"
GS_WRAP="prlimit --fsize=65536" GCSPY_QUIET=0 gs_run_here fsize64 "$P" big 200000
[ "$GS_RC" = 0 ] || fail "fsize 64 KiB: status $GS_RC (153: SIGXFSZ)"
[ "$(grep -c 'File too large' "$GS_DIR/err")" = 1 ] || fail "fsize 64 KiB: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
sz=$(wc -c <"$(gs_traces)")
[ "$sz" -le 65536 ] || fail "fsize 64 KiB: trace of $sz bytes"
"$GS_CLI" report --no-symbols -o /dev/null "$(gs_traces)" 2>"$GS_DIR/rep" ||
  fail "fsize 64 KiB: gcspy report: $(head -2 "$GS_DIR/rep" | tr '\n' '|')"
grep -q 'truncated chunk\|malformed' "$GS_DIR/rep" && fail "fsize 64 KiB: a cut chunk: $(head -1 "$GS_DIR/rep")"
echo "figure: fsize 64 KiB: trace of $sz bytes, whole chunks only"
gs_done
