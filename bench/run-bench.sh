#!/usr/bin/env bash
# The benchmarks behind `make bench`: gcspy against a bare run and against its
# peers (heaptrack, valgrind memcheck, LeakSanitizer), all measured in this one
# run on this machine, so the ratios compare like with like. Prints a table of
# wall times and ratios against bare with the spec's targets beside them, and
# writes the same table to $BUILD/bench/results.md. docs/benchmarks.md says
# what each row measures.
#
#   BENCH_RUNS=N     rounds per median (default 3; 1 with BENCH_QUICK=1)
#   BENCH_QUICK=1    small sizes (a few minutes, mostly heaptrack), a quick look
#   BENCH_PAIRS, BENCH_LIVE, BENCH_STEPS, BENCH_VG_PAIRS override the sizes
#   BENCH_TIMEOUT=S  seconds a bare run may take (default 600)
#
# Every tool's run must print what the bare run printed (churn's checksum, the
# training losses); a run that does not, or fails, shows as "failed" in the
# table, its log kept under $BUILD/bench/logs/. Exit status: 0 when every bare
# and gcspy measurement ran (targets met or not; a peer that fails or hangs is
# only reported), 1 when one of those failed, 2 when the bench cannot run.
set -u
cd "$(dirname "$0")/.." || exit 2

BUILD=${BUILD:-build}
PY=${PYTHON:-/usr/bin/python3}
QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
  RUNS=${BENCH_RUNS:-1}
  PAIRS=${BENCH_PAIRS:-200000} LIVE=${BENCH_LIVE:-20000}
  STEPS=${BENCH_STEPS:-30} VG_PAIRS=${BENCH_VG_PAIRS:-100000}
else
  RUNS=${BENCH_RUNS:-3}
  PAIRS=${BENCH_PAIRS:-10000000} LIVE=${BENCH_LIVE:-100000}
  STEPS=${BENCH_STEPS:-300} VG_PAIRS=${BENCH_VG_PAIRS:-2000000}
fi
THREADS=2 DEPTH=20

OUT=$BUILD/bench
LOGS=$OUT/logs
CHURN=$OUT/churn
LIB=$PWD/$BUILD/libgcspy.so
CLI=$BUILD/gcspy

for v in RUNS PAIRS LIVE STEPS VG_PAIRS; do
  if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
    echo "run-bench: $v must be a positive integer, not '${!v}'" >&2; exit 2
  fi
done
if [ ! -x "$CHURN" ]; then
  echo "run-bench: $CHURN is missing: run 'make bench' (or 'make $CHURN')" >&2; exit 2
fi
mkdir -p "$LOGS" "$OUT/metrics" || exit 2
rm -f "$LOGS"/* "$OUT/zstd_levels.md" "$OUT/metrics/run.env"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcspy-bench.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT

# ---- which peers are here ---------------------------------------------------
have_gcspy=0; [ -f "$LIB" ] && have_gcspy=1
have_heaptrack=0; command -v heaptrack >/dev/null 2>&1 && have_heaptrack=1
have_valgrind=0; command -v valgrind >/dev/null 2>&1 && have_valgrind=1
have_torch=0; "$PY" -c "import torch" >/dev/null 2>&1 && have_torch=1

# LeakSanitizer: gcc's standalone runtime preloaded into the unchanged binary
# (works for python too); without it, churn rebuilt with clang -fsanitize=leak.
LSAN_LIB=""
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /lib/x86_64-linux-gnu; do
  [ -f "$d/liblsan.so.0" ] && { LSAN_LIB=$d/liblsan.so.0; break; }
done
LSAN_CHURN=$CHURN LSAN_HOW=""
if [ -n "$LSAN_LIB" ]; then
  LSAN_HOW="gcc's $LSAN_LIB preloaded"
elif command -v clang >/dev/null 2>&1 &&
     clang -O2 -g -fno-omit-frame-pointer -fsanitize=leak -pthread bench/churn.c \
       -o "$OUT/churn-lsan" 2>"$LOGS/churn-lsan-build.log"; then
  LSAN_CHURN=$OUT/churn-lsan
  LSAN_HOW="churn built with clang -fsanitize=leak (no liblsan.so.0: python rows not run)"
fi
# Leak checking stays on (LSan's default), as gcspy's exit scan does; the
# reports of python's deliberate never-freed memory go to the logs only.
export LSAN_OPTIONS=${LSAN_OPTIONS:-exitcode=0}

# ---- measuring --------------------------------------------------------------
now_ns() { date +%s%N; }

# child_cpu FILE: writes the user + sys CPU seconds of every child this shell
# has waited for so far (bash's `times`, its second line) to FILE. Run in this
# shell, not in $(...): a subshell's children are not this shell's.
child_cpu() {
  times >"$1.times"
  awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.3f\n", s }' \
    "$1.times" >"$1"
}

# tool_cmd TOOL TRACE PROG ARGS...: sets CMD to PROG under TOOL, tracing to
# TRACE (a path prefix; each tool adds its own suffix).
tool_cmd() {
  local tool=$1 trace=$2; shift 2
  case $tool in
    bare) CMD=("$@") ;;
    gcspy) CMD=(env LD_PRELOAD="$LIB" GCSPY_OUTPUT="$trace-%p.trace" GCSPY_QUIET=1 "$@") ;;
    heaptrack) CMD=(heaptrack -o "$trace" "$@") ;;
    memcheck) CMD=(valgrind --leak-check=full -q "$@") ;;
    lsan)
      if [ "$1" = "$CHURN" ] && [ -z "$LSAN_LIB" ]; then
        shift; CMD=("$LSAN_CHURN" "$@")
      else
        CMD=(env LD_PRELOAD="$LSAN_LIB" "$@")
      fi ;;
  esac
}

# run_once ROW TOOL I FILTER PROG ARGS...: run I of PROG under TOOL. On
# success appends the wall seconds to TIMES[ROW,TOOL] (and the median step
# time the training example prints to STEPS[ROW,TOOL]), records the trace size
# and the log. The program's output, filtered through the extended regex
# FILTER, must equal what the first bare run printed. On failure sets
# STATUS[ROW,TOOL] and returns 1.
declare -A TIMES CPUS STEPS MEMS SIZE LASTLOG STATUS LIMITS T S C U M
run_once() {
  local row=$1 tool=$2 i=$3 filter=$4; shift 4
  local log=$LOGS/$row.$tool.$i trace=$WORK/$row.$tool t0 t1 rc st limit
  rm -f "$trace"*
  limit=$BARE_LIMIT
  [ "$tool" != bare ] && limit=${LIMITS[$row]:-$BARE_LIMIT}
  tool_cmd "$tool" "$trace" "$@"
  child_cpu "$WORK/cpu0"
  t0=$(now_ns)
  # timeout signals its whole process group: a hung tool's helpers and the
  # program's children go too.
  timeout -k 5 "$limit" "${CMD[@]}" >"$log.out" 2>"$log.err"
  rc=$?
  t1=$(now_ns)
  child_cpu "$WORK/cpu1"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    STATUS[$row,$tool]="hung: killed after $limit s"; return 1
  elif [ $rc -ne 0 ]; then
    STATUS[$row,$tool]="failed (exit $rc, see $log.err)"; return 1
  fi
  grep -E "$filter" "$log.out" >"$log.filtered"
  if [ "$tool" = bare ] && [ "$i" -eq 1 ]; then
    cp "$log.filtered" "$WORK/$row.expect"
  elif ! cmp -s "$log.filtered" "$WORK/$row.expect"; then
    STATUS[$row,$tool]="failed (output differs from bare, see $log.out)"; return 1
  fi
  TIMES[$row,$tool]+=" $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
  CPUS[$row,$tool]+=" $(cat "$WORK/cpu0" "$WORK/cpu1" | awk 'NR == 1 { a = $1 } NR == 2 { printf "%.3f", $1 - a }')"
  st=$(sed -n 's/.*median_step_ms \([0-9.]*\).*/\1/p' "$log.err" | tail -1)
  [ -n "$st" ] && STEPS[$row,$tool]+=" $st"
  # the peak RSS rel_load's live case prints (VmHWM, kB)
  st=$(sed -n 's/^rss_kb phase=end kb=\([0-9]*\)$/\1/p' "$log.out" | tail -1)
  [ -n "$st" ] && MEMS[$row,$tool]+=" $st"
  SIZE[$row,$tool]=$(cat "$trace"* 2>/dev/null | wc -c)
  LASTLOG[$row,$tool]=$log
  return 0
}

# bench_row ROW FILTER FACTOR TOOLS PROG ARGS...: RUNS rounds; in each, every
# tool of the comma list TOOLS (bare first; "tool:1" runs in the first round
# only) runs once. Interleaving makes the tools share the machine's load,
# which on a shared machine moves more than the differences measured. A tool
# that fails is not run again. A tool's run may take 60 s plus FACTOR times
# the first bare run before it counts as hung. Sets T (median seconds),
# S (median step ms) and the table cells C for the row.
bench_row() {
  local row=$1 filter=$2 factor=$3 tools=$4; shift 4
  local i spec tool
  for ((i = 1; i <= RUNS; i++)); do
    for spec in ${tools//,/ }; do
      tool=${spec%:1}
      [ "$spec" != "$tool" ] && [ $i -gt 1 ] && continue
      [ -n "${STATUS[$row,$tool]:-}" ] && continue
      note "$row: $tool, run $i"
      if ! run_once "$row" "$tool" "$i" "$filter" "$@"; then
        note "  ${STATUS[$row,$tool]}"
        # A peer that fails is a result (the table says so); gcspy or the
        # program failing is not.
        case $tool in bare | gcspy) failures=$((failures + 1)) ;; esac
        [ "$tool" = bare ] && break 2   # nothing to compare against
        continue
      fi
      if [ "$tool" = bare ] && [ $i -eq 1 ]; then
        LIMITS[$row]=$(awk -v b="${TIMES[$row,bare]# }" -v f="$factor" 'BEGIN { print int(60 + f * b) }')
      fi
    done
  done
  for spec in ${tools//,/ }; do
    tool=${spec%:1}
    # shellcheck disable=SC2086
    [ -n "${TIMES[$row,$tool]:-}" ] && T[$row,$tool]=$(median ${TIMES[$row,$tool]})
    # shellcheck disable=SC2086
    [ -n "${STEPS[$row,$tool]:-}" ] && S[$row,$tool]=$(median ${STEPS[$row,$tool]})
    # shellcheck disable=SC2086
    [ -n "${CPUS[$row,$tool]:-}" ] && U[$row,$tool]=$(median ${CPUS[$row,$tool]})
    # shellcheck disable=SC2086
    [ -n "${MEMS[$row,$tool]:-}" ] && M[$row,$tool]=$(median ${MEMS[$row,$tool]})
  done
  for spec in ${tools//,/ }; do
    tool=${spec%:1}
    if [ -z "${T[$row,$tool]:-}" ]; then
      C[$row,$tool]=${STATUS[$row,$tool]:-"not run (bare failed)"}
    elif [ "$tool" = bare ]; then
      C[$row,$tool]="${T[$row,$tool]} s"
    else
      C[$row,$tool]="${T[$row,$tool]} s ($(ratio "${T[$row,$tool]}" "${T[$row,bare]}")×)"
    fi
    # The same row's CPU (user + sys of the tool and the program, children
    # included): on a shared machine steadier than wall time.
    if [ -z "${U[$row,$tool]:-}" ]; then
      C[$row-cpu,$tool]=${C[$row,$tool]}
    elif [ "$tool" = bare ]; then
      C[$row-cpu,$tool]="${U[$row,$tool]} s"
    else
      C[$row-cpu,$tool]="${U[$row,$tool]} s ($(ratio "${U[$row,$tool]}" "${U[$row,bare]}")×)"
    fi
  done
}

# shellcheck source=lib.sh
. bench/lib.sh

# verdict VALUE LIMIT: whether a ratio meets its target
verdict() {
  [ -z "$1" ] && { echo "not measured"; return; }
  awk -v v="$1" -v l="$2" 'BEGIN { print (v <= l) ? "met" : "MISSED" }'
}

BARE_LIMIT=${BENCH_TIMEOUT:-600}
failures=0
note() { echo "  $*" >&2; }

# tools_for ROW KIND: sets TOOLS to the comma list of the tools that can run
# here, and the cell of each that cannot to why. KIND: churn or python.
tools_for() {
  local row=$1 kind=$2 list=bare
  if [ $have_gcspy = 1 ]; then list+=,gcspy; else C[$row,gcspy]="not built ($LIB missing)"; fi
  if [ $have_heaptrack = 1 ]; then list+=,heaptrack; else C[$row,heaptrack]="not installed"; fi
  if [ "$kind" = churn ] && [ -n "$LSAN_HOW" ]; then list+=,lsan
  elif [ "$kind" = python ] && [ -n "$LSAN_LIB" ]; then list+=,lsan
  else C[$row,lsan]="no LSan runtime (liblsan.so.0)"; fi
  TOOLS=$list
}

echo "gcspy bench: $RUNS round(s) per median; $(nproc) CPU(s); logs in $LOGS" >&2

# ---- churn ------------------------------------------------------------------
CH_ARGS=(--pairs "$PAIRS" --threads "$THREADS" --live "$LIVE" --depth "$DEPTH")
tools_for churn churn
bench_row churn '^checksum' 30 "$TOOLS" "$CHURN" "${CH_ARGS[@]}"
BARE_EVENTS=""
[ -n "${LASTLOG[churn,bare]:-}" ] && BARE_EVENTS=$(sed -n 's/^events //p' "${LASTLOG[churn,bare]}.out")

# memcheck is too slow for the full size: fewer pairs, one run, against a bare
# median at the same size.
if [ $have_valgrind = 1 ]; then
  VG_ARGS=(--pairs "$VG_PAIRS" --threads "$THREADS" --live "$LIVE" --depth "$DEPTH")
  bench_row churn-small '^checksum' 100 bare,memcheck:1 "$CHURN" "${VG_ARGS[@]}"
  if [ -n "${T[churn-small,memcheck]:-}" ]; then
    C[churn,memcheck]="${T[churn-small,memcheck]} s ($(ratio "${T[churn-small,memcheck]}" "${T[churn-small,bare]}")×; 1 run at $VG_PAIRS pairs vs bare ${T[churn-small,bare]} s)"
  else
    C[churn,memcheck]=${C[churn-small,memcheck]:-${C[churn-small,bare]}}
  fi
else
  C[churn,memcheck]="not installed"
fi

# Bytes per event: compressed trace size over the events it holds. gcspy's are
# counted from its dump where the CLI has one, heaptrack's from its own stats
# (2 × allocations − leaked: every allocation and every free); else the
# program's own count of mallocs + frees.
BPE_GCSPY="" BPE_HT=""
if [ -n "${T[churn,gcspy]:-}" ]; then
  size=${SIZE[churn,gcspy]} ev="" how=""
  trace=$(ls "$WORK"/churn.gcspy-*.trace 2>/dev/null | head -1)
  if [ -x "$CLI" ] && [ -n "$trace" ]; then
    ev=$("$CLI" dump "$trace" 2>/dev/null | grep -c -E '^(alloc|realloc|free)')
    [ "${ev:-0}" -gt 0 ] && how="counted by gcspy dump"
  fi
  if [ -z "$how" ]; then ev=$BARE_EVENTS how="churn's own count"; fi
  [ -n "$ev" ] && [ "$ev" -gt 0 ] &&
    BPE_GCSPY=$(awk -v s="$size" -v e="$ev" 'BEGIN { printf "%.3f", s / e }')
  C[bpe,gcspy]="${BPE_GCSPY:-?} B/event ($size B, $ev events, $how)"
  # The writer's compression at each zstd level, frames vs one stream,
  # replayed on this trace's chunks (the writer's own inputs), with the
  # compressing thread's CPU time (bench/zstd_levels.c).
  if [ -x "$OUT/zstd_levels" ] && [ -n "$trace" ]; then
    "$OUT/zstd_levels" "$trace" >"$OUT/zstd_levels.md" 2>"$LOGS/zstd_levels.err" ||
      echo "zstd_levels failed (see $LOGS/zstd_levels.err)" >"$OUT/zstd_levels.md"
  fi
else
  C[bpe,gcspy]="not measured"
fi
if [ -n "${T[churn,heaptrack]:-}" ]; then
  size=${SIZE[churn,heaptrack]} log=${LASTLOG[churn,heaptrack]}
  a=$(sed -n 's/^[[:space:]]*allocations:[[:space:]]*\([0-9]*\).*/\1/p' "$log.out" "$log.err" | head -1)
  l=$(sed -n 's/^[[:space:]]*leaked allocations:[[:space:]]*\([0-9]*\).*/\1/p' "$log.out" "$log.err" | head -1)
  if [ -n "$a" ]; then ev=$((2 * a - ${l:-0})) how="from heaptrack's stats"
  else ev=$BARE_EVENTS how="churn's own count"; fi
  [ -n "$ev" ] && [ "$ev" -gt 0 ] &&
    BPE_HT=$(awk -v s="$size" -v e="$ev" 'BEGIN { printf "%.3f", s / e }')
  C[bpe,heaptrack]="${BPE_HT:-?} B/event ($size B, $ev events, $how)"
else
  C[bpe,heaptrack]="not measured"
fi

# ---- import torch and the training example ----------------------------------
IMPORT="import torch; print('torch', torch.__version__)"
TRAIN_ARGS=(examples/train.py --steps "$STEPS" --log-every 10 --timing)
if [ $have_torch = 1 ]; then
  tools_for import python
  bench_row import '^torch ' 10 "$TOOLS" "$PY" -c "$IMPORT"
  tools_for train python
  bench_row train '^(step|done) ' 5 "$TOOLS" "$PY" "${TRAIN_ARGS[@]}"
  for tool in ${TOOLS//,/ }; do
    if [ -z "${S[train,$tool]:-}" ]; then C[step,$tool]=${C[train,$tool]}
    elif [ $tool = bare ]; then C[step,$tool]="${S[train,bare]} ms"
    else C[step,$tool]="${S[train,$tool]} ms ($(ratio "${S[train,$tool]}" "${S[train,bare]:-0}")×)"; fi
  done
else
  for row in import import-cpu train step; do
    for tool in bare gcspy heaptrack lsan; do C[$row,$tool]="torch not importable by $PY"; done
  done
fi
# ---- memory per live block ------------------------------------------------------
# tests/programs/rel_load's live case: MEM_LIVE blocks of 24 to 31 bytes
# live at once (the peak), then half of them freed and allocated again; it
# prints its own peak RSS (VmHWM). Per tool: (its peak - bare's) / blocks,
# the memory the tool keeps in the program's process per live block
# (heaptrack's analysis runs in a process of its own, not counted here).
MEMPROG=$BUILD/tests/programs/rel_load
MEM_LIVE=$([ "$QUICK" = 1 ] && echo 200000 || echo 1000000)
BPB_GCSPY="" BPB_LSAN="" BPB_HT=""
if [ -x "$MEMPROG" ]; then
  tools_for mem python
  bench_row mem '^live blocks' 10 "$TOOLS" "$MEMPROG" live "$MEM_LIVE"
  for tool in ${TOOLS//,/ }; do
    if [ -z "${M[mem,$tool]:-}" ]; then
      C[mem,$tool]=${C[mem,$tool]:-"not measured"}
    elif [ $tool = bare ]; then
      C[mem,$tool]="peak $((M[mem,bare] / 1024)) MiB"
    else
      per=$(awk -v t="${M[mem,$tool]}" -v b="${M[mem,bare]}" -v n="$MEM_LIVE" 'BEGIN { printf "%.1f", (t - b) * 1024 / n }')
      C[mem,$tool]="$per B/block (peak $((M[mem,$tool] / 1024)) MiB)"
      [ $tool = gcspy ] && BPB_GCSPY=$per
      [ $tool = lsan ] && BPB_LSAN=$per
      [ $tool = heaptrack ] && BPB_HT=$per
    fi
  done
else
  for tool in bare gcspy heaptrack lsan; do C[mem,$tool]="$MEMPROG missing (make test-build)"; done
fi

for row in import import-cpu train step bpe mem; do C[$row,memcheck]="not run (too slow)"; done
C[churn-cpu,memcheck]="not measured"

C[bpe,bare]="-"; C[bpe,lsan]="- (no trace)"

# ---- the table ---------------------------------------------------------------
r_churn=$( [ -n "${T[churn,gcspy]:-}" ] && ratio "${T[churn,gcspy]}" "${T[churn,bare]}")
r_import=$( [ -n "${T[import,gcspy]:-}" ] && ratio "${T[import,gcspy]}" "${T[import,bare]}")
r_churn_cpu=$( [ -n "${U[churn,gcspy]:-}" ] && ratio "${U[churn,gcspy]}" "${U[churn,bare]}")
r_import_cpu=$( [ -n "${U[import,gcspy]:-}" ] && ratio "${U[import,gcspy]}" "${U[import,bare]}")
r_step=$( [ -n "${S[train,gcspy]:-}" ] && [ -n "${S[train,bare]:-}" ] && ratio "${S[train,gcspy]}" "${S[train,bare]}")
bpe_ok="not measured"
if [ -n "$BPE_GCSPY" ] && [ -n "$BPE_HT" ]; then
  bpe_ok=$(awk -v g="$BPE_GCSPY" -v h="$BPE_HT" 'BEGIN { print (g <= h) ? "met" : "MISSED" }')
fi

# ---- the figures bench/targets.sh compares with issue 16's targets -------------
# ratio ROW TOOL [CPU|STEP]: the tool's median over bare's, or empty
mratio() {
  local a b
  case ${3:-} in
    CPU) a=${U[$1,$2]:-} b=${U[$1,bare]:-} ;;
    STEP) a=${S[$1,$2]:-} b=${S[$1,bare]:-} ;;
    *) a=${T[$1,$2]:-} b=${T[$1,bare]:-} ;;
  esac
  [ -n "$a" ] && [ -n "$b" ] && ratio "$a" "$b"
}
{
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "mode=$([ "$QUICK" = 1 ] && echo quick || echo full) runs=$RUNS"
  for tool in gcspy lsan heaptrack; do
    echo "churn_wall_$tool=$(mratio churn $tool)"
    echo "churn_cpu_$tool=$(mratio churn $tool CPU)"
    echo "import_wall_$tool=$(mratio import $tool)"
    echo "import_cpu_$tool=$(mratio import $tool CPU)"
    echo "step_$tool=$(mratio train $tool STEP)"
  done
  echo "bpe_gcspy=$BPE_GCSPY"
  echo "bpe_heaptrack=$BPE_HT"
  echo "bpb_gcspy=$BPB_GCSPY"
  echo "bpb_lsan=$BPB_LSAN"
  echo "bpb_heaptrack=$BPB_HT"
  echo "python=$("$PY" -c 'import sys, torch; print("%d.%d" % sys.version_info[:2], torch.__version__)' 2>/dev/null | tr ' ' /)"
} >"$OUT/metrics/run.env"

{
  echo "# gcspy benchmarks"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPU(s) ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), gcspy $(git rev-parse --short HEAD 2>/dev/null || echo '?')."
  echo "Wall time, median of $RUNS run(s), the tools interleaved round by round; (N×) is the ratio to bare. Mode: $([ "$QUICK" = 1 ] && echo quick || echo full)."
  echo
  echo "- churn: $PAIRS malloc/free pairs, $THREADS threads, $LIVE live objects, malloc $DEPTH frames deep ($CHURN)"
  echo "- import: \`$PY -c \"import torch\"\`"
  echo "- train: \`$PY ${TRAIN_ARGS[*]}\` (whole process); step: its median step time"
  echo "- gcspy: LD_PRELOAD=$BUILD/libgcspy.so, default options (fp stacks, depth 64, exit scan) + GCSPY_QUIET=1"
  echo "- memory: \`$MEMPROG live $MEM_LIVE\`: peak RSS of the program's process over bare's, per live block"
  echo "- heaptrack: \`heaptrack -o FILE\`; memcheck: \`valgrind --leak-check=full\`; LSan: ${LSAN_HOW:-not available}"
  echo
  echo "| row | bare | gcspy | heaptrack | memcheck | LSan |"
  echo "|---|---|---|---|---|---|"
  for row in churn churn-cpu bpe import import-cpu train step mem; do
    case $row in
      mem) label="memory per live block ($MEM_LIVE live)" ;;
      churn) label="churn" ;; bpe) label="churn trace size" ;; import) label="import torch" ;;
      churn-cpu) label="churn, CPU (user + sys)" ;; import-cpu) label="import torch, CPU (user + sys)" ;;
      train) label="train.py, whole process" ;; step) label="train.py, per step" ;;
    esac
    echo "| $label | ${C[$row,bare]:-n/a} | ${C[$row,gcspy]:-n/a} | ${C[$row,heaptrack]:-n/a} | ${C[$row,memcheck]:-n/a} | ${C[$row,lsan]:-n/a} |"
  done
  echo
  echo "| target | gcspy | verdict |"
  echo "|---|---|---|"
  echo "| churn ≤ 1.5× | ${r_churn:-?}× | $(verdict "$r_churn" 1.5) |"
  echo "| import torch ≤ 1.5× | ${r_import:-?}× | $(verdict "$r_import" 1.5) |"
  echo "| churn CPU ≤ 1.5× (issue 16) | ${r_churn_cpu:-?}× | $(verdict "$r_churn_cpu" 1.5) |"
  echo "| import torch CPU ≤ 1.3× (issue 16) | ${r_import_cpu:-?}× | $(verdict "$r_import_cpu" 1.3) |"
  echo "| training per step ≤ 1.10× | ${r_step:-?}× | $(verdict "$r_step" 1.10) |"
  echo "| bytes/event ≤ heaptrack's (${BPE_HT:-?}) | ${BPE_GCSPY:-?} | $bpe_ok |"
  echo
  if [ -s "$OUT/zstd_levels.md" ]; then
    echo "The writer's zstd level and framing on the churn trace above (bench/zstd_levels: its chunks compressed again; CPU: the compressing thread's, best of 3):"
    echo
    cat "$OUT/zstd_levels.md"
    echo
  fi
  if [[ ${C[train,heaptrack]:-} == hung* ]]; then
    echo "heaptrack hung on train.py: its hooks deadlock in the DataLoader worker processes train.py fork()s (seen with heaptrack 1.4)."
  fi
  echo "Timings on a shared machine are noisy; compare ratios from the same run only."
} | tee "$OUT/results.md"

echo "results written to $OUT/results.md" >&2
[ $failures -eq 0 ] || { echo "run-bench: $failures measurement(s) failed (logs in $LOGS)" >&2; exit 1; }
exit 0
