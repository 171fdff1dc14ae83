#!/usr/bin/env bash
# C++ new/delete/new[]/delete[] (tests/programs/shim_cxx.cpp): exact counts
# of the program's sizes, every delete a FREE, 50 blocks live at exit, and
# each allocation's innermost frame in libstdc++ (operator new), since
# symbolization is offline and not checked here.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_cxx
gs_need shim_cxx

gs_run cxx "$GS_PROGS/shim_cxx"
[ "$GS_RC" -eq 0 ] || fail "exit status $GS_RC: $(head -3 "$GS_DIR/err")"
grep -qx 'vector capacity 131072' "$GS_DIR/out" || fail "output: $(cat "$GS_DIR/out")"
gs_one_trace && {
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" <<'PY' || fail "cxx: see above"
import sys, collections
from gstrace import *
tr = Trace(sys.argv[1])
errs, _, live = check(tr)
sizes = collections.Counter(r.size for r in tr.of('alloc', 'alloc_ex'))
for size, n in ((3000, 1000), (7001, 500), (7992, 200)):
    assert sizes[size] == n, 'size %d: %d allocations, expected %d' % (size, sizes[size], n)
vec = [4 << k for k in range(18)]
for v in vec:
    assert sizes[v] >= 1, 'vector buffer of %d bytes not seen' % v
assert not tr.of('alloc_ex'), 'operator new recorded as alloc_ex'
# Frees: replay per size class.
freed = collections.Counter()
size_of = {}
for r in tr.recs:
    if r.type == 'alloc':
        size_of[r.addr] = r.size
    elif r.type == 'free':
        freed[size_of.pop(r.addr)] += 1
for size, n in ((3000, 1000), (7001, 500), (7992, 150)):
    assert freed[size] == n, 'size %d: %d frees, expected %d' % (size, freed[size], n)
live_sizes = collections.Counter(live.values())
assert live_sizes[7992] == 50, '%d blocks of 7992 live at exit' % live_sizes[7992]
for v in vec:
    if v != 4096:
        assert live_sizes[v] == 0, 'vector buffer of %d bytes live at exit' % v
for r in tr.of('alloc'):
    if r.size in (3000, 7001, 7992):
        m = tr.module_of(tr.frames(r.stack)[0])
        assert m and 'libstdc++' in m.path, 'innermost frame of a new not in libstdc++: %s' % (
            m and m.path)
print('cxx ok')
PY
}
gs_done
