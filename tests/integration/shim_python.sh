#!/usr/bin/env bash
# /usr/bin/python3 importing torch and computing a little under the shim:
# the output and status it has without the shim ("999000 256", nothing on
# stderr, status 4: fixed by the arithmetic); one complete,
# consistent trace (checker; TRACE_END against the replay of ~1M events);
# allocation stacks carry the Python frame of the -c script (a PYCODE
# record for "<string>" named by stack nodes). Skipped when /usr/bin/python3
# has no torch.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init shim_python
CODE='import torch
x = torch.arange(1000, dtype=torch.float32)
y = torch.ones(256, 256) @ torch.ones(256, 256)
print(int((x * 2).sum().item()), int(y[0, 0].item()))
import sys; sys.exit(4)'

"$GS_PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' \
  || gs_skip "no torch in $GS_PY"
# Without the shim this prints "999000 256", nothing on stderr, status 4.
GS_TIMEOUT=120 gs_run shim "$GS_PY" -c "$CODE"
[ "$GS_RC" -eq 4 ] || fail "exit status $GS_RC under the shim, expected 4: $(tail -3 "$GS_DIR/err")"
[ "$(cat "$GS_DIR/out")" = "999000 256" ] || fail "stdout under the shim: $(cat "$GS_DIR/out")"
[ -s "$GS_DIR/err" ] && fail "stderr under the shim: $(tail -3 "$GS_DIR/err")"
gs_one_trace && {
  gs_check "$GS_DUMP"
  gs_py - "$GS_DUMP" <<'PY' || fail "python frames: see above"
import sys
script, named = set(), 0
with open(sys.argv[1], encoding='latin-1') as f:
    for line in f:
        if line.startswith('pycode ') and 'file="<string>" function="<module>"' in line:
            script.add(int(line.split()[1][3:]))
        elif line.startswith('stack ') and ' pycode=' in line:
            if int(line.split(' pycode=')[1].split()[0]) in script:
                named += 1
assert script, 'no PYCODE record for the -c script'
assert named, 'no stack node names the -c script\'s frame'
print('python frames: %d stack nodes in the -c script' % named)
PY
}
gs_done
