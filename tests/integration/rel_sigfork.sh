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

# The same fork, while gcspy's writer samples mallinfo2 (every 10 ms tick,
# a walk of 30,000 free chunks with the main arena's lock held): a fork
# through _Fork copied that lock, held for ever in the child, whose
# mallinfo2 then waited until its 2 s alarm killed it (2 bad children in
# 16 forks before the fix). Expected: "forks=40 bad=0", exit 0, and the
# parent's trace consistent (the children, traced or not, write nothing to
# check here: exit scans off).
GS_TIMEOUT=60 GCSPY_SCAN_AT_EXIT=0 GCSPY_FLUSH_MS=10 GCSPY_SAMPLE_MS=1 \
  gs_run sigfork-mallinfo "$GS_PROGS/rel_sigfork" 40 malloc
[ "$GS_RC" -eq 0 ] || fail "sigfork-mallinfo: exit status $GS_RC: $(cat "$GS_DIR/out")"
grep -qx 'forks=40 bad=0' "$GS_DIR/out" || fail "sigfork-mallinfo: output $(cat "$GS_DIR/out") (a child found a malloc arena locked)"
for f in $(gs_traces); do gs_dump "$f"; done
echo "sigfork-mallinfo: 40 forks while the writer samples mallinfo2, every child's malloc arenas free"
gs_done
