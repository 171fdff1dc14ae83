#!/usr/bin/env bash
# fork() from a signal handler while the program allocates
# (tests/programs/rel_sigfork.c): a SIGALRM handler forks every millisecond
# and the child _exits at once. The handler often interrupts a malloc or a
# free inside the shim (a shard lock held, or glibc's arena lock inside the
# real malloc); the fork used to wait on that lock forever (killed at the
# timeout). Expected: "forks=300 bad=0", exit 0; the parent's trace
# complete and consistent; every child either writes a complete, consistent
# trace of its own (its fork did not interrupt the shim) or says, in one
# line, that it is not traced: the two together are the 300 children.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_sigfork
gs_need rel_sigfork

GS_TIMEOUT=120 GCSPY_QUIET=0 gs_run sigfork "$GS_PROGS/rel_sigfork" 300
[ "$GS_RC" -eq 0 ] || fail "sigfork: exit status $GS_RC: $(cat "$GS_DIR/out") $(head -3 "$GS_DIR/err")"
grep -qx 'forks=300 bad=0' "$GS_DIR/out" || fail "sigfork: output $(cat "$GS_DIR/out")"
untraced=$(grep -Ec '^gcspy: pid [0-9]+: forked by a signal handler that interrupted gcspy; this child is not traced$' "$GS_DIR/err")
other=$(grep -v '^gcspy: pid [0-9]*: forked by' "$GS_DIR/err" | grep -Evc '^gcspy: (pid [0-9]+: [0-9]+ allocations|trace: )')
[ "$other" -eq 0 ] || fail "sigfork: stderr: $(grep -v '^gcspy: pid [0-9]*: forked by' "$GS_DIR/err" | head -3)"
traces=0
for f in $(gs_traces); do
  gs_dump "$f"
  gs_check "$f.txt" >/dev/null
  traces=$((traces + 1))
done
# the parent's trace, and one per traced child
[ $((traces - 1 + untraced)) -eq 300 ] || fail "sigfork: $((traces - 1)) child traces and $untraced untraced children, expected 300 in all"
echo "sigfork: 300 forks, $((traces - 1)) children traced, $untraced not (their fork interrupted the shim)"
gs_done
