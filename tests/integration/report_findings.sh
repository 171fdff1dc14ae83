#!/usr/bin/env bash
# The report's findings (issue 17): what a user acts on, first, in one line
# each, naming the user's own frame; one row per allocation site with the
# classes as columns; the import machinery's and the loader's sites folded
# but counted; every view's totals from the same result.
#   leaks.trace (analyzer_mktraces): two findings, largest first, on the
#     first screen of the text report; site_a's definite and indirect blocks
#     are one site; site_b's possible-only host block makes no finding but
#     stays a site; the sites (and sites_folded) add up to the summary;
#     with --max-groups 1 all sites without lost bytes but the first are
#     folded, and the sums still hold
#   growth_leak.trace: a growth finding at site_a, "freed at exit"
#   frag.trace: fragmentation as bytes wasted outside the largest free piece
#   a real Python program (ctypes malloc dropped 10 times at one line, under
#     libgcspy.so): one leak finding at leak (leak.py:12) with all 10 blocks
#     whatever their classes, libffi's local functions named after the
#     nearest function symbol; --not-user-code moves the frame away
#   gcspy run: the exit line is the scan's verdict (LEAKED ... at leak.py:10)
#   CLI: --max-groups takes a count, with a precise error
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy MK=build/tests/analyzer_mktraces PY=/usr/bin/python3 LIB=$PWD/build/libgcspy.so GA=$PWD/build/gcspy
[ -x "$G" ] && [ -x "$MK" ] && [ -f "$LIB" ] || { echo "not built: $G $MK $LIB"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$MK" "$T" >/dev/null || { echo "mktraces failed"; exit 1; }

# The text report: the findings within the first screen (24 lines), exact.
"$G" report "$T/leaks.trace" >"$T/leaks.txt" || fail "text report exited $?"
head -24 "$T/leaks.txt" | sed -n '/^   FINDINGS$/,/^$/p' >"$T/first"
diff - "$T/first" <<'X' || fail "leaks: the findings on the first screen"
   FINDINGS
    1. leak 1.0 MiB in 1 block, definite, device, at site_b (tests/golden/mktraces.c:44)
    2. leak 200 bytes in 2 blocks, definite (definite 1, indirect 1), host, at site_a (tests/golden/mktraces.c:39)

X
# one row for site_a (definite, indirect and reachable side by side)
"$G" report --show-reachable "$T/leaks.trace" >"$T/all.txt" || fail "show-reachable report"
[ "$(grep -c ' host, site_a (tests/golden/mktraces.c:39)$' "$T/all.txt")" = 1 ] || fail "site_a is not one row"
grep -qxF "         100 bytes/1      100 bytes/1                -      100 bytes/1                -  host, site_a (tests/golden/mktraces.c:39)" \
  "$T/all.txt" || fail "site_a row: $(grep 'site_a (' "$T/all.txt")"

for s in leaks growth_leak frag; do
  "$G" report --format json "$T/$s.trace" >"$T/$s.json" || fail "$s: json report exited $?"
done
"$G" report --format json --max-groups 1 "$T/leaks.trace" >"$T/leaks1.json" || fail "--max-groups 1: json report exited $?"
$PY - "$T" <<'EOF' || fail "JSON findings and sites"
import json, sys
T = sys.argv[1]
bad = []
def check(ok, what):
    if not ok:
        bad.append(what)
        print("  not so: " + what)
def proc(name):
    d = json.load(open(f"{T}/{name}.json"))
    check(d["version"] == 1 and d["version_minor"] == 3, f"{name}: version 1.3")
    return d["processes"][0]
p = proc("leaks")
got = [(f["kind"], f["memory"], f["bytes"], f["blocks"], f["class"], f["user_frame"]["function"],
        f["user_frame"]["file"], f["user_frame"]["line"], f["sites"]) for f in p["findings"]]
want = [("leak", "device", 1048576, 1, "definite", "site_b", "tests/golden/mktraces.c", 44, 1),
        ("leak", "host", 200, 2, "definite", "site_a", "tests/golden/mktraces.c", 39, 1)]
check(got == want, f"leaks findings {got}")
# site_b's host block only interior pointers reach (worst class possible):
# no finding (check's default gate passes it), still a site in the totals
b = [s for s in p["sites"] if s["memory"] == "host" and s["user_frame"] and s["user_frame"]["function"] == "site_b"]
check(len(b) == 1 and b[0]["worst_class"] == "possible" and b[0]["lost"] == {"bytes": 1000, "blocks": 1},
      f"site_b host site {b}")
a = [s for s in p["sites"] if s["memory"] == "host" and s["user_frame"] and s["user_frame"]["function"] == "site_a"]
check(len(a) == 1 and a[0]["worst_class"] == "definite" and a[0]["lost"] == {"bytes": 200, "blocks": 2}
      and a[0]["classes"]["reachable"] == {"bytes": 100, "blocks": 1}, f"site_a site {a}")
# one set of numbers: the sites add up to the summary, class by class
def add_up(p, what):
    for c in ("definite", "indirect", "possible", "reachable", "not-freed"):
        for key in ("bytes", "blocks"):
            s = sum(x["classes"][c][key] for x in p["sites"]) + p["sites_folded"]["classes"][c][key]
            check(s == p["summary"][c]["total"][key], f"{what}: sites' {c} {key} {s} == summary's")
add_up(p, "default")
check(p["sites_folded"]["sites"] == 0, f"nothing folded by default: {p['sites_folded']}")
p1 = proc("leaks1")
add_up(p1, "--max-groups 1")
quiet = [s["stack_id"] for s in p["sites"] if not s["lost"]["blocks"]]
check(len(quiet) > 1 and p1["sites_folded"]["sites"] == len(quiet) - 1 and
      [s["stack_id"] for s in p1["sites"]] == [s["stack_id"] for s in p["sites"] if s["lost"]["blocks"]] + quiet[:1],
      f"--max-groups 1 folds {len(quiet) - 1} of the {len(quiet)} sites without lost bytes: {p1['sites_folded']}")
g = proc("growth_leak")["findings"]
check(len(g) == 1 and g[0]["kind"] == "growth" and g[0]["rate"] == 1000 and
      g[0]["rate_unit"] == "bytes/step" and g[0]["freed_at_exit"] is True and
      g[0]["user_frame"]["function"] == "site_a" and g[0]["line"].endswith(
          ": retained per step while the job ran, freed at exit"), f"growth finding {g}")
f = proc("frag")["findings"]
fr = [x for x in f if x["kind"] == "fragmentation"]
check(len(fr) == 1 and fr[0]["memory"] == "device" and fr[0]["bytes"] == 30 << 20 and
      fr[0]["span_bytes"] == 100 << 20 and fr[0]["ratio"] == 0.75, f"frag finding {fr}")
sys.exit(1 if bad else 0)
EOF
"$G" report "$T/growth_leak.trace" 2>/dev/null | grep -qxF \
  "    1. growth +1000 bytes per step, host, from site_a (tests/golden/mktraces.c:39) (96.7 KiB over steps 1..100, 1 site): retained per step while the job ran, freed at exit" ||
  fail "growth finding line"

# A real Python program: 10 ctypes mallocs dropped at one line.
cat >"$T/leak.py" <<'EOF'
import ctypes

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]


def leak(n):
    for _ in range(n):
        p = libc.malloc(40960)
        ctypes.memset(p, 0x30, 40960)

leak(10)
EOF
(cd "$T" && timeout 60 env LD_PRELOAD="$LIB" GCSPY_OUTPUT="$T/py.trace" GCSPY_QUIET=1 $PY leak.py) ||
  fail "leak.py under the shim"
"$G" report --format json "$T/py.trace" >"$T/py.json" || fail "py json"
"$G" report "$T/py.trace" >"$T/py.txt" || fail "py text"
"$G" report --format json --not-user-code '*/leak.py' "$T/py.trace" >"$T/py_not.json" || fail "--not-user-code"
$PY - "$T" <<'EOF' || fail "Python findings"
import json, sys
T = sys.argv[1]
bad = []
def check(ok, what):
    if not ok:
        bad.append(what)
        print("  not so: " + what)
p = json.load(open(f"{T}/py.json"))["processes"][0]
f = p["findings"][0]
check(f["kind"] == "leak" and f["bytes"] == 409600 and f["blocks"] == 10 and
      f["class"] == "definite" and f["sites"] == 1, f"first finding {f}")
u = f["user_frame"]
check(u and u["function"] == "leak" and u["file"].endswith("/leak.py") and u["line"] == 10 and u["python"],
      f"user frame {u}")
check(sum(c["blocks"] for c in f["classes"].values()) == 10, f"classes add up to 10 blocks: {f['classes']}")
mine = [s for s in p["sites"] if not s["noise"] and s["user_frame"] and s["user_frame"]["file"].endswith("/leak.py")
        and s["lost"]["blocks"]]
check(len(mine) == 1 and mine[0]["lost"] == {"bytes": 409600, "blocks": 10}, f"one site: {mine}")
# frames in a module without its symbol table are named after the nearest
# function symbol below them (libffi's local functions: "ffi_...+0x9a"), as
# glibc's backtrace_symbols names them; none is a bare module+offset
ffi = [x for x in (mine[0]["stack"] if mine else []) if (x["module"] or "").endswith("/libffi.so.8")]
check(ffi and all(x["function"] and x["function"].startswith("ffi_") for x in ffi),
      f"libffi frames named: {[(x['function'], x['offset']) for x in ffi]}")
# the noise: folded in the text, one line per origin, counted in the summary
text = open(f"{T}/py.txt").read()
for origin in ("import machinery", "dynamic loader"):
    n = [s for s in p["sites"] if s["noise"] == origin and s["lost"]["blocks"] and not s["suppressed"]]
    line = f"folded: {len(n)} site{'' if len(n) == 1 else 's'} of the {origin}"
    check((line in text) == bool(n), f"fold line for {origin}: {len(n)} sites")
    check(text.count(f"sites of the {origin}\n") + text.count(f"site of the {origin}\n") == (1 if n else 0),
          f"one fold line for {origin}")
lost = sum(p["summary"][c]["total"]["bytes"] for c in ("definite", "indirect", "possible"))
check(lost == sum(s["lost"]["bytes"] for s in p["sites"]), "noise counted in the totals")
q = json.load(open(f"{T}/py_not.json"))["processes"][0]["findings"][0]
check(q["bytes"] == 409600 and q["user_frame"] is None and "(no frame of the user's code)" in q["line"],
      f"--not-user-code: {q}")
sys.exit(1 if bad else 0)
EOF
grep -q "^    1. leak 400 KiB in 10 blocks, definite.*, host, at leak (.*/leak.py:10)$" "$T/py.txt" ||
  fail "py text finding: $(grep -m1 '^    1\.' "$T/py.txt")"

# gcspy run's exit line gives the scan's verdict, as LeakSanitizer does
(cd "$T" && timeout 60 "$GA" run -o "$T/run-%p.trace" -- $PY leak.py 2>"$T/run.err") || fail "gcspy run leak.py: exit $?"
grep -qE "^gcspy: pid [0-9]+: [0-9]+ allocations \(.*\); LEAKED 400 KiB in 10 blocks at 1 site \(definite [0-9]+, indirect [0-9]+, possible [0-9]+\), the largest at leak \(.*/leak.py:10\)(;.*)?; trace .*run-[0-9]+.trace$" \
  "$T/run.err" || fail "gcspy run verdict: $(cat "$T/run.err")"

# CLI: counts are counts
"$G" report --max-groups abc "$T/leaks.trace" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 2 ] && [ "$(cat "$T/err")" = "gcspy report: --max-groups: 'abc' is not a count (a whole number, 0 or more)" ] ||
  fail "--max-groups abc: exit $rc, '$(cat "$T/err")'"
"$G" check --help | grep -q "all: every" || fail "check --help does not say what all means"

[ $fails = 0 ] && echo "report findings: all checks passed" || { echo "$fails check(s) failed"; exit 1; }
