#!/usr/bin/env bash
# The analyzer's benchmark (part of `make bench`; alone: `make bench-analyzer`):
#   - `gcspy report --format json` (symbolization on) over a synthetic trace of
#     BENCH_AN_EVENTS events (default 100 million; bench/analyzer_bench.c says
#     what the workload is): events analysed per second per core (events /
#     CPU seconds) and peak memory (max RSS). Targets: >= 20 M events/s per
#     core, < 256 MiB (issue 16);
#   - `gcspy report -j 1` and `-j 2` over 4 traces of BENCH_AN_PAR_EVENTS
#     events each (default a tenth of BENCH_AN_EVENTS): wall and CPU
#     seconds, peak memory, the speed-up (-j 1 wall / -j 2 wall); the two
#     reports must be the same byte for byte;
#   - for reference, in the same run: heaptrack_print over a heaptrack
#     recording of the same allocation pattern made by real calls
#     (BENCH_AN_HT_EVENTS, default 10 million; heaptrack's recording is slow).
# BENCH_QUICK=1 uses 5 million and 2 million (and 500000 per -j trace). Prints a table and writes it to
# $BUILD/bench/analyzer-results.md. Exit status 0 when everything was
# measured (targets met or not), 1 when a run failed, 2 when it cannot run.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
GEN=$BUILD/bench/analyzer_bench CLI=$BUILD/gcspy
if [ "${BENCH_QUICK:-0}" = 1 ]; then
  EVENTS=${BENCH_AN_EVENTS:-5000000} HT_EVENTS=${BENCH_AN_HT_EVENTS:-2000000}
else
  EVENTS=${BENCH_AN_EVENTS:-100000000} HT_EVENTS=${BENCH_AN_HT_EVENTS:-10000000}
fi
PAR_EVENTS=${BENCH_AN_PAR_EVENTS:-$((EVENTS / 10 > 0 ? EVENTS / 10 : 1))}
for v in EVENTS HT_EVENTS PAR_EVENTS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "analyzer_bench: $v must be a positive integer" >&2; exit 2; }
done
[ -x "$GEN" ] && [ -x "$CLI" ] || { echo "analyzer_bench: build $GEN and $CLI first (make bench-analyzer)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "analyzer_bench: /usr/bin/time is needed" >&2; exit 2; }
OUT=$BUILD/bench
mkdir -p "$OUT" || exit 2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcspy-anbench.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
failed=0
# the figures bench/targets.sh compares with issue 16's targets
mkdir -p "$OUT/metrics" || exit 2
METRICS=$OUT/metrics/analyzer.env
{ echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')"; echo "an_events=$EVENTS"; } >"$METRICS"

# measure NAME CMD...: runs CMD (stdout kept in $WORK/NAME.out), sets WALL
# USER SYS RSS_KB
measure() {
  local name=$1; shift
  if ! /usr/bin/time -f "%e %U %S %M" -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"; then
    echo "analyzer_bench: $name failed:"; tail -5 "$WORK/$name.err"; failed=1; return 1
  fi
  read -r WALL USER SYS RSS_KB <"$WORK/$name.time"
}
rate() { awk -v n="$1" -v u="$2" -v s="$3" 'BEGIN { t = u + s; if (t <= 0) t = 0.01; printf "%.1f", n / t / 1e6 }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }

echo "analyzer bench: writing a trace of $EVENTS events..."
if ! "$GEN" "$WORK/bench.trace" "$EVENTS" >"$WORK/gen.out"; then
  echo "analyzer_bench: the trace generator failed"; exit 1
fi
TRACE_MB=$(du -m "$WORK/bench.trace" | cut -f1)
rows=()
if measure report "$CLI" report --format json -o "$WORK/report.json" "$WORK/bench.trace"; then
  R=$(rate "$EVENTS" "$USER" "$SYS"); M=$(mib "$RSS_KB")
  ok_r=$(awk -v r="$R" 'BEGIN { print (r >= 20) ? "met" : "missed" }')
  ok_m=$(awk -v m="$M" 'BEGIN { print (m < 256) ? "met" : "missed" }')
  rows+=("| gcspy report (json, symbols) | $EVENTS | $WALL | $USER+$SYS | **$R** (target >= 20: $ok_r) | **$M** (target < 256: $ok_m) |")
  printf 'an_rate=%s\nan_peak_mib=%s\n' "$R" "$M" >>"$METRICS"
fi
if measure report_nosym "$CLI" report --format json --no-symbols -o "$WORK/report2.json" "$WORK/bench.trace"; then
  rows+=("| gcspy report (json, --no-symbols) | $EVENTS | $WALL | $USER+$SYS | $(rate "$EVENTS" "$USER" "$SYS") | $(mib "$RSS_KB") |")
  echo "an_rate_nosym=$(rate "$EVENTS" "$USER" "$SYS")" >>"$METRICS"
fi
echo "analyzer bench: writing 4 traces of $PAR_EVENTS events for -j..."
par=()
for k in 1 2 3 4; do
  "$GEN" "$WORK/par$k.trace" "$PAR_EVENTS" $((k * 25000)) >/dev/null || { echo "analyzer_bench: the trace generator failed"; exit 1; }
  par+=("$WORK/par$k.trace")
done
if measure par1 "$CLI" report --format json -j 1 -o "$WORK/par1.json" "${par[@]}"; then
  W1=$WALL
  rows+=("| gcspy report -j 1, 4 traces (json, symbols) | $((PAR_EVENTS * 4)) | $WALL | $USER+$SYS | $(rate $((PAR_EVENTS * 4)) "$USER" "$SYS") | $(mib "$RSS_KB") |")
  if measure par2 "$CLI" report --format json -j 2 -o "$WORK/par2.json" "${par[@]}"; then
    SP=$(awk -v a="$W1" -v b="$WALL" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    echo "an_j2_speedup=$SP" >>"$METRICS"
    rows+=("| gcspy report -j 2, 4 traces: **${SP}× the -j 1 speed** | $((PAR_EVENTS * 4)) | $WALL | $USER+$SYS | $(rate $((PAR_EVENTS * 4)) "$USER" "$SYS") | $(mib "$RSS_KB") |")
    cmp -s "$WORK/par1.json" "$WORK/par2.json" || { echo "analyzer_bench: -j 2 report differs from -j 1"; failed=1; }
  fi
fi
if command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null; then
  echo "analyzer bench: recording $HT_EVENTS events with heaptrack..."
  # (the recording only: heaptrack.log-like names beside it are not one; a
  # log picked up here once made heaptrack_print "read" 10 M events in 0.05 s)
  if (GEN_ABS=$PWD/$GEN && cd "$WORK" && heaptrack -o "$WORK/ht" "$GEN_ABS" --churn "$HT_EVENTS" >"$WORK/heaptrack.log" 2>&1) &&
     HT=$(ls "$WORK"/ht.zst "$WORK"/ht.gz 2>/dev/null | head -1) && [ -n "$HT" ]; then
    if measure heaptrack_print heaptrack_print "$HT"; then
      # its own count of what it read: calls to allocation functions (each
      # malloc; the frees are the same number less the leaks)
      calls=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$WORK/heaptrack_print.out" | head -1)
      if [ -z "$calls" ] || [ "$calls" -eq 0 ]; then
        echo "analyzer_bench: heaptrack_print read no allocation from $HT"; failed=1
      else
        rows+=("| heaptrack_print (reference; it counts $calls allocations) | $HT_EVENTS | $WALL | $USER+$SYS | $(rate "$HT_EVENTS" "$USER" "$SYS") | $(mib "$RSS_KB") |")
        echo "an_rate_heaptrack_print=$(rate "$HT_EVENTS" "$USER" "$SYS")" >>"$METRICS"
      fi
    fi
  else
    echo "analyzer_bench: heaptrack recording failed (see below)"; tail -5 "$WORK/heaptrack.log"; failed=1
  fi
else
  rows+=("| heaptrack_print (reference) | - | not installed | | | |")
fi

{
  echo "## Analyzer throughput ($(date -u +%Y-%m-%d), $(nproc) CPUs)"
  echo
  echo "Trace: $EVENTS events, ${TRACE_MB} MiB ($(cat "$WORK/gen.out"))."
  echo "M events/s per core = events / (user + system CPU seconds)."
  echo
  echo "| run | events | wall s | CPU s | M events/s/core | peak MiB |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee "$OUT/analyzer-results.md"
exit $failed
