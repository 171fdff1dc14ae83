#!/usr/bin/env bash
# The trace cannot be written: the program runs on, unchanged (stdout,
# its own stderr, exit status), and gcspy says so in exactly one "gcspy:"
# line on stderr (none with GCSPY_QUIET=1). As root, permissions stop
# nothing, so the failures are made otherwise:
#   open   GCSPY_OUTPUT under a regular file (ENOTDIR) [shim_stdio];
#   exit   RLIMIT_FSIZE of 8 KiB (prlimit; SIGXFSZ ignored): the final
#          flush at exit fails (EFBIG) [shim_stdio making a 28 KiB trace];
#   run    the same limit hit by a periodic flush while python3 runs;
#   full   a 16 KiB tmpfs (ENOSPC), when this machine lets us mount one.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_write_failure
gs_need shim_stdio
S=$GS_PROGS/shim_stdio
PYCODE='import time
x = [bytes(1000) for i in range(20000)]  # > 512 bytes: malloc, so the trace outgrows 16 KiB
time.sleep(0.4)
print(len(x))'

# same NAME PLAINDIR REGEX: output and status as the plain run, stderr the
# plain stderr plus exactly one gcspy line matching REGEX.
same() {
  local name=$1 P=$2 re=$3
  [ "$GS_RC" -eq "$(cat "$P/rc")" ] || fail "$name: exit status $GS_RC, $(cat "$P/rc") without the shim"
  cmp -s "$P/out" "$GS_DIR/out" || fail "$name: stdout differs"
  grep -v '^gcspy: ' "$GS_DIR/err" >"$GS_DIR/err.own"
  cmp -s "$P/err" "$GS_DIR/err.own" || fail "$name: the program's stderr differs: $(diff "$P/err" "$GS_DIR/err.own" | head -3)"
  local n; n=$(grep -c '^gcspy: ' "$GS_DIR/err")
  if [ -z "$re" ]; then
    [ "$n" -eq 0 ] || fail "$name: $n gcspy lines with GCSPY_QUIET=1: $(grep '^gcspy: ' "$GS_DIR/err")"
  else
    [ "$n" -eq 1 ] || fail "$name: $n gcspy lines, expected 1: $(grep '^gcspy: ' "$GS_DIR/err")"
    grep -Eq "$re" "$GS_DIR/err" || fail "$name: gcspy line '$(grep '^gcspy: ' "$GS_DIR/err")' does not match /$re/"
  fi
  echo "$name: $(grep '^gcspy: ' "$GS_DIR/err" || echo 'no gcspy line')"
}

gs_plain stdio_plain "$S" 5 20000; echo "$GS_RC" >"$GS_DIR/rc"; SP=$GS_DIR
gs_plain py_plain "$GS_PY" -c "$PYCODE"; echo "$GS_RC" >"$GS_DIR/rc"; PP=$GS_DIR
[ "$(cat "$PP/out")" = 20000 ] || fail "python without the shim: $(cat "$PP/out") $(tail -2 "$PP/err")"

touch "$GS_T/plainfile"
GCSPY_QUIET=0 GCSPY_OUTPUT=$GS_T/plainfile/x-%p.trace gs_run open "$S" 5 20000
same open "$SP" "^gcspy: $GS_T/plainfile/x-[0-9]+\.trace: Not a directory; tracing stopped, the program runs on\$"
GCSPY_QUIET=1 GCSPY_OUTPUT=$GS_T/plainfile/x-%p.trace gs_run open_quiet "$S" 5 20000
same open_quiet "$SP" ""

# exit: 8 KiB of trace allowed, the whole 28 KiB goes in the final flush.
# A write that would pass the limit is not made (EFBIG, no SIGXFSZ).
trap '' XFSZ
GCSPY_QUIET=0 gs_run exit prlimit --fsize=8192 "$S" 5 20000
same exit "$SP" '^gcspy: writing trace .*/shim_stdio-[0-9]+\.trace failed: File too large; tracing stopped, the program runs on$'

GCSPY_QUIET=0 gs_run run prlimit --fsize=8192 "$GS_PY" -c "$PYCODE"
same run "$PP" '^gcspy: writing trace .*/python3[.0-9]*-[0-9]+\.trace failed: File too large; tracing stopped, the program runs on$'
# a chunk that would pass the limit is not written (no cut chunk): the
# trace stops at its last whole chunk, within the 8 KiB
[ "$(stat -c %s "$GS_DIR"/python3*.trace)" -le 8192 ] || fail "run: trace over 8 KiB: $(ls -l "$GS_DIR")"
"$GS_CLI" report --no-symbols -o /dev/null "$GS_DIR"/python3*.trace 2>"$GS_DIR/rep" || fail "run: gcspy report: $(head -1 "$GS_DIR/rep")"
grep -q 'truncated chunk' "$GS_DIR/rep" && fail "run: the trace ends in a cut chunk: $(head -1 "$GS_DIR/rep")"

M=$GS_T/tiny
mkdir -p "$M"
if mount -t tmpfs -o size=16k tmpfs "$M" 2>/dev/null; then
  trap 'umount "$M" 2>/dev/null; rm -rf "$GS_T"' EXIT
  GCSPY_QUIET=0 GCSPY_OUTPUT=$M/%e-%p.trace gs_run full "$GS_PY" -c "$PYCODE"
  same full "$PP" '^gcspy: writing trace .*/python3[.0-9]*-[0-9]+\.trace failed: No space left on device; tracing stopped, the program runs on$'
  umount "$M"
else
  echo "full: skipped (cannot mount a tmpfs here)"
fi
gs_done
