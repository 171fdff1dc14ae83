#!/usr/bin/env bash
# Every hooked malloc-family function (tests/programs/shim_families.c): the
# program prints the exact records each of its calls must produce; the trace
# must hold exactly those for each of its addresses, in order (the format
# orders the records of one address), nothing else from main's frames (the
# overflow and bad-alignment calls record nothing), and the blocks the
# program keeps must be the live set at exit.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_families
gs_need shim_families
P=$GS_PROGS/shim_families

gs_run families "$P"
[ "$GS_RC" -eq 0 ] || fail "exit status $GS_RC: $(head -3 "$GS_DIR/err")"
gs_one_trace && {
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$P" "$GS_DIR/out" <<'PY' || fail "families: see above"
import sys, collections
from gstrace import *
tr = Trace(sys.argv[1]); prog = sys.argv[2]
want = collections.defaultdict(list)
live_want = {}
ncalls = 0
for line in open(sys.argv[3]):
    f = line.split()
    addr = int(f[1], 16)
    if f[0] == 'live':
        live_want[addr] = int(f[2])
        continue
    rec = (f[0],) + tuple(f[2:3]) + tuple(f[3:4])
    want[addr].append(' '.join(rec))
    ncalls += 1
assert ncalls == 21 and len(live_want) == 6, 'program output: %d records, %d live' % (
    ncalls, len(live_want))
in_main = in_function(tr, prog, 'main')
got = collections.defaultdict(list)
for r in tr.recs:
    if r.type in ('alloc', 'alloc_ex', 'realloc'):
        if r.addr in want or in_main(tr.frames(r.stack)[0] if r.stack else 0):
            desc = [r.type, str(r.size)] + ([r.fn] if r.type == 'alloc_ex' else [])
            got[r.addr].append(' '.join(desc))
            fr = tr.frames(r.stack)
            assert fr and in_main(fr[0]), '%s at 0x%x: innermost frame not in main' % (r.type, r.addr)
    elif r.type == 'free' and r.addr in want:
        got[r.addr].append('free')
bad = 0
for addr in sorted(set(want) | set(got)):
    if want[addr] != got[addr]:
        print('0x%x: expected %s, trace has %s' % (addr, want[addr], got[addr]))
        bad += 1
assert not bad, '%d addresses differ' % bad
errs, _, live = check(tr)
ours = {a: s for a, s in live.items() if a in want}
assert ours == live_want, 'live at exit %s, expected %s' % (
    {hex(a): s for a, s in ours.items()}, {hex(a): s for a, s in live_want.items()})
print('families ok: %d addresses, %d live' % (len(want), len(ours)))
PY
}
gs_done
