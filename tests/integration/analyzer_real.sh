#!/usr/bin/env bash
# The analyzer on traces of real programs run under libgcspy.so:
#   analyzer_leaky  the classes of its known leaks (its top comment), each at
#                   the right function and source line, and the CI gate on them
#   analyzer_grow   the growth detector on a leaking loop (flagged at
#                   keep_block, rate within 10% of the true one) and on a
#                   steady loop (nothing flagged)
# Skipped when the shim is not built.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy LIB=$PWD/build/libgcspy.so P=build/tests/programs PY=/usr/bin/python3
[ -f "$LIB" ] || { echo "build/libgcspy.so not built"; exit 77; }
[ -x "$G" ] && [ -x "$P/analyzer_leaky" ] && [ -x "$P/analyzer_grow" ] || { echo "not built"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { # OUT PROG ARGS...
  local out=$1; shift
  timeout 60 env LD_PRELOAD="$LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$out" GCSPY_SCAN_AT_EXIT=1 "$@"
}

run "$T/leaky.trace" "$P/analyzer_leaky" >/dev/null || fail "analyzer_leaky failed under the shim"
"$G" report --format json -o "$T/leaky.json" "$T/leaky.trace" || fail "report leaky"
$PY - "$T/leaky.json" tests/programs/analyzer_leaky.c <<'X' || fail "leaky: classes and sites"
import json, sys
d = json.load(open(sys.argv[1]))
src = open(sys.argv[2]).read().splitlines()
p = d["processes"][0]
assert p["complete"], p["damage"]
got = {}
for l in p["leaks"]:
    f = l["stack"][0] if l["stack"] else {}
    if f.get("function") in ("lose_one", "make_list", "keep_global", "keep_interior"):
        got[(f["function"], l["class"])] = (l["bytes"], l["blocks"], f["file"], f["line"])
want = {
    ("lose_one", "definite"): (111, 1),
    ("make_list", "definite"): (48, 1),
    ("make_list", "indirect"): (96, 2),
    ("keep_interior", "possible"): (333, 1),
    ("keep_global", "reachable"): (222, 1),
}
for k, (by, bl) in want.items():
    assert k in got, ("missing", k, sorted(got))
    assert got[k][:2] == (by, bl), (k, got[k])
    # the frame's line is the malloc call of that function
    assert got[k][2].endswith("analyzer_leaky.c"), got[k]
    assert "malloc" in src[got[k][3] - 1], (k, src[got[k][3] - 1])
assert set(got) == set(want), sorted(got)
X
"$G" check "$T/leaky.trace" >"$T/out"; rc=$?
[ $rc = 1 ] || fail "check leaky: exit $rc"
grep -q "255 bytes in 4 blocks leaked (definite,indirect)" "$T/out" || fail "check leaky line: $(head -1 "$T/out")"
printf 'leak:lose_one\nleak:make_list\n' >"$T/supp"
"$G" check "$T/leaky.trace" --suppressions "$T/supp" >"$T/out"; rc=$?
[ $rc = 0 ] || { fail "check leaky with suppressions: exit $rc"; cat "$T/out"; }
"$G" check "$T/leaky.trace" --suppressions "$T/supp" --fail-on possible >/dev/null; rc=$?
[ $rc = 1 ] || fail "check leaky --fail-on possible: exit $rc"

for mode in leak steady; do
  run "$T/grow-$mode.trace" "$P/analyzer_grow" $mode 100 >"$T/grow-$mode.out" || fail "analyzer_grow $mode"
  "$G" report --format json -o "$T/grow-$mode.json" "$T/grow-$mode.trace" || fail "report grow $mode"
done
$PY - "$T/grow-leak.json" "$T/grow-leak.out" <<'X' || fail "grow leak: suspect and rate"
import json, re, sys
p = json.load(open(sys.argv[1]))["processes"][0]
m = re.search(r"loop_ns=(\d+) kept_bytes=(\d+)", open(sys.argv[2]).read())
true_rate = int(m.group(2)) / (int(m.group(1)) / 1e9)
sus = p["growth"]["suspects"]
assert len(sus) == 1, [ (s["stack"][0]["function"], s["rate"]) for s in sus ]
s = sus[0]
assert s["stack"][0]["function"] == "keep_block", s["stack"][0]
assert s["unit"] == "bytes/s" and p["growth"]["axis"] == "time"
assert abs(s["rate"] - true_rate) <= 0.10 * true_rate, (s["rate"], true_rate)
assert s["confidence"] >= 0.9, s["confidence"]
X
$PY - "$T/grow-steady.json" <<'X' || fail "grow steady: flagged something"
import json, sys
p = json.load(open(sys.argv[1]))["processes"][0]
assert p["growth"]["suspects"] == [], [(s["stack"][0]["function"], s["rate"]) for s in p["growth"]["suspects"]]
assert p["growth"]["checkpoints"] >= 20, p["growth"]["checkpoints"]
X
"$G" check --fail-on growth "$T/grow-leak.trace" >/dev/null; [ $? = 1 ] || fail "check growth leak"
"$G" check --fail-on growth "$T/grow-steady.trace" >/dev/null; [ $? = 0 ] || fail "check growth steady"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "analyzer real programs: all checks passed"
