#!/usr/bin/env bash
# Runs the Criterion unit-test binaries given as arguments and every
# tests/integration/*.sh script, and prints one closing line
# "N passed, N failed, N skipped". Exit status 1 when anything failed.
# TESTS=pattern runs only the integration scripts whose name matches.
# Then one line per Debian root the tests ran in (tests/lib.sh's in_root):
# "roots: trixie ran (N tests)" or "roots: sid skipped (N tests): REASON",
# or "roots: no test ran in a root".
set -u
cd "$(dirname "$0")/.." || exit 2
pass=0 fail=0 skip=0 failed=()
logdir=build/test-logs
mkdir -p "$logdir"
export GS_ROOTS_LOG=$PWD/$logdir/roots.log
: >"$GS_ROOTS_LOG"

for bin in "$@"; do
  name=$(basename "$bin")
  out="$logdir/$name.log"
  "$bin" --jobs 2 >"$out" 2>&1
  rc=$?
  syn=$(grep -a 'Synthesis:' "$out" | tail -1)
  p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$syn")
  f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$syn")
  c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$syn")
  p=${p:-0} f=${f:-0} c=${c:-0}
  if [ -z "$syn" ] || [ $rc -ne 0 ] && [ $((f + c)) -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f + c))
  if [ $((f + c)) -gt 0 ]; then
    failed+=("$name"); echo "FAIL $name ($f failed, $c crashed)"; grep -a -E '\[(FAIL|----)\]' "$out" | head -20
  else
    echo "ok   $name ($p tests)"
  fi
done

for t in tests/integration/*.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  [ -n "${TESTS:-}" ] && [[ "$name" != *${TESTS}* ]] && continue
  out="$logdir/$name.log"
  start=$(date +%s)
  timeout 600 bash "$t" >"$out" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then pass=$((pass + 1)); echo "ok   $name (${secs}s)"
  elif [ $rc -eq 77 ]; then skip=$((skip + 1)); echo "skip $name: $(tail -1 "$out")"
  else fail=$((fail + 1)); failed+=("$name"); echo "FAIL $name (exit $rc, ${secs}s)"; tail -15 "$out" | sed 's/^/    /'
  fi
done

# One line per suite: ran in how many tests, or skipped and the first reason.
if [ -s "$GS_ROOTS_LOG" ]; then
  awk '{ s = $1; t = $3; sub(/:$/, "", t)
         if (!(s in seen)) { seen[s] = 1; order[++n] = s }
         if ($2 == "ran") { if (!((s, t) in r)) { r[s, t] = 1; nr[s]++ } }
         else { if (!((s, t) in k)) { k[s, t] = 1; nk[s]++ }
                if (!(s in why)) { w = $0; sub(/^[^:]*: /, "", w); why[s] = w } } }
       END { for (i = 1; i <= n; i++) { s = order[i]
               if (nr[s]) printf "roots: %s ran (%d test%s)\n", s, nr[s], nr[s] == 1 ? "" : "s"
               if (nk[s]) printf "roots: %s skipped (%d test%s): %s\n", s, nk[s], nk[s] == 1 ? "" : "s", why[s] } }' "$GS_ROOTS_LOG"
else
  echo "roots: no test ran in a root"
fi
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
