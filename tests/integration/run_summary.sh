#!/usr/bin/env bash
# Who prints the exit summary, and where (GCSPY_SUMMARY, preload/life.c;
# gcspy run, analyzer/cli/run_summary.c):
#   first  with LD_PRELOAD alone (the default), the top process of a tree
#          prints its summary; a traced child whose stderr the parent
#          captures writes nothing there
#   all    every traced process prints, the child too; none: nobody
#   run    under gcspy run no traced process writes to the program's
#          stderr (the child's captured stderr stays empty); gcspy run
#          prints one summary line per process that exited (pid, figures,
#          the exit scan's verdict: what it found lost at how many sites,
#          as the report's sites count it; trace), none for an image that
#          exec'd, then the report command
#          naming every trace; the program's exit status passes through;
#          --quiet prints nothing; a process killed by a signal: gcspy run
#          ends by that signal, after a line saying the trace has no end
#   reopen a program that closes 0-2 and opens three data files
#          (tests/programs/shim_reopen.c): the data files hold their data
#          only, whatever GCSPY_SUMMARY says, and under gcspy run
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init run_summary
gs_need shim_reopen shim_exits

# A shell whose child (another shell) has its stderr captured in child.err.
tree() { # DIR [env...]
  local d=$1; shift
  mkdir -p "$d"
  env -u GCSPY_SUMMARY LD_PRELOAD="$GS_LIB" GCSPY_QUIET=0 GCSPY_OUTPUT="$d/%e-%p.trace" "$@" \
    sh -c 'sh -c "x=1" 2>"$1/child.err"; echo $$ >"$1/top.pid"' sh "$d" 2>"$d/top.err"
}
summaries() { grep -c '^gcspy: pid [0-9]*: .* not freed at exit' "$1"; }

D=$GS_T/first
tree "$D"
[ -s "$D/child.err" ] && fail "first: the child wrote on its captured stderr: $(head -2 "$D/child.err")"
[ "$(summaries "$D/top.err")" = 1 ] && grep -q "^gcspy: pid $(cat "$D/top.pid"): " "$D/top.err" ||
  fail "first: not one summary, the top shell's: $(cat "$D/top.err")"

D=$GS_T/all
tree "$D" GCSPY_SUMMARY=all
[ "$(summaries "$D/child.err")" = 1 ] || fail "all: the child printed no summary: $(cat "$D/child.err")"
[ "$(summaries "$D/top.err")" = 1 ] || fail "all: the top shell printed no summary: $(cat "$D/top.err")"

D=$GS_T/none
tree "$D" GCSPY_SUMMARY=none
[ -s "$D/top.err" ] || [ -s "$D/child.err" ] && fail "none: something printed: $(cat "$D/top.err" "$D/child.err")"

# gcspy run: the same tree, exit status 5; its own stderr has the summaries.
D=$GS_T/run
mkdir -p "$D"
(cd "$D" && "$GS_CLI" run -- sh -c 'sh -c "x=1" 2>"$1/child.err"; exec sh -c "exit 5"' sh "$D" \
  >"$D/out" 2>"$D/run.err"); rc=$?
[ $rc = 5 ] || fail "run: exit status $rc, expected the program's 5"
[ -s "$D/child.err" ] && fail "run: the child wrote on its captured stderr: $(head -2 "$D/child.err")"
for f in "$D"/gcspy-*.trace*; do
  "$GS_CLI" report --no-symbols -q --format json -o "$f.json" "$f" || fail "report $f"
done
gs_py - "$D" <<'PY' || fail "run: see above"
import glob, json, os, re, sys
d = sys.argv[1]
lines = open(os.path.join(d, 'run.err')).read().splitlines()
traces = sorted(os.path.basename(f) for f in glob.glob(os.path.join(d, 'gcspy-*.trace*')) if not f.endswith('.json'))
procs = {t: json.load(open(os.path.join(d, t + '.json')))['processes'][0] for t in traces}
# the top shell, its child, and the top shell's exec'd image: 3 traces, one ended by exec
assert len(traces) == 3, traces
ended = sorted(t for t, p in procs.items() if p['exit'] and p['exit']['how'] == 'normal')
execd = [t for t, p in procs.items() if p['leak_status'] == 'exec']
assert len(ended) == 2 and len(execd) == 1, procs
summary = [l for l in lines if re.match(r'gcspy: pid \d+: \d+ allocations', l)]
want = []
for t in ended:
    p = procs[t]
    want.append('gcspy: pid %d: %d allocations' % (p['pid'], p['events']['allocs']))
got = sorted(re.sub(r' \(.*', '', l) for l in summary)
assert got == sorted(want), (got, want)
for t in ended:
    assert any(l.endswith('; trace ' + t) for l in summary), (t, summary)
# the scan's verdict, as `gcspy check` counts it: the unsuppressed sites
# whose worst class is definite or indirect, all their lost blocks
for t in ended:
    p = procs[t]
    line = [l for l in summary if l.endswith('; trace ' + t)][0]
    sites = [s for s in p['sites'] if not s['suppressed'] and not s['inherited']
             and s['worst_class'] in ('definite', 'indirect')]
    blocks = sum(s['lost']['blocks'] for s in sites)
    if blocks:
        m = re.search(r'; LEAKED .* in (\d+) blocks? at (\d+) sites? \(', line)
        assert m and int(m.group(1)) == blocks and int(m.group(2)) == len(sites), (line, blocks, len(sites))
    else:
        assert '; no leak: the scan at exit found no block definitely or indirectly lost;' in line, line
assert lines[-1] == 'gcspy: report (3 traces): gcspy report ' + ' '.join(traces), lines[-1]
assert len(lines) == 3, lines
print('run ok:', len(summary), 'summaries,', len(traces), 'traces')
PY
# a program that kills itself (tests/programs/shim_exits.c kill: after
# several flush intervals): gcspy run ends by the same signal and says the
# trace has no end and no scan
D=$GS_T/runkill
mkdir -p "$D"
{ (cd "$D" && "$GS_CLI" run -- "$GS_PROGS/shim_exits" kill 2>"$D/run.err"); rc=$?; } 2>/dev/null
[ $rc = 137 ] || fail "run kill: exit status $rc, expected 137 (SIGKILL)"
grep -q "^gcspy: pid [0-9]*: the trace has no end (killed, _exit, or still running), so no leak scan; trace gcspy-shim_exits-[0-9]*\.trace$" \
  "$D/run.err" || fail "run kill: no line for the killed process: $(cat "$D/run.err")"
D=$GS_T/runq
mkdir -p "$D"
(cd "$D" && "$GS_CLI" run --quiet -- sh -c 'exit 0' 2>"$D/run.err") || fail "run --quiet: exit $?"
[ -s "$D/run.err" ] && fail "run --quiet printed: $(cat "$D/run.err")"

# reopen: the data files hold their data only.
reopen_ok() { # DIR WHAT
  local k
  for k in 0 1 2; do
    [ "$(cat "$1/data$k")" = "data $k" ] || fail "$2: data$k holds: $(head -c 300 "$1/data$k")"
  done
}
for s in first all; do
  D=$GS_T/reopen-$s
  mkdir -p "$D"
  env LD_PRELOAD="$GS_LIB" GCSPY_QUIET=0 GCSPY_SUMMARY=$s GCSPY_OUTPUT="$D/t-%p.trace" \
    "$GS_PROGS/shim_reopen" "$D" || fail "reopen $s: exit $?"
  reopen_ok "$D" "reopen $s"
done
D=$GS_T/reopen-run
mkdir -p "$D"
(cd "$D" && "$GS_CLI" run -- "$GS_PROGS/shim_reopen" "$D" 2>"$D/run.err") || fail "reopen run: exit $?"
reopen_ok "$D" "reopen run"
grep -q "^gcspy: pid [0-9]*: [0-9]* allocations (.*); .*; trace gcspy-shim_reopen-" "$D/run.err" ||
  fail "reopen run: gcspy run printed no summary: $(cat "$D/run.err")"
gs_done
