#!/usr/bin/env bash
# The HTML report of a PyTorch caching-allocator trace (the torch trace of
# build/tests/analyzer_mktraces, tests/golden/mktraces.c says what it holds):
#   - the page's extra data draws the snapshot's tensors as the torch layer
#     inside device 0's segments (the device state diagram: both segments,
#     the four live tensors at their offsets), and the data slot carries the
#     caching allocator's figures and the leak group labelled torch;
#   - in Debian's chromium (tests/browser/check_report.mjs), when it is
#     installed: the leak table's row for the unreachable tensors (memory
#     "device (tensor)", at forward, train.py:12), its stack, the device map
#     with both layers and the state diagrams, with no console error.
set -u
cd "$(dirname "$0")/../.." || exit 2
G=build/gcspy MK=build/tests/analyzer_mktraces PY=/usr/bin/python3
[ -x "$G" ] && [ -x "$MK" ] || { echo "not built: $G $MK"; exit 1; }
T=$(mktemp -d) && trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$MK" "$T" || { echo "mktraces failed"; exit 1; }
"$G" report --format html -o "$T/torch.html" "$T/torch.trace" || { echo "report html failed"; exit 1; }

$PY - "$T/torch.html" <<'X' || fail "page data"
import json, re, sys
text = open(sys.argv[1], encoding='utf-8').read()
def slot(name):
    m = re.search(r'<script type="application/json" id="%s">(.*?)</script>' % name, text, re.S)
    assert m, name
    return json.loads(m.group(1))
p = slot('gcspy-data')['processes'][0]
ca = p['fragmentation']['caching_allocator']
assert ca['live_bytes'] == 14 << 20 and ca['live_blocks'] == 4, ca
d = ca['devices'][0]
assert (d['reserved_bytes'], d['allocated_bytes'], d['cached_free_bytes']) == (22 << 20, 25 << 19, 8 << 20), d
torch = [l for l in p['leaks'] if l['allocator'] == 'torch']
assert len(torch) == 1 and torch[0]['bytes'] == 4718592 and torch[0]['class'] == 'definite', torch
x = slot('gcspy-extra')[0]
ds = [s for s in x['device_state'] if s['device'] == 0][0]
assert ds['cuda_layer'] and ds['torch_layer'], ds
end = [s for s in ds['states'] if s['when'] == 'end'][0]
assert [s[1] for s in end['segments']] == [20 << 20, 2 << 20], end['segments']
# [segment index, offset, size, site]: A, B in segment 0; C, the pending block in 1
assert [b[:3] for b in end['blocks']] == [[0, 0, 4 << 20], [0, 4 << 20, 8 << 20],
                                         [1, 0, 1 << 19], [1, 1 << 19, 3 << 19]], end['blocks']
X

why="chromium, node or playwright-core missing"
if command -v node >/dev/null && [ -x /usr/bin/chromium ] && [ -d reports/web/node_modules/playwright-core ] &&
   why=$(node tests/browser/node_check.mjs); then
  ART=build/test-artifacts/html-torch
  rm -rf "$ART" && mkdir -p "$ART"
  cat >"$T/spec.json" <<J
{"page": "$T/torch.html", "shots": "$ART", "prefix": "torch-",
 "maps": [{"name": "device 0", "layers": 2}], "devstate": 2,
 "leaks": [{"function": "forward", "class": "definite", "memory": "device (tensor)",
            "bytes": 4718592, "blocks": 2, "file": "train.py", "line": 12}],
 "expand": 0}
J
  node tests/browser/check_report.mjs "$T/spec.json" || fail "browser checks (exit $?)"
else
  echo "note: $why: the page was not opened in a browser"
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "analyzer torch html: all checks passed"
