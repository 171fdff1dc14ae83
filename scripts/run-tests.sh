#!/usr/bin/env bash
# Runs the Criterion unit-test binaries given as arguments and every
# tests/integration/*.sh script, and prints one closing line
# "N passed, N failed, N skipped". Exit status 1 when anything failed.
# TESTS=pattern runs only the integration scripts whose name matches.
# Then one line per Debian root the tests ran in (tests/lib.sh's in_root):
# "roots: trixie ran (N tests[; made by this run in S s])" or
# "roots: sid skipped (N tests): REASON",
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

# The Debian roots the tests will run in (`in_root SUITE` in the scripts to
# run, or a "# test-roots: SUITE..." line), made here when missing: a first creation takes minutes, more than
# one test's time limit. One that cannot be made is left to in_root, which
# skips with the reason.
for suite in $(for t in tests/integration/*.sh; do
                 n=$(basename "$t" .sh)
                 [ -n "${TESTS:-}" ] && [[ "$n" != *${TESTS}* ]] && continue
                 grep -ho 'in_root [a-z][a-z0-9-]*' "$t"
                 # "# test-roots: SUITE...": roots a test names through a variable
                 sed -n 's/^# test-roots: */in_root /p' "$t" | tr ' ' '\n' | grep -v '^in_root$' | sed 's/^/in_root /'
               done | awk '{ print $2 }' | sort -u); do
  [ -f "${GCSPY_ROOTS:-/var/cache/gcspy/roots}/$suite/etc/gcspy-root" ] && continue
  echo "roots: making $suite (first use; log: $logdir/make-root-$suite.log)"
  if bash scripts/make-root.sh "$suite" >"$logdir/make-root-$suite.log" 2>&1; then
    secs=$(sed -n 's/^seconds=//p' "${GCSPY_ROOTS:-/var/cache/gcspy/roots}/$suite/etc/gcspy-root")
    echo "$suite made run-tests: $secs s" >>"$GS_ROOTS_LOG"
    echo "roots: $suite made in $secs s"
  else
    echo "roots: $suite not made: $(tail -1 "$logdir/make-root-$suite.log")"
  fi
done

for t in tests/integration/*.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  [ -n "${TESTS:-}" ] && [[ "$name" != *${TESTS}* ]] && continue
  out="$logdir/$name.log"
  start=$(date +%s)
  # 600 s each, unless the script's header says "# test-timeout: S"
  limit=$(sed -n 's/^# test-timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -1)
  timeout "${limit:-600}" bash "$t" >"$out" 2>&1
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
         if ($2 == "made") { made[s] = $4 }
         else if ($2 == "ran") { if (!((s, t) in r)) { r[s, t] = 1; nr[s]++ } }
         else { if (!((s, t) in k)) { k[s, t] = 1; nk[s]++ }
                if (!(s in why)) { w = $0; sub(/^[^:]*: /, "", w); why[s] = w } } }
       END { for (i = 1; i <= n; i++) { s = order[i]
               if (nr[s]) printf "roots: %s ran (%d test%s%s)\n", s, nr[s], nr[s] == 1 ? "" : "s",
                                 s in made ? "; made by this run in " made[s] " s" : ""
               if (nk[s]) printf "roots: %s skipped (%d test%s): %s\n", s, nk[s], nk[s] == 1 ? "" : "s", why[s] } }' "$GS_ROOTS_LOG"
else
  echo "roots: no test ran in a root"
fi
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
