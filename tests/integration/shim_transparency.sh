#!/usr/bin/env bash
# The shim is invisible to the programs it traces: for a shell command, a
# shell pipeline (fork + exec under the shim), /usr/bin/python3 and a C
# program using stdio (tests/programs/shim_stdio.c), stdout and stderr are
# byte-identical and the exit status the same with and without the shim
# (GCSPY_QUIET=1); without GCSPY_QUIET stdout is still identical and stderr
# differs only by added "gcspy: " lines. Every trace written is consistent
# as far as it goes (dash ends with _exit, which shim_exit_paths covers).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_transparency
gs_need shim_stdio

check_traces() { # every trace in $GS_DIR
  local f
  for f in $(gs_traces); do
    gs_dump "$f"
    gs_check "$f.txt" --incomplete
  done
}

compare() { # NAME WANT_RC CMD...
  local name=$1 want=$2; shift 2
  gs_plain "$name.plain" "$@"; local P=$GS_DIR prc=$GS_RC
  [ "$prc" -eq "$want" ] || fail "$name: exit status $prc without the shim, expected $want"
  gs_run "$name.quiet" "$@"; local Q=$GS_DIR
  [ "$GS_RC" -eq "$prc" ] || fail "$name: exit status $GS_RC under the shim, $prc without"
  cmp -s "$P/out" "$Q/out" || fail "$name: stdout differs under the shim: $(diff "$P/out" "$Q/out" | head -5)"
  cmp -s "$P/err" "$Q/err" || fail "$name: stderr differs under the shim (quiet): $(diff "$P/err" "$Q/err" | head -5)"
  [ -n "$(gs_traces)" ] || fail "$name: no trace written"
  check_traces
  GCSPY_QUIET=0 gs_run "$name.loud" "$@"; local L=$GS_DIR
  [ "$GS_RC" -eq "$prc" ] || fail "$name: exit status $GS_RC under the shim (not quiet), $prc without"
  cmp -s "$P/out" "$L/out" || fail "$name: stdout differs under the shim (not quiet)"
  grep -v '^gcspy: ' "$L/err" >"$L/err.own"
  cmp -s "$P/err" "$L/err.own" || fail "$name: stderr besides gcspy's lines differs: $(diff "$P/err" "$L/err.own" | head -5)"
  echo "$name: same output and status ($prc)"
}

compare sh 5 sh -c 'echo hi; echo to-stderr >&2; exit 5'
compare pipeline 0 sh -c 'printf "a\nc\nb\n" | sort -r | head -2; ls /nonexistent-gcspy 2>&1 | wc -l'
compare python 3 /usr/bin/python3 -c 'import sys; print(sum(range(10))); print("err", file=sys.stderr); sys.exit(3)'
compare stdio 7 "$GS_PROGS/shim_stdio" 7 'two words'
grep -qx 'errno after malloc: 0' "$GS_T/stdio.quiet/out" || fail "stdio: errno changed by malloc under the shim"
gs_done
