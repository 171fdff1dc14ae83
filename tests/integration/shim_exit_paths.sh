#!/usr/bin/env bash
# How a traced process ends (tests/programs/shim_exits.c, dash, Python's
# os._exit): the exit status is always the program's. return, exit(),
# _exit() and _Exit() each leave a complete trace whose exit record carries
# the status and whose live set holds the program's 7 blocks of 4242 bytes
# (dash exits with _exit; Python's multiprocessing children, DataLoader
# workers among them, with os._exit). SIGKILL leaves an undamaged,
# incomplete trace holding what the periodic flush wrote.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_exit_paths
gs_need shim_exits
P=$GS_PROGS/shim_exits

ends() { # NAME STATUS CMD... : complete trace, exit record STATUS
  local name=$1 st=$2; shift 2
  gs_run "$name" "$@"
  [ "$GS_RC" -eq "$st" ] || fail "$name: exit status $GS_RC, expected $st"
  gs_one_trace || return
  gs_check "$GS_DUMP"
  grep -q "^exit t=[0-9]* status=$st how=normal\$" "$GS_DUMP" \
    || fail "$name: no exit record with status $st (trace $(tail -1 "$GS_DUMP"))"
}

for mode in return exit _exit _Exit; do
  ends "$mode" 3 "$P" "$mode" 3
  [ -n "$GS_DUMP" ] && gs_py - "$GS_DUMP" <<'PY' || fail "$mode: live blocks"
import sys
from gstrace import *
_, _, live = check(Trace(sys.argv[1]), complete=False)
n = list(live.values()).count(4242)
assert n == 7, '%d blocks of 4242 bytes live at the end, expected 7' % n
PY
done
ends dash 4 sh -c 'echo a; exit 4'
ends python_os_exit 5 /usr/bin/python3 -c 'import os; os._exit(5)'

gs_run kill "$P" kill
[ "$GS_RC" -eq 137 ] || fail "kill: exit status $GS_RC, expected 137"
if gs_one_trace; then
  gs_check "$GS_DUMP" --incomplete
  grep -q 'complete=no$' "$GS_DUMP" || fail "kill: trace claims to be complete"
  n=$(grep -c '^alloc .* size=4242 ' "$GS_DUMP")
  [ "$n" -eq 7 ] || fail "kill: $n allocations of 4242 bytes flushed before the kill, expected 7"
fi
gs_done
