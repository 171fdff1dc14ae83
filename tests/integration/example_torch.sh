#!/usr/bin/env bash
# The bundled PyTorch example (examples/train.py) under the shim: a short run
# prints exactly the bare run's losses and exits the same way, the main
# process leaves a non-empty trace, and (where the CLI is built) `gcspy dump`
# reads it and shows allocation records and one marker per step. Skips when the shim is not built or
# /usr/bin/python3 cannot import torch.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${BUILD:-build}
PY=${PYTHON:-/usr/bin/python3}
[ -f "$B/libgcspy.so" ] || { echo "$B/libgcspy.so not built"; exit 77; }
"$PY" -c "import torch" >/dev/null 2>&1 || { echo "$PY cannot import torch"; exit 77; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# Two workers are kept: forked DataLoader workers are part of what is tested.
ARGS=(examples/train.py --steps 12 --log-every 3 --workers 2 --markers)

"$PY" "${ARGS[@]}" >"$tmp/bare.out" 2>"$tmp/bare.err"
bare_rc=$?
LD_PRELOAD=$PWD/$B/libgcspy.so GCSPY_OUTPUT="$tmp/train-%p.trace" GCSPY_QUIET=1 \
  "$PY" "${ARGS[@]}" >"$tmp/traced.out" 2>"$tmp/traced.err"
traced_rc=$?
main_pid=$(sed -n 's/.*-\([0-9]*\)\.trace$/\1/p' <<<"$(ls "$tmp"/train-*.trace 2>/dev/null)" | sort -n | head -1)

[ $bare_rc -eq 0 ] || { echo "FAIL: bare run exited $bare_rc"; cat "$tmp/bare.err"; exit 1; }
[ $traced_rc -eq $bare_rc ] || {
  echo "FAIL: exit status $traced_rc under the shim, $bare_rc bare"; tail -20 "$tmp/traced.err"; exit 1; }
# 4 loss lines (steps 3, 6, 9, 12) and the closing line.
n=$(grep -c '^step [0-9]* loss [0-9]*\.[0-9]\{6\}$' "$tmp/bare.out")
[ "$n" -eq 4 ] || { echo "FAIL: bare run printed $n loss lines, expected 4"; cat "$tmp/bare.out"; exit 1; }
grep -qx 'done steps 12 device [a-z]*' "$tmp/bare.out" || { echo "FAIL: no closing line"; cat "$tmp/bare.out"; exit 1; }
if ! cmp -s "$tmp/bare.out" "$tmp/traced.out"; then
  echo "FAIL: stdout differs under the shim"; diff "$tmp/bare.out" "$tmp/traced.out"; exit 1
fi

ls -la "$tmp"
[ -n "$main_pid" ] || { echo "FAIL: no trace file train-PID.trace written"; exit 1; }
# The main process is the parent of the workers, so it has the lowest pid
# unless pids wrapped; every trace written must be non-empty anyway.
for f in "$tmp"/train-*.trace; do
  [ -s "$f" ] || { echo "FAIL: empty trace $f"; exit 1; }
done
main=$tmp/train-$main_pid.trace

if [ -x "$B/gcspy" ]; then
  "$B/gcspy" dump "$main" >"$tmp/dump.txt" 2>"$tmp/dump.err"
  rc=$?
  [ $rc -eq 0 ] || { echo "FAIL: gcspy dump exited $rc"; head -5 "$tmp/dump.err"; exit 1; }
  allocs=$(grep -c -E '^(alloc|realloc)' "$tmp/dump.txt")
  [ "$allocs" -gt 1000 ] || {
    echo "FAIL: gcspy dump shows $allocs alloc records, expected > 1000"; head -20 "$tmp/dump.txt"; exit 1; }
  # --markers: one user marker per step, in order, when the shim exports gcspy_mark.
  if nm -D "$B/libgcspy.so" 2>/dev/null | grep -q ' T gcspy_mark$'; then
    marks=$(sed -n 's/^marker .* kind=user label="\(step [0-9]*\)"$/\1/p' "$tmp/dump.txt" | tr '\n' ,)
    want=$(seq -f 'step %g' 1 12 | tr '\n' ,)
    [ "$marks" = "$want" ] || { echo "FAIL: markers '$marks', expected '$want'"; exit 1; }
  fi
  echo "ok: identical losses, $(ls "$tmp"/train-*.trace | wc -l) trace(s), main trace $allocs alloc records, 12 step markers"
else
  echo "ok: identical losses, $(ls "$tmp"/train-*.trace | wc -l) trace(s) ($B/gcspy not built: dump not checked)"
fi
