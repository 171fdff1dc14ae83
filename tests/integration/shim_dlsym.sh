#!/usr/bin/env bash
# dlsym and dlvsym under the shim (preload/dlsym.c):
#  - tests/programs/shim_dlsym.c prints "ok" for every check of their
#    meaning (RTLD_NEXT from a library resolved after that library, not
#    after libgcspy.so; lookups through libc's handle give the hooks;
#    dlerror() as glibc keeps it), the same with and without the shim;
#  - a real program: /usr/bin/python3 allocates 5 MiB + 1 bytes (5242881) through
#    ctypes.CDLL("libc.so.6").malloc, a lookup through libc's handle, and
#    drops the pointer. The trace has that allocation, and the exit scan
#    lists it as lost: definite, or possible (its own mmap often lies where
#    mappings the interpreter has dropped lay, and stale words in CPython's
#    memory, roots, still point there: one run in six, measured; a small
#    block meets the same in the heap), never reachable. Without the interposed dlsym the block
#    was invisible: no allocation of 5242881 bytes in the trace.
#  - a CUDA driver loaded with dlopen(RTLD_LOCAL) and used only through
#    dlsym on its handle (tests/programs/shim_dlsym_cuda.c, on the CUDA
#    double when it is built): its 3 MiB cuMemAlloc_v2 is in the trace and
#    definitely lost at exit. Without the interposed dlsym: not in the trace.
# (tests/programs/leak_dlsym_handle.c is the C case, compared with valgrind
# by leaks.sh.)
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_dlsym
gs_need shim_dlsym libshim_dlnext.so shim_dlsym_cuda

gs_plain plain "$GS_PROGS/shim_dlsym"
[ "$GS_RC" -eq 0 ] || fail "without the shim: exit $GS_RC: $(grep -v '^ok' "$GS_DIR/out")"
gs_run shim "$GS_PROGS/shim_dlsym"
[ "$GS_RC" -eq 0 ] || fail "under the shim: exit $GS_RC: $(grep -v '^ok' "$GS_DIR/out")"
n=$(grep -c '^ok ' "$GS_DIR/out")
[ "$n" -eq 13 ] || fail "under the shim: $n checks ok, expected 13"
gs_one_trace && gs_check "$GS_DUMP" >/dev/null

gs_run ctypes "$GS_PY" -c '
import ctypes
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
p = libc.malloc(5242881)
p = None
'
[ "$GS_RC" -eq 0 ] || fail "ctypes: exit $GS_RC: $(head -3 "$GS_DIR/err")"
gs_one_trace && {
  gs_check "$GS_DUMP" >/dev/null
  gs_py - "$GS_DUMP" <<'PY' || fail "ctypes: see above"
import sys
from gstrace import *
tr = Trace(sys.argv[1])
allocs = [r for r in tr.of('alloc') if r.size == 5242881]
assert len(allocs) == 1, '%d allocations of 5242881 bytes (the ctypes malloc is not seen)' % len(allocs)
scans = [r for r in tr.of('scan_begin') if r.trigger == 'exit']
assert len(scans) == 1, '%d exit scans' % len(scans)
got = [r['class'] for r in tr.of('scan_block') if r.id == scans[0].id and r.size == 5242881]
assert got in (['definite'], ['possible']), 'the 5242881-byte block at exit: %s, expected lost' % got
PY
}
CUDA_DOUBLE=$GS_ROOT/build/cuda_double/libcuda.so.1
if [ -f "$CUDA_DOUBLE" ]; then
  gs_run cuda "$GS_PROGS/shim_dlsym_cuda" "$CUDA_DOUBLE"
  [ "$GS_RC" -eq 0 ] || fail "cuda: exit $GS_RC: $(head -3 "$GS_DIR/err")"
  gs_one_trace && {
    gs_check "$GS_DUMP" >/dev/null
    gs_py - "$GS_DUMP" <<'PY' || fail "cuda: see above"
import sys
from gstrace import *
tr = Trace(sys.argv[1])
dev = [r for r in tr.of('alloc_ex') if r.kind == 'device' and r.size == 3 << 20]
assert len(dev) == 1, '%d device allocations of 3 MiB (cuMemAlloc_v2 through the handle not seen)' % len(dev)
scans = [r for r in tr.of('scan_begin') if r.trigger == 'exit']
assert len(scans) == 1, '%d exit scans' % len(scans)
got = [r['class'] for r in tr.of('scan_block') if r.id == scans[0].id and r.addr == dev[0].addr]
assert got == ['definite'], 'the device block at exit: %s, expected definite' % got
PY
  }
else
  echo "note: no CUDA double (build/cuda_double): the CUDA check is skipped"
fi
gs_done
