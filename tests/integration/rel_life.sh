#!/usr/bin/env bash
# How a process under the shim starts and ends (tests/programs/rel_endings.c,
# rel_premalloc.c; issue 15, items 3, 9 and 12): programs that end without
# exit(), a scan signal a fault would use, bad option values, an allocator
# preloaded before gcspy.
#   pthread_exit, worker, rawexit, seccomp
#            main ends with pthread_exit() (alone, or leaving a worker that
#            ends 200 ms later) or with a raw SYS_exit (7; 0 after seccomp
#            strict mode): the process ends with the status it has without
#            gcspy (0, 0, 7, 0), within the 10 s the run is given (it used
#            to live on for gcspy's writer: 137 when killed), and its trace
#            is complete with exactly the program's 100 allocations and 60
#            frees of 4000..4099 bytes and its exit status, and one exit
#            scan (run by gcspy's writer once no program thread is left; there
#            was none before), all 40 live blocks reachable.
#   zombie   main loses 5 blocks of 6000 bytes and ends with pthread_exit()
#            while a worker runs 1.5 s, under scans every 200 ms: the main
#            thread stays in /proc/self/task as a zombie, which the scans
#            used to wait 3 s for and give up on ("scan skipped"), holding the
#            worker stopped meanwhile; and with the main thread gone the
#            kernel's /proc/self/maps is empty and process_vm_readv of the
#            process id fails, so a scan that ran found no root. Now: no
#            skipped scan, at least 3 periodic ones and the exit scan, each
#            with exactly the 5 lost blocks (30000 bytes) definite.
#   segv     GCSPY_SCAN_SIGNAL=11 is refused with one line naming it, and a
#            program that faults dies of SIGSEGV (139) as without gcspy
#            (it used to spin in the scan handler for ever); SIGBUS, SIGFPE,
#            SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGKILL and SIGSTOP too.
#   options  GCSPY_DEPTH=0 and 257, GCSPY_SCAN_MODE=xyz, GCSPY_FLUSH_MS=5,
#            GCSPY_SCAN_SIGNAL=65: one line each, the default kept (the
#            trace's depth is 64), the program unaffected.
#   premalloc  LD_PRELOAD=rel_premalloc.so:libgcspy.so (a malloc of its own,
#            as jemalloc or LeakSanitizer first): one line naming it, the
#            status unchanged (it used to say nothing and record 0
#            allocations); in the other order no line and all 100
#            allocations traced; liblsan.so.0 first, where installed, also
#            named in one line; python3 (whose executable holds a PLT
#            entry for malloc) gets no such line. gcspy first and
#            liblsan.so.0 after it: bash's command substitution (a forked
#            child) ends normally (it hung in LSan's pthread_join).
# The runs are killed with SIGKILL at their deadline: a process kept alive
# by gcspy's writer cannot be ended with SIGTERM (the writer blocks it).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_life
gs_need rel_endings rel_tracecount rel_premalloc.so
P=$GS_PROGS/rel_endings
COUNT=$GS_PROGS/rel_tracecount
kv() { sed -n "s/^$2=//p" "$1" | head -1; }

for m in pthread_exit:0 worker:0 rawexit:7 seccomp:0; do
  mode=${m%:*} want=${m#*:}
  plain=$( { timeout -s KILL 10 "$P" "$mode"; echo $?; } 2>/dev/null)
  [ "$plain" = "$want" ] || fail "$mode: status $plain without gcspy, expected $want"
  start=$(date +%s%N)
  GCSPY_QUIET=0 GS_TIMEOUT=10 gs_run_here "$mode" "$P" "$mode"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$GS_RC" = "$want" ] || { fail "$mode: status $GS_RC under gcspy, $want without (137: still alive after 10 s)"; continue; }
  "$COUNT" --size 4000 4099 "$(gs_traces)" >"$GS_DIR/c" 2>&1 ||
    fail "$mode: trace check: $(grep -m4 -E '^error|complete' "$GS_DIR/c" | tr '\n' ';')"
  [ "$(kv "$GS_DIR/c" sel_allocs)/$(kv "$GS_DIR/c" sel_frees)" = 100/60 ] ||
    fail "$mode: $(kv "$GS_DIR/c" sel_allocs) allocations and $(kv "$GS_DIR/c" sel_frees) frees in the trace, expected 100 and 60"
  st=$("$GS_CLI" dump "$(gs_traces)" | sed -n 's/^exit .*status=\([0-9-]*\).*/\1/p')
  [ "$st" = "$want" ] || fail "$mode: the trace's exit status is '$st', expected $want"
  grep -v '^gcspy: \(pid\|trace\)' "$GS_DIR/err" | grep -q . && fail "$mode: stderr: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
  scans=$("$GS_CLI" dump "$(gs_traces)" | grep '^scan_end' | sed 's/.*\(definite_blocks=[0-9]*\).*\(reachable_blocks=[0-9]*\).*/\1/')
  [ "$scans" = definite_blocks=0 ] || fail "$mode: exit scans '$(echo $scans)', expected one with definite_blocks=0"
  echo "figure: $mode ended with status $GS_RC in $ms ms under gcspy"
done

start=$(date +%s%N)
GCSPY_QUIET=0 GCSPY_SCAN_INTERVAL_MS=200 GS_TIMEOUT=20 gs_run_here zombie "$P" zombie
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$GS_RC" = 0 ] || fail "zombie: status $GS_RC, expected 0"
grep -v '^gcspy: \(pid\|trace\)' "$GS_DIR/err" | grep -q . && fail "zombie: stderr: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
"$COUNT" "$(gs_traces)" >"$GS_DIR/c" 2>&1 || fail "zombie: trace check: $(grep -m4 -E '^error|complete' "$GS_DIR/c" | tr '\n' ';')"
"$GS_CLI" dump "$(gs_traces)" >"$GS_DIR/dump"
periodic=$(grep -c '^scan_begin .*trigger=periodic' "$GS_DIR/dump")
exits=$(grep -c '^scan_begin .*trigger=exit' "$GS_DIR/dump")
ends=$(grep -c '^scan_end' "$GS_DIR/dump")
right=$(grep '^scan_end' "$GS_DIR/dump" | grep -c ' definite_blocks=5 definite_bytes=30000 ')
[ "$periodic" -ge 3 ] && [ "$exits" = 1 ] && [ "$ends" = $((periodic + 1)) ] ||
  fail "zombie: $periodic periodic scans, $exits exit scans, $ends completed: expected 3 or more, 1, all"
[ "$right" = "$ends" ] || fail "zombie: $right of $ends scans found exactly the 5 lost blocks definite"
echo "figure: zombie (main ended, a worker running) ended in $ms ms, $periodic periodic scans and the exit scan, each with the 5 lost blocks definite"

for sig in 11 7 8 4 6 5 31 9 19; do
  GCSPY_SCAN_SIGNAL=$sig GCSPY_QUIET=0 GS_TIMEOUT=10 gs_run_here "segv$sig" "$P" segv
  [ "$GS_RC" = 139 ] || fail "GCSPY_SCAN_SIGNAL=$sig: a faulting program ended with $GS_RC, expected 139 (SIGSEGV)"
  grep -qx "gcspy: ignoring GCSPY_SCAN_SIGNAL=$sig: signal $sig is the program's own (a fault, abort, SIGKILL or SIGSTOP); no scan signal" "$GS_DIR/err" ||
    fail "GCSPY_SCAN_SIGNAL=$sig: no refusal line: $(head -2 "$GS_DIR/err" | tr '\n' '|')"
done
GCSPY_SCAN_SIGNAL=12 GCSPY_QUIET=0 GS_TIMEOUT=10 gs_run_here segv12 "$P" segv
[ "$GS_RC" = 139 ] || fail "GCSPY_SCAN_SIGNAL=12: status $GS_RC, expected 139"
grep -q 'ignoring' "$GS_DIR/err" && fail "GCSPY_SCAN_SIGNAL=12 refused: $(head -1 "$GS_DIR/err")"

GCSPY_DEPTH=0 GCSPY_SCAN_MODE=xyz GCSPY_FLUSH_MS=5 GCSPY_SCAN_SIGNAL=65 GCSPY_QUIET=0 GS_TIMEOUT=10 \
  gs_run_here options "$P" rawexit
[ "$GS_RC" = 7 ] || fail "options: status $GS_RC, expected 7"
grep '^gcspy: ignoring' "$GS_DIR/err" >"$GS_DIR/lines"
cat >"$GS_DIR/want" <<'W'
gcspy: ignoring GCSPY_DEPTH=0: not a valid value (1 to 256; default 64)
gcspy: ignoring GCSPY_FLUSH_MS=5: not a valid value (10 to 3600000; default 100)
gcspy: ignoring GCSPY_SCAN_SIGNAL=65: not a valid value (0 to 64; default 0)
gcspy: ignoring GCSPY_SCAN_MODE=xyz: not a valid value (one of stw|fork; default stw)
W
diff "$GS_DIR/want" "$GS_DIR/lines" >/dev/null || fail "options: refusal lines: $(tr '\n' '|' <"$GS_DIR/lines")"
depth=$("$GS_CLI" dump "$(gs_traces)" | sed -n 's/^process .* depth=\([0-9]*\).*/\1/p')
[ "$depth" = 64 ] || fail "options: GCSPY_DEPTH=0 gave depth '$depth', expected the default 64"
GCSPY_DEPTH=257 GCSPY_QUIET=0 GS_TIMEOUT=10 gs_run_here depth257 "$P" rawexit
grep -qx 'gcspy: ignoring GCSPY_DEPTH=257: not a valid value (1 to 256; default 64)' "$GS_DIR/err" ||
  fail "GCSPY_DEPTH=257 accepted: $(head -2 "$GS_DIR/err" | tr '\n' '|')"

PRE=$GS_PROGS/rel_premalloc.so
line="gcspy: malloc is $PRE's, not gcspy's (it was loaded before libgcspy.so): no allocation reaches gcspy; put libgcspy.so first in LD_PRELOAD"
GS_PRELOAD="$PRE:$GS_LIB" GCSPY_QUIET=0 gs_run_here premalloc_first "$P" exit
[ "$GS_RC" = 0 ] || fail "premalloc first: status $GS_RC, expected 0"
[ "$(grep -c 'not gcspy' "$GS_DIR/err")" = 1 ] && grep -qxF "$line" "$GS_DIR/err" ||
  fail "premalloc first: expected the line naming it: $(head -2 "$GS_DIR/err" | tr '\n' '|')"
GS_PRELOAD="$GS_LIB:$PRE" GCSPY_QUIET=0 gs_run_here premalloc_second "$P" exit
[ "$GS_RC" = 0 ] || fail "premalloc second: status $GS_RC, expected 0"
grep -q 'not gcspy' "$GS_DIR/err" && fail "premalloc second: $(grep 'not gcspy' "$GS_DIR/err")"
"$COUNT" --size 4000 4099 "$(gs_traces)" >"$GS_DIR/c" 2>&1 || fail "premalloc second: trace check"
[ "$(kv "$GS_DIR/c" sel_allocs)" = 100 ] || fail "premalloc second: $(kv "$GS_DIR/c" sel_allocs) allocations traced, expected 100"
# python3 takes malloc's address: dlsym(RTLD_DEFAULT) names its PLT entry,
# which is no allocator of its own
env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$GS_T/py-%p.trace" GCSPY_QUIET=0 "$GS_PY" -c 'pass' 2>"$GS_T/py.err" ||
  fail "python3 under gcspy: status $?"
grep -q 'not gcspy' "$GS_T/py.err" && fail "python3: $(grep 'not gcspy' "$GS_T/py.err")"
LSAN=$(ls /usr/lib/x86_64-linux-gnu/liblsan.so.0 2>/dev/null)
if [ -n "$LSAN" ]; then
  LSAN_OPTIONS=detect_leaks=0 GS_PRELOAD="$LSAN:$GS_LIB" GCSPY_QUIET=0 gs_run_here lsan_first "$P" exit
  [ "$GS_RC" = 0 ] || fail "liblsan first: status $GS_RC, expected 0"
  grep -qxF "gcspy: malloc is $LSAN's, not gcspy's (it was loaded before libgcspy.so): no allocation reaches gcspy; put libgcspy.so first in LD_PRELOAD" "$GS_DIR/err" ||
    fail "liblsan first: no line naming it: $(head -2 "$GS_DIR/err" | tr '\n' '|')"
  # gcspy first, LeakSanitizer after it: a forked child's end joined its
  # writer through LSan's pthread_join, which found the parent's writer
  # (same pthread_t, still registered in the child) and waited for ever:
  # bash's command substitution hung (killed at 20 s). Now: "hi", status 0,
  # the parent's and the child's traces complete.
  LSAN_OPTIONS=detect_leaks=0 GS_PRELOAD="$GS_LIB:$LSAN" GS_TIMEOUT=20 \
    gs_run_here lsan_after /bin/bash -c 'x=$(echo hi); echo "$x"'
  [ "$GS_RC" = 0 ] || fail "liblsan after gcspy: status $GS_RC, expected 0 (137: hung)"
  [ "$(cat "$GS_DIR/out")" = hi ] || fail "liblsan after gcspy: output '$(cat "$GS_DIR/out")'"
  n=0
  for f in $(gs_traces); do
    "$COUNT" "$f" >"$f.c" 2>&1 || fail "liblsan after gcspy: $f: $(grep -m2 -E '^error' "$f.c" | tr '\n' ';')"
    n=$((n + 1))
  done
  [ "$n" -ge 2 ] || fail "liblsan after gcspy: $n traces, expected bash's and its child's"
else
  echo "liblsan.so.0 not installed: the LeakSanitizer case is not run"
fi
gs_done
