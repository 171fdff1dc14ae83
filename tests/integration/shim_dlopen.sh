#!/usr/bin/env bash
# dlopen/dlclose (tests/programs/shim_dlopen.c, twice, of
# build/tests/programs/libshim_dlib.so): a module record per load, distinct
# ids, each with a module_unload after its dlclose; the library's
# allocations have their innermost frame in dlib_alloc, inside an
# executable segment of the library's module record, which precedes (file
# order) the allocation's stack node; in time, load <= allocation <= unload.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_dlopen
gs_need shim_dlopen libshim_dlib.so
LIB=$GS_PROGS/libshim_dlib.so

gs_run dlopen "$GS_PROGS/shim_dlopen" "$LIB"
[ "$GS_RC" -eq 0 ] || fail "exit status $GS_RC: $(head -3 "$GS_DIR/err")"
gs_one_trace && {
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$LIB" "$GS_DIR/out" <<'PY' || fail "dlopen: see above"
import sys
from gstrace import *
tr = Trace(sys.argv[1]); lib = sys.argv[2]
bases = [int(l.split()[3], 16) for l in open(sys.argv[3])]
assert len(bases) == 2, bases
mods = [r for r in tr.of('module') if r.path == lib]
assert len(mods) == 2, '%d module records for %s' % (len(mods), lib)
assert mods[0].id != mods[1].id, 'a reload reuses module id %d' % mods[0].id
unloads = {r.id: r for r in tr.of('module_unload')}
lo, hi = sym_range(lib, 'dlib_alloc')
for k, (m, size) in enumerate(zip(mods, (31313, 32323))):
    assert m.base == bases[k], 'load %d: module base 0x%x, dlinfo says 0x%x' % (k + 1, m.base, bases[k])
    assert m.id in unloads, 'no module_unload for load %d (id %d)' % (k + 1, m.id)
    rs = [r for r in tr.of('alloc') if r.size == size]
    assert len(rs) == 1, '%d allocations of %d bytes' % (len(rs), size)
    a = rs[0]
    ip = tr.frames(a.stack)[0]
    assert any(m.base + v <= ip < m.base + v + n and f.endswith('x') for v, n, f in m.segs), \
        'load %d: ip 0x%x outside the executable segments of %s' % (k + 1, ip, m.segs)
    assert m.base + lo <= ip < m.base + hi, 'load %d: ip 0x%x not in dlib_alloc' % (k + 1, ip)
    assert m.t <= a.t <= unloads[m.id].t, 'load %d: times module %d alloc %d unload %d' % (
        k + 1, m.t, a.t, unloads[m.id].t)
    # file order: the module record before the stack node naming that ip
    node = [i for i, r in enumerate(tr.recs) if r.type == 'stack' and r.id == a.stack][0]
    assert tr.recs.index(m) < node, 'load %d: stack node %d before the module record' % (k + 1, a.stack)
print('dlopen ok: module ids %d, %d' % (mods[0].id, mods[1].id))
PY
}
gs_done
