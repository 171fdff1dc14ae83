#!/usr/bin/env bash
# The screenshots of the HTML report in README.md and docs/html-report.md,
# made the way a user makes a report: the bundled example
# (examples/train.py, with its planted problems on) runs under `gcspy run`,
# `gcspy report --format html` renders its traces, and Debian's chromium
# (tests/browser/check_report.mjs, which also checks the page drew and the
# charts' rules) saves each section as docs/images/report-<section>.png and
# the first screen as report-top.png. Then one real job that is not the
# example, a short PyTorch training script (a small CNN on random data,
# written here) under `gcspy run`: its first screen as job-top.png.
#
#   SHOT_STEPS=N   training steps (default 60)
#   SHOT_OUT=DIR   where the pictures go (default docs/images)
#
# Exit status 0 when every picture was written, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-/usr/bin/python3}
STEPS=${SHOT_STEPS:-60}
OUT=${SHOT_OUT:-docs/images}
die() { echo "screenshots: $*" >&2; exit 1; }

make --no-print-directory -j2 build/gcspy build/libgcspy.so reports/web/node_modules/.gcspy-installed \
  || die "the build failed"
[ -x /usr/bin/chromium ] || die "chromium is needed (scripts/install-deps.sh)"
"$PY" -c "import torch" 2>/dev/null || die "$PY cannot import torch (Debian package python3-torch)"
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT

build/gcspy run -q -o "$WORK/example-%p.trace" -- "$PY" examples/train.py --steps "$STEPS" \
  --log-every 20 --leak-native --leak-growth --cycle --markers >/dev/null \
  || die "the example failed under gcspy"
# the main process only (the smallest pid): the pictures are of its story
# (its DataLoader workers' pages are the demo's; before the JSON's 1.3, whose
# sites_folded sums the reachable-only sites past --max-groups, each forked
# worker's inherited sites made that page over 300 MB)
MAIN=$(ls "$WORK"/example-*.trace | sed 's/.*example-\([0-9]*\)\.trace/\1/' | sort -n | head -1)
build/gcspy report -q "$WORK/example-$MAIN.trace" --format html -o "$WORK/report.html" \
  || die "gcspy report failed"
mkdir -p "$OUT" || die "cannot create $OUT"
cat >"$WORK/job.py" <<'PY'
# a short real training job: a small CNN on random images, 30 steps
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(30):
    x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.3f}")
PY
build/gcspy run -q -o "$WORK/job-%p.trace" -- "$PY" "$WORK/job.py" >/dev/null \
  || die "the job failed under gcspy"
build/gcspy report -q "$WORK"/job-*.trace --format html -o "$WORK/job.html" \
  || die "gcspy report of the job failed"
RULES='{"bytes": {"memory": [1], "frag-extent": [1], "growth": [1], "frag-malloc": [1]}}'
cat >"$WORK/spec.json" <<JSON
[{"page": "$WORK/report.html", "shots": "$OUT", "prefix": "report-", "fullPage": false, "topShot": true,
  "charts": ["memory", "frag-ratio", "growth"], "flame": true, "maps": [{"name": "host heap", "layers": 1}],
  "chartRules": $RULES},
 {"page": "$WORK/job.html", "shots": "$OUT", "prefix": "job-", "fullPage": false, "topShot": true, "sections": [],
  "charts": ["memory"], "chartRules": $RULES}]
JSON
node tests/browser/check_report.mjs "$WORK/spec.json" || die "the page did not draw as it should"
ls -l "$OUT"/report-*.png "$OUT"/job-top.png
