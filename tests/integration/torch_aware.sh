#!/usr/bin/env bash
# PyTorch-aware mode (preload/torch.c) on the CUDA test double: real CPU
# PyTorch, with torch.cuda's memory API served by a caching allocator built
# like PyTorch's (tests/programs/torch_toy_alloc.cpp: segments from
# cudaMalloc, tensors carved out of them, Block objects and maps on the C++
# heap allocated by namespace c10::cuda::CUDACachingAllocator, a StorageImpl
# per tensor) and tests/support/torch_toy/toy_cuda.py, which hands its state
# out as torch.cuda.memory._snapshot() does. The job (job.py) keeps 3
# tensors, frees 2, drops the storage of 2 without returning their blocks,
# and loses the storage object of 1.
#   exit      the scan runs from Python's atexit after a snapshot: exactly
#             2 definite tensor blocks (5,120 + 700,416 bytes) at
#             plant_dropped's line, 1 indirect (40,448) at plant_lost's, the
#             lost StorageImpl definite (24 bytes, host), the 4 live tensors
#             reachable, no other device leak; the segment is reserved,
#             never a leak; the caching-allocator figures are exact (1
#             segment of 2 MiB, 7 blocks / 755,712 bytes allocated, 1 cached
#             free block of 1,341,440); gcspy switched PyTorch's memory
#             history on (job.py prints it) and imported its 13 events;
#   1.13      the same from torch 1.13's snapshot layout (no block
#             addresses, frames in "history", no device_traces);
#   api       gcspy_scan() through ctypes (no GIL held, fork mode) takes a snapshot
#             first: the api scan finds the same tensor leaks;
#   signal    a scan requested by GCSPY_SCAN_SIGNAL is handed to the main
#             thread and preceded by a snapshot (reason scan); it finds the
#             same tensor leaks, and the exit scan stays the last;
#   weak off  GCSPY_TORCH_WEAK= (no allocator code known): its metadata
#             keeps every block reachable, no tensor leak is found: the weak
#             rule is what finds them;
#   mode off  GCSPY_TORCH=0: no snapshot, no tensor results, the segment
#             reachable through the allocator's tables (the plain scan);
#   expandable  TOY_MODE=expandable (expandable_segments:True): the segment
#             is a page mapped with cuMemCreate + cuMemMap (no cudaMalloc at
#             all), the snapshot's segment is_expandable: the mode switches
#             on from VMM memory, and the results are exit's, exactly (no
#             VMM page a leak, no tensor a false one);
#   async     TOY_MODE=async (backend:cudaMallocAsync): every tensor a
#             cudaMallocAsync block from the allocator's code, no snapshot,
#             no history: the dropped tensors are definite device blocks
#             (5,000 + 700,000 bytes) and the lost one indirect (40,000) at
#             their lines, no tensor-block results.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init torch_aware
TOY=$GS_PROGS/libtorch_toy_alloc.so
[ -f "$TOY" ] || gs_skip "no $TOY (no CUDA toolkit: the test double is not built)"
"$GS_PY" -c "import torch" 2>/dev/null || gs_skip "no torch for $GS_PY"
JOB=$GS_ROOT/tests/support/torch_toy/job.py

job() { # name, env..., -- args
  local name=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  gs_run "$name" env TOY_ALLOC="$TOY" PYTHONPATH="$GS_ROOT/tests/support/torch_toy" \
    PYTHONDONTWRITEBYTECODE=1 "${envs[@]}" "$GS_PY" "$JOB" "$@"
  rm -f "$GS_DIR"/env-*.trace* # env(1) execs the job: its own trace is empty
  [ "$GS_RC" -eq 0 ] || fail "$name: job exit $GS_RC: $(tail -3 "$GS_DIR/err")"
  gs_one_trace || return 1
  "$GS_CLI" report --format json "$GS_TRACE" >"$GS_DIR/r.json" 2>"$GS_DIR/rerr" ||
    fail "$name: report: $(cat "$GS_DIR/rerr")"
}

# verify NAME EXPECT: EXPECT is a Python dict literal checked by the code below.
verify() {
  local out
  if out=$(gs_py - "$GS_DIR/r.json" "$GS_DUMP" "$JOB" "$2" <<'PY' 2>&1
import ast, json, re, sys
rep, dump, job, want = sys.argv[1], sys.argv[2], sys.argv[3], ast.literal_eval(sys.argv[4])
p = json.load(open(rep))["processes"][0]
lines = open(dump).read().splitlines()
errs = []
def top(l):
    for f in l.get("stack", []):
        if f.get("python") and f.get("file") == job:
            return (f["function"], f["line"])
    return None
torch_leaks = sorted((l["class"], l["bytes"], l["blocks"], top(l)) for l in p["leaks"]
                     if l.get("allocator") == "torch" and l["class"] != "reachable")
if torch_leaks != sorted(want["torch"]):
    errs.append("tensor leaks %s, expected %s" % (torch_leaks, sorted(want["torch"])))
dev = sorted((l["class"], l["bytes"], l["blocks"], top(l)) for l in p["leaks"]
             if l["memory"] == "device" and l.get("allocator") != "torch"
             and l["class"] in ("definite", "indirect", "possible"))
if dev != sorted(want.get("device", [])):
    errs.append("device leaks that are not tensor blocks %s, expected %s" % (dev, sorted(want.get("device", []))))
host_def = sorted((l["bytes"], top(l)) for l in p["leaks"]
                  if l["memory"] == "host" and l["class"] == "definite")
if host_def != want["host_definite"]:
    errs.append("host definite %s, expected %s" % (host_def, want["host_definite"]))
ca = p["fragmentation"].get("caching_allocator") or {}
if "pool" in want:
    devs = ca.get("devices") or [{}]
    d = devs[0]
    got = {k: d.get(k) for k in want["pool"]}
    if got != want["pool"]:
        errs.append("caching allocator %s, expected %s" % (got, want["pool"]))
snaps = [l for l in lines if l.startswith("pool_snapshot ")]
reasons = [re.search(r"reason=(\w+)", l).group(1) for l in snaps]
if "reasons" in want and reasons != want["reasons"]:
    errs.append("snapshots %s, expected %s" % (reasons, want["reasons"]))
scans = [re.search(r"trigger=(\w+)", l).group(1) for l in lines if l.startswith("scan_begin ")]
for trig in want.get("scans", []):
    if trig not in scans:
        errs.append("no %s scan (scans: %s)" % (trig, scans))
nt = sum(1 for l in lines if l.startswith("scan_block ") and "fn=torch" in l)
if want.get("no_torch_results") and nt:
    errs.append("%d scan results for tensor blocks, expected none" % nt)
if errs:
    print("; ".join(errs))
    sys.exit(1)
print("ok: tensors %s; snapshots %s; scans %s" % (torch_leaks, reasons, scans))
PY
  ); then echo "$1: $out"; else fail "$1: $out"; fi
}

ld=$(grep -n 't = T.Tensor(n)' "$JOB" | head -1 | cut -d: -f1)
ll=$(grep -n 't = T.Tensor(n)' "$JOB" | sed -n 2p | cut -d: -f1)
TENSORS="[('definite', 5120, 1, ('plant_dropped', $ld)), ('definite', 700416, 1, ('plant_dropped', $ld)), ('indirect', 40448, 1, ('plant_lost', $ll))]"
HOST="[(24, ('plant_lost', $ll))]"
POOL="'segments': 1, 'reserved_bytes': 2097152, 'allocated_blocks': 7, 'allocated_bytes': 755712, 'cached_free_blocks': 1, 'cached_free_bytes': 1341440, 'pending_free_blocks': 0"

job exit -- && {
  grep -qx "history True \[('all', 'alloc', 'python', 65536)\]" "$GS_DIR/out" ||
    fail "exit: gcspy did not switch the memory history on with Python stacks of allocations, at most 65536 entries: $(head -1 "$GS_DIR/out")"
  verify exit "{'torch': $TENSORS, 'host_definite': $HOST, 'pool': {$POOL, 'events': 13}, 'reasons': ['exit'], 'scans': ['exit']}"
}
job v113 TOY_FORMAT=1.13 -- && {
  grep -qx "history True \[True\]" "$GS_DIR/out" || fail "1.13: history not switched on with a bool: $(head -1 "$GS_DIR/out")"
  verify 1.13 "{'torch': $TENSORS, 'host_definite': $HOST, 'pool': {$POOL, 'events': 0}, 'reasons': ['exit'], 'scans': ['exit']}"
}
job api GCSPY_SCAN_MODE=fork -- api && {
  grep -qx "scan 0" "$GS_DIR/out" || fail "api: gcspy_scan() returned: $(grep scan "$GS_DIR/out")"
  # the report's leaks come from the last (exit) scan; the api one is in the dump
  n=$(grep '^scan_block id=1 ' "$GS_DUMP" | grep 'fn=torch' | grep -cv 'class=reachable')
  [ "$n" -eq 3 ] || fail "api: the api scan found $n unreachable tensor blocks, expected 3"
  verify api "{'torch': $TENSORS, 'host_definite': $HOST, 'reasons': ['api', 'exit'], 'scans': ['api', 'exit']}"
}
job signal GCSPY_SCAN_SIGNAL=12 -- signal && {
  # two snapshots, each with only the history events newer than the last:
  # the 13 events once, and the report's figure adds them up
  n=$(grep -c '^pool_event ' "$GS_DUMP")
  [ "$n" -eq 13 ] || fail "signal: $n POOL_EVENT records over two snapshots, expected the 13 events once"
  n=$(grep '^scan_block id=1 ' "$GS_DUMP" | grep 'fn=torch' | grep -cv 'class=reachable')
  [ "$n" -eq 3 ] || fail "signal: the signal scan found $n unreachable tensor blocks, expected 3"
  verify signal "{'torch': $TENSORS, 'host_definite': $HOST, 'pool': {'events': 13}, 'reasons': ['scan', 'exit'], 'scans': ['signal', 'exit']}"
}
job weakoff GCSPY_TORCH_WEAK= -- &&
  verify "weak off" "{'torch': [], 'host_definite': $HOST, 'reasons': ['exit'], 'scans': ['exit']}"
job modeoff GCSPY_TORCH=0 -- && {
  grep -qx "history False \[\]" "$GS_DIR/out" || fail "mode off: history touched: $(head -1 "$GS_DIR/out")"
  verify "mode off" "{'torch': [], 'host_definite': $HOST, 'no_torch_results': True}"
  grep -q '^pool_snapshot' "$GS_DUMP" && fail "mode off: a snapshot was taken"
}
job expandable TOY_MODE=expandable -- && {
  grep -qx "history True \[('all', 'alloc', 'python', 65536)\]" "$GS_DIR/out" ||
    fail "expandable: memory history not switched on from VMM memory: $(head -1 "$GS_DIR/out")"
  grep -q '^alloc_ex.* kind=vmm' "$GS_DUMP" && ! grep -q '^alloc_ex.* kind=device' "$GS_DUMP" ||
    fail "expandable: the toy allocator's memory is not VMM alone"
  verify expandable "{'torch': $TENSORS, 'host_definite': $HOST, 'pool': {$POOL, 'events': 13}, 'reasons': ['exit'], 'scans': ['exit']}"
}
job async TOY_MODE=async -- && {
  grep -qx "history False \[\]" "$GS_DIR/out" || fail "async: $(head -1 "$GS_DIR/out")"
  verify async "{'torch': [], 'device': [('definite', 5000, 1, ('plant_dropped', $ld)), ('definite', 700000, 1, ('plant_dropped', $ld)), ('indirect', 40000, 1, ('plant_lost', $ll))], 'host_definite': $HOST, 'reasons': [], 'scans': ['exit'], 'no_torch_results': True}"
}
gs_done
