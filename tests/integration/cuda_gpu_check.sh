#!/usr/bin/env bash
# scripts/gpu-check.sh, the check meant for a real GPU, run here end to end
# against the CUDA test double (--double): --prepare builds the carried
# folder (libgcspy.so needing glibc alone, the programs and the driver-only
# probe), --run measures in stages and packs every output into .tgz files,
# --judge reads only those: the probe's self-test (its search finds a planted
# copy), the probe under the shim, cuda_shim.sh's real-GPU mode replayed from
# the recorded runs (the subscriber refuses the double in one line; same
# events without it). Then --judge again on the kept outputs alone gives the
# same summary; a broken output folder is one line and exit 2; without
# --double on a machine with no GPU it says so and exits 77; a bad argument
# is one line and exit 2. Kept short: the double run uses three programs.
set -u
cd "$(dirname "$0")/../.." || exit 2
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ -f "$CUDA_HOME/include/cuda_runtime_api.h" ] ||
  { echo "no CUDA toolkit headers under $CUDA_HOME: the CUDA double is not built"; exit 77; }
. tests/lib.sh
gs_init cuda_gpu_check

# The double run: exit 0, exactly these results. Outputs over 6 KiB are cut
# into parts (on the GPU machine: over 15 MiB), which the judge joins.
GPU_CHECK_PART_BYTES=6144 GPU_CHECK_OUT=$GS_T/gc bash scripts/gpu-check.sh --double >"$GS_T/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "gpu-check --double: exit $rc: $(tail -15 "$GS_T/log")"
summary() { sed -n '/^gpu-check summary/,$p' "$1" | sed 1d; }
summary "$GS_T/log" >"$GS_T/summary"
cat >"$GS_T/want" <<'W'
  PASS probe: runs on the double; its search finds the one planted copy
  PASS probe under the shim: 2 scans (0 skipped); its device blocks at its gcspy_scan: 1048576:definite 2097152:definite 3145728:definite 5243648:definite
  PASS CUDA programs under the shim (3): outcomes as expected, CUPTI refused in one line, same events without it
  SKIP CUDA_INJECTION64_PATH alone: the double does not load injection libraries
  SKIP PyTorch runs: no python whose torch sees the GPU
gpu-check: 3 passed, 0 failed, 2 skipped
W
cmp -s "$GS_T/want" "$GS_T/summary" ||
  fail "gpu-check --double summary: $(diff "$GS_T/want" "$GS_T/summary")"
# What travels: the carried folder's library needs glibc alone, and the
# outputs are at most 8 files, none in a folder; the programs' outputs were
# cut into parts.
readelf -d "$GS_T/gc/carry/lib/libgcspy.so" | grep NEEDED | grep -Ev '\[(libc\.so\.6|ld-linux-x86-64\.so\.2)\]' &&
  fail "libgcspy.so needs more than glibc"
n=$(find "$GS_T/gc/out" -type f | wc -l)
[ "$n" -ge 3 ] && [ "$n" -le 8 ] && [ -z "$(find "$GS_T/gc/out" -mindepth 1 -type d)" ] ||
  fail "gpu-check --run left $n files (or folders) under its output folder: $(ls -R "$GS_T/gc/out")"
[ -f "$GS_T/gc/out/2-programs.tgz.part1" ] && [ ! -f "$GS_T/gc/out/2-programs.tgz" ] ||
  fail "gpu-check --run did not cut its programs' outputs into parts: $(ls "$GS_T/gc/out")"
# The programs ran on the double's runtime, twice each, recorded there.
grep -q "^runtime_dir $PWD/build/cuda_double\$" "$GS_T/gc/judge/inventory/inventory.txt" ||
  fail "gpu-check --double: not run on the double: $(grep runtime_dir "$GS_T/gc/judge/inventory/inventory.txt")"
n=$(grep -c "^check cuda_" "$GS_T/gc/judge/cuda_shim.log" 2>/dev/null)
[ "${n:-0}" -eq 6 ] || fail "gpu-check --double: $n checked traces in cuda_shim.log, expected 6 (3 programs, with and without CUPTI)"

# The judgment again, from the kept outputs alone (a copy, read-only as the
# device tool's files are): the same summary.
cp -r "$GS_T/gc/out" "$GS_T/kept" && chmod -R a-w "$GS_T/kept"
GPU_CHECK_JUDGE=$GS_T/judge2 GPU_CHECK_CARRY=$GS_T/gc/carry bash scripts/gpu-check.sh --judge "$GS_T/kept" >"$GS_T/log4" 2>&1 ||
  fail "gpu-check --judge: exit $?: $(tail -5 "$GS_T/log4")"
summary "$GS_T/log4" | sed 's|judge2|judge|' | cmp -s - "$GS_T/summary" ||
  fail "gpu-check --judge on the kept outputs: $(summary "$GS_T/log4" | diff "$GS_T/summary" -)"
mkdir -p "$GS_T/empty"
bash scripts/gpu-check.sh --judge "$GS_T/empty" >"$GS_T/log5" 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c . "$GS_T/log5")" -eq 1 ] ||
  fail "gpu-check --judge on an empty folder: exit $rc: $(cat "$GS_T/log5")"

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
