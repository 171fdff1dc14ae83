#!/usr/bin/env bash
# Golden tests of `gcspy report --format json` on the hand-built traces of
# build/tests/analyzer_mktraces (tests/golden/mktraces.c says what each one
# must show): the normalized report (tests/golden/normalize.py) must equal
# tests/golden/<scenario>.json. UPDATE_GOLDEN=1 rewrites the golden files
# instead (review the diff before committing). Also checks the text report
# of the same traces for the lines a reader relies on.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy MK=build/tests/analyzer_mktraces PY=/usr/bin/python3
[ -x "$G" ] && [ -x "$MK" ] || { echo "not built: $G $MK"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$MK" "$T" || { echo "mktraces failed"; exit 1; }

golden() { # NAME TRACE...
  local name=$1; shift
  if ! "$G" report --format json -q "$@" >"$T/$name.json" 2>"$T/$name.err"; then
    fail "$name: gcspy report exited $? ($(head -1 "$T/$name.err"))"; return
  fi
  $PY tests/golden/normalize.py "$T/$name.json" >"$T/$name.norm" || { fail "$name: normalize"; return; }
  if [ -n "${UPDATE_GOLDEN:-}" ]; then
    cp "$T/$name.norm" "tests/golden/$name.json"; echo "updated tests/golden/$name.json"
  elif ! diff -u "tests/golden/$name.json" "$T/$name.norm" >"$T/$name.diff"; then
    fail "$name: differs from tests/golden/$name.json"; head -40 "$T/$name.diff"
  fi
}

for s in leaks intervals growth_leak growth_steady growth_time pauses frag python noend torch \
         exec exec_failed; do
  golden "$s" "$T/$s.trace"
done
golden multi "$T/multi_parent.trace" "$T/multi_child.trace"

# The text report of the leaks trace: classes, symbolized frames, inlined
# frames with --show-reachable, the not-freed group, the unreadable module.
"$G" report --show-reachable "$T/leaks.trace" >"$T/leaks.txt" 2>&1 || fail "text report exited $?"
for want in \
  "    1. leak 1.0 MiB in 1 block, definite, device, at site_b (tests/golden/mktraces.c:44)" \
  "         100 bytes/1      100 bytes/1                -      100 bytes/1                -  host, site_a (tests/golden/mktraces.c:39)" \
  "#0  site_a at tests/golden/mktraces.c:" \
  "#1  caller_main at tests/golden/mktraces.c:" \
  "                   -                -     1000 bytes/1                -                -  host, site_b (tests/golden/mktraces.c:44)" \
  "#0  inlined_helper at tests/golden/mktraces.c:" \
  "#1  outer_with_inline at tests/golden/mktraces.c:" \
  "                   -                -                -                -       50 bytes/1  host, inlined_helper (tests/golden/mktraces.c:54)"; do
  grep -qxF -- "$want" "$T/leaks.txt" || grep -qF -- "$want" "$T/leaks.txt" || fail "text report lacks: $want"
done
# the inlined frame is marked and sits before the function it was inlined into
grep -A1 "inlined_helper at" "$T/leaks.txt" | grep -q "\[inlined\]" || fail "inlined frame not marked"
# line numbers are the ones the source marks
for fn in site_a site_b caller_main inlined_helper outer_with_inline; do
  want=$(grep -n "golden: $fn \*/" tests/golden/mktraces.c | cut -d: -f1)
  grep -qF "$fn at tests/golden/mktraces.c:$want " "$T/leaks.txt" ||
    grep -qE "$fn at tests/golden/mktraces.c:$want( |$)" "$T/leaks.txt" ||
    fail "$fn not at line $want"
done
# the not-reachable groups are summarized, not listed, without --show-reachable
"$G" report "$T/leaks.txt" >/dev/null 2>&1 && fail "report accepted a text file as a trace"
"$G" report "$T/leaks.trace" >"$T/short.txt" || fail "short text report"
grep -qx "   reachable: 4196 bytes in 2 blocks (listed with --show-reachable)" "$T/short.txt" ||
  fail "reachable summary line"

# Python frames replace the interpreter's; unreadable modules are named once.
"$G" report --show-reachable "$T/python.trace" >"$T/python.txt" || fail "python text"
grep -A4 "4096 bytes/1  host" "$T/python.txt" >"$T/python.stack"
diff - "$T/python.stack" >/dev/null <<'X' || { fail "python stack"; cat "$T/python.stack"; }
                   -                -                -                -     4096 bytes/1  host, step (train.py:12)
       worst class not-freed, largest block 4096 bytes
       #0  libfake.so+0x10
       #1  step at train.py:12 [python]
       #2  main at train.py:40 [python]
X
grep -q "^   /nonexistent/libfake.so: cannot read the file" "$T/python.txt" || fail "libfake problem line"

# PyTorch's caching allocator: the unreachable tensors as one group labelled
# as such, at their Python line; the snapshot's figures; the segments (not
# the tensors inside them) in the device totals.
"$G" report "$T/torch.trace" >"$T/torch.txt" || fail "torch text"
grep -A4 "^           4.5 MiB/2 " "$T/torch.txt" >"$T/torch.leak"
grep -qx "   not-freed: 22.0 MiB in 2 blocks (listed with --show-reachable)" "$T/torch.txt" || fail "torch: not-freed line"
diff - "$T/torch.leak" >/dev/null <<'X' || { fail "torch leak site"; cat "$T/torch.leak"; }
           4.5 MiB/2                -                -  device, forward (train.py:12)
       worst class definite, largest block 4.0 MiB, tensor (caching allocator block)
       unreachable since scan #1 at 6.0 ms
       #0  forward at train.py:12 [python]
       #1  main at train.py:40 [python]
X
for want in \
  "   peak live 22.0 MiB (host 0 bytes, pinned 0 bytes, managed 0 bytes, device 22.0 MiB)" \
  "     PyTorch caching allocator: latest of 1 snapshot; tensors allocated inside segments at the end 14.0 MiB in 4 blocks, peak 14.0 MiB" \
  "       device 0 (snapshot at 5.0 ms, scan): reserved 22.0 MiB in 2 segments; allocated 12.5 MiB in 3 blocks (requested 12.3 MiB); pending free 1.5 MiB in 1 block; cached free 8.0 MiB in 1 block, largest 8.0 MiB; history: 4 events (alloc 2, free_requested 1, segment_alloc 1)"; do
  grep -qxF -- "$want" "$T/torch.txt" || fail "torch text report lacks: $want"
done
# a trace without caching-allocator records has no such section
grep -q "PyTorch caching allocator" "$T/leaks.txt" && fail "caching allocator section without snapshots"

# Multi-trace text report: one section per process and totals.
"$G" report "$T/multi_parent.trace" "$T/multi_child.trace" >"$T/multi.txt" || fail "multi text"
[ "$(grep -c '^== process ' "$T/multi.txt")" = 2 ] || fail "multi: not two process sections"
grep -q "== totals over 2 processes (2 complete)" "$T/multi.txt" || fail "multi: totals line"
grep -q "inherited from the parent" "$T/multi.txt" || fail "multi: inherited group not marked"

# A trace with no scan is no clean process: said in the text, failed by the
# gate unless --allow-no-scan; a trace that ended by exec is a clean end
# (its live blocks released by the exec), passed without a scan; an exec
# that failed (events after it) is no end.
"$G" report "$T/noend.trace" >"$T/noend.txt" 2>/dev/null || fail "noend text"
grep -q "^   NO LEAK SCAN: the process ended without one" "$T/noend.txt" || fail "noend: no NO LEAK SCAN line"
"$G" report "$T/exec.trace" >"$T/exec.txt" 2>"$T/exec.err" || fail "exec text"
[ -s "$T/exec.err" ] && fail "exec: warning on stderr: $(head -1 "$T/exec.err")"
grep -qxF "   ended by exec, a clean end with no leak scan: the exec released 300 bytes in 2 blocks; the new image's trace has the verdict" \
  "$T/exec.txt" || fail "exec: released line"
grep -q "INCOMPLETE\|NO LEAK SCAN\|not-freed:" "$T/exec.txt" && fail "exec: reported as incomplete, unscanned or not freed"
grep -q "^   INCOMPLETE" <("$G" report "$T/exec_failed.trace" 2>/dev/null) || fail "exec_failed: not incomplete"
chk() { # WANT-STATUS ARGS...
  local want=$1; shift
  "$G" check --no-symbols "$@" >"$T/chk.out" 2>/dev/null; local rc=$?
  [ $rc = "$want" ] || fail "check $*: exit $rc, expected $want: $(head -1 "$T/chk.out")"
}
chk 1 "$T/noend.trace"
grep -qF "; no leak scan in the trace (--allow-no-scan accepts it)" "$T/chk.out" || fail "noend verdict: $(head -1 "$T/chk.out")"
chk 0 --allow-no-scan "$T/noend.trace"
grep -qF "; no leak scan in the trace, allowed" "$T/chk.out" || fail "noend allowed verdict: $(head -1 "$T/chk.out")"
chk 0 "$T/exec.trace"
chk 1 "$T/exec_failed.trace"
chk 0 "$T/leaks.trace" --max-leak-bytes 2M --max-device-leak-bytes 2M
chk 1 "$T/noend.trace" "$T/exec.trace" --junit "$T/j.xml" --json "$T/v.json"
grep -c '<failure type="gcspy.no-scan"' "$T/j.xml" | grep -qx 1 || fail "junit: not one gcspy.no-scan failure"
$PY - "$T/v.json" <<'X' || fail "check --json: no-scan verdicts"
import json, sys
d = json.load(open(sys.argv[1]))
v = [(p['leak_status'], p['verdict']['status'], p['verdict']['no_scan']) for p in d['processes']]
assert v == [('no-scan', 'fail', True), ('exec', 'pass', False)], v
assert d['totals']['no_scan'] == 1 and d['totals']['ended_by_exec'] == 1, d['totals']
X

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "analyzer golden: all checks passed"
