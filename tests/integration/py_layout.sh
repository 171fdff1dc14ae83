#!/usr/bin/env bash
# preload/pylayout.c against each CPython version's own headers: for every
# interpreter found (pyenv's 3.10-3.14 under $PYENV_ROOT/versions, and
# /usr/include/python3.X with Debian's libpython3.X), tests/unit/
# pylayout_check.c is compiled with its include directory and linked with
# its libpython; it compares every carried offset with offsetof() and, for
# 3.13+, reads the live _PyRuntime's debug offsets (docs/design.md,
# "Python"). PY_LAYOUT_INCLUDE (space-separated include directories, each
# holding Python.h) adds headers without a libpython to run: for 3.13+
# only the indices and the carried offsets are checked there (3.14's from
# Debian sid's libpython3.14-dev, unpacked). A version with no headers here
# is skipped with its reason; the test skips (77) when none is found, fails
# when any check fails.
set -u
cd "$(dirname "$0")/../.." || exit 2
command -v cc >/dev/null || { echo "skip: no cc"; exit 77; }
T=$(mktemp -d /tmp/gcspy-py_layout.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT
fails=0 ran=0
# check NAME INCLUDE_DIR LIB_DIR MINOR
check() {
  local name=$1 inc=$2 lib=$3 m=$4 out link
  link=(-L"$lib" -lpython3."$m" -Wl,-rpath,"$lib")
  if [ "$lib" = none ] && [ -f "$inc/Python.h" ]; then
    link=(-DGS_NO_LIVE -I"$inc/../../include")   # Debian's pyconfig.h lives in include/<triplet>/
  elif [ ! -f "$inc/Python.h" ] || [ ! -e "$lib/libpython3.$m.so" ]; then
    echo "skip $name: no headers or libpython3.$m.so ($inc, $lib)"
    return
  fi
  if ! cc -std=gnu11 -Wall -Wextra -Werror -I"$inc" -Ipreload tests/unit/pylayout_check.c \
       preload/pylayout.c "${link[@]}" -o "$T/check$m" 2>"$T/cc.err"; then
    echo "FAIL $name: does not compile against its headers: $(head -3 "$T/cc.err")"
    fails=$((fails + 1))
    return
  fi
  ran=$((ran + 1))
  out=$("$T/check$m" 2>&1) || fails=$((fails + 1))
  echo "$name: $out"
}
pyenv=${PYENV_ROOT:-$HOME/.pyenv}/versions
for m in 10 11 12 13 14; do
  found=0
  for d in "$pyenv"/3."$m".*; do
    [ -d "$d" ] || continue
    found=1
    check "pyenv $(basename "$d")" "$d/include/python3.$m" "$d/lib" "$m"
  done
  if [ -f /usr/include/python3."$m"/Python.h ]; then
    found=1
    check "Debian python3.$m" /usr/include/python3."$m" /usr/lib/x86_64-linux-gnu "$m"
  fi
  [ "$found" = 1 ] || echo "skip 3.$m: no interpreter with headers here"
done
for inc in ${PY_LAYOUT_INCLUDE:-}; do
  m=$(sed -n 's/^#define PY_MINOR_VERSION[[:space:]]*\([0-9]*\).*/\1/p' "$inc/patchlevel.h" 2>/dev/null)
  [ -n "$m" ] && check "headers $inc" "$inc" none "$m" || echo "skip $inc: no patchlevel.h"
done
[ "$ran" -gt 0 ] || { echo "skip: no CPython 3.10-3.14 headers here"; exit 77; }
[ "$fails" -eq 0 ] || { echo "$fails version(s) failed"; exit 1; }
echo "all checks passed ($ran versions)"
