#!/usr/bin/env bash
# The default stack walker (GCSPY_UNWIND=fp; preload/stack.c, unwind.c)
# through code without frame pointers:
#  1. tests/programs/stack_cxx_new.cpp: two new[] leaked from two lines of
#     main through Debian's libstdc++ (no frame pointers): each leak's
#     stack is operator new then main at its own line (the line memcheck
#     names, where valgrind runs), two stacks;
#  2. tests/programs/stack_garbage.c: a caller that leaves a fake frame
#     chain in rbp (ASCII, top-bit words, stack addresses): the 8
#     allocations of one site share one stack, alloc_site, garbage_call,
#     level1, main, and every frame lies in an executable segment of a
#     module record, none with the top bit set (a Python frame's mark);
#  3. dash, bash and tr, built without frame pointers: every frame of every
#     stack of every trace lies in an executable segment of a module
#     record, none with the top bit set.
#  4. tests/programs/stack_reload.c: a library without frame pointers
#     unloaded and another build of it loaded at the same address, whose
#     malloc call returns to the same offset from a frame of another size,
#     and back, three rounds: each of the 6 allocations' stacks is the
#     library's inner() then main (no library's cached unwind rule walks
#     the other's frame).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init stack_walk
gs_need stack_cxx_new stack_garbage stack_reload libstack_reload_a.so libstack_reload_b.so

# Every frame in an r-x segment of a module record; none with the top bit.
code_only() {
  gs_py - "$1" <<'PY'
import sys
from gstrace import *
tr = Trace(sys.argv[1])
bad = []
for sid in tr.stacks:
    for ip in tr.frames(sid):
        m = tr.module_of(ip)
        seg = m and next(s for s in m.segs if m.base + s[0] <= ip < m.base + s[0] + s[1])
        if ip >> 63 or not seg or seg[2] != 'r-x':
            bad.append('%#x (%s)' % (ip, m.path if m else 'no module'))
assert not bad, 'frames outside executable code: %s' % ', '.join(sorted(set(bad))[:8])
print('%d stacks, all frames in code' % len(tr.stacks))
PY
}

# 1. new[] through libstdc++
P=$GS_PROGS/stack_cxx_new
gs_run cxx "$P"
[ "$GS_RC" -eq 0 ] || fail "cxx: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
if gs_one_trace; then
  "$GS_CLI" report "$GS_TRACE" >"$GS_DIR/report" 2>&1 || fail "cxx: gcspy report failed"
  for n in 25 50; do
    line=$(grep -n "LINE-$n\$" tests/programs/stack_cxx_new.cpp | cut -d: -f1)
    bytes=$((n * 4))
    # the block's stack: the frames under its site's row, whose definite
    # column (the first) is "<bytes> bytes/1"
    st=$(awk -v b="$bytes bytes/1" '!on && $1 " " $2 == b { on = 1; next }
           on && /^ *#/ { print; seen = 1 } on && seen && !/^ *#/ { on = 0 }' "$GS_DIR/report")
    f0=$(sed -n 1p <<<"$st"); f1=$(sed -n 2p <<<"$st")
    [[ $f0 == *"operator new"*libstdc++* ]] || fail "cxx new int[$n]: frame #0 is '$f0'"
    [[ $f1 == *"#1  main at tests/programs/stack_cxx_new.cpp:$line "* ]] ||
      fail "cxx new int[$n]: frame #1 is '$f1', expected main at line $line"
    echo "cxx new int[$n]: ${f1# *}"
    if command -v valgrind >/dev/null; then
      [ -f "$GS_T/vg" ] || valgrind --leak-check=full "$P" >/dev/null 2>"$GS_T/vg"
      grep -A2 "^==[0-9]*== $bytes bytes in 1 blocks are definitely lost" "$GS_T/vg" |
        grep -q "by 0x[0-9A-F]*: main (stack_cxx_new.cpp:$line)" ||
        fail "cxx new int[$n]: memcheck does not name main at line $line: $(grep -A2 "$bytes bytes" "$GS_T/vg")"
    fi
  done
fi

# 2. garbage in rbp
P=$GS_PROGS/stack_garbage
gs_run garbage "$P"
[ "$GS_RC" -eq 0 ] || fail "garbage: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
if gs_one_trace; then
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$P" <<'PY' || fail "garbage: see above"
import sys
from gstrace import *
tr = Trace(sys.argv[1]); prog = sys.argv[2]
rs = [r for r in tr.of('alloc') if r.size == 4242]
assert len(rs) == 8, '%d allocations of 4242 bytes' % len(rs)
ids = sorted(set(r.stack for r in rs))
assert len(ids) == 1, 'one site, %d stacks: %s' % (len(ids), ids)
f = {n: in_function(tr, prog, n) for n in ('alloc_site', 'garbage_call', 'level1', 'main')}
names = [next((n for n, inside in f.items() if inside(ip)), hex(ip)) for ip in tr.frames(ids[0])]
assert names[:4] == ['alloc_site', 'garbage_call', 'level1', 'main'], 'frames: %s' % names
print('garbage: one stack: %s' % ' '.join(names))
PY
  code_only "$GS_DUMP" || fail "garbage: see above"
fi

# 4. a library reloaded in place
P=$GS_PROGS/stack_reload
gs_run reload "$P" "$GS_PROGS/libstack_reload_a.so" "$GS_PROGS/libstack_reload_b.so"
[ "$GS_RC" -eq 0 ] || fail "reload: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
if gs_one_trace; then
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" "$P" "$GS_DIR/out" <<'PY' || fail "reload: see above"
import sys
from gstrace import *
tr = Trace(sys.argv[1]); prog = sys.argv[2]
bases = [l.split()[3] for l in open(sys.argv[3]) if l.startswith('lib ')]
main = in_function(tr, prog, 'main')
ret = set()
for size in (1111, 2222):
    rs = [r for r in tr.of('alloc') if r.size == size]
    assert len(rs) == 3, '%d allocations of %d bytes, expected 3' % (len(rs), size)
    for r in rs:
        fr = tr.frames(r.stack)
        # (module_of does not know when each was loaded: either library's)
        m = tr.module_of(fr[0]) if fr else None
        assert m and m.path.endswith(('libstack_reload_a.so', 'libstack_reload_b.so')), \
            '%d bytes: frame 0 %s is not in the library' % (size, hex(fr[0]) if fr else 'missing')
        assert len(fr) > 1 and main(fr[1]), '%d bytes: frame 1 is %s, not main (frames %s)' % (
            size, hex(fr[1]) if len(fr) > 1 else 'missing', ' '.join(map(hex, fr[:6])))
        ret.add(fr[0])
same = len(bases) == 6 and len(set(bases)) == 1 and len(ret) == 1
print('reload: all 6 stacks inner() then main; %s' % (
    'every load at one address, one return address' if same
    else 'the libraries at %s: the case did not arise' % ', '.join(sorted(set(bases)))))
PY
fi

# 3. real programs without frame pointers
script='x=$(echo hello); for i in 1 2 3; do y="$y$x$i"; done; echo "$y"
read a <<EOF
line
EOF
case $a in l*) echo "$a";; esac; z=${y#hello}; echo "$z"'
for prog in dash bash tr; do
  command -v "$prog" >/dev/null || { echo "no $prog: not checked"; continue; }
  case $prog in
    tr) gs_run "$prog" sh -c 'echo hello world | exec tr a-z A-Z' ;;
    *) gs_run "$prog" "$prog" -c "$script" ;;
  esac
  [ "$GS_RC" -eq 0 ] || fail "$prog: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
  n=0
  while read -r t; do
    gs_dump "$t"
    out=$(code_only "$t.txt") || { fail "$prog $(basename "$t"): $out"; continue; }
    n=$((n + 1))
    echo "$prog $(basename "$t"): $out"
  done < <(gs_traces)
  [ "$n" -gt 0 ] || fail "$prog: no trace passed"
done
gs_done
