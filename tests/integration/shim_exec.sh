#!/usr/bin/env bash
# exec (tests/programs/shim_exec.c): the new image is traced too, through the
# inherited LD_PRELOAD, into a trace of its own with the same pid: the same
# %e gives a ".1" suffix (self-exec), another program its own %e (/bin/echo).
# The first image's trace holds its allocations and the free, and ends (in
# time: the exec record is in the definitions stream, written ahead of the
# events of its flush round) with an exec record naming the new program; it
# has no trace_end. The second image's trace is complete and consistent.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_exec
gs_need shim_exec

for mode in self other; do
  gs_run "$mode" "$GS_PROGS/shim_exec" "$mode"
  [ "$GS_RC" -eq 0 ] || { fail "$mode: exit status $GS_RC: $(head -3 "$GS_DIR/err")"; continue; }
  for f in $(gs_traces); do gs_dump "$f"; done
  gs_py - "$GS_DIR" "$mode" <<'PY' || fail "$mode: see above"
import sys, os, glob
from gstrace import *
d, mode = sys.argv[1], sys.argv[2]
out = dict(l.split(' pid=') for l in open(os.path.join(d, 'out')).read().split('\n') if l)
second = 'second' if mode == 'self' else 'other'
assert sorted(out) == sorted(['first', second]), out
pid = int(out['first'])
assert int(out[second]) == pid, 'exec changed the pid: %s' % out
names = sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, '*.trace*')) if not f.endswith(('.txt', '.dumperr')))
first_name = 'shim_exec-%d.trace' % pid
second_name = first_name + '.1' if mode == 'self' else 'echo-%d.trace' % pid
assert names == sorted([first_name, second_name]), 'trace files %s' % names
t1 = Trace(os.path.join(d, first_name + '.txt'))
t2 = Trace(os.path.join(d, second_name + '.txt'))

errs, summary, live = check(t1, complete=False)
assert not errs, 'first image: ' + '; '.join(errs)
assert t1.end.complete == 'no' and not t1.of('trace_end') and not t1.of('exit'), 'first image trace has an end'
ex = t1.one('exec')
want_path = '/proc/self/exe' if mode == 'self' else '/bin/echo'
assert ex.path == want_path, 'exec path %r' % ex.path
events = t1.of('alloc', 'alloc_ex', 'free', 'realloc', 'thread_start', 'module', 'sample')
late = [r for r in events if r.t > ex.t]
assert not late, 'events after the exec record in time: %s' % late[:3]
sizes = sorted(r.size for r in t1.of('alloc'))
assert sizes == [12121, 13131], 'first image allocations: %s' % sizes
assert len(t1.of('free')) == 1 and sorted(live.values()) == [12121]

errs, summary, _ = check(t2)
assert not errs, 'second image: ' + '; '.join(errs)
p = t2.one('process')
assert p.pid == pid and p.flags == 0, p
if mode == 'self':
    assert p.argv == 'shim_exec second', p.argv
    assert sorted(r.size for r in t2.of('alloc')) == [14141]
else:
    assert p.exe.endswith('/echo'), p.exe
    assert 12121 not in [r.size for r in t2.of('alloc')]
print(mode, 'ok:', summary)
PY
done
gs_done
