#!/usr/bin/env bash
# The HTML report in a real browser: Debian's chromium, headless, driven by
# playwright-core (tests/browser/check_report.mjs), on two reports:
#   planted    a real trace of tests/browser/planted.c under libgcspy.so, with
#              markup in its command line and markers: the findings come
#              first, on the first screen, naming lose_big and lose_three
#              at their malloc lines (screenshot planted-top.png); the leak
#              badge counts the blocks gcspy check counts; the leak table lists
#              the planted leaks with their bytes, blocks and source lines,
#              a row opens to its stack, the columns sort, every chart drew,
#              and the markup shows as text and runs nothing
#   device     a synthetic GPU trace (build/tests/html/mkdevtrace): the
#              device's address map with both layers (cudaMalloc, PyTorch),
#              its segment diagrams, growth and pause charts
#   two        both traces in one report, the second from standard input:
#              each process draws from the picker, its leak badge saying
#              what its row in the processes table says
#   malformed  a trace that frees a block that is not live (rel_mktraces
#              semantic): its page is written all the same (exit 2) and
#              says above the summary that it is malformed, and where
#   noscan     a trace with no leak scan (analyzer_mktraces noend): the
#              leak badge says "unknown: no leak scan" in red, not "0 bytes"
#   exec       a trace that ended by exec (analyzer_mktraces exec): the leak
#              badge says "ended by exec", neutral
#   many       twelve growth suspects (analyzer_mktraces growth_many): the
#              growth legend lists the largest 8 and says "+4 more"
# The charts' rules on planted, device and many (check_report.mjs,
# chartRules): axis titles everywhere, byte ticks at powers of two labelled
# exactly, no overlapping tick labels, RSS solid in its own colour, nav links
# landing below the sticky bar, bytes in tables with units; and the Peak and
# Temporary sections equal to the JSON's views (planted: keep_growing live at
# the peak, churn's temporary allocations).
# Both: no console error, no failed request, no request at all beyond the
# page. Screenshots of every section go to build/test-artifacts/html/.
# Skipped (77) only when chromium or node is missing, or node is older than
# playwright-core needs (one line: tests/browser/node_check.mjs, itself
# checked first on a package that asks for a node newer than any); the
# absence of playwright-core is a failure (the build installs it).
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy LIB=$PWD/build/libgcspy.so H=build/tests/html
ART=build/test-artifacts/html
command -v node >/dev/null || { echo "node is not installed"; exit 77; }
T0=$(mktemp -d) && echo '{"name": "future", "version": "1.0.0", "engines": {"node": ">=999"}}' >"$T0/package.json"
why=$(node tests/browser/node_check.mjs "$T0/package.json"); rc=$?; rm -rf "$T0"
[ $rc -eq 77 ] && [ "$(grep -c . <<<"$why")" -eq 1 ] && grep -q "^node $(node -p process.versions.node) is too old for future 1.0.0 (it needs node >=999)" <<<"$why" ||
  { echo "FAIL: node_check.mjs on a package needing node >=999: exit $rc, '$why'"; exit 1; }
[ -x /usr/bin/chromium ] || { echo "chromium is not installed (/usr/bin/chromium)"; exit 77; }
[ -d reports/web/node_modules/playwright-core ] || { echo "playwright-core is not installed: make test-build runs npm ci in reports/web"; exit 1; }
why=$(node tests/browser/node_check.mjs); rc=$?
[ $rc -eq 0 ] || { echo "$why"; exit $rc; }
[ -x "$G" ] && [ -f "$LIB" ] && [ -x "$H/planted" ] && [ -x "$H/mkdevtrace" ] || { echo "not built"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

EVIL1='<script>window.__pwned=1</script>'
EVIL2='</script><img src=x onerror=window.__pwned=2>'
timeout 60 env LD_PRELOAD="$LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$T/planted.trace" \
  GCSPY_SCAN_INTERVAL_MS=40 GCSPY_SAMPLE_MS=5 "$H/planted" "$EVIL1" "$EVIL2" >/dev/null \
  || fail "planted failed under the shim"
"$G" report --format html -o "$T/planted.html" "$T/planted.trace" || fail "report planted"
"$H/mkdevtrace" "$T/device.trace" || fail "mkdevtrace"
"$G" report --format html -o "$T/device.html" "$T/device.trace" || fail "report device"
# two processes, the second read from standard input (read once, like the
# file: its maps, growth and pauses draw too)
"$G" report --format html -o "$T/two.html" "$T/device.trace" - <"$T/planted.trace" || fail "report two"
build/tests/programs/rel_mktraces semantic "$T/sem" >/dev/null || fail "rel_mktraces semantic"
"$G" report --format html -o "$T/malformed.html" "$T/sem/free-unknown.trace" 2>/dev/null
[ $? = 2 ] && [ -s "$T/malformed.html" ] || fail "report malformed: exit status 2 with the page written"
# no scan (a killed process) and an exec: the leak badge says so
mkdir -p "$T/mk" && build/tests/analyzer_mktraces "$T/mk" >/dev/null || fail "analyzer_mktraces"
"$G" report --format html -o "$T/noscan.html" "$T/mk/noend.trace" 2>/dev/null || fail "report noscan"
"$G" report --format html -o "$T/exec.html" "$T/mk/exec.trace" || fail "report exec"
"$G" report --format html -o "$T/many.html" "$T/mk/growth_many.trace" || fail "report many"
[ $fails = 0 ] || exit 1

# line of the malloc call inside function $1 of planted.c
src=tests/browser/planted.c
line_in() {
  awk -v fn="$1" '$0 ~ "static [a-z ]*\\*?" fn "\\(" { inside = 1 } inside && /malloc\(/ { print NR; exit }' "$src"
}
L_BIG=$(line_in lose_big) L_THREE=$(line_in lose_three) L_PAIR=$(line_in lose_pair) L_CHILD=$(line_in pair_child)
[ -n "$L_BIG" ] && [ -n "$L_THREE" ] && [ -n "$L_PAIR" ] && [ -n "$L_CHILD" ] || { echo "cannot find the malloc lines in $src"; exit 1; }

# the leak badge counts what the gate counts (one set of numbers)
GATE=$("$G" check "$T/planted.trace" | sed -n 's/^FAIL .*: .* in \([0-9]*\) blocks\? leaked (definite,indirect).*/\1/p')
[ -n "$GATE" ] || fail "gcspy check planted: no FAIL line with a block count"

rm -rf "$ART" && mkdir -p "$ART"
RULES='{"bytes": {"memory": [1], "frag-extent": [1], "frag-malloc": [1], "growth": [1]}}'
cat >"$T/specs.json" <<EOF
[
 {"page": "$T/planted.html", "shots": "$ART", "prefix": "planted-",
  "charts": ["memory", "frag-ratio", "frag-extent", "growth", "pause-timeline", "pause-histogram", "mmu"],
  "flame": true, "maps": [{"name": "host heap", "layers": 1}],
  "leaks": [
   {"function": "lose_big", "class": "definite", "memory": "host", "bytes": 12345, "blocks": 1,
    "file": "$src", "line": $L_BIG, "callers": ["main"]},
   {"function": "lose_three", "class": "definite", "memory": "host", "bytes": 3000, "blocks": 3,
    "file": "$src", "line": $L_THREE},
   {"function": "lose_pair", "class": "definite", "memory": "host", "bytes": 64, "blocks": 1,
    "file": "$src", "line": $L_PAIR},
   {"function": "pair_child", "class": "indirect", "memory": "host", "bytes": 64, "blocks": 1,
    "file": "$src", "line": $L_CHILD}],
  "expand": 0, "sort": true, "zoom": "memory",
  "leakBadge": {"blocks": ${GATE:-0}}, "siteRows": true,
  "findings": [["leak ", "in 1 block, definite, host, at lose_big (", "planted.c:$L_BIG)"],
               ["leak ", "in 3 blocks, definite, host, at lose_three (", "planted.c:$L_THREE)"]],
  "escape": ["<script>window.__pwned=1</script>", "</script><img src=x onerror=window.__pwned=2>"],
  "chartRules": $RULES, "views": {"peak": ["keep_growing"], "temporary": ["churn"]}},
 {"page": "$T/device.html", "shots": "$ART", "prefix": "device-",
  "charts": ["memory", "frag-ratio", "frag-extent", "frag-malloc", "growth", "pause-timeline", "pause-histogram", "mmu"],
  "maps": [{"name": "host heap", "layers": 1}, {"name": "device 0", "layers": 2}], "devstate": 2,
  "colour": true, "chartRules": $RULES},
 {"page": "$T/many.html", "chartRules": $RULES},
 {"page": "$T/two.html", "processes": 2},
 {"page": "$T/malformed.html", "malformed": "FREE of 0x9000 that is not live"},
 {"page": "$T/noscan.html", "leakBadge": {"cls": "badge bad no-scan", "value": "unknown: no leak scan"}},
 {"page": "$T/exec.html", "leakBadge": {"cls": "badge neutral exec", "value": "ended by exec"}}
]
EOF
node tests/browser/check_report.mjs "$T/specs.json"; rc=$?
[ $rc = 0 ] || fail "browser checks (exit $rc)"
for s in summary memory fragmentation leaks peak temporary growth pauses; do
  for p in planted device; do
    [ -s "$ART/$p-$s.png" ] || fail "no screenshot $ART/$p-$s.png"
  done
done
[ $fails = 0 ] && echo "html_browser: all passed"
[ $fails = 0 ]
