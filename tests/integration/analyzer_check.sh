#!/usr/bin/env bash
# `gcspy check`, the CI gate: every limit, --fail-on class, suppression path
# and error path with its exit status (0 within limits, 1 over, 2 error), the
# one-line verdicts, and the JUnit XML (parsed). Input: the hand-built
# traces of build/tests/analyzer_mktraces; the leaks trace holds, in
# host memory, definite 100 bytes + indirect 100 bytes (site_a), possible
# 1000 bytes (site_b), and a 1 MiB definite device block (site_b); the torch
# trace, 4.5 MiB of unreachable PyTorch tensors (forward at train.py:12).
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy MK=build/tests/analyzer_mktraces PY=/usr/bin/python3
[ -x "$G" ] && [ -x "$MK" ] || { echo "not built: $G $MK"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$MK" "$T" || { echo "mktraces failed"; exit 1; }
L=$T/leaks.trace

# expect STATUS ARGS...: runs gcspy check ARGS, compares the exit status
expect() {
  local want=$1; shift
  "$G" check "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" = "$want" ] || { fail "check $* -> $rc, want $want"; sed 's/^/    /' "$T/out" "$T/err" | head -8; }
}

# Defaults: any definite or indirect leak fails (LeakSanitizer's rule).
expect 1 "$L"
grep -q "^FAIL $L (pid 100 leaky --n 3): 200 bytes in 2 blocks leaked (definite,indirect), 1.0 MiB device" "$T/out" ||
  fail "default verdict line: $(head -1 "$T/out")"
grep -q "^gcspy check: 1 trace, 1 failed, 0 errors" "$T/out" || fail "summary line"

# --max-leak-bytes alone: blocks unlimited; host 200 bytes, device apart.
expect 0 "$L" --max-leak-bytes 200 --max-device-leak-bytes 1M
grep -q "^PASS " "$T/out" || fail "PASS line"
expect 1 "$L" --max-leak-bytes 199 --max-device-leak-bytes 1M
grep -q "bytes > 199 bytes allowed" "$T/out" || fail "bytes reason"
expect 0 "$L" --max-leak-bytes=1K --max-device-leak-bytes=1048576
# --max-leak-blocks alone: bytes unlimited.
expect 0 "$L" --max-leak-blocks 2 --max-device-leak-bytes 1M
expect 1 "$L" --max-leak-blocks 1 --max-device-leak-bytes 1M
grep -q "blocks > 1 allowed" "$T/out" || fail "blocks reason"
# Device memory has its own limit.
expect 1 "$L" --max-leak-bytes 1K --max-device-leak-bytes 1048575
grep -q "device bytes > " "$T/out" || fail "device reason"
# --fail-on picks the classes. A site counts by its worst class, with all
# its lost bytes: site_a's definite and indirect blocks (100 + 100 bytes)
# are one definite site.
expect 0 "$L" --fail-on definite --max-leak-bytes 200 --max-device-leak-bytes 1M
expect 1 "$L" --fail-on definite --max-leak-bytes 199 --max-device-leak-bytes 1M --junit "$T/site.xml"
grep -q "^200 bytes in 2 blocks, definite site (definite 100/1, indirect 100/1), host" "$T/site.xml" ||
  fail "site detail in the JUnit body: $(grep "definite site" "$T/site.xml")"
# --per-class: the old view, each group by its own class
expect 0 "$L" --per-class --fail-on definite --max-leak-bytes 100 --max-device-leak-bytes 1M
expect 1 "$L" --per-class --fail-on definite --max-leak-bytes 99 --max-device-leak-bytes 1M
expect 1 "$L" --fail-on possible --max-leak-bytes 999
expect 0 "$L" --fail-on possible --max-leak-bytes 1000
expect 1 "$L" --fail-on not-freed
expect 0 "$L" --fail-on not-freed --max-leak-bytes 50
# site_a's reachable block does not make a reachable site of a definite
# one: only the pinned site (4096 bytes) is reachable at worst
expect 1 "$L" --fail-on reachable --max-leak-bytes 4095
expect 0 "$L" --fail-on reachable --max-leak-bytes 4096
expect 1 "$L" --per-class --fail-on reachable --max-leak-bytes 4195
expect 0 "$L" --per-class --fail-on reachable --max-leak-bytes 4196
# all: every class the help lists, reachable, runtime and not-freed included (host
# 300 + 1000 + 4096 + 50 bytes), and growth
expect 1 "$L" --fail-on all --max-leak-bytes 5445 --max-device-leak-bytes 1M
expect 0 "$L" --fail-on all --max-leak-bytes 5446 --max-device-leak-bytes 1M
grep -q "6 blocks leaked (definite,indirect,possible,reachable,runtime,not-freed), 1.0 MiB device, 0 growth suspects" "$T/out" ||
  fail "all verdict line: $(head -1 "$T/out")"
# growth
expect 1 "$T/growth_leak.trace" --fail-on growth
grep -q "1 growth suspect" "$T/out" || fail "growth verdict: $(head -1 "$T/out")"
# (the growth traces hold no scan: --allow-no-scan, growth is the point here)
expect 0 "$T/growth_steady.trace" --fail-on growth --allow-no-scan
expect 0 "$T/growth_leak.trace" --fail-on definite,indirect --allow-no-scan
expect 1 "$T/growth_time.trace" --fail-on all

# Suppressions, LeakSanitizer's format: function, module, file, anchors.
printf '# host leaks of site_a are known\nleak:site_a\n\n' >"$T/s1"
expect 0 "$L" --suppressions "$T/s1" --max-device-leak-bytes 1M
grep -q "2 blocks suppressed" "$T/out" || fail "suppressed count: $(head -1 "$T/out")"
grep -q "^suppressed by leak:site_a ($T/s1:2): 2 blocks, 200 bytes" "$T/out" || fail "suppression use line"
expect 1 "$L" --suppressions "$T/s1"                 # the device block is site_b's
printf 'leak:^site_*a$\n' >"$T/s2"
expect 0 "$L" --suppressions "$T/s2" --max-device-leak-bytes 1M
printf 'leak:^ite_a\n' >"$T/s3"
expect 1 "$L" --suppressions "$T/s3" --max-device-leak-bytes 1M  # anchored: no match
printf 'leak:analyzer_mktraces\n' >"$T/s4"                         # the module
expect 0 "$L" --suppressions "$T/s4"
printf 'leak:golden/mktraces.c\n' >"$T/s5"                          # the file
expect 0 "$L" --suppressions "$T/s5"
printf 'leak:caller_main\n' >"$T/s6"                                # an outer frame
expect 0 "$L" --suppressions "$T/s6" --max-leak-bytes 200 --fail-on definite,indirect
expect 1 "$L" --suppressions "$T/s6" --fail-on definite,indirect     # site_a leaks remain
printf 'leak:site_a\n' >"$T/s7"
expect 0 "$T/growth_leak.trace" --fail-on growth --suppressions "$T/s7" --allow-no-scan
# several files add up
expect 0 "$L" --suppressions "$T/s1" --suppressions "$T/s6"
# errors in suppression files
printf 'race:foo\n' >"$T/bad1"
expect 2 "$L" --suppressions "$T/bad1"
grep -q "bad1:1: unsupported suppression type 'race'" "$T/err" || fail "bad type message"
printf 'leak:\n' >"$T/bad2"
expect 2 "$L" --suppressions "$T/bad2"
printf 'nocolon\n' >"$T/bad3"
expect 2 "$L" --suppressions "$T/bad3"
expect 2 "$L" --suppressions "$T/missing"

# Bad options and unreadable input.
expect 2 "$L" --max-leak-bytes lots
expect 2 "$L" --fail-on definite,sometimes
grep -q "unknown class 'sometimes'" "$T/err" || fail "fail-on message"
expect 2 "$L" --frobnicate
expect 2
expect 2 "$T/missing.trace"
grep -q "^ERROR $T/missing.trace: " "$T/out" || fail "error verdict line"
printf 'not a trace at all, just text\n' >"$T/text.trace"
expect 2 "$T/text.trace"
expect 2 "$L" "$T/missing.trace" --max-leak-bytes 1G --max-device-leak-bytes 1G  # error wins
expect 0 "$L" --max-leak-bytes 1G --max-device-leak-bytes 1G

# Incomplete traces are judged on what they hold, unless --require-complete;
# noend holds no scan, which fails by default (nothing rules a leak out).
expect 1 "$T/noend.trace"
grep -q "; no leak scan in the trace (--allow-no-scan accepts it) \[incomplete trace: offset " "$T/out" ||
  fail "no-scan verdict: $(head -1 "$T/out")"
expect 0 "$T/noend.trace" --allow-no-scan
grep -q "\[incomplete trace: offset " "$T/out" || fail "incomplete note"
expect 2 "$T/noend.trace" --require-complete
expect 1 "$T/noend.trace" --fail-on not-freed --allow-no-scan

# Several traces: one verdict each; the worst status wins.
expect 1 "$T/multi_parent.trace" "$T/multi_child.trace" "$T/growth_steady.trace" --json "$T/multi.json" \
  --junit "$T/multi.xml" --allow-no-scan
[ "$(grep -c '^FAIL ' "$T/out")" = 2 ] && [ "$(grep -c '^PASS ' "$T/out")" = 1 ] ||
  fail "multi verdicts: $(cat "$T/out")"
# the child's inherited block is its parent's: only its own 10 bytes count
grep -q "^FAIL $T/multi_child.trace (pid 201 launcher --worker): 10 bytes in 1 block leaked" "$T/out" ||
  fail "child verdict: $(grep multi_child "$T/out")"

# JUnit XML: parse it, count testcases, failures, errors.
$PY - "$T/multi.xml" <<'X' || fail "junit xml"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
assert root.get("tests") == "3" and root.get("failures") == "2" and root.get("errors") == "0", root.attrib
cases = root.findall("./testsuite/testcase")
assert len(cases) == 3, len(cases)
failed = [c for c in cases if c.find("failure") is not None]
assert len(failed) == 2
msg = failed[0].find("failure").get("message")
assert msg.startswith("FAIL "), msg
body = failed[0].find("failure").text
assert "site_a" in body and "leaked 100 bytes" in body, body
X
expect 2 "$L" "$T/missing.trace" --junit "$T/err.xml"
$PY - "$T/err.xml" <<'X' || fail "junit xml with an error"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.get("errors") == "1" and root.get("failures") == "1", root.attrib
errs = root.findall("./testsuite/testcase/error")
assert len(errs) == 1 and "missing.trace" in errs[0].get("message"), errs
X
# The JSON written by --json carries the verdicts.
$PY - "$T/multi.json" <<'X' || fail "check --json"
import json, sys
d = json.load(open(sys.argv[1]))
v = [p["verdict"]["status"] for p in d["processes"]]
assert v == ["fail", "fail", "pass"], v
X
expect 2 "$L" --junit /nonexistent/dir/x.xml --max-leak-bytes 1G --max-device-leak-bytes 1G

# PyTorch tensors no object reaches (the torch trace: 4.5 MiB in 2 caching-
# allocator blocks) are device leaks; the cached free memory and the live
# tensors of the same segments are not.
TT=$T/torch.trace
expect 1 "$TT"
grep -q "^FAIL $TT (pid 1000 python3 train.py): 0 bytes in 0 blocks leaked (definite,indirect), 4.5 MiB device; device bytes > 0 bytes allowed" "$T/out" ||
  fail "torch verdict: $(head -1 "$T/out")"
expect 0 "$TT" --max-device-leak-bytes 4718592
expect 1 "$TT" --max-device-leak-bytes 4718591 --junit "$T/torch.xml"
$PY - "$T/torch.xml" <<'X' || fail "torch junit body"
import sys, xml.etree.ElementTree as ET
body = ET.parse(sys.argv[1]).getroot().find("./testsuite/testcase/failure").text
assert "leaked 4718592 device bytes" in body, body
assert "4718592 bytes in 2 blocks, definite site (definite 4718592/2), device, tensor (caching allocator block)" in body, body
assert "forward train.py:12" in body, body
X
printf 'leak:forward\n' >"$T/storch"
expect 0 "$TT" --suppressions "$T/storch"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "analyzer check: all checks passed"
