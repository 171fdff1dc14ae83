#!/usr/bin/env bash
# `import torch` and the training example's step time on the other Python and
# PyTorch stacks gcspy supports: the Debian roots tests/lib.sh's in_root runs
# (trixie: python3.13 and torch 2.6; sid: python3.14 and torch 2.14; made by
# scripts/make-root.sh), bare and under the host's libgcspy.so, the two
# interleaved round by round, medians of BENCH_RUNS rounds (3; 1 with
# BENCH_QUICK=1). Part of `make bench`, after bench/run-bench.sh, which
# measures the host's own python the same way (beside the peers).
#
# Only roots that exist are measured: making one takes minutes and the
# network, which a benchmark should not (the table says how to make it).
# Times are taken inside the root (bash's `time`: wall, and user + sys of
# the process and its children), so entering the root costs neither side.
# The step time is the median step train.py prints with --timing
# (--workers 0: the step is the main process's work).
#
# Appends a table to $BUILD/bench/results.md and writes the figures to
# $BUILD/bench/metrics/roots.env for bench/targets.sh. Exit status: 0 when
# every run in an existing root worked (or no root exists), 1 when one failed
# or printed other results than its bare run, 2 when it cannot run.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
RUNS=${BENCH_RUNS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
STEPS=${BENCH_STEPS:-$([ "$QUICK" = 1 ] && echo 30 || echo 300)}
SUITES=${BENCH_ROOTS:-trixie sid}
ROOTS=${GCSPY_ROOTS:-/var/cache/gcspy/roots}
OUT=$BUILD/bench
LIB=$PWD/$BUILD/libgcspy.so
for v in RUNS STEPS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "roots-bench: $v must be a positive integer, not '${!v}'" >&2; exit 2; }
done
[ -f "$LIB" ] || { echo "roots-bench: $LIB is missing: run 'make bench'" >&2; exit 2; }
mkdir -p "$OUT/metrics" "$OUT/logs" || exit 2
METRICS=$OUT/metrics/roots.env
echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')" >"$METRICS"
# shellcheck source=../tests/lib.sh
. tests/lib.sh
GS_ROOT=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcspy-rootbench.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT
export IN_ROOT_BIND=$WORK
failures=0

# shellcheck source=lib.sh
. bench/lib.sh

# timed SUITE TOOL NAME CMD...: CMD inside the root, bare or under gcspy;
# its stdout in $WORK/NAME.out, stderr in .err, "wall user sys" in .time.
timed() {
  local s=$1 tool=$2 name=$3 pre=()
  shift 3
  rm -f "$WORK/$name".*
  [ "$tool" = gcspy ] && pre=(env LD_PRELOAD="$LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$WORK/$name-%p.trace")
  in_root "$s" timeout 900 bash -c 'TIMEFORMAT="%R %U %S"; o=$1; shift
    { time "$@" >"$o.out" 2>"$o.err"; } 2>"$o.time"' timed "$WORK/$name" "${pre[@]}" "$@"
  local rc=$?
  cp "$WORK/$name.out" "$OUT/logs/root-$name.out" 2>/dev/null
  cp "$WORK/$name.err" "$OUT/logs/root-$name.err" 2>/dev/null
  rm -f "$WORK/$name"-*.trace*
  return $rc
}

rows=()
for s in $SUITES; do
  if [ ! -f "$ROOTS/$s/etc/gcspy-root" ]; then
    rows+=("| $s | no root here (make it: bash scripts/make-root.sh $s) | | |")
    continue
  fi
  if ! in_root "$s" python3 -c 'import torch' >/dev/null 2>&1; then
    rows+=("| $s | torch does not import in the root | | |")
    continue
  fi
  ver=$(in_root "$s" python3 -c 'import sys, torch; print("%d.%d/%s" % (sys.version_info[0], sys.version_info[1], torch.__version__))' 2>/dev/null)
  declare -A W=() U=() P=() expect=()
  bad=""
  for ((i = 1; i <= RUNS; i++)); do
    for tool in bare gcspy; do
      echo "  $s: import torch, $tool, run $i" >&2
      if timed "$s" "$tool" "import-$tool-$i" python3 -c 'import torch; print("torch", torch.__version__)'; then
        read -r w u y <"$WORK/import-$tool-$i.time"
        W[import,$tool]+=" $w"; U[import,$tool]+=" $(awk -v u="$u" -v y="$y" 'BEGIN { print u + y }')"
      else
        bad+=" import/$tool"
      fi
      echo "  $s: train.py --steps $STEPS, $tool, run $i" >&2
      if timed "$s" "$tool" "train-$tool-$i" python3 examples/train.py --steps "$STEPS" --log-every 10 --timing --workers 0; then
        st=$(sed -n 's/.*median_step_ms \([0-9.]*\).*/\1/p' "$WORK/train-$tool-$i.err" | tail -1)
        grep -E '^(step|done) ' "$WORK/train-$tool-$i.out" >"$WORK/train-$tool-$i.res"
        if [ -z "${expect[train]:-}" ]; then expect[train]=$WORK/train-$tool-$i.res
        elif ! cmp -s "${expect[train]}" "$WORK/train-$tool-$i.res"; then bad+=" train/$tool(output)"; fi
        [ -n "$st" ] && P[train,$tool]+=" $st"
      else
        bad+=" train/$tool"
      fi
    done
  done
  if [ -n "$bad" ]; then
    failures=$((failures + 1))
    echo "roots-bench: $s: failed:$bad (logs in $OUT/logs/root-*)" >&2
  fi
  cell() { # KIND ROW: "bare / gcspy (ratio)" of the medians
    local a b
    # shellcheck disable=SC2086
    case $1 in
      W) a=$(median ${W[$2,bare]:-}) b=$(median ${W[$2,gcspy]:-}) ;;
      U) a=$(median ${U[$2,bare]:-}) b=$(median ${U[$2,gcspy]:-}) ;;
      P) a=$(median ${P[$2,bare]:-}) b=$(median ${P[$2,gcspy]:-}) ;;
    esac
    if [ -n "$a" ] && [ -n "$b" ]; then echo "$a / $b ($(ratio "$b" "$a")×)"; else echo "not measured"; fi
  }
  ri=$(cell W import) rc=$(cell U import) rp=$(cell P train)
  rows+=("| $s ($ver) | $ri | $rc | $rp |${bad:+ failed:$bad}")
  r() { sed -n 's/.*(\([0-9.]*\)×)$/\1/p' <<<"$1"; }
  {
    echo "import_wall_$s=$(r "$ri")"
    echo "import_cpu_$s=$(r "$rc")"
    echo "step_$s=$(r "$rp")"
    echo "python_$s=$ver"
  } >>"$METRICS"
  unset W U P expect
done

{
  echo
  echo "### Other Python and PyTorch stacks (Debian roots), bare / gcspy"
  echo
  echo "Medians of $RUNS interleaved round(s), timed inside the root; train.py --steps $STEPS --workers 0 --timing, its median step. Targets (issue 16): import torch at most 1.3×, per step at most 1.05×."
  echo
  echo "| root (python/torch) | import torch, wall s | import torch, CPU s | train.py, median step ms |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | tee -a "$OUT/results.md"
[ $failures -eq 0 ] || exit 1
exit 0
