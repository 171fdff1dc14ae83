#!/usr/bin/env bash
# fork (tests/programs/shim_fork.c): each process writes its own complete
# trace (pattern %p). What a forked child's trace contains (see the program's
# header): process flags=0x1 and ppid = the parent; the parent's module map
# and stack tree again; a thread_start for the forking thread; an alloc_ex
# fn=inherited for each block live in the parent at the fork; then only the
# child's own events; trace_end counting only the child's own allocations.
# The parent's trace has none of the child's events. Then the same with a
# grandchild forked from the child ("nested").
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_fork
gs_need shim_fork
P=$GS_PROGS/shim_fork

for mode in plain nested; do
  GS_TIMEOUT=30 gs_run "$mode" "$P" $([ $mode = nested ] && echo nested)
  [ "$GS_RC" -eq 0 ] || { fail "$mode: exit status $GS_RC: $(head -3 "$GS_DIR/err")"; continue; }
  for f in $(gs_traces); do gs_dump "$f"; done
  gs_py - "$GS_DIR" "$mode" <<'PY' || fail "$mode: see above"
import sys, os, glob
from gstrace import *
d, mode = sys.argv[1], sys.argv[2]
pids = dict(l.split(' pid=') for l in open(os.path.join(d, 'out')).read().split('\n') if l)
pids = {k: int(v) for k, v in pids.items()}
roles = ['parent', 'child'] + (['grandchild'] if mode == 'nested' else [])
assert sorted(pids) == sorted(roles), pids
files = sorted(glob.glob(os.path.join(d, '*.trace')))
assert len(files) == len(roles), 'trace files: %s' % files
tr = {}
for role in roles:
    path = os.path.join(d, 'shim_fork-%d.trace.txt' % pids[role])
    assert os.path.exists(path), 'no trace for the %s (pid %d)' % (role, pids[role])
    tr[role] = Trace(path)
    errs, summary, _ = check(tr[role])
    assert not errs, '%s: %s' % (role, '; '.join(errs))
    print(role, summary)
par = tr['parent']
addr = {}
for letter, size in zip('ABCDEF', (11111, 22222, 33333, 44444, 55555, 66666)):
    for role in roles:
        rs = [r for r in tr[role].of('alloc') if r.size == size]
        if rs:
            assert len(rs) == 1 and letter not in addr, (letter, role)
            addr[letter] = (rs[0].addr, role)
want_owner = dict(A='parent', B='parent', C='parent', D='child', F='parent', E='grandchild')
for l, (_, role) in addr.items():
    assert want_owner[l] == role, '%s allocated in the %s trace, expected %s' % (l, role, want_owner[l])
assert len(addr) == (6 if mode == 'nested' else 5), addr
A, B, C, D = (addr[l][0] for l in 'ABCD')

def frees(t):
    return [r.addr for r in t.of('free')]

# The parent: its own events only.
assert C in frees(par) and B not in frees(par), 'parent frees: %s' % frees(par)
assert par.one('process').flags == 0
assert not par.of('alloc_ex'), 'inherited records in the parent trace'

def forked(t, parent_tr, parent_pid, inherited, own_allocs, own_frees):
    p = t.one('process')
    assert p.flags == 1 and p.ppid == parent_pid, 'process record: flags=%s ppid=%s' % (p.flags, p.ppid)
    assert t.recs[1] is p or t.recs[0] is p, 'process record is not first'
    # module map and stack tree again: every node of the parent up to the
    # fork is defined in the child, with the same parent and ip
    assert len(t.modules) >= len(parent_tr.modules) - 1 and t.modules, 'no module map'
    # the stacks of inherited blocks are the parent's nodes, defined again
    inh_stacks = {r.stack for r in t.of('alloc_ex') if r.fn == 'inherited'}
    assert inh_stacks - {0}, 'inherited blocks without stacks'
    for sid in inh_stacks - {0}:
        while sid:
            assert sid in t.stacks, 'stack node %d not defined in the child' % sid
            assert parent_tr.stacks.get(sid) == t.stacks[sid], 'stack %d differs from the parent' % sid
            sid = t.stacks[sid][0]
    inh = {r.addr: r for r in t.of('alloc_ex') if r.fn == 'inherited'}
    for a in inherited:
        assert a in inh, 'block 0x%x not inherited' % a
        assert inh[a].thread == 0 and inh[a].stack in t.stacks, inh[a]
    ts = t.of('thread_start')
    assert ts and ts[0].tid == p.pid, 'no thread_start for the forking thread'
    e = t.one('trace_end')
    assert (e.allocs, e.frees) == (own_allocs, own_frees), 'trace_end allocs=%d frees=%d' % (
        e.allocs, e.frees)

ch = tr['child']
forked(ch, par, pids['parent'], [A, B, C], 1, 1)
assert frees(ch) == [B], 'child frees: %s' % frees(ch)
assert not [r for r in ch.of('alloc') if r.size == 66666], 'parent event in the child'
if mode == 'nested':
    forked(tr['grandchild'], ch, pids['child'], [A, C, D], 1, 0)
    assert B not in {r.addr for r in tr['grandchild'].of('alloc_ex')}, 'freed B inherited'
print(mode, 'ok')
PY
done
gs_done
