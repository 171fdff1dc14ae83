#!/usr/bin/env bash
# A traced process that dies (tests/programs/rel_faults.c): SIGSEGV in the
# program, abort(), the exit_group system call made directly (no libc, no
# shim), SIGKILL to itself, and SIGKILL sent by this script while the
# program allocates (kill-ext); and, for comparison, the endings the shim
# sees: _exit() (hooked: the trace end is written) and a return from main.
# For each:
#   - the exit status is the one the program has without the shim;
#   - after return and _exit the trace is complete and holds every
#     allocation; after the others it is readable up to its last complete
#     chunk, consistent, and marked incomplete, by rel_tracecount and by
#     `gcspy report` (exit 0, a warning naming the trace incomplete, JSON
#     complete=false, the allocation count the trace holds);
#   - the 777-byte allocations in it are at most those the program made
#     (it counts them in a shared file), and what is missing is at most the
#     last REL_LOST_MS (500) ms of a 1 s run at 100 allocations per ms: the
#     flush interval is 100 ms. The loss is printed as a "figure:" line.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_faults
gs_need rel_faults rel_tracecount
P=$GS_PROGS/rel_faults
COUNT=$GS_PROGS/rel_tracecount
MS=${REL_MS:-1000}
LOST_MAX=${REL_LOST_MS:-500}
kv() { sed -n "s/^$2=//p" "$1" | head -1; }

# kill_ext: the program would run 10 s; the script sends SIGKILL after 1 s.
kill_ext() {
  GS_DIR=$GS_T/$1
  rm -rf "$GS_DIR"; mkdir -p "$GS_DIR"
  env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$GS_DIR/%e-%p.trace" GCSPY_QUIET=1 \
      "$P" return "$GS_T/$1.cnt" 10000 >"$GS_DIR/out" 2>"$GS_DIR/err" &
  local pid=$!
  sleep "$(awk -v m="$MS" 'BEGIN { print m / 1000 }')"
  kill -KILL $pid
  wait $pid 2>/dev/null
  GS_RC=$?
}

for end in segv abort sysexit kill kill-ext exit return; do
  case $end in segv) want=139 ;; abort) want=134 ;; *exit) want=5 ;; kill*) want=137 ;; return) want=4 ;; esac
  if [ "$end" = kill-ext ]; then
    kill_ext "$end"
  else
    gs_plain "$end-plain" "$P" "$end" "$GS_T/$end-plain.cnt" 50
    [ "$GS_RC" -eq "$want" ] || fail "$end: plain run exit status $GS_RC, expected $want"
    gs_run "$end" "$P" "$end" "$GS_T/$end.cnt" "$MS"
  fi
  [ "$GS_RC" -eq "$want" ] || { fail "$end: exit status $GS_RC under the shim, $want without"; continue; }
  tr=$(gs_traces)
  [ "$(grep -c . <<<"$tr")" -eq 1 ] || { fail "$end: traces: $tr; stderr: $(head -3 "$GS_DIR/err" | tr "\n" "|")"; continue; }
  # the figures the program kept: allocations made, elapsed ms, allocations by ms
  read -r made ms_done < <(gs_py - "$GS_T/$end.cnt" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
v = struct.unpack('<%dQ' % (len(d) // 8), d)
# killed from outside: elapsed ms = the last ms with a count
el = v[1] or max(i + 1 for i, c in enumerate(v[2:]) if c)
print(v[0], el)
PY
)
  "$COUNT" --incomplete --size 777 777 "$tr" >"$GS_DIR/count" 2>&1 || fail "$end: trace check: $(grep -m5 -E '^error|rel_' "$GS_DIR/count" | tr '\n' ';')"
  got=$(kv "$GS_DIR/count" sel_allocs)
  complete=$(kv "$GS_DIR/count" complete)
  damage=$(kv "$GS_DIR/count" damage)
  if [ "$end" = return ] || [ "$end" = exit ]; then
    [ "$complete" = yes ] || fail "$end: trace incomplete"
    [ "$got" = "$made" ] || fail "$end: $got allocations of 777 bytes in the trace, the program made $made"
  else
    [ "$complete" = no ] || fail "$end: trace claims to be complete"
    [ -z "$damage" ] || [[ "$damage" == *"truncated chunk"* ]] || fail "$end: damage other than a cut chunk: $damage"
    [ "$got" -gt 0 ] && [ "$got" -le "$made" ] || fail "$end: $got allocations in the trace, the program made $made"
  fi
  # ms of the run whose allocations are missing from the trace
  lost_ms=$(gs_py - "$GS_T/$end.cnt" "$got" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
v = struct.unpack('<%dQ' % (len(d) // 8), d)
got = int(sys.argv[2])
el = v[1] or max(i + 1 for i, c in enumerate(v[2:]) if c)
per_ms = v[2:2 + el]
first = next((i for i, c in enumerate(per_ms) if c >= got), el)
print(el - first if got < v[0] else 0)
PY
)
  [ "$lost_ms" -le "$LOST_MAX" ] || fail "$end: the trace lost the last $lost_ms ms of the run (limit $LOST_MAX ms)"
  echo "figure: $end: program made $made allocations in ${ms_done} ms; trace holds $got; lost $((made - got)) allocations ($lost_ms ms); $(kv "$GS_DIR/count" chunks) chunks${damage:+; reader: $damage}"

  # the analyzer reports what the trace holds and says it is incomplete
  "$GS_CLI" report --format json -o "$GS_DIR/r.json" "$tr" 2>"$GS_DIR/r.err"
  rc=$?
  [ $rc -eq 0 ] || fail "$end: gcspy report exit $rc: $(head -2 "$GS_DIR/r.err")"
  if [ "$complete" = no ]; then
    grep -q "warning: .* is incomplete" "$GS_DIR/r.err" || fail "$end: no incomplete warning: $(head -2 "$GS_DIR/r.err")"
  fi
  gs_py - "$GS_DIR/r.json" "$(kv "$GS_DIR/count" allocs)" "$end" <<'PY' || fail "$end: report JSON"
import json, sys
p = json.load(open(sys.argv[1]))['processes'][0]
want_complete = sys.argv[3] in ('return', 'exit')
assert p['complete'] is want_complete, 'complete=%r' % p['complete']
assert p['events']['allocs'] == int(sys.argv[2]), 'report allocs %d, trace %s' % (p['events']['allocs'], sys.argv[2])
PY
done
gs_done
