#!/usr/bin/env bash
# The shim's hot path in instructions (`make bench` runs it after the
# timings; docs/benchmarks.md, "Hot path profile"): bench/churn under
# callgrind, bare and under libgcspy.so, and the instructions per malloc/free
# pair split by stage, from callgrind's per-function counts (the writer
# thread and the exit scan included: they are what the pairs cost too):
#   unwind    the stack walk and its rules (stack.c's walk, unwind.c)
#   intern    the stack id cache and the stack tree (stack.c's intern)
#   table     the live-block table (table.c)
#   encode    record encoding (codec.h, record.h, emit.c)
#   write     event buffers and the writer (writer.c)
#   compress  zstd
#   scan      the exit scan (mark.c, scan.c, roots.c, classify.c)
#   hook      the rest of the shim (hooks.c, core.c, ...)
#   program   churn and libc (the bare run's own work)
# Instructions are exact and do not move with the machine's load, unlike
# the timings; cache misses are not in them (import torch's cost is mostly
# misses: see the timing table's CPU rows).
#   HOTPATH_PAIRS=N  churn pairs (default 200000; 2 threads, 20 frames deep)
# Exit status 0; 2 when it cannot run; 77 (and one line) without valgrind.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
OUT=$BUILD/bench
CHURN=$OUT/churn
LIB=$PWD/$BUILD/libgcspy.so
PAIRS=${HOTPATH_PAIRS:-200000}
if ! [[ $PAIRS =~ ^[1-9][0-9]*$ ]]; then
  echo "hotpath-profile: HOTPATH_PAIRS must be a positive integer, not '$PAIRS'" >&2; exit 2
fi
command -v valgrind >/dev/null 2>&1 || { echo "hotpath-profile: valgrind not installed: not run"; exit 77; }
for f in "$CHURN" "$LIB"; do
  [ -e "$f" ] || { echo "hotpath-profile: $f is missing: run 'make bench'" >&2; exit 2; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcspy-hotpath.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
ARGS=(--pairs "$PAIRS" --threads 2 --live 20000 --depth 20)

# run NAME ENV...: churn under callgrind; its per-function counts to NAME.txt
run() {
  local name=$1; shift
  env "$@" valgrind --tool=callgrind --callgrind-out-file="$WORK/$name.cg" \
    "$CHURN" "${ARGS[@]}" >"$WORK/$name.out" 2>"$WORK/$name.err" || {
    echo "hotpath-profile: churn failed under callgrind ($name): $(tail -1 "$WORK/$name.err")" >&2; exit 2; }
  callgrind_annotate --inclusive=no --threshold=100 --show-percs=no "$WORK/$name.cg" >"$WORK/$name.txt" 2>/dev/null
}
run bare
run gcspy LD_PRELOAD="$LIB" GCSPY_OUTPUT="$WORK/trace-%p" GCSPY_QUIET=1
events=$(sed -n 's/^events //p' "$WORK/bare.out")
[ -n "$events" ] || { echo "hotpath-profile: churn printed no event count" >&2; exit 2; }

# stages FILE: "stage instructions" lines from callgrind_annotate's listing
stages() {
  awk '
    $2 ~ /:/ && $1 ~ /^[0-9,]+$/ {
      n = $1; gsub(",", "", n); f = $2
      if (f ~ /stack\.c:/ && f ~ /intern|node_/)        s = "intern"
      else if (f ~ /(stack\.c|unwind\.[ch]):/)           s = "unwind"
      else if (f ~ /table\.[ch]:/)                       s = "table"
      else if (f ~ /(codec\.h|record\.h|records\.def|emit\.[ch]):/) s = "encode"
      else if (f ~ /writer\.[ch]:/)                      s = "write"
      else if (f ~ /(ZSTD|HUF|HIST|FSE|zstd)/)           s = "compress"
      else if (f ~ /(mark|scan|roots|classify)\.c:/)     s = "scan"
      else if (f ~ /libgcspy|preload\//)                 s = "hook"
      else                                               s = "program"
      t[s] += n
    }
    END { for (s in t) print s, t[s] }' "$1"
}
stages "$WORK/bare.txt" >"$WORK/bare.st"
stages "$WORK/gcspy.txt" >"$WORK/gcspy.st"
total() { awk '{ s += $2 } END { print s + 0 }' "$1"; }
tb=$(total "$WORK/bare.st") tg=$(total "$WORK/gcspy.st")
pairs=$((events / 2))

{
  echo
  echo "## Hot path profile"
  echo
  echo "bench/churn ${ARGS[*]} under callgrind: instructions per malloc/free pair ($pairs pairs: churn's $events events / 2), every thread of the process."
  echo
  echo "| stage | instructions per pair |"
  echo "|---|---|"
  for s in unwind intern table encode write compress scan hook program; do
    n=$(awk -v s="$s" '$1 == s { print $2 }' "$WORK/gcspy.st")
    awk -v n="${n:-0}" -v p="$pairs" -v s="$s" 'BEGIN { printf "| %s | %.0f |\n", s, n / p }'
  done
  awk -v g="$tg" -v b="$tb" -v p="$pairs" 'BEGIN {
    printf "| **gcspy, all** | **%.0f** |\n| bare | %.0f |\n| ratio | %.2f× |\n", g / p, b / p, g / b }'
} | tee -a "$OUT/results.md"

# the figures bench/targets.sh quotes beside issue 16's targets
mkdir -p "$OUT/metrics"
{
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  for s in unwind intern table encode write compress scan hook program; do
    n=$(awk -v s="$s" '$1 == s { print $2 }' "$WORK/gcspy.st")
    awk -v n="${n:-0}" -v p="$pairs" -v s="$s" 'BEGIN { printf "hot_%s=%.0f\n", s, n / p }'
  done
  awk -v g="$tg" -v b="$tb" -v p="$pairs" 'BEGIN { printf "hot_all=%.0f\nhot_bare=%.0f\n", g / p, b / p }'
} >"$OUT/metrics/hotpath.env"
