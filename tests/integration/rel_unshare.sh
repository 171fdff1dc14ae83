#!/usr/bin/env bash
# Calls the kernel allows only in a single-threaded process
# (tests/programs/rel_unshare.c), which gcspy's writer thread used to make
# fail with EINVAL: unshare(CLONE_NEWUSER) and setns() into a mount
# namespace; and the tools: `unshare -U true`, `nsenter --mount=... true`.
# Expected: each call succeeds (exit 0, "call=0"); the program's trace is
# complete, with its 500 + 500 blocks live, and a periodic scan completes
# after the call (the writer thread, which runs them, is back); each tool's
# traces (before and after its exec) are consistent.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_unshare
gs_need rel_unshare

unshare -U true 2>/dev/null || gs_skip "unshare -U fails here without gcspy too (user namespaces off?)"
for mode in user mnt; do
  GCSPY_SCAN_INTERVAL_MS=50 gs_run "$mode" "$GS_PROGS/rel_unshare" "$mode"
  [ "$GS_RC" -eq 0 ] || fail "$mode: exit status $GS_RC: $(cat "$GS_DIR/out") $(head -3 "$GS_DIR/err")"
  grep -qx 'call=0' "$GS_DIR/out" || fail "$mode: $(cat "$GS_DIR/out")"
  gs_one_trace || continue
  gs_py - "$GS_DUMP" "$mode" <<'PY' || fail "$mode: see above"
import sys
from gstrace import *
t = Trace(sys.argv[1])
errs, summary, live = check(t)
assert not errs, '; '.join(errs)
sizes = sorted(live.values())
assert sizes.count(611) == 500 and sizes.count(622) == 500, summary
after = min(r.t for r in t.of('alloc') if r.size == 622)
scans = [r for r in t.of('scan_end') if r.t_start > after]
assert scans, 'no scan completed after the call'
print(sys.argv[2], 'ok:', summary, '%d scans after the call' % len(scans))
PY
done
for tool in "unshare -U true" "nsenter --mount=/proc/self/ns/mnt true"; do
  name=${tool%% *}
  # shellcheck disable=SC2086
  gs_run "$name" $tool
  [ "$GS_RC" -eq 0 ] || fail "$tool: exit status $GS_RC: $(head -2 "$GS_DIR/err")"
  for f in $(gs_traces); do gs_dump "$f"; done
done
gs_done
