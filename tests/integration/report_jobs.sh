#!/usr/bin/env bash
# `gcspy report -j N` (analyzer/cli/cmdutil.c's gs_each_parallel, turn.h):
# several traces analysed on N threads sharing one symbolizer, in turn.
#   report -j 2 (text, json, html) and -j 3 (json) over four traces (three
#   ranks of tests/programs/job_rank, one of them cut short, and a copy):
#   byte for byte the -j 1 report, and the same stderr (the cut trace's
#   warning) in the same order
#   a missing trace among them: exit status 2, the same one line as -j 1
#   report -j 2, and report --job -j 2: threads (strace sees a clone with
#   CLONE_THREAD), not forked processes: one symbolizer for all
#   check -j 2 and diff -j 2: the -j 1 output
#   one trace with -j 2 (read on one thread, replayed on another:
#   analyze.c's pipeline), a trace of many chunks whole (json, and pprof,
#   which reads it twice) and cut in a middle chunk, and the cut job_rank
#   trace: the -j 1 report and stderr; a thread started
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init report_jobs
gs_need job_rank

D=$GS_T/j
mkdir -p "$D"
for r in 0 1 2; do
  env RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 LD_PRELOAD="$GS_LIB" GCSPY_QUIET=1 \
    GCSPY_OUTPUT="$D/t-%r.trace" "$GS_PROGS/job_rank" || fail "rank $r: exit status $?"
done
# a trace cut inside its last chunk: incomplete, reported with a warning
size=$(stat -c %s "$D/t-2.trace")
head -c $((size - 7)) "$D/t-2.trace" >"$D/cut.trace"
cp "$D/t-1.trace" "$D/copy.trace"
T=("$D/t-0.trace" "$D/t-1.trace" "$D/cut.trace" "$D/copy.trace")

for fmt in text json html; do
  "$GS_CLI" report --format "$fmt" -o "$D/r1.$fmt" "${T[@]}" 2>"$D/e1.$fmt" ||
    fail "-j 1 $fmt: exit status $?: $(cat "$D/e1.$fmt")"
  js=2
  [ $fmt = json ] && js="2 3"
  for j in $js; do
    "$GS_CLI" report -j $j --format "$fmt" -o "$D/r$j.$fmt" "${T[@]}" 2>"$D/e$j.$fmt" ||
      fail "-j $j $fmt: exit status $?: $(cat "$D/e$j.$fmt")"
    cmp -s "$D/r1.$fmt" "$D/r$j.$fmt" ||
      fail "-j $j $fmt differs from -j 1: $(diff "$D/r1.$fmt" "$D/r$j.$fmt" | head -4)"
    cmp -s "$D/e1.$fmt" "$D/e$j.$fmt" ||
      fail "-j $j $fmt: stderr differs: $(diff "$D/e1.$fmt" "$D/e$j.$fmt" | head -4)"
  done
done
grep -q "job_rank_leak" "$D/r1.text" || fail "the text report has no job_rank_leak: $(head -20 "$D/r1.text")"
[ "$(grep -c "cut.trace is incomplete" "$D/e2.text")" = 1 ] ||
  fail "-j 2: the cut trace's warning, once: $(cat "$D/e2.text")"

"$GS_CLI" report "$D/t-0.trace" "$D/none.trace" "$D/t-1.trace" >/dev/null 2>"$D/m1"; rc1=$?
"$GS_CLI" report -j 2 "$D/t-0.trace" "$D/none.trace" "$D/t-1.trace" >/dev/null 2>"$D/m2"; rc2=$?
[ $rc1 = 2 ] && [ $rc2 = 2 ] && [ "$(wc -l <"$D/m2")" = 1 ] && grep -q "none.trace" "$D/m2" &&
  cmp -s "$D/m1" "$D/m2" || fail "a missing trace, -j 2: exit $rc2 (-j 1: $rc1), $(cat "$D/m2")"

# threads, not processes: one symbolizer shared by the traces
for mode in "" "--job"; do
  # shellcheck disable=SC2086 # $mode: no option, or one
  strace -f -qq -e trace=clone,clone3,fork,vfork -o "$D/st" \
    "$GS_CLI" report $mode -j 2 "${T[@]}" >/dev/null 2>&1
  grep -q CLONE_THREAD "$D/st" || fail "report $mode -j 2 started no thread: $(head -3 "$D/st")"
  ! grep -v CLONE_THREAD "$D/st" | grep -qE "clone|fork" ||
    fail "report $mode -j 2 started a process: $(grep -v CLONE_THREAD "$D/st" | head -3)"
done

# one trace, -j 2: the pipeline. A trace of several chunks (the shim
# flushes every 5 ms), and it cut in a middle chunk.
[ -x build/bench/churn ] || { echo "build/bench/churn missing (make test-build)"; exit 1; }
env GCSPY_FLUSH_MS=5 LD_PRELOAD="$GS_LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$D/big.trace" \
  build/bench/churn --pairs 40000 --threads 2 --live 1000 --depth 6 >/dev/null ||
  fail "churn: exit status $?"
size=$(stat -c %s "$D/big.trace")
head -c $((size / 2)) "$D/big.trace" >"$D/bigcut.trace"
for f in big.trace bigcut.trace cut.trace; do
  fmts=json
  [ $f = big.trace ] && fmts="json pprof"
  for fmt in $fmts; do
    "$GS_CLI" report --format $fmt -o "$D/p1" "$D/$f" 2>"$D/pe1"; r1=$?
    "$GS_CLI" report -j 2 --format $fmt -o "$D/p2" "$D/$f" 2>"$D/pe2"; r2=$?
    [ $r1 = $r2 ] && cmp -s "$D/p1" "$D/p2" && cmp -s "$D/pe1" "$D/pe2" ||
      fail "one trace $f $fmt, -j 2: exit $r2 (-j 1: $r1), $(cmp "$D/p1" "$D/p2"; diff "$D/pe1" "$D/pe2" | head -3)"
  done
done
strace -f -qq -e trace=clone,clone3 -o "$D/st" "$GS_CLI" report -j 2 "$D/big.trace" >/dev/null 2>&1
grep -q CLONE_THREAD "$D/st" || fail "report -j 2 of one trace started no thread"

"$GS_CLI" check "${T[@]}" >"$D/c1" 2>&1; c1=$?
"$GS_CLI" check -j 2 "${T[@]}" >"$D/c2" 2>&1; c2=$?
[ $c1 = $c2 ] && cmp -s "$D/c1" "$D/c2" || fail "check -j 2: exit $c2 (-j 1: $c1), $(diff "$D/c1" "$D/c2" | head -4)"
"$GS_CLI" diff "$D/t-0.trace" "$D/t-1.trace" >"$D/d1" 2>&1; d1=$?
"$GS_CLI" diff -j 2 "$D/t-0.trace" "$D/t-1.trace" >"$D/d2" 2>&1; d2=$?
[ $d1 = $d2 ] && cmp -s "$D/d1" "$D/d2" && grep -q job_rank_leak "$D/d1" ||
  fail "diff -j 2: exit $d2 (-j 1: $d1), $(diff "$D/d1" "$D/d2" | head -4)"
gs_done
