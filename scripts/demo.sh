#!/usr/bin/env bash
# `make demo`: gcspy on the bundled PyTorch example, end to end. Installs what
# is missing, builds, runs examples/train.py with two planted problems (a
# native buffer leaked every step, and every step's autograd graph kept
# alive) under `gcspy run`, then writes the text report (and the HTML page
# where the CLI has that format) under out/.
#
#   DEMO_STEPS=N     training steps (default 100)
#   DEMO_ARGS="..."  other train.py flags (default: --leak-native --leak-growth --markers)
#
# Stops with a note after the trace when the CLI has no `report` command yet.
# Exit status: 0 when the demo ran, 1 when a step failed.
set -u
cd "$(dirname "$0")/.." || exit 1
PY=${PYTHON:-/usr/bin/python3}
BUILD=${BUILD:-build}
STEPS=${DEMO_STEPS:-100}
read -r -a EXTRA <<<"${DEMO_ARGS:---leak-native --leak-growth --markers}"
OUTDIR=out
CLI=$BUILD/gcspy

say() { printf '\n== %s\n' "$*"; }
die() { echo "demo: $*" >&2; exit 1; }

say "dependencies"
bash scripts/install-deps.sh || die "scripts/install-deps.sh failed"

say "build"
make --no-print-directory -j2 || die "the build failed"
[ -x "$CLI" ] || die "$CLI was not built"
[ -f "$BUILD/libgcspy.so" ] || die "$BUILD/libgcspy.so was not built"
"$PY" -c "import torch" 2>/dev/null || die "$PY cannot import torch (Debian package python3-torch)"

# Only this script's own earlier demo traces are removed: an existing trace is
# never overwritten, so a stale one would otherwise sit beside the new ones.
mkdir -p "$OUTDIR" || die "cannot create $OUTDIR/"
rm -f "$OUTDIR"/demo-*.trace "$OUTDIR"/demo-*.trace.[0-9]*

CMD=("$PY" examples/train.py --steps "$STEPS" --log-every 10 "${EXTRA[@]}")
say "run: $CLI run -o $OUTDIR/demo-%p.trace -- ${CMD[*]}"
"$CLI" run -o "$OUTDIR/demo-%p.trace" -- "${CMD[@]}"
rc=$?
[ $rc -eq 0 ] || die "the training run exited with status $rc"

# The main process and its two DataLoader workers each write a trace; in pid
# order the main process (their parent) comes first, unless pids wrapped.
mapfile -t TRACES < <(ls "$OUTDIR"/demo-*.trace 2>/dev/null | sort -V)
[ ${#TRACES[@]} -gt 0 ] || die "no trace was written under $OUTDIR/"
echo "traces: ${TRACES[*]}"

say "report"
if ! "$CLI" report --help >/dev/null 2>&1; then
  echo "demo: this build of gcspy has no 'report' command yet; stopping after the trace."
  echo "demo: look at it with: $CLI dump ${TRACES[0]} | less"
  exit 0
fi
"$CLI" report "${TRACES[@]}" -o "$OUTDIR/report.txt" || die "gcspy report failed"
# The whole report is in the file; the terminal gets its opening (the main
# process: its leaks come first).
head -n 60 "$OUTDIR/report.txt"
echo "..."
lines=$(wc -l <"$OUTDIR/report.txt")
echo "(${lines} lines in all)"

html=""
if "$CLI" report --help 2>&1 | grep -q 'html'; then
  if "$CLI" report "${TRACES[@]}" --format html -o "$OUTDIR/report.html"; then
    html=$OUTDIR/report.html
  else
    echo "demo: the HTML report failed (see above); the text report stands."
  fi
else
  echo "demo: this build of gcspy has no HTML report format yet; skipped."
fi

say "done"
echo "text report: $PWD/$OUTDIR/report.txt"
[ -n "$html" ] && echo "HTML report: $PWD/$html (open it in a browser)"
echo "traces:      ${TRACES[*]}"
exit 0
