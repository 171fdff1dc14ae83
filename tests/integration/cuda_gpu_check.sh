#!/usr/bin/env bash
# scripts/gpu-check.sh, the check meant for a real GPU, run here against the
# CUDA test double (--double): its build step, its programs built against
# the libraries it is given, cuda_shim.sh's real-GPU mode (same CUDA events
# with and without the CUPTI attempt; on the double the subscriber must
# refuse in one line), its summary and exit status. Without --double on a
# machine with no GPU it must say so and exit 77; a bad argument is one line
# and exit 2. Kept short: the double run uses three programs.
set -u
cd "$(dirname "$0")/../.." || exit 2
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ -f "$CUDA_HOME/include/cuda_runtime_api.h" ] ||
  { echo "no CUDA toolkit headers under $CUDA_HOME: the CUDA double is not built"; exit 77; }
. tests/lib.sh
gs_init cuda_gpu_check

# The double run: exit 0, exactly these four results.
GPU_CHECK_OUT=$GS_T/out bash scripts/gpu-check.sh --double >"$GS_T/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "gpu-check --double: exit $rc: $(tail -15 "$GS_T/log")"
sed -n '/^gpu-check summary/,$p' "$GS_T/log" | sed 1d >"$GS_T/summary"
cat >"$GS_T/want" <<'W'
  PASS build: libgcspy.so, gcspy, libgcspy_cupti.so
  PASS CUDA programs under the shim on the double in real-GPU mode: outcomes as expected, CUPTI refused in one line, same events without it
  SKIP CUDA_INJECTION64_PATH alone: the double does not load injection libraries
  SKIP PyTorch runs: no CUDA build of PyTorch runs on the double
gpu-check: 2 passed, 0 failed, 2 skipped
W
cmp -s "$GS_T/want" "$GS_T/summary" ||
  fail "gpu-check --double summary: $(diff "$GS_T/want" "$GS_T/summary")"
# The programs really ran under the shim, twice each, on the double.
grep -q "cuda programs use $PWD/build/cuda_double/libcudart.so.13" "$GS_T/log" ||
  fail "gpu-check --double: programs not linked against the double: $(grep 'programs use' "$GS_T/log")"
n=$(grep -c "^check cuda_" "$GS_T/out/cuda_shim.log" 2>/dev/null)
[ "${n:-0}" -eq 6 ] || fail "gpu-check --double: $n checked traces in cuda_shim.log, expected 6 (3 programs, with and without CUPTI)"

# No GPU and no --double: nothing to check, said in one line, exit 77.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  GPU_CHECK_OUT=$GS_T/out2 bash scripts/gpu-check.sh >"$GS_T/log2" 2>&1
  rc=$?
  [ $rc -eq 77 ] && [ "$(cat "$GS_T/log2")" = "gpu-check: no NVIDIA GPU here (nvidia-smi missing or lists no GPU): nothing to check" ] ||
    fail "gpu-check without a GPU: exit $rc: $(cat "$GS_T/log2")"
fi
bash scripts/gpu-check.sh --bogus >"$GS_T/log3" 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c . "$GS_T/log3")" -eq 1 ] ||
  fail "gpu-check --bogus: exit $rc: $(cat "$GS_T/log3")"
gs_done
