#!/usr/bin/env bash
# 10,000 malloc/free pairs over 4 threads (tests/programs/shim_pairs.c):
# exactly those 10,000 ALLOC and 10,000 FREE records, with the loop's sizes,
# from pair_worker's stack; a thread_start and a thread_exit for each worker
# (matched by the tids the program prints); the trace consistent.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_pairs
gs_need shim_pairs
P=$GS_PROGS/shim_pairs

gs_run pairs "$P"
[ "$GS_RC" -eq 0 ] || fail "exit status $GS_RC: $(head -3 "$GS_DIR/err")"
[ -s "$GS_DIR/err" ] && fail "stderr not empty with GCSPY_QUIET=1: $(head -3 "$GS_DIR/err")"
gs_one_trace && {
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$P" "$GS_DIR/out" <<'PY' || fail "pairs: see above"
import sys, collections
from gstrace import *
tr = Trace(sys.argv[1]); prog = sys.argv[2]
tids = {}
for line in open(sys.argv[3]):
    _, k, _, tid = line.split()
    tids[int(k)] = int(tid)
assert len(tids) == 4, tids
in_worker = in_function(tr, prog, 'pair_worker')
want = collections.Counter(20000 + i % 4096 for i in range(10000))
ours = [r for r in tr.of('alloc', 'alloc_ex') if 20000 <= r.size < 20000 + 4096]
got = collections.Counter(r.size for r in ours)
assert got == want, 'sizes differ: %d allocs, %d missing, %d extra' % (
    len(ours), sum((want - got).values()), sum((got - want).values()))
assert all(r.type == 'alloc' for r in ours), 'pairs recorded as alloc_ex'
bad = [r for r in ours if not any(map(in_worker, tr.frames(r.stack)))]
assert not bad, '%d allocations without pair_worker in their stack' % len(bad)
# Each allocation is freed: every FREE follows an ALLOC of its address.
addrs = collections.Counter(r.addr for r in ours)
live = set(); nfree = 0
for r in tr.recs:
    if r.type == 'alloc' and 20000 <= r.size < 24096:
        live.add(r.addr)
    elif r.type == 'free' and r.addr in live:
        live.discard(r.addr); nfree += 1
assert nfree == 10000 and not live, '%d frees of the pairs, %d left live' % (nfree, len(live))
# threads: the worker tids each start once and exit once; their allocations
# carry their index.
starts = {r.tid: r.index for r in tr.of('thread_start')}
exits = [r.index for r in tr.of('thread_exit')]
per = collections.Counter(r.thread for r in ours)
for k, tid in tids.items():
    assert tid in starts, 'no thread_start for worker %d (tid %d)' % (k, tid)
    idx = starts[tid]
    assert exits.count(idx) == 1, 'worker %d (index %d): %d exits' % (k, idx, exits.count(idx))
    assert per[idx] == 2500, 'worker %d made %d of the allocations' % (k, per[idx])
assert len(set(starts[t] for t in tids.values())) == 4
print('pairs ok: 10000 allocs, 10000 frees, 4 workers')
PY
}
gs_done
