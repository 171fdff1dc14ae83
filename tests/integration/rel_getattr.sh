#!/usr/bin/env bash
# A thread whose first allocation happens inside pthread_getattr_np() on
# itself (tests/programs/rel_getattr.c; OpenJDK's first threads do this):
# glibc holds the thread's lock across that realloc, so registering the
# thread with pthread_getattr_np deadlocked. Expected: no hang, exit 0,
# "threads=8 stack_ok=8", a consistent trace with 8 blocks of 5151 bytes,
# each with an allocation stack of more than one frame (the stack bounds
# found for the frame walk are right). With LeakSanitizer beside it, the
# same; with java installed, `java -version` also finishes under the shim.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_getattr
gs_need rel_getattr

GS_TIMEOUT=30 gs_run getattr "$GS_PROGS/rel_getattr"
[ "$GS_RC" -eq 0 ] || fail "getattr: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
grep -qx 'threads=8 stack_ok=8' "$GS_DIR/out" || fail "getattr: output $(head -2 "$GS_DIR/out")"
if gs_one_trace; then
  gs_py - "$GS_DUMP" <<'PY' || fail "getattr: see above"
import sys
from gstrace import *
t = Trace(sys.argv[1])
errs, summary, live = check(t)
assert not errs, '; '.join(errs)
blocks = [r for r in t.of('alloc') if r.size == 5151]
assert len(blocks) == 8, '%d blocks of 5151 bytes' % len(blocks)
short = [r for r in blocks if len(t.frames(r.stack)) < 2]
assert not short, 'allocation stacks of one frame or none: %s' % short
print('getattr ok:', summary)
PY
fi
# LeakSanitizer preloaded after gcspy: its own thread registration waits
# the same way when gcspy's was stuck (it spun until killed)
lsan=$(cc -print-file-name=liblsan.so 2>/dev/null)
if [ -f "$lsan" ]; then
  timeout -s KILL 30 env LD_PRELOAD="$GS_LIB $lsan" LSAN_OPTIONS=detect_leaks=0 GCSPY_QUIET=1 \
    GCSPY_OUTPUT="$GS_T/lsan-%p.trace" "$GS_PROGS/rel_getattr" >"$GS_T/lsan.out" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] && grep -qx 'threads=8 stack_ok=8' "$GS_T/lsan.out" ||
    fail "with LeakSanitizer: exit status $rc: $(head -2 "$GS_T/lsan.out")"
fi
if command -v java >/dev/null 2>&1; then
  GS_TIMEOUT=60 gs_run java java -version
  [ "$GS_RC" -eq 0 ] || fail "java -version: exit status $GS_RC"
fi
gs_done
