#!/usr/bin/env bash
# The gcspy CLI under valgrind memcheck: no invalid read or write, no use of
# uninitialised values, no definite or indirect leak, on
#   - `gcspy report --format json` of a trace full of hostile strings
#     (rel_mktraces weird) and of impossible content (rel_mktraces semantic),
#   - `gcspy report` (text, with symbols) of a real trace cut mid-chunk,
#   - `gcspy dump` of a trace with every record type (mktrace full),
#   - `gcspy check --require-complete` of a real trace with a leak scan.
# (`make asan` runs the whole suite against an ASan+UBSan build; this is the
# check that needs no special build.)
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_valgrind
gs_need rel_mktraces rel_faults
command -v valgrind >/dev/null || gs_skip "valgrind not installed"
# make asan runs the suite with an ASan CLI, which valgrind cannot run
ldd "$GS_CLI" 2>/dev/null | grep -q libasan && gs_skip "the CLI is an ASan build (make asan checks it with ASan instead)"
T=$GS_T
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
    --show-leak-kinds=definite,indirect --track-origins=yes)

"$GS_PROGS/rel_mktraces" weird "$T/weird.trace" && "$GS_PROGS/rel_mktraces" semantic "$T/sem" ||
  { fail "rel_mktraces"; gs_done; }
"$GS_ROOT/build/tests/mktrace" full "$T/full.trace" || fail "mktrace"
GS_TIMEOUT=30 GCSPY_SCAN_AT_EXIT=1 gs_run real "$GS_PROGS/rel_faults" work 2000
real=$(gs_traces)
head -c $(( $(stat -c %s "$real") - 100 )) "$real" >"$T/cut.trace"

# vg NAME ARGS...: the CLI under memcheck; exit statuses 0..2 are the CLI's own
vg() {
  local name=$1; shift
  timeout 300 "${VG[@]}" --log-file="$T/$name.vg" "$GS_CLI" "$@" >/dev/null 2>"$T/$name.err"
  local rc=$?
  if [ $rc -eq 99 ] || grep -q 'ERROR SUMMARY: [1-9]\|definitely lost\|indirectly lost\|Invalid \|uninitialised' "$T/$name.vg"; then
    fail "$name: valgrind findings: $(grep -m3 -E 'Invalid|uninitialised|lost|ERROR SUMMARY' "$T/$name.vg" | tr '\n' '|')"
  elif [ $rc -gt 2 ]; then
    fail "$name: exit $rc: $(head -2 "$T/$name.err" | tr '\n' '|')"
  fi
}
vg weird report --no-symbols --format json -o "$T/w.json" "$T/weird.trace"
vg semantic report --no-symbols --format json -o "$T/s.json" "$T/sem/free-first.trace" "$T/sem/stack-undefined.trace" "$T/sem/huge-size.trace"
vg cut report -o "$T/cut.txt" "$T/cut.trace"
vg dump dump "$T/full.trace"
vg check check --require-complete "$real"
gs_done
