#!/usr/bin/env bash
# Exec and exit paths that bypass the public execve/execv/exit/_exit
# (tests/programs/rel_exec_paths.c): execl, execle, execlp, fexecve and
# execveat each leave a first-image trace with the program's 1000 blocks of
# 777 bytes live and an EXEC record; quick_exit leaves a complete trace with
# exit status 5 and the 1000 blocks; daemon() leaves the parent's trace
# complete (status 0, the 1000 blocks) and a complete trace of the daemon
# child, which inherited them. Before these were hooked by name, each left a
# trace with no chunk at all.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_exec_paths
gs_need rel_exec_paths

for mode in execl execle execlp fexecve execveat quick_exit daemon; do
  gs_run "$mode" "$GS_PROGS/rel_exec_paths" "$mode"
  want=0; [ "$mode" = quick_exit ] && want=5
  [ "$GS_RC" -eq "$want" ] || { fail "$mode: exit status $GS_RC, expected $want: $(head -3 "$GS_DIR/err")"; continue; }
  for f in $(gs_traces); do gs_dump "$f"; done
  gs_py - "$GS_DIR" "$mode" <<'PY' || fail "$mode: see above"
import sys, os, glob
from gstrace import *
d, mode = sys.argv[1], sys.argv[2]
out = [l for l in open(os.path.join(d, 'out')).read().split('\n') if l]
pid = int(out[0].split('pid=')[1])
first = Trace(os.path.join(d, 'rel_exec_paths-%d.trace.txt' % pid))
complete = mode in ('quick_exit', 'daemon')
errs, summary, live = check(first, complete=complete)
assert not errs, 'first image: ' + '; '.join(errs)
kept = [s for s in live.values() if s == 777]
assert len(kept) == 1000, '%d blocks of 777 bytes live, expected 1000 (%s)' % (len(kept), summary)
if complete:
    ex = first.one('exit')
    assert ex.status == (5 if mode == 'quick_exit' else 0), ex
    assert not first.of('exec'), 'exec record in a trace that exits'
else:
    ex = first.one('exec')
    want = '/bin/true' if mode != 'execlp' else 'true'
    if mode == 'fexecve':
        assert ex.path.startswith('/proc/self/fd/'), ex.path
    else:
        assert ex.path == want, 'exec path %r, expected %r' % (ex.path, want)
if mode == 'daemon':
    assert len(out) == 2 and out[1].startswith('daemon pid='), out
    cpid = int(out[1].split('pid=')[1])
    child = Trace(os.path.join(d, 'rel_exec_paths-%d.trace.txt' % cpid))
    errs, csum, clive = check(child)
    assert not errs, 'daemon child: ' + '; '.join(errs)
    assert len([s for s in clive.values() if s == 777]) == 1000, csum
    assert child.one('exit').status == 0
print(mode, 'ok:', summary)
PY
done
gs_done
