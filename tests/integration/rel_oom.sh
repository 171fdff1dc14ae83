#!/usr/bin/env bash
# Memory exhaustion (tests/programs/rel_oom.c), each run compared with the
# same program without the shim:
#   nulls    every malloc-family call that must fail (huge sizes, overflowing
#            products, bad alignments) returns what it returns without the
#            shim, with the same errno, and a failed realloc leaves the block
#            alone; the trace holds the one 100-byte block (allocated, freed)
#            and no allocation of a failed size.
#   tight-N  the address space limited (prlimit --as) so that the shim's own
#            mmap fails while it starts: N KiB above what the process maps
#            before main (the shim's libraries included, measured with
#            GCSPY_DISABLE=1); the run without the shim gets the same N KiB
#            of headroom. The program exhausts memory, frees it and allocates
#            again: same output and status, one line from gcspy about memory.
#   mid      64 MiB of headroom: the program exhausts memory while traced;
#            same output and status; gcspy either stops tracing with one line
#            about memory or keeps tracing; the trace is readable either way.
# When tracing stopped and the trace file was open, the trace ends with a
# STOPPED record naming the failure of the stderr line (compression needs no
# memory then: the writer took it at start), after the events buffered
# before it, and `gcspy report` takes it as incomplete, not malformed.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_oom
gs_need rel_oom rel_tracecount
P=$GS_PROGS/rel_oom
COUNT=$GS_PROGS/rel_tracecount
command -v prlimit >/dev/null || gs_skip "prlimit (util-linux) not installed"

# ---- nulls ----
gs_plain nulls_plain "$P" nulls
[ "$GS_RC" -eq 0 ] || fail "nulls: plain run exit $GS_RC"
cp "$GS_DIR/out" "$GS_T/nulls.out"
gs_run nulls "$P" nulls
[ "$GS_RC" -eq 0 ] || fail "nulls: exit status $GS_RC under the shim"
cmp -s "$GS_DIR/out" "$GS_T/nulls.out" ||
  fail "nulls: output differs from the run without the shim: $(diff "$GS_T/nulls.out" "$GS_DIR/out" | head -5 | tr '\n' '|')"
[ -s "$GS_DIR/err" ] && fail "nulls: stderr: $(head -2 "$GS_DIR/err")"
grep -q "^errno after successful calls: 1234(kept)$" "$GS_DIR/out" || fail "nulls: errno not kept"
tr=$(gs_traces)
if "$COUNT" --size 100 100 "$tr" >"$GS_DIR/c100" 2>&1; then
  sed -n 's/^sel_\(allocs\|frees\)=//p' "$GS_DIR/c100" | tr '\n' ' ' | grep -qx '1 1 ' ||
    fail "nulls: the 100-byte block: $(grep ^sel_ "$GS_DIR/c100" | tr '\n' ' ')"
  "$COUNT" --size 1099511627776 18446744073709551615 "$tr" >"$GS_DIR/chuge" 2>&1
  grep -qx "sel_allocs=0" "$GS_DIR/chuge" || fail "nulls: a failed allocation is in the trace"
else
  fail "nulls: trace check: $(grep -m3 -E '^error|rel_' "$GS_DIR/c100" | tr '\n' ';')"
fi

# ---- the address space limited ----
vm() { sed -n 's/^vmsize_kb=//p' "$GS_DIR/out"; }
gs_plain vm_plain "$P" vmsize; base_plain=$(vm)
gs_run vm_shim env GCSPY_DISABLE=1 "$P" vmsize; base_shim=$(vm)
[ -n "$base_plain" ] && [ -n "$base_shim" ] || { fail "could not measure the address space at start"; gs_done; }
echo "address space at main: ${base_plain} KiB without the shim, ${base_shim} KiB with it loaded (disabled)"

# limited NAME HEADROOM_KIB
limited() {
  local name=$1 room=$2
  gs_plain "$name-plain" prlimit --as=$(( (base_plain + room) * 1024 )) "$P" exhaust
  local prc=$GS_RC
  cp "$GS_DIR/out" "$GS_T/$name.plain.out"
  [ "$prc" -eq 0 ] || fail "$name: the program fails without the shim too (exit $prc): $(head -3 "$GS_DIR/out" | tr '\n' '|')"
  # the limit is set outside the shim: prlimit execs env, which execs the
  # program with the shim preloaded
  GS_DIR=$GS_T/$name
  rm -rf "$GS_DIR"; mkdir -p "$GS_DIR"
  timeout 120 prlimit --as=$(( (base_shim + room) * 1024 )) env LD_PRELOAD="$GS_LIB" \
      GCSPY_OUTPUT="$GS_DIR/%e-%p.trace" GCSPY_QUIET=0 GCSPY_SCAN_AT_EXIT=0 \
      "$P" exhaust >"$GS_DIR/out" 2>"$GS_DIR/err"
  GS_RC=$?
  [ "$GS_RC" -eq "$prc" ] || fail "$name: exit status $GS_RC under the shim, $prc without"
  cmp -s "$GS_DIR/out" "$GS_T/$name.plain.out" ||
    fail "$name: output differs from the run without the shim: $(diff "$GS_T/$name.plain.out" "$GS_DIR/out" | grep '^[<>]' | tr '\n' '|')"
}
# stopped NAME REQUIRED: the STOPPED record (see the top); REQUIRED: the
# trace file must exist (tracing stopped after it was opened)
stopped() {
  local line reason tr last
  line=$(grep -m1 'tracing stopped' "$GS_DIR/err") || return 0
  reason=${line#gcspy: }
  reason=${reason%; tracing stopped, the program runs on}
  tr=$(gs_traces | head -1)
  if [ -z "$tr" ] || [ ! -s "$tr" ]; then
    [ "$2" = 1 ] && fail "$1: no trace after tracing stopped: $(ls "$GS_DIR")"
    echo "$1: stopped before the trace was opened: no trace"
    return 0
  fi
  last=$("$GS_CLI" dump "$tr" 2>/dev/null | grep -v '^end ' | tail -1)
  [[ "$last" == "stopped t="*" dropped=0 reason=\"$reason\"" ]] ||
    fail "$1: the trace does not end with STOPPED naming '$reason': $last"
  "$GS_CLI" report --no-symbols -q -o "$GS_DIR/report.txt" "$tr" 2>"$GS_DIR/report.err" ||
    fail "$1: gcspy report of the stopped trace: exit $?: $(head -1 "$GS_DIR/report.err")"
  grep -qF "tracing stopped at " "$GS_DIR/report.txt" || fail "$1: the report does not say tracing stopped"
  echo "$1: the trace ends with: $last"
}

for room in 2048 5120; do
  limited "tight-$room" $room
  n=$(wc -l <"$GS_DIR/err")
  [ "$n" -eq 1 ] && grep -Eq "^gcspy: .*(Cannot allocate memory|Resource temporarily unavailable); tracing stopped, the program runs on$" "$GS_DIR/err" ||
    fail "tight-$room: expected one line about memory on stderr, got $n: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
  echo "tight-$room: $(head -1 "$GS_DIR/err")"
  stopped "tight-$room" 0
done

limited mid 65536
if grep -q "tracing stopped" "$GS_DIR/err"; then
  [ "$(wc -l <"$GS_DIR/err")" -eq 1 ] || fail "mid: more than one line: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
  grep -Eq "(Cannot allocate memory|Resource temporarily unavailable); tracing stopped" "$GS_DIR/err" || fail "mid: $(cat "$GS_DIR/err")"
  # the events buffered when tracing stopped are written, then STOPPED
  "$COUNT" --incomplete "$(gs_traces)" >"$GS_DIR/c" 2>&1 ||
    fail "mid: trace check: $(grep -m3 -E '^error|rel_' "$GS_DIR/c" | tr '\n' ';')"
  echo "mid: the trace holds $(sed -n 's/^records=//p' "$GS_DIR/c") records"
  stopped mid 1
else
  grep -qv '^gcspy: ' "$GS_DIR/err" && fail "mid: stderr: $(grep -v '^gcspy: ' "$GS_DIR/err" | head -2)"
  "$COUNT" "$(gs_traces)" >"$GS_DIR/c" 2>&1 || fail "mid: trace check: $(grep -m3 -E '^error|rel_' "$GS_DIR/c" | tr '\n' ';')"
fi
echo "mid: $(head -1 "$GS_DIR/err")"
gs_done
