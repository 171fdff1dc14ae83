#!/usr/bin/env bash
# The benchmarks behind `make bench`: gcspy against a bare run and against its
# peers (heaptrack, valgrind memcheck, LeakSanitizer), all measured in this one
# run on this machine, so the ratios compare like with like. Prints a table of
# wall times and ratios against bare with the spec's targets beside them, and
# writes the same table to $BUILD/bench/results.md. docs/benchmarks.md says
# what each row measures.
#
#   BENCH_RUNS=N     runs per median (default 3; 1 with BENCH_QUICK=1)
#   BENCH_QUICK=1    small sizes (a minute or so), for a quick look
#   BENCH_PAIRS, BENCH_LIVE, BENCH_STEPS, BENCH_VG_PAIRS override the sizes
#
# Every tool's run must print what the bare run printed (churn's checksum, the
# training losses); a run that does not, or fails, shows as "failed" in the
# table, its log kept under $BUILD/bench/logs/. Exit status: 0 when every
# measurement ran (targets missed or not), 1 when some failed, 2 when the
# bench cannot run at all.
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
mkdir -p "$LOGS" || exit 2
rm -f "$LOGS"/*
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

# measure NAME TOOL FILTER N PROG ARGS...: N runs of PROG under TOOL. Sets
# M_TIME (median wall seconds), M_STEP (median of the per-step medians the
# training example prints, if any), M_SIZE (trace bytes of the last run),
# M_STATUS ("ok", or why not). The program's output, filtered through the
# extended regex FILTER, must equal the bare run's ($WORK/NAME.expect).
measure() {
  local name=$1 tool=$2 filter=$3 n=$4; shift 4
  local i t0 t1 rc times=() steps=() log trace
  M_TIME="" M_STEP="" M_SIZE="" M_STATUS=ok
  for ((i = 1; i <= n; i++)); do
    log=$LOGS/$name.$tool.$i
    trace=$WORK/$name.$tool.$i
    rm -f "$trace"*
    t0=$(now_ns)
    # timeout signals its whole process group: a hung tool's helpers and the
    # program's children go too.
    tool_cmd "$tool" "$trace" "$@"
    timeout -k 5 "$LIMIT" "${CMD[@]}" >"$log.out" 2>"$log.err"
    rc=$?
    t1=$(now_ns)
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      M_STATUS="hung: killed after ${LIMIT} s"; return 1
    elif [ $rc -ne 0 ]; then
      M_STATUS="failed (exit $rc, see $log.err)"; return 1
    fi
    grep -E "$filter" "$log.out" >"$log.filtered"
    if [ "$tool" = bare ] && [ $i -eq 1 ]; then
      cp "$log.filtered" "$WORK/$name.expect"
    elif ! cmp -s "$log.filtered" "$WORK/$name.expect"; then
      M_STATUS="failed (output differs from bare, see $log.out)"; return 1
    fi
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')")
    local s
    s=$(sed -n 's/.*median_step_ms \([0-9.]*\).*/\1/p' "$log.err" | tail -1)
    [ -n "$s" ] && steps+=("$s")
    M_SIZE=$(cat "$trace"* 2>/dev/null | wc -c)
    M_LAST_LOG=$log
  done
  M_TIME=$(median "${times[@]}")
  [ ${#steps[@]} -gt 0 ] && M_STEP=$(median "${steps[@]}")
  return 0
}

median() {
  printf '%s\n' "$@" | sort -g |
    awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }

# cell TIME BASE UNIT: "1.234 s (1.50×)"
cell() {
  if [ -z "$1" ]; then echo "$M_STATUS"; return; fi
  if [ -z "$2" ]; then echo "$1 $3"; return; fi
  echo "$1 $3 ($(ratio "$1" "$2")×)"
}

# verdict VALUE LIMIT: whether a ratio meets its target
verdict() {
  [ -z "$1" ] && { echo "not measured"; return; }
  awk -v v="$1" -v l="$2" 'BEGIN { print (v <= l) ? "met" : "MISSED" }'
}

declare -A C   # table cells: C[row,tool]
# Seconds one run may take before it counts as hung: bare runs get
# BENCH_TIMEOUT; the tools 60 s plus 30 times the bare median of their row.
BARE_LIMIT=${BENCH_TIMEOUT:-600}
LIMIT=$BARE_LIMIT
limit_after() { LIMIT=$(awk -v b="$1" -v f="$2" 'BEGIN { print int(60 + f * b) }'); }
failures=0
note() { echo "  $*" >&2; }
run_row() {      # run_row ROW NAME TOOL FILTER N PROG ARGS...
  local row=$1; shift
  note "$row: ${2}..."
  if measure "$@"; then return 0; fi
  failures=$((failures + 1)); note "  $M_STATUS"; return 1
}

echo "gcspy bench: $RUNS run(s) per median; $(nproc) CPU(s); logs in $LOGS" >&2

# ---- churn ------------------------------------------------------------------
CH_ARGS=(--pairs "$PAIRS" --threads "$THREADS" --live "$LIVE" --depth "$DEPTH")
declare -A T S   # T[row,tool] median seconds, S[row,tool] per-step ms
BARE_EVENTS=""
for tool in bare gcspy heaptrack lsan; do
  case $tool in
    gcspy) [ $have_gcspy = 1 ] || { C[churn,$tool]="not built ($LIB missing)"; continue; } ;;
    heaptrack) [ $have_heaptrack = 1 ] || { C[churn,$tool]="not installed"; continue; } ;;
    lsan) [ -n "$LSAN_HOW" ] || { C[churn,$tool]="no liblsan.so.0 or clang"; continue; } ;;
  esac
  [ $tool = bare ] && LIMIT=$BARE_LIMIT
  if run_row churn churn "$tool" '^checksum' "$RUNS" "$CHURN" "${CH_ARGS[@]}"; then
    T[churn,$tool]=$M_TIME
    case $tool in
      bare) BARE_EVENTS=$(sed -n 's/^events //p' "$M_LAST_LOG.out"); limit_after "$M_TIME" 30 ;;
      gcspy) GCSPY_SIZE=$M_SIZE GCSPY_TRACE=$(ls "$WORK"/churn.gcspy."$RUNS"*.trace 2>/dev/null | head -1) ;;
      heaptrack) HT_SIZE=$M_SIZE HT_LOG=$M_LAST_LOG ;;
    esac
  fi
  C[churn,$tool]=$(cell "${T[churn,$tool]:-}" "${T[churn,bare]:-}" s)
done
C[churn,bare]=${T[churn,bare]:+${T[churn,bare]} s}

# memcheck is too slow for the full size: fewer pairs, one run, against a bare
# median at the same size.
if [ $have_valgrind = 1 ]; then
  VG_ARGS=(--pairs "$VG_PAIRS" --threads "$THREADS" --live "$LIVE" --depth "$DEPTH")
  LIMIT=$BARE_LIMIT
  if run_row churn-vg churn-small bare '^checksum' "$RUNS" "$CHURN" "${VG_ARGS[@]}"; then
    vg_bare=$M_TIME
    limit_after "$M_TIME" 100
    if run_row churn-vg churn-small memcheck '^checksum' 1 "$CHURN" "${VG_ARGS[@]}"; then
      C[churn,memcheck]="$M_TIME s ($(ratio "$M_TIME" "$vg_bare")×; 1 run at $VG_PAIRS pairs vs bare $vg_bare s)"
      T[churn,memcheck_ratio]=$(ratio "$M_TIME" "$vg_bare")
    else C[churn,memcheck]=$M_STATUS; fi
  else C[churn,memcheck]=$M_STATUS; fi
else
  C[churn,memcheck]="not installed"
fi

# Bytes per event: compressed trace size over the events it holds. gcspy's are
# counted from its dump where the CLI has one, heaptrack's from its own stats
# (2 × allocations − leaked: every allocation and every free); else the
# program's own count of mallocs + frees.
BPE_GCSPY="" BPE_HT="" EV_GCSPY_HOW="" EV_HT_HOW=""
if [ -n "${GCSPY_SIZE:-}" ]; then
  ev=""
  if [ -x "$CLI" ] && [ -n "${GCSPY_TRACE:-}" ]; then
    ev=$("$CLI" dump "$GCSPY_TRACE" 2>/dev/null | grep -c -E '^(alloc|realloc|free)')
    [ "${ev:-0}" -gt 0 ] && EV_GCSPY_HOW="counted by gcspy dump"
  fi
  if [ -z "$EV_GCSPY_HOW" ]; then ev=$BARE_EVENTS; EV_GCSPY_HOW="churn's own count"; fi
  [ -n "$ev" ] && [ "$ev" -gt 0 ] &&
    BPE_GCSPY=$(awk -v s="$GCSPY_SIZE" -v e="$ev" 'BEGIN { printf "%.3f", s / e }')
  C[bpe,gcspy]="${BPE_GCSPY:-?} B/event ($GCSPY_SIZE B, $ev events, $EV_GCSPY_HOW)"
else
  C[bpe,gcspy]="not measured"
fi
if [ -n "${HT_SIZE:-}" ]; then
  a=$(sed -n 's/^[[:space:]]*allocations:[[:space:]]*\([0-9]*\).*/\1/p' "$HT_LOG.out" "$HT_LOG.err" | head -1)
  l=$(sed -n 's/^[[:space:]]*leaked allocations:[[:space:]]*\([0-9]*\).*/\1/p' "$HT_LOG.out" "$HT_LOG.err" | head -1)
  if [ -n "$a" ]; then ev=$((2 * a - ${l:-0})); EV_HT_HOW="from heaptrack's stats"
  else ev=$BARE_EVENTS; EV_HT_HOW="churn's own count"; fi
  [ -n "$ev" ] && [ "$ev" -gt 0 ] &&
    BPE_HT=$(awk -v s="$HT_SIZE" -v e="$ev" 'BEGIN { printf "%.3f", s / e }')
  C[bpe,heaptrack]="${BPE_HT:-?} B/event ($HT_SIZE B, $ev events, $EV_HT_HOW)"
else
  C[bpe,heaptrack]="not measured"
fi

# ---- import torch and the training example ----------------------------------
IMPORT="import torch; print('torch', torch.__version__)"
TRAIN_ARGS=(examples/train.py --steps "$STEPS" --log-every 10 --timing)
for row in import train; do
  if [ $have_torch = 0 ]; then
    for tool in bare gcspy heaptrack lsan; do C[$row,$tool]="torch not importable by $PY"; done
    continue
  fi
  for tool in bare gcspy heaptrack lsan; do
    case $tool in
      gcspy) [ $have_gcspy = 1 ] || { C[$row,$tool]="not built"; continue; } ;;
      heaptrack) [ $have_heaptrack = 1 ] || { C[$row,$tool]="not installed"; continue; } ;;
      lsan) [ -n "$LSAN_LIB" ] || { C[$row,$tool]="needs liblsan.so.0"; continue; } ;;
    esac
    [ $tool = bare ] && LIMIT=$BARE_LIMIT
    if [ $row = import ]; then
      run_row import import "$tool" '^torch ' "$RUNS" "$PY" -c "$IMPORT"
    else
      run_row train train "$tool" '^(step|done) ' "$RUNS" "$PY" "${TRAIN_ARGS[@]}"
    fi && { T[$row,$tool]=$M_TIME; S[$row,$tool]=$M_STEP; }
    [ $tool = bare ] && [ -n "${T[$row,bare]:-}" ] && limit_after "${T[$row,bare]}" 10
    C[$row,$tool]=$(cell "${T[$row,$tool]:-}" "${T[$row,bare]:-}" s)
    if [ $row = train ]; then
      if [ -n "${S[train,$tool]:-}" ]; then
        C[step,$tool]=$(cell "${S[train,$tool]}" "${S[train,bare]:-}" ms)
      else
        C[step,$tool]=${C[train,$tool]}
      fi
    fi
  done
  C[$row,bare]=${T[$row,bare]:+${T[$row,bare]} s}
done
C[step,bare]=${S[train,bare]:+${S[train,bare]} ms}
for tool in bare gcspy heaptrack lsan; do
  for row in import train step; do : "${C[$row,$tool]:=n/a}"; done
done
for row in import train step bpe; do C[$row,memcheck]="not run (too slow)"; done
C[bpe,bare]="-"; C[bpe,lsan]="- (no trace)"

# ---- the table ---------------------------------------------------------------
r_churn=$( [ -n "${T[churn,gcspy]:-}" ] && ratio "${T[churn,gcspy]}" "${T[churn,bare]}")
r_import=$( [ -n "${T[import,gcspy]:-}" ] && ratio "${T[import,gcspy]}" "${T[import,bare]}")
r_step=$( [ -n "${S[train,gcspy]:-}" ] && [ -n "${S[train,bare]:-}" ] && ratio "${S[train,gcspy]}" "${S[train,bare]}")
bpe_ok="not measured"
if [ -n "$BPE_GCSPY" ] && [ -n "$BPE_HT" ]; then
  bpe_ok=$(awk -v g="$BPE_GCSPY" -v h="$BPE_HT" 'BEGIN { print (g <= h) ? "met" : "MISSED" }')
fi

{
  echo "# gcspy benchmarks"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPU(s) ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), gcspy $(git rev-parse --short HEAD 2>/dev/null || echo '?')."
  echo "Wall time, median of $RUNS run(s); (N×) is the ratio to bare. Mode: $([ "$QUICK" = 1 ] && echo quick || echo full)."
  echo
  echo "- churn: $PAIRS malloc/free pairs, $THREADS threads, $LIVE live objects, malloc $DEPTH frames deep ($CHURN)"
  echo "- import: \`$PY -c \"import torch\"\`"
  echo "- train: \`$PY ${TRAIN_ARGS[*]}\` (whole process); step: its median step time"
  echo "- gcspy: LD_PRELOAD=$BUILD/libgcspy.so, default options (fp stacks, depth 64, exit scan) + GCSPY_QUIET=1"
  echo "- heaptrack: \`heaptrack -o FILE\`; memcheck: \`valgrind --leak-check=full\`; LSan: ${LSAN_HOW:-not available}"
  echo
  echo "| row | bare | gcspy | heaptrack | memcheck | LSan |"
  echo "|---|---|---|---|---|---|"
  for row in churn bpe import train step; do
    case $row in
      churn) label="churn" ;; bpe) label="churn trace size" ;; import) label="import torch" ;;
      train) label="train.py, whole process" ;; step) label="train.py, per step" ;;
    esac
    echo "| $label | ${C[$row,bare]:-n/a} | ${C[$row,gcspy]:-n/a} | ${C[$row,heaptrack]:-n/a} | ${C[$row,memcheck]:-n/a} | ${C[$row,lsan]:-n/a} |"
  done
  echo
  echo "| target | gcspy | verdict |"
  echo "|---|---|---|"
  echo "| churn ≤ 1.5× | ${r_churn:-?}× | $(verdict "$r_churn" 1.5) |"
  echo "| import torch ≤ 1.5× | ${r_import:-?}× | $(verdict "$r_import" 1.5) |"
  echo "| training per step ≤ 1.10× | ${r_step:-?}× | $(verdict "$r_step" 1.10) |"
  echo "| bytes/event ≤ heaptrack's (${BPE_HT:-?}) | ${BPE_GCSPY:-?} | $bpe_ok |"
  echo
  if [[ ${C[train,heaptrack]:-} == hung* ]]; then
    echo "heaptrack hung on train.py: its hooks deadlock in the DataLoader worker processes train.py fork()s (seen with heaptrack 1.4)."
  fi
  echo "Timings on a shared machine are noisy; compare ratios from the same run only."
} | tee "$OUT/results.md"

echo "results written to $OUT/results.md" >&2
[ $failures -eq 0 ] || { echo "run-bench: $failures measurement(s) failed (logs in $LOGS)" >&2; exit 1; }
exit 0
