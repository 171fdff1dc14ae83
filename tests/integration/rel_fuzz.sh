#!/usr/bin/env bash
# Fuzzing in CI, short (the long run is `make fuzz`):
#   regressions  every input in tests/fuzz/regressions/ (findings of earlier
#                fuzz runs) through the normal CLI within 512 MiB of address
#                space and 60 s: `gcspy report` (text and JSON) writes its
#                report and exits 0, or 2 for a malformed trace after one
#                line naming the problem's offset; its JSON is valid UTF-8
#                and JSON either way; `gcspy report --format html` and
#                `gcspy check` answer the same way (check: 0, 1 or 2);
#                `gcspy dump` exits 0 or 2, nothing crashes or hangs; then
#                through both libFuzzer targets with every check on and a
#                time limit per input (-timeout: a hang is a finding);
#   corpus       every seed in tests/fuzz/corpus/ dumps cleanly;
#   short run    each target fuzzes for REL_FUZZ_SECONDS (12) from the seed
#                corpus, with the findings listed in tests/fuzz/known.supp
#                (and REL_FUZZ_KNOWN, passed on as GCSPY_FUZZ_KNOWN) set
#                aside: no new finding.
# The libFuzzer parts need clang's fuzzer runtime; without it they are
# skipped (the regressions still run through the CLI).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_fuzz
F=$GS_ROOT/build/tests/fuzz
SECS=${REL_FUZZ_SECONDS:-12}
T=$GS_T

# 512 MiB of address space, except for an ASan build (make asan runs this
# suite with one), whose shadow memory needs terabytes of it
LIM=(prlimit --as=$((512 << 20)))
ldd "$GS_CLI" 2>/dev/null | grep -q libasan && LIM=()
n=0
for f in tests/fuzz/regressions/*; do
  [ -f "$f" ] || continue
  n=$((n + 1)); b=$(basename "$f")
  # report: 0, or 2 with the one line a malformed trace gets
  ok_rc() { [ "$1" -eq 0 ] || { [ "$1" -eq 2 ] && [ "$(grep -vc warning "$2")" -eq 1 ] && grep -q ': malformed trace: offset [0-9]' "$2"; }; }
  timeout 60 "${LIM[@]}" "$GS_CLI" report --no-symbols -o /dev/null "$f" 2>"$T/$b.err"
  rc=$?
  ok_rc $rc "$T/$b.err" || fail "regression $b: gcspy report exit $rc within 512 MiB / 60 s: $(grep -v warning "$T/$b.err" | head -2 | tr '\n' '|')"
  timeout 60 "${LIM[@]}" "$GS_CLI" report --no-symbols --format json -o "$T/$b.json" "$f" 2>"$T/$b.jerr"
  rc=$?
  if ok_rc $rc "$T/$b.jerr"; then
    gs_py - "$T/$b.json" <<'PY' || fail "regression $b: JSON report not valid"
import json, sys
raw = open(sys.argv[1], 'rb').read()
try:
    json.loads(raw.decode('utf-8'))
except (UnicodeDecodeError, ValueError) as e:
    raise SystemExit(str(e)[:200])
PY
  else
    fail "regression $b: gcspy report --format json exit $rc"
  fi
  timeout 60 "${LIM[@]}" "$GS_CLI" report --no-symbols --format html -o /dev/null "$f" 2>"$T/$b.herr"
  rc=$?
  ok_rc $rc "$T/$b.herr" || fail "regression $b: gcspy report --format html exit $rc within 512 MiB / 60 s"
  timeout 60 "${LIM[@]}" "$GS_CLI" check --no-symbols "$f" >/dev/null 2>"$T/$b.cerr"
  rc=$?
  [ $rc -le 2 ] || fail "regression $b: gcspy check exit $rc within 512 MiB / 60 s"
  timeout 60 "$GS_CLI" dump "$f" >/dev/null 2>&1
  rc=$?
  [ $rc -le 2 ] || fail "regression $b: gcspy dump exit $rc"
done
echo "regressions: $n inputs through the CLI"

for f in tests/fuzz/corpus/*; do
  "$GS_CLI" dump "$f" >/dev/null 2>"$T/seed.err"
  rc=$?
  if [ $rc -ne 0 ] && { [ $rc -ne 2 ] || ! grep -q 'offset' "$T/seed.err"; }; then
    fail "seed $(basename "$f"): dump exit $rc: $(head -1 "$T/seed.err")"
  fi
done

if [ ! -x "$F/fuzz_reader" ] || [ ! -x "$F/fuzz_analyze" ]; then
  echo "libFuzzer targets not built (clang with libFuzzer missing): short run skipped"
  gs_done
fi
for t in fuzz_reader fuzz_analyze; do
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 timeout 300 "$F/$t" -rss_limit_mb=2048 -timeout=20 \
    tests/fuzz/regressions/* >"$T/$t.regr" 2>&1 ||
    fail "$t on the regression inputs: $(grep -aE -m2 'ERROR|SUMMARY|runtime error' "$T/$t.regr" | tr '\n' '|')"
done
for t in fuzz_reader fuzz_analyze; do
  mkdir -p "$T/corpus-$t"
  (cd "$T" && GCSPY_FUZZ_KNOWN="${REL_FUZZ_KNOWN:-}" \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$GS_ROOT/tests/fuzz/known.supp \
    timeout $((SECS + 120)) "$F/$t" -max_total_time="$SECS" -max_len=65536 -rss_limit_mb=2048 -timeout=20 \
      -print_final_stats=1 "corpus-$t" "$GS_ROOT/tests/fuzz/corpus" >"$t.log" 2>&1)
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$T/$t.log")
  if [ $rc -ne 0 ]; then
    art=$(ls "$T"/crash-* "$T"/oom-* "$T"/timeout-* "$T"/leak-* 2>/dev/null | head -1)
    mkdir -p "$GS_ROOT/build/tests/fuzz/ci-findings"
    [ -n "$art" ] && cp "$art" "$GS_ROOT/build/tests/fuzz/ci-findings/"
    fail "$t: new finding (exit $rc), input kept in build/tests/fuzz/ci-findings/: $(grep -aE -m3 'ERROR|SUMMARY|runtime error' "$T/$t.log" | tr '\n' '|')"
  fi
  echo "figure: $t: ${execs:-?} executions in $SECS s"
done
gs_done
