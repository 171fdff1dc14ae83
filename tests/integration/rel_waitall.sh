#!/usr/bin/env bash
# Fork-mode scans are invisible to the program's waits
# (tests/programs/rel_waitall.c): a program without children polls
# waitpid(-1, __WALL|WNOHANG) under fork-mode scans every 2 ms. Every poll
# must fail with ECHILD: gcspy's scanning process is never the program's
# child (it used to be: polls saw it alive, or reaped it, and the program
# exited 1). The trace must be complete and hold completed fork-mode scans,
# or the check proves nothing.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_waitall
gs_need rel_waitall rel_tracecount

GS_TIMEOUT=60 GCSPY_SCAN_MODE=fork GCSPY_SCAN_INTERVAL_MS=2 gs_run waitall "$GS_PROGS/rel_waitall"
[ "$GS_RC" -eq 0 ] || fail "waitall: exit status $GS_RC: $(cat "$GS_DIR/out") $(head -3 "$GS_DIR/err")"
grep -Eq '^polls=[1-9][0-9]* children_seen=0 reaped=0$' "$GS_DIR/out" || fail "waitall: $(cat "$GS_DIR/out")"
if gs_one_trace; then
  "$GS_PROGS/rel_tracecount" "$GS_TRACE" >"$GS_DIR/c" 2>&1 || fail "waitall: trace check: $(head -3 "$GS_DIR/c")"
  scans=$(sed -n 's/^scans=//p' "$GS_DIR/c")
  [ "${scans:-0}" -ge 5 ] || fail "waitall: ${scans:-0} scans completed, expected at least 5"
  grep -q '^scan_begin .*mode=1$' "$GS_DUMP" || fail "waitall: no fork-mode scan in the trace"
  echo "waitall: $(cat "$GS_DIR/out"), $scans scans"
fi
gs_done
