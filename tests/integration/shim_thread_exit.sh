#!/usr/bin/env bash
# exit(42) from a non-main thread while three threads allocate
# (tests/programs/shim_thread_exit.c): the exit status and output are the
# program's, the trace is complete with an exit record of status 42, and it
# is consistent, TRACE_END's counts included. Run twice: the end of the
# trace races with the allocating threads.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_thread_exit
gs_need shim_thread_exit

for i in 1 2; do
  gs_run "run$i" "$GS_PROGS/shim_thread_exit"
  [ "$GS_RC" -eq 42 ] || fail "run $i: exit status $GS_RC, expected 42: $(head -3 "$GS_DIR/err")"
  [ "$(cat "$GS_DIR/out")" = exiting ] || fail "run $i: stdout '$(cat "$GS_DIR/out")'"
  [ -s "$GS_DIR/err" ] && fail "run $i: stderr not empty: $(head -3 "$GS_DIR/err")"
  gs_one_trace || continue
  gs_check "$GS_DUMP"
  grep -q '^exit t=[0-9]* status=42 how=normal$' "$GS_DUMP" || fail "run $i: no exit record with status 42: $(grep '^exit' "$GS_DUMP")"
done
gs_done
