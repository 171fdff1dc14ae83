#!/usr/bin/env bash
# gcspy on a real NVIDIA GPU: the checks the test suite cannot make on the
# CUDA test double. For any Linux machine with an NVIDIA GPU, the CUDA
# toolkit (headers, libcudart, CUPTI) and gcspy's build dependencies; runs in
# a few minutes (a budget of GPU_CHECK_BUDGET_S, default 540 s, is never
# exceeded: what is left when it runs out is reported as FAIL, out of time).
#
#   bash scripts/gpu-check.sh            # on the GPU machine
#   bash scripts/gpu-check.sh --double   # here: the same check on the test double
#
# --double runs the check's own logic (build, programs built against the
# given libraries, cuda_shim.sh's real-GPU mode with its CUPTI comparison,
# the summary and exit status) against the CUDA test double in
# build/cuda_double instead of a GPU, so the script is itself tested
# (tests/integration/cuda_gpu_check.sh). On the double the CUPTI subscriber
# must refuse in one line (not NVIDIA's driver) rather than attach; the
# double does not load CUDA_INJECTION64_PATH and has no PyTorch CUDA build,
# so steps 3 and 4 are SKIP there.
#
# Steps, each reported PASS, FAIL or SKIP (with the reason) in a closing
# summary; the exit status is 1 if anything failed, 77 if there is no GPU or
# no toolkit (nothing could be checked), else 0:
#   1. build libgcspy.so, the gcspy CLI and libgcspy_cupti.so (make -j);
#   2. the CUDA test programs (tests/programs/cuda_*, those that do not need
#      the double), linked against the toolkit's real libcudart, run alone,
#      then under the shim by tests/integration/cuda_shim.sh in its real-GPU
#      mode (GS_CUDA_REAL=1): the same leak and reachability outcomes as on
#      the double, CUPTI attached, and the same CUDA events with and without
#      CUPTI (one call, one event);
#   3. libgcspy_cupti.so loaded by the driver alone (CUDA_INJECTION64_PATH,
#      no LD_PRELOAD): cuda_three's three device blocks recorded;
#   4. examples/train.py on the GPU with a planted device leak (--cuda-leak:
#      a cudaMalloc every step whose pointer is dropped), under `gcspy run`,
#      twice:
#        - PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor is its own
#          cudaMalloc; the planted blocks (one per step, of the planted size)
#          must be reported definite, device, attributed to leak_cuda's
#          cudaMalloc line in train.py;
#        - caching on: cudaMalloc sees the allocator's segments, which its
#          own tables keep reachable; the planted blocks bypass the allocator
#          and must still be definite. Other definite device leaks are listed
#          as warnings (docs/gpu.md);
#      and a third time, caching on, with --cached-leak (a block taken from
#      the caching allocator and dropped every step): PyTorch-aware mode must
#      report them as definite tensor blocks (allocator torch) at
#      leak_cached's line, and the trace must hold the allocator's
#      snapshots (GCSPY_UNWIND=libunwind: docs/gpu.md says why).
#      Needs a python with a CUDA build of PyTorch (GPU_CHECK_PYTHON, else the
#      first of python3, /opt/torch/.venv/bin/python3, /usr/bin/python3 whose
#      torch sees the GPU); skipped otherwise.
# Everything (build log, traces, reports, outputs) stays in build/gpu-check/
# (GPU_CHECK_OUT to put it elsewhere).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
DOUBLE=0
case "${1:-}" in
  --double) DOUBLE=1 ;;
  '') ;;
  *) echo "gpu-check: unknown argument '$1' (usage: gpu-check.sh [--double])" >&2; exit 2 ;;
esac
OUT=${GPU_CHECK_OUT:-$ROOT/build/gpu-check}
BUDGET=${GPU_CHECK_BUDGET_S:-540}
T0=$(date +%s)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PLANT=5243648 # 5 MiB + 768: a size nothing else in the job allocates
STEPS=20

results=()
npass=0 nfail=0 nskip=0

say() { echo "gpu-check: $*"; }
result() {
  local st=$1; shift
  results+=("$(printf '%-4s %s' "$st" "$*")")
  case $st in PASS) npass=$((npass + 1)) ;; FAIL) nfail=$((nfail + 1)) ;; *) nskip=$((nskip + 1)) ;; esac
  say "$st $*"
}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
# have_time: enough of the budget left to start a step.
have_time() { [ "$(left)" -gt 20 ]; }
# budget NEED: a timeout for the next step, NEED capped by what is left.
budget() {
  local l=$(($(left) - 10))
  [ "$1" -lt "$l" ] && echo "$1" || echo "$l"
}
finish() {
  echo
  echo "gpu-check summary ($(( $(date +%s) - T0 )) s; logs in ${OUT#$ROOT/}$([ $DOUBLE = 1 ] && echo '; on the CUDA test double')):"
  printf '  %s\n' "${results[@]}"
  echo "gpu-check: $npass passed, $nfail failed, $nskip skipped"
  [ "$nfail" -gt 0 ] && exit 1
  exit 0
}

rm -rf "$OUT"
mkdir -p "$OUT/programs"

# ---- 0. what is here ----
if [ $DOUBLE = 0 ] && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
  say "no NVIDIA GPU here (nvidia-smi missing or lists no GPU): nothing to check"
  exit 77
fi
if [ ! -f "$CUDA_HOME/include/cuda_runtime.h" ]; then
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [ -f "$d/include/cuda_runtime.h" ] && { CUDA_HOME=$d; break; }
  done
fi
if [ ! -f "$CUDA_HOME/include/cuda_runtime.h" ]; then
  say "no CUDA toolkit headers (set CUDA_HOME to the toolkit): gcspy's CUDA parts cannot be built"
  exit 77
fi
export CUDA_HOME
if [ $DOUBLE = 1 ]; then
  say "no GPU used: the CUDA test double (build/cuda_double) stands in for libcudart and libcuda"
else
  say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
fi
say "toolkit $CUDA_HOME (CUDA_VERSION $(awk '$1 == "#define" && $2 == "CUDA_VERSION" {print $3; exit}' "$CUDA_HOME/include/cuda.h"))"

PY=
[ $DOUBLE = 1 ] && cands= || cands="${GPU_CHECK_PYTHON:-} python3 /opt/torch/.venv/bin/python3 /usr/bin/python3 python"
for cand in $cands; do
  command -v "$cand" >/dev/null 2>&1 || continue
  if info=$(timeout 120 "$cand" -c 'import sys, torch
assert torch.cuda.is_available(), "no GPU for torch"
print("python %d.%d, torch %s (CUDA %s)" % (sys.version_info[0], sys.version_info[1], torch.__version__, torch.version.cuda))' 2>/dev/null); then
    PY=$(command -v "$cand")
    say "$PY: $info"
    break
  fi
done
[ -n "$PY" ] || [ $DOUBLE = 1 ] || say "no python whose torch sees the GPU (tried ${GPU_CHECK_PYTHON:+$GPU_CHECK_PYTHON }python3 /opt/torch/.venv/bin/python3 /usr/bin/python3 python)"
# A python for reading JSON reports: the torch one, or any.
JPY=${PY:-$(command -v python3 || command -v /usr/bin/python3)}

# ---- 1. build ----
[ $DOUBLE = 1 ] && double_target=cuda-double || double_target=
if timeout "$(budget 300)" make -j"$(nproc)" CUDA_HOME="$CUDA_HOME" build/libgcspy.so build/gcspy \
     build/libgcspy_cupti.so $double_target >"$OUT/build.log" 2>&1; then
  result PASS "build: libgcspy.so, gcspy, libgcspy_cupti.so"
else
  tail -15 "$OUT/build.log" | sed 's/^/    /'
  usable=1
  for f in build/libgcspy.so build/gcspy build/libgcspy_cupti.so; do
    [ -f "$f" ] && ! ldd "$f" 2>/dev/null | grep -q 'not found' || usable=0
  done
  if [ $usable = 1 ]; then
    result FAIL "build failed (build/gpu-check/build.log); going on with the binaries already in build/"
  else
    result FAIL "build failed (build/gpu-check/build.log) and no usable binaries in build/"
    finish
  fi
fi

# ---- 2. the CUDA programs on the real runtime ----
CD_FLAGS="-g -O2 -fno-omit-frame-pointer -Wall -Wextra -isystem $CUDA_HOME/include -Itests/cuda_double"
if [ $DOUBLE = 1 ]; then
  RT_LIBS="-L$ROOT/build/cuda_double -Wl,-rpath,$ROOT/build/cuda_double -lcudart -ldl -lpthread"
  DRV_LIBS="$RT_LIBS -lcuda"
else
  RT_LIBS="-L$CUDA_HOME/lib64 -Wl,-rpath,$CUDA_HOME/lib64 -lcudart -ldl -lpthread"
  DRV_LIBS="$RT_LIBS -L$CUDA_HOME/lib64/stubs -lcuda"
fi
# On the double, a few programs (each runs twice: with and without CUPTI):
# the check's logic is what is tested there, tests/integration/cuda_shim.sh
# runs them all.
[ $DOUBLE = 1 ] && CASES="cuda_three cuda_driver cuda_entry_points" || CASES=
want() { [ -z "$CASES" ] || grep -qw "$1" <<<"$CASES"; }
progs_ok=1
for p in cuda_three cuda_kept_pinned cuda_kept_thread cuda_pinned_leak cuda_pinned_dlopen \
         cuda_entry_points cuda_sync; do
  want $p || continue
  gcc -std=gnu11 $CD_FLAGS -o "$OUT/programs/$p" "tests/programs/$p.c" $RT_LIBS >>"$OUT/programs.log" 2>&1 || progs_ok=0
done
for p in cuda_driver cuda_async_vmm cuda_oom cuda_stress cuda_driver_api cuda_ctx_teardown; do
  want $p || continue
  gcc -std=gnu11 $CD_FLAGS -o "$OUT/programs/$p" "tests/programs/$p.c" $DRV_LIBS >>"$OUT/programs.log" 2>&1 || progs_ok=0
done
! want cuda_kept_heap || g++ -std=gnu++17 $CD_FLAGS -o "$OUT/programs/cuda_kept_heap" tests/programs/cuda_kept_heap.cpp $RT_LIBS \
  >>"$OUT/programs.log" 2>&1 || progs_ok=0
# Not on the double's library path: the real runtime and driver only.
LD_LIBRARY_PATH=$(tr ':' '\n' <<<"${LD_LIBRARY_PATH:-}" | grep -v cuda_double | paste -sd: -)
export LD_LIBRARY_PATH
if [ $progs_ok = 0 ]; then
  result FAIL "CUDA programs did not build against $CUDA_HOME (build/gpu-check/programs.log)"
elif ! alone=$(timeout 60 "$OUT/programs/cuda_three" 2>&1) || [ "$(tail -1 <<<"$alone")" != ok ]; then
  result SKIP "CUDA programs: cuda_three fails without gcspy on this runtime and driver: $(tail -1 <<<"$alone")"
else
  lib=$(ldd "$OUT/programs/cuda_three" | awk '$1 ~ /libcudart/ {print $3}')
  say "cuda programs use $lib"
  if ! have_time; then
    result FAIL "CUDA programs under the shim: out of time"
  elif GS_CUDA_REAL=1 GS_CUDA_PROGS="$OUT/programs" GS_CUDA_CUPTI=$([ $DOUBLE = 1 ] && echo refused || echo attached) \
       GS_CUDA_CASES=$CASES timeout "$(budget 240)" \
       bash tests/integration/cuda_shim.sh >"$OUT/cuda_shim.log" 2>&1; then
    if [ $DOUBLE = 1 ]; then
      result PASS "CUDA programs under the shim on the double in real-GPU mode: outcomes as expected, CUPTI refused in one line, same events without it"
    else
      result PASS "CUDA programs under the shim on the real runtime: outcomes as on the double, CUPTI attached, same events without it"
    fi
  else
    grep -E '^FAIL' "$OUT/cuda_shim.log" | head -12 | sed 's/^/    /'
    result FAIL "CUDA programs under the shim on the real runtime (build/gpu-check/cuda_shim.log)"
  fi
fi

# ---- 3. the subscriber loaded by the driver alone ----
if [ $DOUBLE = 1 ]; then
  result SKIP "CUDA_INJECTION64_PATH alone: the double does not load injection libraries"
elif ! have_time; then
  result FAIL "CUDA_INJECTION64_PATH alone: out of time"
elif [ -x "$OUT/programs/cuda_three" ] && [ -f build/libgcspy_cupti.so ] && [ -n "${lib:-}" ]; then
  mkdir -p "$OUT/inject"
  timeout "$(budget 60)" env CUDA_INJECTION64_PATH="$ROOT/build/libgcspy_cupti.so" \
    GCSPY_OUTPUT="$OUT/inject/%e-%p.trace" "$OUT/programs/cuda_three" \
    >"$OUT/inject/out" 2>"$OUT/inject/err"
  rc=$?
  tr_=$(ls "$OUT"/inject/*.trace 2>/dev/null | head -1)
  if [ $rc -ne 0 ] || [ -z "$tr_" ]; then
    result FAIL "CUDA_INJECTION64_PATH alone: exit $rc, trace '${tr_:-none}': $(tail -2 "$OUT/inject/err")"
  else
    build/gcspy dump "$tr_" >"$tr_.txt" 2>&1
    sizes=$(grep '^alloc_ex' "$tr_.txt" | grep 'kind=device' | sed -E 's/.* size=([0-9]+).*/\1/' | sort -n | paste -sd' ' -)
    cls=$(grep '^scan_block' "$tr_.txt" | grep 'size=2097152 ' | tail -1 | sed -E 's/.*class=([a-z]+).*/\1/')
    if [ "$sizes" = "1048576 2097152 3145728" ]; then
      result PASS "CUDA_INJECTION64_PATH alone: the 3 device blocks recorded (the dropped one: ${cls:-not in the exit scan})"
    else
      result FAIL "CUDA_INJECTION64_PATH alone: device blocks '$sizes', expected '1048576 2097152 3145728' ($(grep -i cupti "$OUT/inject/err" | head -1))"
    fi
  fi
else
  result SKIP "CUDA_INJECTION64_PATH alone: needs the CUDA programs running and libgcspy_cupti.so"
fi

# ---- 4. PyTorch ----
# The line of leak_cuda's cudaMalloc call in train.py (the planted line), and
# of leak_cached's caching_allocator_alloc call (the planted tensor block).
PLANT_LINE=$(awk '/^def leak_cuda/ {f = 1; next} f && /^def / {exit} f && /[mM]alloc\(/ {print NR; exit}' examples/train.py)
CACHED_LINE=$(awk '/^def leak_cached/ {f = 1; next} f && /^def / {exit} f && /caching_allocator_alloc\(/ {print NR; exit}' examples/train.py)

cat >"$OUT/check_torch.py" <<'PY'
"""check_torch.py REPORT.json STDERR PLANT STEPS PLANT_LINE MODE: prints
PASS/FAIL/SKIP/WARN lines about the planted leak; exit 1 on a failure."""
import json
import sys

rep, err, plant, steps, line, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
line = int(line) if line else None
p = json.load(open(rep))['processes'][0]
errtext = open(err, errors='replace').read()
bad = 0

def out(st, msg):
    global bad
    print('%s %s: %s' % (st, mode, msg))
    if st == 'FAIL':
        bad = 1

if 'gcspy: cupti: ' not in errtext:
    why = [l for l in errtext.splitlines() if 'CUPTI' in l or 'cupti' in l]
    out('WARN', 'CUPTI not attached: %s' % (why[0] if why else 'no line about it on stderr'))
if not p.get('last_scan'):
    out('FAIL', 'no leak scan in the trace (%s)' % '; '.join(l for l in errtext.splitlines() if 'scan' in l)[:300])
dev = [l for l in p['leaks'] if l['memory'] == 'device']
fn = 'leak_cuda'
if mode == 'aware':
    # PyTorch-aware mode: the planted blocks come from the caching
    # allocator, which rounds sizes up to 512 bytes
    plant = (plant + 511) // 512 * 512
    fn = 'leak_cached'
    dev = [l for l in dev if l.get('allocator') == 'torch']
    ca = (p.get('fragmentation') or {}).get('caching_allocator') or {}
    if ca.get('snapshots'):
        out('PASS', '%d caching-allocator snapshots; %s' % (ca['snapshots'], [
            (d['device'], d['reason'], d['segments'], d['reserved_bytes'], d['allocated_blocks'],
             d['cached_free_bytes'], d['events']) for d in ca.get('devices', [])]))
    else:
        out('FAIL', 'no caching-allocator snapshot in the trace')
planted = [l for l in dev if l['largest_block'] == plant and l['bytes'] == l['blocks'] * plant]
by_class = {}
for l in planted:
    by_class[l['class']] = by_class.get(l['class'], 0) + l['blocks']
if by_class.get('definite', 0) == steps and len(by_class) == 1:
    out('PASS', '%d planted blocks of %d bytes, definite, device' % (steps, plant))
else:
    out('FAIL', 'planted blocks by class %s, expected {definite: %d}; device leak groups: %s' % (
        by_class, steps, [(l['class'], l['bytes'], l['blocks'], l['largest_block']) for l in dev[:8]]))

# Attribution: a Python frame of leak_cuda, at the planted line.
native_only = 'native stacks only' in errtext
for l in planted:
    if l['class'] != 'definite':
        continue
    pyf = [f for f in (l['stack'] or []) if f.get('python')]
    hit = [f for f in pyf if f.get('function') == fn and (f.get('file') or '').endswith('train.py')
           and (line is None or f.get('line') == line)]
    if hit:
        out('PASS', 'attributed to train.py:%s in %s' % (hit[0].get('line'), fn))
    elif not pyf and native_only:
        why = [x for x in errtext.splitlines() if 'native stacks only' in x][0]
        out('SKIP', 'attribution to the Python line: %s' % why.replace('gcspy: ', ''))
    else:
        out('FAIL', 'planted blocks not attributed to train.py:%s in %s; stack: %s' % (
            line, fn, [(f.get('function'), f.get('file'), f.get('line')) for f in (l['stack'] or [])][:12]))
    break

others = [l for l in dev if l not in planted and l['class'] in ('definite', 'indirect', 'possible')]
if others:
    out('WARN', '%d other unreachable device groups, %d bytes: %s' % (
        len(others), sum(l['bytes'] for l in others),
        [(l['class'], l['bytes'], l['blocks'], (l['stack'] or [{}])[0].get('function')) for l in others[:5]]))
s = p['summary']
out('INFO', 'device bytes: definite %d, reachable %d, not-freed %d; %d allocations, %d frees' % (
    s['definite']['device']['bytes'], s['reachable']['device']['bytes'], s['not-freed']['device']['bytes'],
    p['events']['allocs'], p['events']['frees']))
sys.exit(bad)
PY

run_torch() {
  local name=$1 leak=$2 line=$3; shift 3
  local d="$OUT/$name"
  mkdir -p "$d"
  if ! have_time; then
    result FAIL "torch, $name: out of time"
    return
  fi
  (cd "$d" && timeout "$(budget 200)" env "$@" "$ROOT/build/gcspy" run -o "$d/%e-%p.trace" -- \
     "$PY" "$ROOT/examples/train.py" --device cuda --steps $STEPS --workers 0 --log-every 10 \
     $leak --leak-bytes $PLANT >"$d/out" 2>"$d/err")
  local rc=$? traces
  traces=$(ls "$d"/*.trace 2>/dev/null)
  if [ $rc -ne 0 ] || [ "$(grep -c . <<<"$traces")" -ne 1 ]; then
    tail -5 "$d/err" | sed 's/^/    /'
    result FAIL "torch, $name: exit $rc, $(grep -c . <<<"$traces") traces (build/gpu-check/$name/err)"
    return
  fi
  build/gcspy report --format json "$traces" >"$d/report.json" 2>"$d/report.err" &&
    build/gcspy report "$traces" >"$d/report.txt" 2>>"$d/report.err" || {
    result FAIL "torch, $name: gcspy report failed: $(head -2 "$d/report.err")"
    return
  }
  "$JPY" "$OUT/check_torch.py" "$d/report.json" "$d/err" $PLANT $STEPS "$line" "$name" \
    >"$d/check" 2>&1
  local crc=$?
  sed 's/^/    /' "$d/check"
  if [ $crc -eq 0 ]; then
    result PASS "torch, $name: the planted device leak found$(grep -q '^SKIP' "$d/check" && echo ' (attribution skipped, see above)')"
  else
    result FAIL "torch, $name: $(grep -m1 '^FAIL' "$d/check" | cut -c1-200)"
  fi
}

if [ $DOUBLE = 1 ]; then
  result SKIP "PyTorch runs: no CUDA build of PyTorch runs on the double"
elif [ -z "$PY" ]; then
  result SKIP "PyTorch runs: no python with a CUDA build of torch (set GPU_CHECK_PYTHON)"
elif [ ! -x build/gcspy ]; then
  result FAIL "PyTorch runs: build/gcspy missing"
else
  run_torch nocache --cuda-leak "$PLANT_LINE" PYTORCH_NO_CUDA_MEMORY_CACHING=1
  run_torch caching --cuda-leak "$PLANT_LINE" -u PYTORCH_NO_CUDA_MEMORY_CACHING
  # PyTorch-aware mode (on by default): a block taken from the caching
  # allocator and dropped every step must be a definite tensor-level leak at
  # leak_cached's line. Complete native stacks (libunwind) let gcspy see
  # that the allocator's bookkeeping was allocated by the allocator's code.
  run_torch aware --cached-leak "$CACHED_LINE" -u PYTORCH_NO_CUDA_MEMORY_CACHING GCSPY_UNWIND=libunwind
fi
finish
