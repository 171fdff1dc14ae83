#!/usr/bin/env bash
# Pointer-free tensor storage is not scanned (GCSPY_TORCH_DATA, preload/
# torch.c). tests/support/torch_data/job.py leaves the only copies of a
# 3003-byte block's address in a live 64 MiB CPU tensor (8 Mi of them) and calls
# gcspy_scan(). Real CPU PyTorch, three runs:
#   default (GCSPY_TORCH_DATA names c10::alloc_cpu): the block is lost
#     (definite, or possible where a stale copy of a nearby address is left
#     in Python's memory), and the api scan scanned about the tensor's
#     64 MiB fewer bytes than the run below (at least 60 MiB: the two runs'
#     roots differ by a MiB or two besides, a CPython arena more or less);
#   GCSPY_TORCH_DATA= (empty): the tensor is scanned, the block reachable;
#   GCSPY_TORCH=0: PyTorch-aware mode off altogether: reachable too.
# GS_SUITE=trixie runs the job with the python3 of that Debian root
# (tests/lib.sh's in_root: torch 2.x, whose c10::alloc_cpu is the same
# symbol) under the host's libgcspy.so; the dumps are read on the host.
set -u
cd "$(dirname "$0")/../.." || exit 2
PY=/usr/bin/python3
wrap=()
if [ -n "${GS_SUITE:-}" ]; then
  . tests/lib.sh
  wrap=(in_root "$GS_SUITE")
fi
for f in build/libgcspy.so build/gcspy; do
  [ -f "$f" ] || { echo "$f missing (make test-build)"; exit 1; }
done
rc=0
"${wrap[@]}" "$PY" -c "import torch" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { echo "torch cannot be imported by $PY ${GS_SUITE:+in $GS_SUITE} (status $rc): skipped"; exit 77; }
T=$(mktemp -d /tmp/gcspy-torch_data.XXXXXX) || exit 2
trap 'rm -rf "$T"' EXIT
export IN_ROOT_BIND=$T

for run in default empty off; do
  case $run in
    default) env=() ;;
    empty) env=(GCSPY_TORCH_DATA=) ;;
    off) env=(GCSPY_TORCH=0) ;;
  esac
  if ! "${wrap[@]}" timeout 300 env "${env[@]}" LD_PRELOAD="$PWD/build/libgcspy.so" GCSPY_QUIET=1 \
      GCSPY_OUTPUT="$T/$run.trace" "$PY" "$PWD/tests/support/torch_data/job.py" >"$T/$run.out" 2>"$T/$run.err"; then
    echo "FAIL $run: the job failed: $(tail -3 "$T/$run.err")"; exit 1
  fi
  build/gcspy dump "$T/$run.trace" >"$T/$run.dump" || { echo "FAIL $run: gcspy dump"; exit 1; }
done

"$PY" - "$T" <<'PY'
import re, sys
T = sys.argv[1]
def api_scan(run):
    """(class of the 3003-byte block or 'reachable', bytes_scanned) of the api scan"""
    ids, cls, scanned = set(), None, None
    for line in open(f"{T}/{run}.dump"):
        if line.startswith("scan_begin ") and " trigger=api " in line:
            ids.add(re.search(r" id=(\d+)", line).group(1))
        elif line.startswith("scan_block ") and " size=3003 " in line:
            if re.search(r" id=(\d+)", line).group(1) in ids:
                cls = re.search(r" class=(\w+)", line).group(1)
        elif line.startswith("scan_end "):
            if re.search(r" id=(\d+)", line).group(1) in ids:
                scanned = int(re.search(r" bytes_scanned=(\d+)", line).group(1))
    if len(ids) != 1 or scanned is None:
        sys.exit(f"FAIL {run}: {len(ids)} api scans, expected 1")
    return cls or "reachable", scanned
fails = 0
def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok
d, dscan = api_scan("default")
e, escan = api_scan("empty")
o, _ = api_scan("off")
check(d in ("definite", "possible"), f"default: the block kept only by tensor data is lost ({d})")
check(e == "reachable", f"GCSPY_TORCH_DATA= : the tensor is scanned, the block is {e}")
check(o == "reachable", f"GCSPY_TORCH=0: the block is {o}")
# The two runs' roots differ by a MiB or two besides (CPython's arenas).
check(escan - dscan >= 60 << 20,
      f"default scanned {escan - dscan} fewer bytes than GCSPY_TORCH_DATA= (the tensor: {64 << 20})")
sys.exit(1 if fails else 0)
PY
