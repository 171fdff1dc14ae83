#!/usr/bin/env bash
# The last step of `make bench`: issue 16's targets beside what this run
# measured, one table. Reads the figures the other bench scripts wrote to
# $BUILD/bench/metrics/*.env (run-bench.sh: churn, import torch, train.py,
# trace size, memory per block, with the peers of the same run;
# roots-bench.sh: the Debian roots' stacks; scan-bench.sh; analyzer_bench.sh;
# hotpath-profile.sh), prints the table and appends it to
# $BUILD/bench/results.md. A file written at another commit than HEAD's is
# named in the table; a figure no file holds reads "not measured".
# Verdicts: "met", or "MISSED" with how far: the measured figure over the
# limit (or the limit over the figure, for a floor). Exit status 0 (targets
# met or not), 2 when there is nothing to read.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
OUT=$BUILD/bench
DIR=$OUT/metrics
ls "$DIR"/*.env >/dev/null 2>&1 || { echo "targets: no figures in $DIR: run 'make bench'" >&2; exit 2; }
HEAD=$(git rev-parse --short HEAD 2>/dev/null || echo '?')

declare -A V
stale=""
for f in "$DIR"/*.env; do
  n=$(basename "$f" .env)
  while IFS='=' read -r k v; do
    [ -n "$k" ] && V[$k]=$v
  done < <(tr ' ' '\n' <"$f")
  c=$(sed -n 's/^commit=//p' "$f")
  [ "$c" != "$HEAD" ] && stale+=" $n.env (at $c)"
done

v() { echo "${V[$1]:-}"; }
# le VALUE LIMIT / ge VALUE FLOOR: the verdict of a ceiling / a floor
le() {
  [ -z "$1" ] && { echo "not measured"; return; }
  awk -v x="$1" -v l="$2" 'BEGIN { if (x <= l) print "met"; else printf "MISSED (%.2f× the limit)\n", x / l }'
}
ge() {
  [ -z "$1" ] && { echo "not measured"; return; }
  awk -v x="$1" -v l="$2" 'BEGIN { if (x >= l) print "met"; else printf "MISSED (%.2f× short)\n", (x > 0 ? l / x : 0) }'
}
x() { [ -n "$1" ] && echo "$1×" || echo "-"; }
or_dash() { [ -n "$1" ] && echo "$1" || echo "-"; }

rows=()
add() { rows+=("| $1 | $2 | $3 | $4 |"); }

g=$(v churn_wall_gcspy) l=$(v churn_wall_lsan)
lim=1.3
[ -n "$l" ] && lim=$(awk -v l="$l" 'BEGIN { print (l < 1.3) ? l : 1.3 }')
add "churn, wall: at most 1.3× and at most LSan's ratio" "$(x "$g")" "LSan $(x "$l"), heaptrack $(x "$(v churn_wall_heaptrack)")" "$(le "$g" "$lim")"
g=$(v churn_cpu_gcspy)
add "churn, CPU: at most 1.5× (moonshot 1.15×)" "$(x "$g")" "LSan $(x "$(v churn_cpu_lsan)"), heaptrack $(x "$(v churn_cpu_heaptrack)")" "$(le "$g" 1.5)"
py=$(v python)
g=$(v import_wall_gcspy)
add "import torch, wall: at most 1.3× (host, python/torch $(or_dash "$py"))" "$(x "$g")" "LSan $(x "$(v import_wall_lsan)"), heaptrack $(x "$(v import_wall_heaptrack)")" "$(le "$g" 1.3)"
g=$(v import_cpu_gcspy)
add "import torch, CPU (host)" "$(x "$g")" "LSan $(x "$(v import_cpu_lsan)"), heaptrack $(x "$(v import_cpu_heaptrack)")" "$(le "$g" 1.3)"
for s in trixie sid; do
  [ -n "$(v "python_$s")" ] || { add "import torch and step, $s root" "not measured (no root)" "" ""; continue; }
  g=$(v "import_wall_$s")
  add "import torch, wall: at most 1.3× ($s, $(v "python_$s"))" "$(x "$g")" "CPU $(x "$(v "import_cpu_$s")")" "$(le "$g" 1.3)"
done
g=$(v step_gcspy)
add "train.py per step: at most 1.05× (host)" "$(x "$g")" "LSan $(x "$(v step_lsan)")" "$(le "$g" 1.05)"
for s in trixie sid; do
  [ -n "$(v "python_$s")" ] || continue
  g=$(v "step_$s")
  add "train.py per step: at most 1.05× ($s)" "$(x "$g")" "" "$(le "$g" 1.05)"
done
g=$(v bpe_gcspy) h=$(v bpe_heaptrack)
add "trace bytes per event (churn): at most heaptrack's" "$(or_dash "$g")" "heaptrack $(or_dash "$h")" "$( [ -n "$h" ] && le "$g" "$h" || echo 'not measured')"
g=$(v scan_rate_alloc_cpu)
add "scan rate, allocation order: at least 2× LSan's ($(or_dash "$(v scan_mib)") MiB; CPU)" "$(x "$g")" "wall $(x "$(v scan_rate_alloc_wall)")" "$(ge "$g" 2)"
g=$(v scan_floor_random_cpu)
add "scan, random order: within 1.2× of the read floor (CPU)" "$(x "$g")" "rate vs LSan $(x "$(v scan_rate_random_cpu)")" "$(le "$g" 1.2)"
add "scan pause per GiB, stop-the-world / fork (quoted)" "alloc $(or_dash "$(v pause_stw_gib_alloc)") / $(or_dash "$(v pause_fork_gib_alloc)") s" "random $(or_dash "$(v pause_stw_gib_random)") / $(or_dash "$(v pause_fork_gib_random)") s" "quoted"
g=$(v an_rate)
add "analyzer: at least 20 M events/s per core ($(or_dash "$(v an_events)") events, symbols)" "$(or_dash "$g")" "--no-symbols $(or_dash "$(v an_rate_nosym)"); heaptrack_print $(or_dash "$(v an_rate_heaptrack_print)")" "$(ge "$g" 20)"
g=$(v an_peak_mib)
add "analyzer peak memory: below 256 MiB" "$(or_dash "$g") MiB" "" "$( [ -n "$g" ] && le "$g" 255 || echo 'not measured')"
add "gcspy report -j 2 over 4 traces: speed-up (quoted)" "$(x "$(v an_j2_speedup)")" "" "quoted"
g=$(v bpb_gcspy)
add "shim memory per live block: at most 40 B" "$(or_dash "$g") B" "LSan $(or_dash "$(v bpb_lsan)") B, heaptrack $(or_dash "$(v bpb_heaptrack)") B (in the program's process)" "$(le "$g" 40)"
if [ -n "$(v hot_all)" ]; then
  add "hot path, instructions per malloc/free pair (callgrind)" "$(v hot_all) (bare $(v hot_bare))" "unwind $(v hot_unwind), intern $(v hot_intern), table $(v hot_table), encode $(v hot_encode), write $(v hot_write), compress $(v hot_compress), scan $(v hot_scan), hook $(v hot_hook), program $(v hot_program)" "where the cost goes"
fi

{
  echo
  echo "## Issue 16's targets, this run"
  echo
  echo "gcspy $HEAD; $(v mode) mode, $(v runs) round(s) per median. Ratios are to bare in the same run.${stale:+ Figures from another commit:$stale.}"
  echo
  echo "| target | gcspy | beside it (same run) | verdict |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee -a "$OUT/results.md"
exit 0
