#!/usr/bin/env bash
# Stack walkers (tests/programs/shim_unwind.c): through a function that uses
# %rbp as a plain register, both GCSPY_UNWIND=fp (the default walker, which
# reads the function's CFI where it has no frame pointer) and
# GCSPY_UNWIND=libunwind go on through level2, level1 and main into libc,
# and find the same frames; GCSPY_DEPTH caps libunwind's stack exactly. Frames are checked against the program's symbol table (nm) and
# its module record; the process record names the unwinder.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_unwind_libunwind
gs_need shim_unwind
P=$GS_PROGS/shim_unwind

for mode in fp libunwind depth3; do
  case $mode in
    fp) GCSPY_UNWIND=fp gs_run "$mode" "$P" ;;
    libunwind) GCSPY_UNWIND=libunwind gs_run "$mode" "$P" ;;
    depth3) GCSPY_UNWIND=libunwind GCSPY_DEPTH=3 gs_run "$mode" "$P" ;;
  esac
  [ "$GS_RC" -eq 0 ] || { fail "$mode: exit status $GS_RC: $(head -3 "$GS_DIR/err")"; continue; }
  gs_one_trace || continue
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$P" "$mode" <<'PY' >"$GS_T/$mode.depth" || fail "$mode: see $GS_T/$mode.depth"
import sys
from gstrace import *
tr = Trace(sys.argv[1]); prog, mode = sys.argv[2], sys.argv[3]
p = tr.one('process')
want_unwinder = 'fp' if mode == 'fp' else 'libunwind'
assert p.unwinder == want_unwinder, 'process record unwinder=%s' % p.unwinder
assert p.depth == (3 if mode == 'depth3' else 64), 'process record depth=%s' % p.depth
rs = [r for r in tr.of('alloc') if r.size == 51515]
assert len(rs) == 1, '%d allocations of 51515 bytes' % len(rs)
fr = tr.frames(rs[0].stack)
f = {n: in_function(tr, prog, n) for n in ('inner_alloc', 'nofp_call', 'level2', 'level1', 'main')}
def name(ip):
    return next((n for n, inside in f.items() if inside(ip)), hex(ip))
names = [name(ip) for ip in fr]
if mode == 'depth3':
    assert names == ['inner_alloc', 'nofp_call', 'level2'], 'depth 3 frames: %s' % names
else:
    assert names[:5] == ['inner_alloc', 'nofp_call', 'level2', 'level1', 'main'], 'frames: %s' % names
    libc = [m for m in (tr.module_of(ip) for ip in fr[5:]) if m and 'libc.so' in m.path]
    assert libc, 'no libc frame below main: %s' % names
print(' '.join('%x' % ip for ip in fr))
PY
  echo "$mode: $(wc -w <"$GS_T/$mode.depth") frames"
done
# Both walkers find the same number of frames.
fp=$(wc -w <"$GS_T/fp.depth" 2>/dev/null); lu=$(wc -w <"$GS_T/libunwind.depth" 2>/dev/null)
[ -n "$fp" ] && [ "$fp" = "$lu" ] || fail "fp walker found $fp frames, libunwind $lu"
gs_done
