#!/usr/bin/env bash
# The scans' stop signal is not seen as an interruption
# (tests/programs/rel_pause.c): eight threads blocked in pause, sigsuspend,
# clock_nanosleep to a deadline, poll and epoll_wait without a timeout,
# select, ppoll and sem_timedwait (calls a handler makes fail with EINTR
# whatever SA_RESTART says) meet three API
# scans and the exit scan. Before, every scan woke every one of them
# ("pause woke: EINTR"). Expected: "woke=0" and no "woke:" line, exit 0;
# 4 completed scans, each with the 8 threads stopped and no definite leak,
# and the exit scan reporting the threads' 8 blocks of 4321 bytes reachable
# (their stacks were roots). In both scan modes (stw, fork).
# Then 30 more fork-mode runs, each "woke=0": the scans follow each other
# within milliseconds there, and a handler that read its slot after the
# resume found the next stop's "not seen in a call" and left pause (or
# another call) with EINTR: 4 to 8 runs of 40 before (stop.c's seen_call),
# 0 of 80 after; and a thread still leaving the last stop's handler (the
# stop signal blocked there) was parked instead of stopped, a scan with 7
# of the 8 threads (stop.c's in_handlers). Every scan must stop all 8.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_pause
gs_need rel_pause

for mode in stw fork; do
  GS_TIMEOUT=60 GCSPY_SCAN_MODE=$mode gs_run "$mode" "$GS_PROGS/rel_pause"
  [ "$GS_RC" -eq 0 ] || fail "$mode: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
  [ "$(cat "$GS_DIR/out")" = "woke=0" ] || fail "$mode: the program saw interruptions: $(head -4 "$GS_DIR/out" | tr '\n' '|')"
  gs_one_trace || continue
  gs_py - "$GS_DUMP" "$mode" <<'PY' || fail "$mode: see above"
import sys
from gstrace import *
t = Trace(sys.argv[1])
errs, summary, live = check(t)
assert not errs, '; '.join(errs)
ends = t.of('scan_end')
assert len(ends) == 4, '%d scans completed, expected 4' % len(ends)
for e in ends:
    assert e.threads == 8 and e.definite_blocks == 0, e
last = ends[-1].id
kept = [r for r in t.of('scan_block') if r.id == last and r.size == 4321]
assert len(kept) == 8 and all(r['class'] == 'reachable' for r in kept), kept
print(sys.argv[2], 'ok:', summary)
PY
done
bad=0
for i in $(seq 30); do
  out=$(GCSPY_SCAN_MODE=fork GCSPY_QUIET=1 GCSPY_OUTPUT="$GS_T/again-$i.trace" \
        timeout 60 env LD_PRELOAD="$GS_LIB" "$GS_PROGS/rel_pause" 2>/dev/null | tr '\n' '|')
  [ "$out" = "woke=0|" ] || { bad=$((bad + 1)); echo "fork run $i: $out"; }
  ends=$("$GS_CLI" dump "$GS_T/again-$i.trace" | grep '^scan_end ' | grep -o ' threads=[0-9]*' | tr '\n' ' ')
  [ "$ends" = " threads=8  threads=8  threads=8  threads=8 " ] ||
    { bad=$((bad + 1)); echo "fork run $i: scans stopped$ends"; }
done
echo "fork, 30 more runs: $bad saw an interruption or a scan without its 8 threads stopped"
[ "$bad" -eq 0 ] || fail "fork: $bad of 30 runs saw an interruption or a scan without its 8 threads stopped"
gs_done
