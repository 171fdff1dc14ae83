#!/usr/bin/env bash
# The trace file cannot be written: the disk fills up during the run (a
# 1 MiB tmpfs), the disk is full from the start (a tmpfs filled first), the
# directory is read-only (a read-only tmpfs), a missing directory cannot be
# made (on that read-only tmpfs); and the disk fills while 16 threads
# allocate. In every case:
#   - exactly one line on stderr, naming the problem ("No space left on
#     device", "Read-only file system", ...) and saying tracing stopped;
#   - the program finishes with its normal output and exit status (compared
#     with a run without the shim: tests/programs/rel_faults.c `work` exits 3);
#   - what reached a full disk is readable up to its last complete chunk and
#     consistent (rel_tracecount --incomplete), and `gcspy report` reports it
#     as incomplete (exit 0).
# And a missing directory that can be made is made (mode 0700), the trace
# written in it. And a GCSPY_OUTPUT whose expansion is longer than a path
# may be (4096 bytes with its ".N" room) is refused with one line, the
# program unchanged, and no file made under a cut-short name (it was cut
# at 4064 bytes and written there, silently).
# The tmpfs cases run in a private mount namespace (unshare -m, or unshare
# -rm without root); where neither is allowed they are skipped, and the
# script exits 77 if nothing could be tested.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_output
gs_need rel_faults rel_load rel_tracecount
P=$GS_PROGS/rel_faults
COUNT=$GS_PROGS/rel_tracecount
ROUNDS=60000
tested=0 skipped=()

gs_plain plain "$P" work $ROUNDS
[ "$GS_RC" -eq 3 ] || fail "plain run: exit status $GS_RC, expected 3"
cp "$GS_T/plain/out" "$GS_T/plain.out"

# in_ns SETUP: runs the program under the shim in a private mount namespace
# after the shell commands SETUP (which mount $M); traces are copied to
# $GS_DIR/saved/. Sets GS_RC. Returns 1 when no namespace can be made.
NS=
for try in "unshare -m" "unshare -rm"; do
  if $try true 2>/dev/null && $try sh -c "mount -t tmpfs -o size=4k tmpfs '$GS_T'" 2>/dev/null; then
    NS=$try; break
  fi
done
in_ns() {
  local name=$1 setup=$2; shift 2
  GS_DIR=$GS_T/$name M=$GS_T/$name/mnt
  rm -rf "$GS_DIR"; mkdir -p "$GS_DIR/mnt" "$GS_DIR/saved"
  [ -n "$NS" ] || { skipped+=("$name"); return 1; }
  SETUP=$setup OUTPAT=${OUTPAT:-} timeout 120 $NS bash -c '
    set -e; M=$1 D=$2 LIB=$3; shift 3
    eval "$SETUP"
    set +e
    eval "OUT=\"${OUTPAT:-\$M/%e-%p.trace}\""
    env LD_PRELOAD="$LIB" GCSPY_OUTPUT="$OUT" GCSPY_QUIET=0 "$@" >"$D/out" 2>"$D/err"
    echo $? >"$D/rc"
    cp "$M"/*.trace "$D/saved/" 2>/dev/null || true' _ "$M" "$GS_DIR" "$GS_LIB" "$@" \
    2>"$GS_DIR/ns.err"
  GS_RC=$(cat "$GS_DIR/rc" 2>/dev/null || echo "none: $(head -2 "$GS_DIR/ns.err")")
  tested=$((tested + 1))
  return 0
}
# one_line NAME REGEX: stderr is exactly one line and matches REGEX
one_line() {
  local n
  n=$(wc -l <"$GS_DIR/err")
  [ "$n" -eq 1 ] || fail "$1: $n lines on stderr, expected 1: $(head -3 "$GS_DIR/err" | tr '\n' '|')"
  grep -Eq "$2" "$GS_DIR/err" || fail "$1: stderr does not match /$2/: $(head -1 "$GS_DIR/err")"
}
same_run() {
  [ "$GS_RC" = 3 ] || fail "$1: exit status $GS_RC, expected 3 as without the shim"
  cmp -s "$GS_DIR/out" "$GS_T/plain.out" || fail "$1: standard output differs from the run without the shim"
}
STOP='; tracing stopped, the program runs on$'

# 1. the disk fills up during the run
SETUP='mount -t tmpfs -o size=1m tmpfs "$M"'
if in_ns full_late "$SETUP" "$P" work $ROUNDS; then
  same_run full_late
  one_line full_late "^gcspy: writing trace $GS_DIR/mnt/rel_faults-[0-9]+\.trace failed: No space left on device$STOP"
  tr=$(ls "$GS_DIR"/saved/*.trace 2>/dev/null | head -1)
  if [ -z "$tr" ]; then
    fail "full_late: no trace file left"
  else
    "$COUNT" --incomplete "$tr" >"$GS_DIR/count" 2>&1 ||
      fail "full_late: trace check: $(grep -m3 -E '^error|rel_' "$GS_DIR/count" | tr '\n' ';')"
    chunks=$(sed -n 's/^chunks=//p' "$GS_DIR/count")
    [ "${chunks:-0}" -ge 1 ] || fail "full_late: no complete chunk in the 1 MiB that were written"
    "$GS_CLI" report "$tr" >/dev/null 2>"$GS_DIR/rep.err"; rc=$?
    [ $rc -eq 0 ] || fail "full_late: gcspy report exit $rc"
    grep -q "is incomplete" "$GS_DIR/rep.err" || fail "full_late: report does not say incomplete: $(cat "$GS_DIR/rep.err")"
    echo "figure: disk full after $(stat -c %s "$tr") bytes: $chunks complete chunks readable, $(sed -n 's/^allocs=//p' "$GS_DIR/count") allocations; damage: $(sed -n 's/^damage=//p' "$GS_DIR/count")"
  fi
fi

# 2. the disk is full before the program starts
SETUP='mount -t tmpfs -o size=64k tmpfs "$M"; dd if=/dev/zero of="$M/fill" bs=4k 2>/dev/null || true'
if in_ns full_early "$SETUP" "$P" work $ROUNDS; then
  same_run full_early
  one_line full_early "^gcspy: writing the trace header: No space left on device$STOP"
fi

# 3. a read-only directory, and a missing directory on a read-only file
#    system (it cannot be made)
SETUP='mount -t tmpfs -o ro,size=64k tmpfs "$M"'
if in_ns readonly "$SETUP" "$P" work $ROUNDS; then
  same_run readonly
  one_line readonly "^gcspy: $GS_DIR/mnt/rel_faults-[0-9]+\.trace: Read-only file system$STOP"
fi
if OUTPAT='$M/sub/%e-%p.trace' in_ns readonly_sub "$SETUP" "$P" work $ROUNDS; then
  same_run readonly_sub
  one_line readonly_sub "^gcspy: $GS_DIR/mnt/sub/rel_faults-[0-9]+\.trace: (Read-only file system|No such file or directory)$STOP"
fi

# 4. a directory that does not exist is made (mode 0700) and the trace
#    written there (no namespace needed)
GS_DIR=$GS_T/nodir
rm -rf "$GS_DIR"; mkdir -p "$GS_DIR"
timeout 60 env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$GS_DIR/missing/deeper/%e-%p.trace" GCSPY_QUIET=1 \
  "$P" work $ROUNDS >"$GS_DIR/out" 2>"$GS_DIR/err"
GS_RC=$?
tested=$((tested + 1))
same_run nodir
[ -s "$GS_DIR/err" ] && fail "nodir: stderr: $(head -2 "$GS_DIR/err")"
tr=$(ls "$GS_DIR"/missing/deeper/rel_faults-*.trace 2>/dev/null)
if [ -z "$tr" ]; then
  fail "nodir: no trace in the missing directory"
else
  [ "$(stat -c %a "$GS_DIR/missing") $(stat -c %a "$GS_DIR/missing/deeper")" = "700 700" ] ||
    fail "nodir: directories made with modes $(stat -c %a "$GS_DIR/missing") $(stat -c %a "$GS_DIR/missing/deeper"), expected 700"
  "$COUNT" "$tr" >"$GS_DIR/count" 2>&1 || fail "nodir: trace check: $(grep -m3 '^error' "$GS_DIR/count" | tr '\n' ';')"
fi

# 5. the disk fills while 16 threads allocate: no thread hangs on the
#    stopped writer, the program's own counts add up
SETUP='mount -t tmpfs -o size=1m tmpfs "$M"'
if in_ns full_threads "$SETUP" "$GS_PROGS/rel_load" churn 16 1500; then
  [ "$GS_RC" = 0 ] || fail "full_threads: exit status $GS_RC"
  line=$(grep '^churn ' "$GS_DIR/out")
  a=$(sed -n 's/.* allocs=\([0-9]*\).*/\1/p' <<<"$line") f=$(sed -n 's/.* frees=\([0-9]*\).*/\1/p' <<<"$line")
  [ -n "$a" ] && [ "$a" = "$f" ] && [ "$a" -gt 0 ] || fail "full_threads: program output: $line"
  one_line full_threads "^gcspy: writing trace .* failed: No space left on device$STOP"
fi

# 6. a path longer than the system allows: 20 components of 200 bytes
LONGD=$GS_T/long
LONGP=$LONGD$(printf '/%0200d' $(seq 1 20) | tr 0 d)/%e-%p.trace
GCSPY_QUIET=0 GCSPY_OUTPUT=$LONGP gs_run long_path "$P" work $ROUNDS
[ "$GS_RC" -eq 3 ] || fail "long_path: exit status $GS_RC, expected 3"
one_line long_path "^gcspy: GCSPY_OUTPUT: the trace's path would be longer than the system allows: File name too long$STOP"
[ -e "$LONGD" ] && fail "long_path: made $(find "$LONGD" -type f | head -1 | cut -c1-80)..., a cut-short name"
tested=$((tested + 1))

[ ${#skipped[@]} -gt 0 ] && echo "skipped (no mount namespace): ${skipped[*]}"
[ $tested -eq 0 ] && gs_skip "no case could run"
gs_done
