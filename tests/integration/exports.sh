#!/usr/bin/env bash
# The exports and site views (docs/exports.md) on traces of
# analyzer_exports (tests/programs/analyzer_exports.c, whose top comment
# lists each site's figures), run under libgcspy.so:
#   pprof      gzip-compressed profile.proto, decoded by protoc (a reader of
#              the format) against reports/proto/profile.proto: sample types,
#              each site's values by its leaf function
#   collapsed  folded stacks, by leaked bytes (default) and --value peak
#   peak       live at the peak time, by site
#   temporary  freed within the tick of being made, by site
#   diff       runs with N=1 and N=3 (leak_n 1000 -> 3000 bytes), the reverse,
#              and against analyzer_leaky (sites new and gone); exit statuses
#              of --fail-on-growth
# Skipped when the shim is not built.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy LIB=$PWD/build/libgcspy.so P=build/tests/programs/analyzer_exports PY=/usr/bin/python3
[ -f "$LIB" ] || { echo "build/libgcspy.so not built"; exit 77; }
[ -x "$G" ] && [ -x "$P" ] || { echo "not built"; exit 1; }
command -v protoc >/dev/null || { echo "protoc missing (scripts/install-deps.sh)"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { # N
  timeout 60 env LD_PRELOAD="$LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$T/n$1.trace" GCSPY_SCAN_AT_EXIT=1 "$P" "$1"
}
run 3 || fail "analyzer_exports 3 failed under the shim"
TR=$T/n3.trace

# pprof: gzip (magic 1f 8b), then the profile decoded with protoc
"$G" report --format pprof -o "$T/p.pb.gz" "$TR" || fail "report --format pprof"
[ "$(head -c2 "$T/p.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "pprof: not gzip"
gzip -dc "$T/p.pb.gz" | protoc --decode=perftools.profiles.Profile -Ireports/proto profile.proto \
  >"$T/p.txt" 2>"$T/p.err" || fail "protoc --decode: $(cat "$T/p.err")"
$PY - "$T/p.txt" <<'X' || fail "pprof values"
import re, sys
txt = open(sys.argv[1]).read()
# protoc's text format: top-level messages as "name {" ... "}" at column 0
strings = re.findall(r'^string_table: "(.*)"$', txt, re.M)
def blocks(name):
    return re.findall(r'^%s \{\n(.*?)^\}' % name, txt, re.M | re.S)
def fields(b, k):
    return [int(v) for v in re.findall(r'^  %s: (\d+)$' % k, b, re.M)]
types = [(strings[fields(b, "type")[0]], strings[fields(b, "unit")[0]]) for b in blocks("sample_type")]
assert types == [("leaked_space", "bytes"), ("leaked_objects", "count"), ("peak_space", "bytes"),
                 ("peak_objects", "count"), ("alloc_objects", "count"), ("alloc_space", "bytes"),
                 ("temporary_objects", "count"), ("temporary_space", "bytes")], types
dst = re.search(r'^default_sample_type: (\d+)$', txt, re.M)
assert dst and strings[int(dst.group(1))] == "leaked_space"
funcs = {}
for b in blocks("function"):
    funcs[fields(b, "id")[0]] = strings[fields(b, "name")[0]]
locfn = {}
for b in blocks("location"):
    locfn[fields(b, "id")[0]] = funcs[int(re.search(r'function_id: (\d+)', b).group(1))]
got = {}
for b in blocks("sample"):
    leaf = locfn[fields(b, "location_id")[0]]
    if leaf in ("leak_fixed", "leak_n", "peak_buf", "temp_one", "held_one"):
        # held_one has two call sites in main: two stacks, summed
        got[leaf] = [a + b for a, b in zip(got.get(leaf, [0] * 8), fields(b, "value"))]
want = {  # leaked bytes/blocks, peak bytes/blocks, allocs, bytes, temporary allocs/bytes
    "leak_fixed": [500, 1, 500, 1, 1, 500, 0, 0],
    "leak_n": [3000, 1, 3000, 1, 1, 3000, 0, 0],
    "peak_buf": [0, 0, 1000000, 10, 10, 1000000, 0, 0],
    "temp_one": [0, 0, 0, 0, 200, 12800, 200, 12800],
    "held_one": [0, 0, 4096, 1, 6, 24576, 0, 0],
}
assert got == want, got
X

# collapsed: leaked bytes by default, main's callees as the leaves
"$G" report --format collapsed "$TR" >"$T/c.txt" || fail "report --format collapsed"
grep -q ';main tests/programs/analyzer_exports.c:[0-9]*;leak_n tests/programs/analyzer_exports.c:[0-9]* 3000$' "$T/c.txt" ||
  fail "collapsed leak_n: $(cat "$T/c.txt")"
grep -q ';leak_fixed [^;]* 500$' "$T/c.txt" || fail "collapsed leak_fixed"
grep -q 'peak_buf\|temp_one' "$T/c.txt" && fail "collapsed: a site that leaks nothing is listed"
awk '{ if ($NF !~ /^[0-9]+$/) bad = 1 } END { exit bad }' "$T/c.txt" || fail "collapsed: a line without a value"
"$G" report --format collapsed --value peak "$TR" >"$T/cp.txt" || fail "collapsed --value peak"
grep -q ';peak_buf [^;]* 1000000$' "$T/cp.txt" || fail "collapsed peak: $(cat "$T/cp.txt")"
"$G" report --format collapsed --value allocs "$TR" | grep -q ';temp_one [^;]* 200$' || fail "collapsed allocs"
"$G" report --format collapsed --value nonsense "$TR" 2>"$T/err" && fail "bad --value accepted"
grep -q "^gcspy report: --value: unknown value 'nonsense'" "$T/err" || fail "bad --value message: $(cat "$T/err")"

# peak: the four sites live at the peak, the total their sum and the rest
"$G" report --format peak --max-frames 1 "$TR" >"$T/pk.txt" || fail "report --format peak"
grep -A1 '^ *977 KiB in 10 blocks (0 bytes at the end)$' "$T/pk.txt" | grep -q 'at peak_buf ' ||
  fail "peak: peak_buf: $(cat "$T/pk.txt")"
grep -A1 '^ *3000 bytes in 1 blocks (3000 bytes at the end)$' "$T/pk.txt" | grep -q 'at leak_n ' ||
  fail "peak: leak_n"
# standard input is copied aside and read twice: the same peak values and view
cmp -s <("$G" report --format collapsed --value peak - <"$TR") <("$G" report --format collapsed --value peak "$TR") ||
  fail "peak values from standard input differ from the file's"
cmp -s <("$G" report --format peak - <"$TR" | tail -n +2) <("$G" report --format peak "$TR" | tail -n +2) ||
  fail "peak view from standard input differs from the file's"
# the JSON's views (docs/report-json.md: peak.sites, temporary), parsed:
# the same sites and figures as the text views, the peak's sites summing to
# its live bytes, which is the report's total peak; standard input the same
"$G" report --format json --max-frames 1 "$TR" >"$T/v.json" || fail "report --format json"
"$G" report --format json --max-frames 1 - <"$TR" >"$T/v-stdin.json" || fail "report --format json from standard input"
$PY - "$T/v.json" "$T/v-stdin.json" <<'X' || fail "the JSON's peak and temporary views"
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
def check(c, what):
    if not c: bad.append(what)
check(d["version"] == 1 and d["version_minor"] == 3, "version 1.3")
p = d["processes"][0]
pk, tm = p["peak"], p["temporary"]
by = {s["site"]["function"]: s for s in pk["sites"]}
want = {"peak_buf": (1000000, 10, 0), "held_one": (4096, 1, 0), "leak_n": (3000, 1, 3000), "leak_fixed": (500, 1, 500)}
for fn, (b, n, e) in want.items():
    s = by.get(fn)
    check(s is not None and (s["bytes"], s["blocks"], s["end_bytes"]) == (b, n, e), f"peak site {fn}: {s}")
check([s["site"]["function"] for s in pk["sites"]] == list(want), f"peak sites largest first: {list(by)}")
check(sum(s["bytes"] for s in pk["sites"]) == pk["live_bytes"] == pk["total"], f"peak sites sum to the peak: {pk['live_bytes']} {pk['total']}")
check(pk["sites_more"] == 0 and isinstance(pk["t_ns"], int) and 0 < pk["t_ns"] <= p["duration_ns"], "peak time and count")
check(all(s["stack"] and s["stack"][0]["function"] == s["site"]["function"] for s in pk["sites"]), "each peak site has its stack")
check(tm["threshold_ns"] == 1000000 and tm["allocs"] == 200 and tm["bytes"] == 12800, f"temporary totals: {tm}")
ts = tm["sites"]
check(len(ts) == 1 and ts[0]["site"]["function"] == "temp_one" and (ts[0]["allocs"], ts[0]["bytes"], ts[0]["of_allocs"]) == (200, 12800, 200),
      f"temporary sites: {ts}")
e = json.load(open(sys.argv[2]))["processes"][0]
check(e["peak"] == pk and e["temporary"] == tm, "standard input: the same views")
for b in bad: print("  " + b)
sys.exit(1 if bad else 0)
X
# temporary: temp_one's 200, nothing of the blocks held 30 ms
"$G" report --format temporary --max-frames 1 "$TR" >"$T/tm.txt" || fail "report --format temporary"
grep -A1 '^ *200 temporary of 200 allocations, 12.5 KiB$' "$T/tm.txt" | grep -q 'at temp_one ' ||
  fail "temporary: temp_one: $(cat "$T/tm.txt")"
grep -q 'at peak_buf\|at held_one' "$T/tm.txt" && fail "temporary: a held block counted"

# diff: N=1 -> N=3 grows leak_n by 2000 bytes, nothing else changes
run 1 || fail "analyzer_exports 1 failed under the shim"
"$G" diff "$T/n1.trace" "$TR" >"$T/d.txt" || fail "diff exit status $?"
grep -q '^  +2000 bytes grown  at leak_n tests/programs/analyzer_exports.c:[0-9]* (1000 bytes -> 3000 bytes)$' "$T/d.txt" ||
  fail "diff text: $(cat "$T/d.txt")"
grep -q '^0 new, 0 gone, 1 grown, 0 shrunk; new and grown rose 2000 bytes$' "$T/d.txt" || fail "diff counts"
"$G" diff "$T/n1.trace" "$TR" --fail-on-growth 1999 >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 1 ] || fail "--fail-on-growth 1999 -> $rc, want 1"
grep -q '^gcspy diff: FAIL: new and grown sites rose 2000 bytes, over the 1999 bytes allowed$' "$T/err" ||
  fail "diff FAIL line: $(cat "$T/err")"
"$G" diff "$T/n1.trace" "$TR" --fail-on-growth 2000 >/dev/null || fail "--fail-on-growth 2000 -> $?, want 0"
"$G" diff "$TR" "$T/n1.trace" --fail-on-growth 0 --format json -o "$T/d.json" || fail "reverse diff -> $?, want 0"
$PY - "$T/d.json" <<'X' || fail "diff json (reverse)"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["value"], d["total_a"], d["total_b"], d["rise"], d["failed"]) == ("leaked", 3500, 1500, 0, False), d
assert [(s["status"], s["site"].split()[0], s["a"], s["b"], s["delta"]) for s in d["sites"]] == \
    [("shrunk", "leak_n", 3000, 1000, -2000)], d["sites"]
X
L=build/tests/programs/analyzer_leaky
if [ -x "$L" ]; then
  timeout 60 env LD_PRELOAD="$LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$T/leaky.trace" GCSPY_SCAN_AT_EXIT=1 "$L" >/dev/null
  "$G" diff "$T/leaky.trace" "$TR" --format json -o "$T/d2.json" --fail-on-growth 3499 2>/dev/null; rc=$?
  [ "$rc" = 1 ] || fail "diff leaky -> exports: $rc, want 1"
  $PY - "$T/d2.json" <<'X' || fail "diff json (new and gone)"
import json, sys
d = json.load(open(sys.argv[1]))
got = {(s["status"], s["site"].split()[0], s["a"], s["b"]) for s in d["sites"]}
want = {("new", "leak_n", 0, 3000), ("new", "leak_fixed", 0, 500), ("gone", "lose_one", 111, 0)}
assert want <= got, got
assert ("gone", "make_list", 144, 0) in got or {("gone", "make_list", 48, 0), ("gone", "make_list", 96, 0)} <= got, got
assert d["rise"] == 3500 and d["failed"] is True, d
X
fi
"$G" diff "$TR" 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && grep -q '^gcspy diff: two traces are needed, A and B (1 given)$' "$T/err" || fail "diff with one trace: $rc $(cat "$T/err")"

# bad input: one line naming the problem, exit 2
"$G" diff "$T/missing.trace" "$TR" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "^gcspy diff: $T/missing.trace: No such file or directory$" "$T/err" ||
  fail "diff of a missing trace: $rc $(cat "$T/err")"
"$G" diff "$T/n1.trace" "$TR" --format xml >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && grep -q "^gcspy diff: unknown format 'xml' (text or json)$" "$T/err" || fail "diff --format xml: $rc"
"$G" report --format pprofx "$TR" >/dev/null 2>"$T/err"; rc=$?
[ "$rc" = 2 ] && grep -q "^gcspy report: unknown format 'pprofx' (text, json, html, pprof, collapsed, peak or temporary)$" "$T/err" ||
  fail "report --format pprofx: $rc $(cat "$T/err")"

# several traces: one collapsed output, each stack under its process
"$G" report --format collapsed "$T/n1.trace" "$TR" >"$T/c2.txt" || fail "collapsed of two traces"
p1=$("$G" dump "$T/n1.trace" | sed -n 's/^process pid=\([0-9]*\) .*/\1/p' | head -1)
p3=$("$G" dump "$TR" | sed -n 's/^process pid=\([0-9]*\) .*/\1/p' | head -1)
grep -q "^pid $p1;.*;leak_n [^;]* 1000\$" "$T/c2.txt" && grep -q "^pid $p3;.*;leak_n [^;]* 3000\$" "$T/c2.txt" ||
  fail "collapsed of two traces (pids $p1 $p3): $(cat "$T/c2.txt")"
grep -vq '^pid ' "$T/c2.txt" && fail "collapsed of two traces: a line without its pid"

[ "$fails" = 0 ] && echo "exports: all passed"
exit $((fails > 0))
