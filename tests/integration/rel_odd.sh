#!/usr/bin/env bash
# Odd programs (expected outcomes at the top of each program):
#   tiny stacks  tests/programs/rel_tinystack.c: 16 threads on 16 KiB stacks
#                allocating in a recursion, with the fp and the libunwind
#                unwinder, scans every 50 ms (the stop handler runs on those
#                stacks too): exit 0, exact counts, every block's stack
#                names tiny_recurse, the trace consistent.
#   longjmp      tests/programs/rel_longjmp.c: longjmp and siglongjmp out of
#                frames that allocated, from a signal handler that allocates
#                too: exact counts, tracing still on after 300 jumps.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_odd
gs_need rel_tinystack rel_longjmp rel_tracecount
COUNT=$GS_PROGS/rel_tracecount
kv() { sed -n "s/^$2=//p" "$1" | head -1; }
word() { grep -m1 "^$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p"; }

for unw in fp libunwind; do
  P=$GS_PROGS/rel_tinystack
  GS_TIMEOUT=60 GCSPY_UNWIND=$unw GCSPY_SCAN_INTERVAL_MS=50 gs_run "tiny-$unw" "$P"
  [ "$GS_RC" -eq 0 ] || { fail "tiny-$unw: exit status $GS_RC: $(head -3 "$GS_DIR/err" | tr '\n' '|')"; continue; }
  A=$(word "$GS_DIR/out" tiny allocs) F=$(word "$GS_DIR/out" tiny frees)
  [ "$A" = 38400 ] && [ "$F" = 38400 ] || fail "tiny-$unw: program output: $(cat "$GS_DIR/out")"
  t=$(gs_traces)
  "$COUNT" --size 7777 7777 "$t" >"$GS_DIR/c" 2>&1 || fail "tiny-$unw: trace check: $(grep -m3 -E '^error|rel_' "$GS_DIR/c" | tr '\n' ';')"
  [ "$(kv "$GS_DIR/c" sel_allocs)" = "$A" ] || fail "tiny-$unw: $(kv "$GS_DIR/c" sel_allocs) allocations in the trace, the program made $A"
  [ "$(kv "$GS_DIR/c" sel_frees)" = "$F" ] || fail "tiny-$unw: $(kv "$GS_DIR/c" sel_frees) frees in the trace, the program made $F"
  [ "$(kv "$GS_DIR/c" threads_exited)" -ge 16 ] || fail "tiny-$unw: $(kv "$GS_DIR/c" threads_exited) thread exits"
  gs_dump "$t"
  gs_py - "$t.txt" "$P" <<'PY' || fail "tiny-$unw: stacks"
import sys
from gstrace import *
tr = Trace(sys.argv[1])
inside = in_function(tr, sys.argv[2], 'tiny_recurse')
blocks = [r for r in tr.of('alloc') if r.size == 7777]
bad = [r for r in blocks if not any(inside(ip) for ip in tr.frames(r.stack))]
assert not bad, '%d of %d blocks without tiny_recurse in their stack' % (len(bad), len(blocks))
PY
  echo "tiny-$unw: $(kv "$GS_DIR/c" scans) scans, $((A + F)) events checked"
done

P=$GS_PROGS/rel_longjmp
gs_plain longjmp-plain "$P"
cp "$GS_DIR/out" "$GS_T/lj.out"
gs_run longjmp "$P"
[ "$GS_RC" -eq 0 ] || fail "longjmp: exit status $GS_RC"
cmp -s "$GS_DIR/out" "$GS_T/lj.out" || fail "longjmp: output differs: $(cat "$GS_DIR/out")"
A=$(word "$GS_DIR/out" longjmp allocs) F=$(word "$GS_DIR/out" longjmp frees) H=$(word "$GS_DIR/out" longjmp handler)
[ "$A" = 12000 ] && [ "$H" = 100 ] || fail "longjmp: program output: $(cat "$GS_DIR/out")"
t=$(gs_traces)
"$COUNT" --size 8888 8888 "$t" >"$GS_DIR/c" 2>&1 || fail "longjmp: trace check: $(grep -m3 -E '^error|rel_' "$GS_DIR/c" | tr '\n' ';')"
[ "$(kv "$GS_DIR/c" sel_allocs)" = "$A" ] && [ "$(kv "$GS_DIR/c" sel_frees)" = "$F" ] ||
  fail "longjmp: 8888-byte blocks in the trace: $(kv "$GS_DIR/c" sel_allocs) allocated, $(kv "$GS_DIR/c" sel_frees) freed; the program: $A, $F"
"$COUNT" --size 9999 9999 "$t" >"$GS_DIR/c2" 2>&1
[ "$(kv "$GS_DIR/c2" sel_allocs)" = "$H" ] && [ "$(kv "$GS_DIR/c2" sel_frees)" = "$H" ] ||
  fail "longjmp: handler blocks in the trace: $(kv "$GS_DIR/c2" sel_allocs) allocated, $(kv "$GS_DIR/c2" sel_frees) freed; expected $H"
gs_done
