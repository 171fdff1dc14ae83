#!/usr/bin/env bash
# Allocation inside a SIGALRM handler firing every 100 us while two threads
# allocate (tests/programs/shim_signals.c): the program finishes (no
# deadlock), exit 0; the loops' allocations are all there, exactly (N + 1
# and M + 1 with the other thread's warm-up); the handler's tracked
# allocations number between 1 and the handler's runs; all of them freed;
# the trace consistent, which includes the order of the records of each
# address (the loops reuse one address millions of times).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_signals
gs_need shim_signals

GS_TIMEOUT=60 gs_run signals "$GS_PROGS/shim_signals"
[ "$GS_RC" -eq 0 ] || fail "exit status $GS_RC: $(head -3 "$GS_DIR/err")"
read -r _ n _ m _ h <"$GS_DIR/out"
echo "program: main $n worker $m handler $h"
gs_one_trace && {
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$n" "$m" "$h" <<'PY' || fail "signals: see above"
import sys, collections
from gstrace import *
tr = Trace(sys.argv[1]); n, m, h = map(int, sys.argv[2:5])
sizes = collections.Counter(r.size for r in tr.of('alloc'))
# each thread's warm-up allocates every size once: +2 for 33 and 34
assert sizes[33] == n + 2, '%d allocations of 33 bytes, expected %d' % (sizes[33], n + 2)
assert sizes[34] == m + 2, '%d allocations of 34 bytes, expected %d' % (sizes[34], m + 2)
for s in (200, 300):
    k = sizes[s] - 2
    assert 1 <= k <= h, '%d tracked handler allocations of %d bytes (handler ran %d times)' % (k, s, h)
errs, summary, live = check(tr)
left = [s for s in live.values() if s in (33, 34, 200, 300)]
assert not left, 'blocks left live: %s' % left
print('signals ok: %d/%d handler allocations tracked' % (sizes[200] - 2, h))
PY
}
gs_done
