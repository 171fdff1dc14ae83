#!/usr/bin/env bash
# The screenshots of the HTML report in README.md and docs/html-report.md,
# made the way a user makes a report: the bundled example
# (examples/train.py, with its planted problems on) runs under `gcspy run`,
# `gcspy report --format html` renders its traces, and Debian's chromium
# (tests/browser/check_report.mjs, which also checks the page drew) saves
# each section as docs/images/report-<section>.png.
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
build/gcspy report -q "$WORK"/example-*.trace --format html -o "$WORK/report.html" \
  || die "gcspy report failed"
mkdir -p "$OUT" || die "cannot create $OUT"
cat >"$WORK/spec.json" <<JSON
{"page": "$WORK/report.html", "shots": "$OUT", "prefix": "report-", "fullPage": false,
 "charts": ["memory", "frag-ratio", "growth"], "flame": true, "maps": [{"name": "host heap", "layers": 1}]}
JSON
node tests/browser/check_report.mjs "$WORK/spec.json" || die "the page did not draw as it should"
ls -l "$OUT"/report-*.png
