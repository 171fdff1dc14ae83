#!/usr/bin/env bash
# Smoke test of the churn benchmark (bench/churn.c): a tiny run under the shim
# finishes with exactly the bare run's checksum and event count, and leaves a
# non-empty trace. No timing is asserted. Skips when the shim is not built.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
CHURN=$B/bench/churn
[ -x "$CHURN" ] || { echo "FAIL: $CHURN not built (make $CHURN)"; exit 1; }

# Bad options are refused with exit status 2.
"$CHURN" --pairs x >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || { echo "FAIL: churn --pairs x exited $rc, expected 2"; exit 1; }

ARGS=(--pairs 20000 --threads 2 --live 2000 --depth 20)
bare=$("$CHURN" "${ARGS[@]}") || { echo "FAIL: bare churn exited $?"; exit 1; }
# 2 per pair plus the live set's initial mallocs and final frees.
grep -qx 'events 44000' <<<"$bare" || { echo "FAIL: bare churn printed: $bare"; exit 1; }

[ -f "$B/libgcspy.so" ] || { echo "$B/libgcspy.so not built"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
traced=$(LD_PRELOAD=$PWD/$B/libgcspy.so GCSPY_OUTPUT=$tmp/churn.trace GCSPY_QUIET=1 \
         "$CHURN" "${ARGS[@]}")
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: churn under the shim exited $rc"; exit 1; }
if [ "$traced" != "$bare" ]; then
  echo "FAIL: output differs under the shim:"; echo "bare:   $bare"; echo "traced: $traced"; exit 1
fi
[ -s "$tmp/churn.trace" ] || { echo "FAIL: no trace at $tmp/churn.trace"; ls -la "$tmp"; exit 1; }
echo "ok: $bare; trace $(wc -c <"$tmp/churn.trace") bytes"
