#!/usr/bin/env bash
# Processes and threads made without fork()/pthread_create
# (tests/programs/rel_spawn.c; expected outcomes at its top):
#   vfork + exec, posix_spawn: a trace per process image, both complete and
#     consistent; the parent's with its own 11111-byte block only, the
#     child's (this program again, ppid = the parent) with its 22222-byte
#     blocks, 3 allocated and 2 freed;
#   clone(SIGCHLD): the parent's trace holds its own block and not the
#     child's; the child, which ran no atfork handler, leaves no trace;
#   a raw clone thread (no TLS of its own): scans every 100 ms stop it or
#     skip with a line, none calls the block held on its stack a definite
#     leak, nothing hangs, the trace is consistent.
# Exit statuses and output as without the shim.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_spawn
gs_need rel_spawn rel_tracecount
P=$GS_PROGS/rel_spawn
COUNT=$GS_PROGS/rel_tracecount
kv() { sed -n "s/^$2=//p" "$1" | head -1; }
# sel TRACE LO HI: "allocs frees" of blocks LO..HI bytes; fails on an inconsistent trace
sel() {
  "$COUNT" --size "$2" "$3" "$1" >"$1.count" 2>&1 ||
    fail "$(basename "$1"): trace check: $(grep -m3 -E '^error|rel_' "$1.count" | tr '\n' ';')"
  echo "$(kv "$1.count" sel_allocs) $(kv "$1.count" sel_frees)"
}

for mode in vfork spawn; do
  gs_plain "$mode-plain" "$P" "$mode"
  cp "$GS_DIR/out" "$GS_T/$mode.out"
  gs_run "$mode" "$P" "$mode"
  [ "$GS_RC" -eq 0 ] || fail "$mode: exit status $GS_RC"
  cmp -s <(sort "$GS_DIR/out") <(sort "$GS_T/$mode.out") || fail "$mode: output differs: $(cat "$GS_DIR/out" | tr '\n' '|')"
  n=$(gs_traces | wc -l)
  [ "$n" -eq 2 ] || { fail "$mode: $n traces, expected 2 (parent and exec'd child)"; continue; }
  parent= child=
  for t in $(gs_traces); do
    gs_dump "$t"
    if grep -q 'argv=".* child ' "$t.txt"; then child=$t; else parent=$t; fi
  done
  [ -n "$parent" ] && [ -n "$child" ] || { fail "$mode: cannot tell parent and child traces apart"; continue; }
  [ "$(sel "$parent" 11111 11111)" = "1 1" ] || fail "$mode: parent's 11111-byte block: $(sel "$parent" 11111 11111)"
  [ "$(sel "$parent" 22222 22222)" = "0 0" ] || fail "$mode: the child's blocks are in the parent's trace"
  [ "$(sel "$child" 22222 22222)" = "3 2" ] || fail "$mode: child's 22222-byte blocks: $(sel "$child" 22222 22222), expected 3 allocated, 2 freed"
  [ "$(sel "$child" 11111 11111)" = "0 0" ] || fail "$mode: the parent's block is in the child's trace"
  ppid=$(grep -m1 '^process ' "$child.txt" | sed -n 's/.* ppid=\([0-9]*\).*/\1/p')
  ppid_want=$(grep -m1 '^process ' "$parent.txt" | sed -n 's/.* pid=\([0-9]*\).*/\1/p')
  [ "$ppid" = "$ppid_want" ] || fail "$mode: child's ppid $ppid, parent's pid $ppid_want"
done

gs_plain clone-proc-plain "$P" clone-proc
cp "$GS_DIR/out" "$GS_T/cp.out"
gs_run clone-proc "$P" clone-proc
[ "$GS_RC" -eq 0 ] || fail "clone-proc: exit status $GS_RC"
cmp -s "$GS_DIR/out" "$GS_T/cp.out" || fail "clone-proc: output differs: $(cat "$GS_DIR/out")"
n=$(gs_traces | wc -l)
if [ "$n" -ne 1 ]; then
  fail "clone-proc: $n traces, expected the parent's only"
else
  t=$(gs_traces)
  [ "$(sel "$t" 33334 33334)" = "1 1" ] || fail "clone-proc: parent's 33334-byte block: $(sel "$t" 33334 33334)"
  [ "$(sel "$t" 33333 33333)" = "0 0" ] || fail "clone-proc: the child's block is in the parent's trace"
fi

GS_TIMEOUT=30 GCSPY_QUIET=0 GCSPY_SCAN_INTERVAL_MS=100 gs_run clone-thread "$P" clone-thread
[ "$GS_RC" -eq 0 ] || fail "clone-thread: exit status $GS_RC: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
grep -q '^clone-thread done' "$GS_DIR/out" || fail "clone-thread: output: $(cat "$GS_DIR/out")"
grep -v '^gcspy: ' "$GS_DIR/err" | grep -q . && fail "clone-thread: stderr: $(grep -v '^gcspy: ' "$GS_DIR/err" | head -2)"
t=$(gs_traces)
[ "$(sel "$t" 55555 55555)" = "1000 1000" ] || fail "clone-thread: 55555-byte blocks: $(sel "$t" 55555 55555)"
gs_dump "$t"
gs_py - "$t.txt" <<'PY' || fail "clone-thread: see above"
import sys
from gstrace import *
tr = Trace(sys.argv[1])
block = [r.addr for r in tr.of('alloc') if r.size == 44444]
assert len(block) == 1, block
trig = {r.id: r.trigger for r in tr.of('scan_begin')}
bad = [r for r in tr.of('scan_block') if r.addr == block[0] and trig[r.id] != 'exit' and r['class'] == 'definite']
assert not bad, 'a scan while the raw thread held the block called it a definite leak: %s' % bad
print('clone-thread: %d scans (%s)' % (len(trig), ' '.join(sorted(set(trig.values())))))
PY
echo "clone-thread: $(grep -c 'scan skipped' "$GS_DIR/err") scans skipped"
gs_done
