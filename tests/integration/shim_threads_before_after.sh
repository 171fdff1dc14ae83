#!/usr/bin/env bash
# Threads created before and after the first allocation, exiting threads,
# struct reuse and a thread alive at exit (tests/programs/shim_threads.c):
# thread_start/thread_exit records match the threads that allocated or
# freed (none for the idle one; no exit for the one still running), indices
# are distinct, each allocation carries its thread's index, and the trace is
# consistent, TRACE_END counting the events of a pthread-key destructor that
# runs after the shim's own.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_threads_before_after
gs_need shim_threads

gs_run threads "$GS_PROGS/shim_threads"
[ "$GS_RC" -eq 0 ] || fail "exit status $GS_RC: $(head -3 "$GS_DIR/err")"
gs_one_trace && {
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$GS_DIR/out" <<'PY' || fail "threads: see above"
import sys, collections
from gstrace import *
tr = Trace(sys.argv[1])
tid = {}
for line in open(sys.argv[2]):
    name, _, t = line.split()
    tid[name] = int(t)
assert len(tid) == 26, 'program printed %d threads' % len(tid)
starts = collections.defaultdict(list)
for r in tr.of('thread_start'):
    starts[r.tid].append(r.index)
exits = collections.Counter(r.index for r in tr.of('thread_exit'))
idx = [r.index for r in tr.of('thread_start')]
assert len(idx) == len(set(idx)), 'thread indices reused: %s' % idx
assert tid['idle'] not in starts, 'thread_start for a thread that never allocated'
index = {}
for name, t in tid.items():
    if name == 'idle':
        continue
    assert len(starts[t]) == 1, '%s (tid %d): %d thread_start records' % (name, t, len(starts[t]))
    index[name] = starts[t][0]
    want = 0 if name == 'stayer' else 1
    assert exits[index[name]] == want, '%s: %d thread_exit records, expected %d' % (
        name, exits[index[name]], want)
by_size = collections.defaultdict(list)
for r in tr.of('alloc'):
    by_size[r.size].append(r.thread)
def only(size, who, n):
    assert by_size[size] == [who] * n, 'size %d: threads %s, expected %d x %s' % (
        size, by_size[size], n, who)
only(1001, index['early'], 5)
only(1003, index['late'], 5)
only(1005, index['keyed'], 1)
only(1006, 0, 1)
only(1020, index['stayer'], 1)
assert sorted(by_size[1010]) == sorted(index['short%d' % i] for i in range(20)), by_size[1010]
main = tr.of('thread_start')[0]
assert main.tid == tr.one('process').pid, 'first thread_start is not the main thread'
only(1004, main.index, 5)
# the freer's frees are its own: main's five 1004-byte blocks
a1004 = {r.addr for r in tr.of('alloc') if r.size == 1004}
assert len([r for r in tr.of('free') if r.addr in a1004]) == 5
print('threads ok: %d started, %d exited' % (len(idx), sum(exits.values())))
PY
}
gs_done
