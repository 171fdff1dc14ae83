#!/usr/bin/env bash
# The shim under load (tests/programs/rel_load.c), every count checked
# exactly against the trace by build/tests/programs/rel_tracecount:
#   churn   REL_THREADS (64) threads allocating and freeing for REL_SECONDS
#           (3), threads ending and starting throughout, a scan every 200 ms:
#           no deadlock; exactly the program's allocations and frees (none
#           lost, none duplicated, none out of order for their address);
#           one THREAD_START per thread that allocated, one THREAD_EXIT per
#           worker; scans completed; the shim's memory bounded (the peak
#           RSS over the plain run's stays under the writer's backlog limit
#           of 256 MiB plus 64 MiB).
#   live    REL_LIVE (1,000,000) blocks live at once and at exit: exact
#           counts, the exit scan sees every one (no definite leak), the
#           shim's memory per live block measured and at most 48 bytes.
#   events  REL_EVENTS (5,000,000) events from 8 threads: exact counts.
# `make soak` runs this script at full size (64 threads for SOAK_SECONDS,
# 10M live blocks, 100M events). Figures are printed as "figure: ..." lines
# (docs/reliability.md quotes them).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_load
gs_need rel_load rel_tracecount
P=$GS_PROGS/rel_load
COUNT=$GS_PROGS/rel_tracecount
THREADS=${REL_THREADS:-64}
SECONDS_=${REL_SECONDS:-3}
LIVE=${REL_LIVE:-1000000}
EVENTS=${REL_EVENTS:-5000000}

# kv FILE KEY: the value of KEY=... in FILE (rel_tracecount and program output)
kv() { sed -n "s/^$2=//p" "$1" | head -1; }
# word FILE PREFIX KEY: KEY=value from the line of FILE starting with PREFIX
word() { grep -m1 "^$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
count() {
  "$COUNT" "$@" >"$GS_DIR/count" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || fail "$(basename "$GS_DIR"): trace check (exit $rc): $(grep -m5 -E '^error|rel_tracecount' "$GS_DIR/count" | tr '\n' ';')"
}

# ---- churn ----
ms=$((SECONDS_ * 1000))
GS_TIMEOUT=$((SECONDS_ * 3 + 120)) gs_plain churn_plain "$P" churn "$THREADS" "$ms"
plain_peak=$(word "$GS_DIR/out" "rss_kb phase=peak" kb)
[ -n "$plain_peak" ] || { fail "churn: the run without the shim failed (exit $GS_RC)"; plain_peak=0; }
t0=$(date +%s.%N)
GS_TIMEOUT=$((SECONDS_ * 3 + 120)) GCSPY_SCAN_INTERVAL_MS=200 gs_run churn "$P" churn "$THREADS" "$ms"
t1=$(date +%s.%N)
if [ "$GS_RC" -ne 0 ]; then
  fail "churn: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
elif [ "$(gs_traces | wc -l)" -ne 1 ]; then
  fail "churn: $(gs_traces | wc -l) traces"
else
  out=$GS_DIR/out
  A=$(word "$out" churn allocs) F=$(word "$out" churn frees) N=$(word "$out" churn active)
  T=$(word "$out" churn threads)
  count --size 5000 5999 "$(gs_traces)"
  c=$GS_DIR/count
  [ "$(kv "$c" sel_allocs)" = "$A" ] || fail "churn: $(kv "$c" sel_allocs) allocations in the trace, the program made $A"
  [ "$(kv "$c" sel_frees)" = "$F" ] || fail "churn: $(kv "$c" sel_frees) frees in the trace, the program made $F"
  [ "$(kv "$c" sel_live)" = 0 ] || fail "churn: $(kv "$c" sel_live) blocks live at the end, expected 0"
  [ "$(kv "$c" threads_started)" = $((N + 1)) ] || fail "churn: $(kv "$c" threads_started) thread starts, expected $((N + 1)) ($N workers that allocated + main)"
  [ "$(kv "$c" threads_exited)" = "$N" ] || fail "churn: $(kv "$c" threads_exited) thread exits, expected $N"
  [ "$(kv "$c" scans)" -ge 1 ] || fail "churn: no scan completed"
  shim_peak=$(word "$out" "rss_kb phase=peak" kb)
  q1=$(word "$out" "rss_kb phase=q1" kb) end=$(word "$out" "rss_kb phase=end" kb)
  over=$(( (shim_peak - plain_peak) / 1024 ))
  [ "$over" -le $((256 + 64)) ] || fail "churn: shim peak RSS ${shim_peak} kB vs plain ${plain_peak} kB: $over MiB over"
  echo "figure: churn threads=$THREADS seconds=$SECONDS_ thread_lifetimes=$T events_checked=$((A + F)) scans=$(kv "$c" scans) wall=$(secs "$t0" "$t1")s"
  echo "figure: churn rss plain_peak=${plain_peak}kB shim_peak=${shim_peak}kB shim_q1=${q1}kB shim_end=${end}kB"
fi

# ---- live ----
GS_TIMEOUT=$((LIVE / 20000 + 120)) gs_plain live_plain "$P" live "$LIVE"
plain_peak=$(word "$GS_DIR/out" "rss_kb phase=end" kb)
[ -n "$plain_peak" ] || { fail "live: the run without the shim failed (exit $GS_RC)"; plain_peak=0; }
t0=$(date +%s.%N)
GS_TIMEOUT=$((LIVE / 20000 + 120)) gs_run live "$P" live "$LIVE"
t1=$(date +%s.%N)
if [ "$GS_RC" -ne 0 ]; then
  fail "live: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
else
  out=$GS_DIR/out
  A=$(word "$out" live allocs) F=$(word "$out" live frees)
  count --size 24 31 "$(gs_traces | head -1)"
  c=$GS_DIR/count
  [ "$(kv "$c" sel_allocs)" = "$A" ] || fail "live: $(kv "$c" sel_allocs) allocations in the trace, the program made $A"
  [ "$(kv "$c" sel_frees)" = "$F" ] || fail "live: $(kv "$c" sel_frees) frees, the program made $F"
  [ "$(kv "$c" sel_live)" = "$LIVE" ] || fail "live: $(kv "$c" sel_live) blocks live at exit, expected $LIVE"
  [ "$(kv "$c" scans)" = 1 ] || fail "live: $(kv "$c" scans) scans, expected the exit scan"
  [ "$(kv "$c" last_scan_definite)" = 0 ] || fail "live: $(kv "$c" last_scan_definite) definite leaks, all blocks are reachable"
  [ "$(kv "$c" last_scan_reachable)" -ge "$LIVE" ] || fail "live: the exit scan found $(kv "$c" last_scan_reachable) reachable blocks, expected at least $LIVE"
  shim_peak=$(word "$out" "rss_kb phase=end" kb)
  per=$(( (shim_peak - plain_peak) * 1024 / LIVE ))
  # 37 to 39 bytes measured (issue 16: 40 and not more); 55 when every
  # grown table was faulted in whole, windows no block uses included
  [ "$per" -le 48 ] || fail "live: shim memory $per bytes per live block, more than 48 (peak ${shim_peak} kB vs ${plain_peak} kB)"
  echo "figure: live blocks=$LIVE events_checked=$((A + F)) wall=$(secs "$t0" "$t1")s plain_peak=${plain_peak}kB shim_peak=${shim_peak}kB overhead_per_block=${per}B"
fi

# ---- events ----
GS_TIMEOUT=$((EVENTS / 100000 + 120)) gs_plain events_plain "$P" events "$EVENTS" 8
t0=$(date +%s.%N)
GS_TIMEOUT=$((EVENTS / 100000 + 120)) gs_run events "$P" events "$EVENTS" 8
t1=$(date +%s.%N)
if [ "$GS_RC" -ne 0 ]; then
  fail "events: exit status $GS_RC: $(head -3 "$GS_DIR/err")"
else
  out=$GS_DIR/out
  A=$(word "$out" events allocs) F=$(word "$out" events frees)
  [ $((A + F)) -eq "$((EVENTS / 2 * 2))" ] || fail "events: the program made $((A + F)) events, asked for $EVENTS"
  count --size 2000 2999 "$(gs_traces)"
  c=$GS_DIR/count
  [ "$(kv "$c" sel_allocs)" = "$A" ] || fail "events: $(kv "$c" sel_allocs) allocations in the trace, the program made $A"
  [ "$(kv "$c" sel_frees)" = "$F" ] || fail "events: $(kv "$c" sel_frees) frees, the program made $F"
  echo "figure: events checked=$((A + F)) threads=8 wall=$(secs "$t0" "$t1")s trace_bytes=$(stat -c %s "$(gs_traces)") shim_peak=$(word "$out" "rss_kb phase=end" kb)kB"
fi
gs_done
