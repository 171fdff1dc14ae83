#!/usr/bin/env bash
# libgcspy.so needs nothing beyond glibc (preload/rules.mk: zstd linked in,
# hidden; preload/unwind.c: libunwind dlopen()ed when present), so a program
# starts under LD_PRELOAD on a machine without libunwind or libzstd:
#   needed    its DT_NEEDED entries are glibc's only; no ZSTD_ symbol exported
#             (ours must never interpose the program's libzstd)
#   glibc     the newest GLIBC_ symbol version it asks for is at most 2.34,
#             the minimum README states
#   hidden    libunwind.so.8 and libzstd.so.1 made unloadable (/dev/null bound
#             over the files in a private mount namespace, so the loader
#             finds them and fails, as when they are missing):
#               fp         tests/programs/shim_unwind.c runs (status 0), no
#                          stderr, a valid trace with its 51515-byte block
#               libunwind  GCSPY_UNWIND=libunwind: the program runs, one line
#                          on stderr (beside the exit summary) says libunwind
#                          is missing, and the block's
#                          stack is the frame-pointer walk's (inner_alloc,
#                          nofp_call); the process record names the walker
#                          asked for (libunwind)
#               python     python3 -c runs and prints its line
#   present   GCSPY_UNWIND=libunwind with libunwind installed: its DWARF walk
#             goes through the function without frame pointers into main
#   root      in the trixie root (tests/lib.sh's in_root; a newer glibc than
#             the build's) with its libunwind hidden: python3 imports torch
#             and runs under the shim with GCSPY_UNWIND=libunwind, one line
#             about libunwind, a valid trace (skipped, with a line, when the
#             root cannot be made here)
# Hiding needs root and a private mount namespace (unshare -m; in a chroot
# whose / is no mount point there is none); the test is skipped otherwise.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_deps
gs_need shim_unwind
P=$GS_PROGS/shim_unwind

# ---- needed, glibc ----
needed=$(readelf -d "$GS_LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
for n in $needed; do
  case $n in
    libc.so.6 | ld-linux-*.so.* | libpthread.so.0 | libdl.so.2 | libm.so.6 | librt.so.1) ;;
    *) fail "needed: libgcspy.so needs $n (only glibc's libraries are allowed): $needed" ;;
  esac
done
echo "needed: $needed"
nz=$(nm -D --defined-only "$GS_LIB" | grep -c ' ZSTD_')
[ "$nz" -eq 0 ] || fail "needed: libgcspy.so exports $nz ZSTD_ symbols"
top=$(objdump -T "$GS_LIB" | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1)
echo "glibc: newest symbol version $top"
[ "$(printf '%s\nGLIBC_2.34\n' "$top" | sort -V | tail -1)" = GLIBC_2.34 ] ||
  fail "glibc: libgcspy.so asks for $top, newer than the documented minimum 2.34"

# ---- hidden ----
[ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null || gs_skip "not root or no unshare: cannot hide libraries"
why=$(unshare -m --propagation private true 2>&1) ||
  gs_skip "no private mount namespace here, cannot hide libraries: $why"
hide=()
for l in libunwind.so.8 libzstd.so.1; do
  f=$(ldconfig -p | awk -v l="$l" '$1 == l && /x86-64|x86_64|AArch64/ { print $NF; exit }')
  [ -n "$f" ] && hide+=("$(readlink -f "$f")")
done
echo "hidden: ${hide[*]}"
[ ${#hide[@]} -gt 0 ] || echo "note: neither library is installed here; the programs run without them anyway"

# hidden_run NAME CMD...: CMD with the libraries hidden, under the shim
# (LD_PRELOAD set for CMD only, not for the helpers that hide them).
hidden_run() {
  local name=$1; shift
  GS_DIR=$GS_T/$name
  mkdir -p "$GS_DIR"
  timeout 120 unshare -m --propagation private bash -c '
    for f in $HIDE; do mount --bind /dev/null "$f" || exit 90; done
    exec env LD_PRELOAD="$LIB" GCSPY_OUTPUT="$OUT/%e-%p.trace" "$@"
  ' hidden "$@" >"$GS_DIR/out" 2>"$GS_DIR/err"
  GS_RC=$?
}
export HIDE="${hide[*]}" LIB=$GS_LIB

OUT=$GS_T/fp GCSPY_QUIET=1 GCSPY_UNWIND=fp hidden_run fp "$P"
[ "$GS_RC" -eq 0 ] || fail "hidden fp: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
[ -s "$GS_DIR/err" ] && fail "hidden fp: stderr: $(head -3 "$GS_DIR/err")"
if gs_one_trace; then
  gs_check "$GS_DUMP"
  grep -q '^alloc .* size=51515 ' "$GS_DUMP" || fail "hidden fp: the 51515-byte block is not in the trace"
fi

# one_line FILE WHAT: exactly one line of stderr mentions libunwind, and it
# says libunwind is missing.
one_line() {
  [ "$(grep -c libunwind "$1")" -eq 1 ] && grep -q '^gcspy: GCSPY_UNWIND=libunwind: libunwind is not available (' "$1" ||
    fail "$2: stderr should have one line saying libunwind is missing: '$(head -4 "$1" | tr '\n' '|')'"
}

OUT=$GS_T/lu GCSPY_QUIET=0 GCSPY_UNWIND=libunwind hidden_run lu "$P"
[ "$GS_RC" -eq 0 ] || fail "hidden libunwind: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
one_line "$GS_DIR/err" "hidden libunwind"
other=$(grep -v -E '^gcspy: (pid [0-9]+: |trace: )|libunwind' "$GS_DIR/err")
[ -z "$other" ] || fail "hidden libunwind: other lines on stderr: $other"
if gs_one_trace; then
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$P" <<'PY' || fail "hidden libunwind: stacks (above)"
import sys
from gstrace import *
tr = Trace(sys.argv[1]); prog = sys.argv[2]
assert tr.one('process').unwinder == 'libunwind', 'process record unwinder=%s' % tr.one('process').unwinder
rs = [r for r in tr.of('alloc') if r.size == 51515]
assert len(rs) == 1, '%d allocations of 51515 bytes' % len(rs)
f = {n: in_function(tr, prog, n) for n in ('inner_alloc', 'nofp_call', 'level2')}
names = [next((n for n, inside in f.items() if inside(ip)), hex(ip)) for ip in tr.frames(rs[0].stack)]
# the default walker (frame pointers, unwind tables where they are missing)
# reaches past nofp_call, as libunwind would
assert names[:3] == ['inner_alloc', 'nofp_call', 'level2'], 'frames: %s (the default walk expected)' % names
print('hidden libunwind: frames', names)
PY
fi

OUT=$GS_T/py GCSPY_QUIET=1 hidden_run py "$GS_PY" -c 'print("python ran")'
[ "$GS_RC" -eq 0 ] && grep -qx 'python ran' "$GS_DIR/out" ||
  fail "hidden python: exit status $GS_RC, output '$(cat "$GS_DIR/out")': $(head -3 "$GS_DIR/err")"

# ---- present ----
GCSPY_UNWIND=libunwind gs_run present "$P"
[ "$GS_RC" -eq 0 ] || fail "present: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
[ -s "$GS_DIR/err" ] && fail "present: stderr: $(head -3 "$GS_DIR/err")"
if gs_one_trace; then
  gs_py - "$GS_DUMP" "$P" <<'PY' || fail "present: stacks (above)"
import sys
from gstrace import *
tr = Trace(sys.argv[1]); prog = sys.argv[2]
rs = [r for r in tr.of('alloc') if r.size == 51515]
f = {n: in_function(tr, prog, n) for n in ('inner_alloc', 'nofp_call', 'level2', 'level1', 'main')}
names = [next((n for n, inside in f.items() if inside(ip)), hex(ip)) for ip in tr.frames(rs[0].stack)]
assert names[:5] == ['inner_alloc', 'nofp_call', 'level2', 'level1', 'main'], 'frames: %s' % names
print('present: libunwind frames', names[:5])
PY
fi

# ---- root ----
R=$GS_T/root; mkdir -p "$R"
in_root trixie bash -c '
  for f in /usr/lib/*/libunwind.so.8.*; do [ -f "$f" ] && mount --bind /dev/null "$f"; done
  cd "$1" && env LD_PRELOAD="$2" GCSPY_OUTPUT="$1/%e-%p.trace" GCSPY_QUIET=0 GCSPY_UNWIND=libunwind \
    python3 -c "import torch; x = torch.ones(1000); print(\"torch\", torch.__version__, int(x.sum()))"
' root "$R" "$GS_LIB" >"$R/out" 2>"$R/err"
rc=$?
if [ $rc -eq 77 ]; then
  echo "root: skipped: $(tail -1 "$R/out")"
else
  [ $rc -eq 0 ] && grep -q '^torch .* 1000$' "$R/out" ||
    fail "root: exit status $rc, output '$(cat "$R/out")': $(head -3 "$R/err")"
  one_line "$R/err" root
  GS_DIR=$R
  gs_one_trace && gs_check "$GS_DUMP"
  echo "root: $(cat "$R/out")"
fi
gs_done
