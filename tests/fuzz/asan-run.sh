#!/usr/bin/env bash
# The run half of `make asan` (tests/mk/reliability.mk builds first):
#   asan-run.sh ASAN_BUILD UNIT...
# 1. runs the sanitized Criterion unit tests ASAN_BUILD/tests/UNIT;
# 2. feeds every fuzz regression input and seed (tests/fuzz/regressions,
#    tests/fuzz/corpus) and the traces of rel_mktraces (hostile strings,
#    impossible content) to the sanitized CLI: dump, report (text, JSON,
#    HTML), check;
# 3. runs the whole integration suite in ASAN_BUILD/tree, a view of the
#    repository whose build/gcspy is the sanitized CLI (everything else in
#    build/ is the normal build), and collects every sanitizer report from
#    its logs.
# A finding is any "ERROR: AddressSanitizer", "ERROR: LeakSanitizer" or
# "runtime error:" (UBSan) in any output; the script lists them and exits 1.
set -u
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
A=$ROOT/$1; shift
LOGS=$A/logs
rm -rf "$LOGS"; mkdir -p "$LOGS"
# Leaks of libraries, not gcspy's, are listed with their causes in
# tests/fuzz/lsan.supp; matching them needs full stacks at malloc (libdw has
# no frame pointers), hence fast_unwind_on_malloc=0.
export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:allocator_may_return_null=1:max_allocation_size_mb=2048:fast_unwind_on_malloc=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=exitcode=23:suppressions=$ROOT/tests/fuzz/lsan.supp
SAN='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'
fails=0
finding() { echo "FINDING: $*"; fails=$((fails + 1)); }

echo "== unit tests (ASan+UBSan)"
for u in "$@"; do
  "$A/tests/$u" --jobs 2 >"$LOGS/$u.log" 2>&1
  rc=$?
  echo "$u: exit $rc, $(grep -a 'Synthesis' "$LOGS/$u.log" | tail -1)"
  [ $rc -eq 0 ] || finding "$u failed (exit $rc): $LOGS/$u.log"
  grep -aEq "$SAN" "$LOGS/$u.log" && finding "$u: $(grep -aE -m2 "$SAN" "$LOGS/$u.log")"
done

echo "== the CLI on fuzz inputs and hand-made traces"
G=$A/gcspy
inputs=$LOGS/inputs
mkdir -p "$inputs"
"$ROOT/build/tests/programs/rel_mktraces" weird "$inputs/weird.trace" >/dev/null &&
  "$ROOT/build/tests/programs/rel_mktraces" semantic "$inputs" >/dev/null ||
  finding "rel_mktraces failed (make test-build first)"
n=0
for f in tests/fuzz/regressions/* tests/fuzz/corpus/* "$inputs"/*.trace; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  b=$LOGS/in-$(basename "$f")
  for cmd in "dump" "report --no-symbols" "report --no-symbols --format json" \
             "report --no-symbols --format html" "check --no-symbols --require-complete"; do
    timeout 120 $G $cmd "$f" >/dev/null 2>"$b.err"
    rc=$?
    if [ $rc -gt 2 ] || grep -aEq "$SAN" "$b.err"; then
      finding "gcspy $cmd $f: exit $rc: $(grep -aE -m1 "$SAN|SUMMARY" "$b.err")"
      cp "$b.err" "$b.$(echo "$cmd" | tr ' -' '__').log"
    fi
  done
done
echo "$n inputs, 5 commands each"

echo "== integration suite against the sanitized CLI"
# `gcspy run` looks for libgcspy.so beside its own executable: the normal
# build's shim (and CUPTI subscriber) go beside the sanitized CLI.
for lib in "$ROOT"/build/libgcspy*.so; do
  [ -f "$lib" ] && ln -sfn "$lib" "$A/$(basename "$lib")"
done
T=$A/tree
rm -rf "$T"; mkdir -p "$T/build"
for e in "$ROOT"/* "$ROOT"/.[!.]*; do
  name=$(basename "$e")
  case $name in build|build-asan|.git) continue ;; esac
  ln -s "$e" "$T/$name"
done
for e in "$ROOT"/build/*; do
  name=$(basename "$e")
  case $name in gcspy|test-logs|test-artifacts) continue ;; esac
  ln -s "$e" "$T/build/$name"
done
ln -s "$G" "$T/build/gcspy"
mkdir -p "$T/build/test-logs" "$T/build/test-artifacts"
(cd "$T" && bash scripts/run-tests.sh) | tee "$LOGS/suite.txt"
grep -aEl "$SAN" "$T"/build/test-logs/*.log 2>/dev/null | while read -r l; do
  echo "FINDING: $(basename "$l"): $(grep -aE -m1 "$SAN" "$l")"
done | tee "$LOGS/suite-findings.txt"
[ -s "$LOGS/suite-findings.txt" ] && fails=$((fails + $(wc -l <"$LOGS/suite-findings.txt")))
summary=$(tail -1 "$LOGS/suite.txt")
echo "suite: $summary"

if [ $fails -gt 0 ]; then
  echo "make asan: $fails finding(s) or failure(s) (logs in $LOGS)"
  exit 1
fi
echo "make asan: no findings"
