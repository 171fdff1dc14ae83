#!/usr/bin/env bash
# The leak scanner's benchmark (`make bench` runs it after the others): a heap
# of 64-byte objects (1 GiB; BENCH_QUICK=1: 128 MiB; SCAN_MIB overrides)
# linked into one list in allocation order and in random order
# (bench/scan_heap.c). For each order, in one run on this machine:
#   - read      a plain sequential walk of the same objects (the floor);
#   - lsan      LeakSanitizer's scan of the same heap (gcc's liblsan
#               preloaded, __lsan_do_recoverable_leak_check);
#   - gcspy     gcspy_scan() in stop-the-world mode, and in fork mode; the
#               pause (from the trace's SCAN_END: request to threads resumed)
#               and the whole scan time.
# Each scan is repeated SCAN_REPEAT (3) times in its process and the least
# time kept, in wall and in CPU seconds (scan_heap's scan_cpu_s: the process
# and its waited-for children, so LSan's tracer counts): on a machine shared
# with other jobs the wall time mostly measures the scheduler, the CPU time
# the scan. Prints a table (ratios against LSan and the read floor, pause per
# GiB in both modes) and appends it to $BUILD/bench/results.md.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
MIB=${SCAN_MIB:-$([ "$QUICK" = 1 ] && echo 128 || echo 1024)}
export SCAN_HEAP_REPEAT=${SCAN_REPEAT:-3}
OUT=$BUILD/bench
mkdir -p "$OUT"
PROG=$OUT/scan_heap
cc -O2 -g -o "$PROG" bench/scan_heap.c -ldl || exit 2
LIB=$PWD/$BUILD/libgcspy.so
LSAN=$(gcc -print-file-name=liblsan.so.0 2>/dev/null)
[ -f "$LSAN" ] || LSAN=/usr/lib/x86_64-linux-gnu/liblsan.so.0
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }

table=$(mktemp)
# the figures bench/targets.sh compares with issue 16's targets
mkdir -p "$OUT/metrics"
METRICS=$OUT/metrics/scan.env
{ echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')"; echo "scan_mib=$MIB"; } >"$METRICS"
printf '| order | objects | read floor s (CPU) | LSan scan s (CPU) | gcspy stw scan s (CPU) | gcspy/LSan rate, wall (CPU) | gcspy/read floor, CPU | pause stw s | pause fork s | pause per GiB stw / fork s |\n|---|---|---|---|---|---|---|---|---|---|\n' > "$table"
for order in alloc random; do
  line=$("$PROG" --mib "$MIB" --order "$order")
  n=$(echo "$line" | field objects)
  read_s=$(echo "$line" | field read_s); read_c=$(echo "$line" | field read_cpu_s)
  lsan_s=NA lsan_c=NA
  if [ -f "$LSAN" ]; then
    line=$(LD_PRELOAD=$LSAN LSAN_OPTIONS=detect_leaks=1:exitcode=0 "$PROG" --mib "$MIB" --order "$order" 2>/dev/null)
    lsan_s=$(echo "$line" | field scan_s); lsan_c=$(echo "$line" | field scan_cpu_s)
  fi
  declare -A pause scan cpu
  for mode in stw fork; do
    tr=$OUT/scan_heap_$mode.trace
    rm -f "$tr"*
    line=$(GCSPY_QUIET=1 GCSPY_SCAN_AT_EXIT=0 GCSPY_SCAN_MODE=$mode GCSPY_OUTPUT=$tr LD_PRELOAD=$LIB "$PROG" --mib "$MIB" --order "$order")
    scan[$mode]=$(echo "$line" | field scan_s); cpu[$mode]=$(echo "$line" | field scan_cpu_s)
    # the least pause of the process's scans (each scan's SCAN_END may sit in a file of its own)
    pause[$mode]=$(for f in "$tr"*; do $BUILD/gcspy dump "$f"; done | awk '/^scan_end/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } p = (v["t_end"] - v["t_start"]) / 1e9; if (!n++ || p < m) m = p } END { printf "%.3f", m }')
    rm -f "$tr"*
  done
  rate=$(awk -v l="$lsan_s" -v g="${scan[stw]}" -v lc="$lsan_c" -v gc="${cpu[stw]}" 'BEGIN { if (l != "NA" && g > 0 && gc > 0) printf "%.2fx (%.2fx)", l / g, lc / gc; else print "?" }')
  floor=$(awk -v r="$read_c" -v g="${cpu[stw]}" 'BEGIN { if (r > 0) printf "%.2fx", g / r; else print "?" }')
  per_gib=$(awk -v p="${pause[stw]}" -v f="${pause[fork]}" -v m="$MIB" 'BEGIN { printf "%.3f / %.3f", p * 1024 / m, f * 1024 / m }')
  awk -v o="$order" -v l="$lsan_s" -v g="${scan[stw]}" -v lc="$lsan_c" -v gc="${cpu[stw]}" -v r="$read_c" \
      -v p="${pause[stw]}" -v f="${pause[fork]}" -v m="$MIB" 'BEGIN {
    if (l != "NA" && g > 0 && gc > 0) printf "scan_rate_%s_wall=%.2f\nscan_rate_%s_cpu=%.2f\n", o, l / g, o, lc / gc
    if (r > 0) printf "scan_floor_%s_cpu=%.2f\n", o, gc / r
    printf "pause_stw_gib_%s=%.3f\npause_fork_gib_%s=%.3f\n", o, p * 1024 / m, o, f * 1024 / m
  }' >>"$METRICS"
  printf '| %s | %s | %s (%s) | %s (%s) | %s (%s) | %s | %s | %s | %s | %s |\n' "$order" "$n" "$read_s" "$read_c" "$lsan_s" "$lsan_c" "${scan[stw]}" "${cpu[stw]}" "$rate" "$floor" "${pause[stw]}" "${pause[fork]}" "$per_gib" >> "$table"
done
echo
echo "Leak scan of a $MIB MiB heap of 64-byte objects (targets: gcspy's rate at least 2x LSan's in allocation order; random order within 1.2x of the read floor; fork-mode pause a small fraction of stop-the-world's)"
cat "$table"
{ echo; echo "### Leak scan, $MIB MiB of 64-byte objects"; echo; cat "$table"; } >> "$OUT/results.md"
rm -f "$table"
