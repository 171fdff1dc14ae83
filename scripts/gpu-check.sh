#!/usr/bin/env bash
# gcspy on a real NVIDIA GPU, in three steps that run in different places:
#
#   bash scripts/gpu-check.sh --prepare [DIR]   here: build what the GPU
#        machine runs into DIR (default build/gpu-carry, < 64 MiB): the shim
#        and the subscriber (libgcspy.so needs glibc alone: checked), the
#        CUDA test programs linked against the toolkit's headers and
#        libcudart's name only (no RPATH: the run finds libcudart and CUPTI
#        beside the runtime the GPU machine's torch loads, pip's
#        nvidia/cu13/lib, or in its toolkit), and the driver-only probe
#        (tests/gpu_probe/probe.c);
#   bash scripts/gpu-check.sh --run [DIR]       there: measure, in stages with
#        their own time limits, within GPU_CHECK_BUDGET_S (default 450 s);
#        every output kept: one .tgz per stage group and summary.txt under
#        $OUT (the device tool's folder) or GPU_CHECK_OUT (default
#        build/gpu-check/out). Needs bash, coreutils, tar and gzip only;
#   bash scripts/gpu-check.sh --judge DIR       here (or anywhere with a
#        build): the judgment, from the kept outputs alone (the .tgz files
#        fetched back, or the folder --run wrote): expected classes, counts
#        and bytes; PASS/FAIL/SKIP lines, a summary, exit 1 on a failure.
#        Re-runnable: nothing is measured again.
#   bash scripts/gpu-check.sh --double          here, in the suite
#        (tests/integration/cuda_gpu_check.sh): the three steps end to end on
#        the CUDA test double instead of a GPU (no PyTorch CUDA build, no
#        injection there: those stages are SKIP).
#   bash scripts/gpu-check.sh                   on a GPU machine that can also
#        build gcspy: the three in a row; without a GPU: one line, exit 77.
#
# Stages of --run (docs/gpu.md, "The GPU check", says what each fact would
# change):
#   inventory  driver, GPU, glibc, Python, torch, the runtime torch loads and
#              the CUPTIs on disk, the carried files' needs;
#   probe      tests/gpu_probe alone, with the runtime, with CUPTI, and under
#              the shim with and without CUPTI: where device addresses are
#              copied in host memory, which threads block which signals,
#              whether cuGetProcAddress returns exported symbols;
#   programs   the CUDA test programs under the shim, each with CUPTI and
#              with GCSPY_CUPTI=0 (runtime, driver, VMM, async pools, pinned);
#   inject     cuda_three with CUDA_INJECTION64_PATH alone;
#   torch      examples/train.py's planted device leaks under the shim:
#              caching off (--cuda-leak), the caching allocator's default,
#              expandable_segments and backend:cudaMallocAsync
#              (--cached-leak), and tests/gpu_probe/torch_probe.py.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
usage() {
  echo "gpu-check: unknown argument '$1' (usage: gpu-check.sh [--prepare [DIR] | --run [DIR] | --judge DIR | --double])" >&2
  exit 2
}
MODE=all
case "${1:-}" in
  --prepare) MODE=prepare ;;
  --run) MODE=run ;;
  --judge) MODE=judge ;;
  --double) MODE=double ;;
  '') ;;
  *) usage "$1" ;;
esac
ARG=${2:-}
[ $MODE != judge ] || [ -n "$ARG" ] || usage "--judge without a folder"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PLANT=5243648 # 5 MiB + 768: a size nothing else in the job allocates
STEPS=20
# The programs, by what they link (tests/integration/cuda_shim.sh checks them).
RT_PROGS="cuda_three cuda_kept_pinned cuda_kept_thread cuda_pinned_leak cuda_pinned_dlopen cuda_entry_points cuda_sync"
DRV_PROGS="cuda_driver cuda_async_vmm cuda_oom cuda_stress cuda_driver_api cuda_ctx_teardown"
CXX_PROGS="cuda_kept_heap"
# On the double, three programs: the check's logic is what is tested there
# (cuda_shim.sh runs them all in the suite).
DOUBLE_PROGS="cuda_three cuda_driver cuda_entry_points"

say() { echo "gpu-check: $*"; }

# ---- --prepare ----

# The carried library must load on the GPU machine's glibc (Ubuntu 24.04's
# 2.39 there; anything up to 2.35 leaves room) and need nothing else.
check_glibc_only() {
  local f=$1 bad ver
  bad=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
    grep -Ev '^(libc\.so\.6|ld-linux-x86-64\.so\.2|libdl\.so\.2|libpthread\.so\.0|libm\.so\.6|librt\.so\.1)$')
  [ -z "$bad" ] || { say "$f needs more than glibc: $bad"; return 1; }
  ver=$(objdump -T "$f" | grep -o 'GLIBC_2\.[0-9]*' | sort -Vu | tail -1)
  [ "$(printf '%s\nGLIBC_2.35\n' "$ver" | sort -V | tail -1)" = GLIBC_2.35 ] ||
    { say "$f needs $ver, newer than GLIBC_2.35"; return 1; }
  echo "$ver"
}

prepare() { # DIR DOUBLE
  local dir=$1 double=$2 libs rt drv p
  [ -f "$CUDA_HOME/include/cuda_runtime_api.h" ] ||
    { say "no CUDA toolkit headers under $CUDA_HOME (set CUDA_HOME): nothing can be prepared"; return 77; }
  rm -rf "$dir"
  mkdir -p "$dir/lib" "$dir/programs" "$dir/bin"
  local targets="build/libgcspy.so build/libgcspy_cupti.so"
  [ "$double" = 1 ] && targets="$targets cuda-double"
  make -j2 CUDA_HOME="$CUDA_HOME" $targets >"$dir/build.log" 2>&1 ||
    { say "build failed ($dir/build.log): $(tail -3 "$dir/build.log")"; return 1; }
  cp build/libgcspy.so build/libgcspy_cupti.so "$dir/lib/"
  local glibc
  glibc=$(check_glibc_only "$dir/lib/libgcspy.so") || return 1
  check_glibc_only "$dir/lib/libgcspy_cupti.so" >/dev/null || return 1
  local flags="-g -O2 -fno-omit-frame-pointer -Wall -Wextra -isystem $CUDA_HOME/include -Itests/cuda_double"
  if [ "$double" = 1 ]; then
    libs="-L$ROOT/build/cuda_double"
    drv="-lcuda"
  else
    libs="-L$CUDA_HOME/lib64"
    drv="-L$CUDA_HOME/lib64/stubs -lcuda"
  fi
  # No RPATH: the run names the runtime's folder (LD_LIBRARY_PATH).
  for p in $RT_PROGS $DRV_PROGS $CXX_PROGS; do
    [ "$double" = 0 ] || grep -qw "$p" <<<"$DOUBLE_PROGS" || continue
    case " $CXX_PROGS " in
      *" $p "*) g++ -std=gnu++17 $flags -o "$dir/programs/$p" "tests/programs/$p.cpp" $libs -lcudart -ldl -lpthread ;;
      *) gcc -std=gnu11 $flags -o "$dir/programs/$p" "tests/programs/$p.c" $libs -lcudart \
           $(grep -qw "$p" <<<"$DRV_PROGS" && echo "$drv") -ldl -lpthread ;;
    esac >>"$dir/build.log" 2>&1 || { say "$p does not build ($dir/build.log)"; return 1; }
  done
  gcc -std=gnu11 -O1 -g -Wall -Wextra -Werror -o "$dir/bin/gpu_probe" tests/gpu_probe/probe.c -ldl -lpthread \
    >>"$dir/build.log" 2>&1 || { say "the probe does not build ($dir/build.log)"; return 1; }
  check_glibc_only "$dir/bin/gpu_probe" >/dev/null || return 1
  {
    echo "commit $(git rev-parse HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (with changes)')"
    echo "built $(date -u +%FT%TZ) on $(uname -m), $(ldd --version | head -1)"
    echo "toolkit $CUDA_HOME CUDA_VERSION $(awk '$2 == "CUDA_VERSION" {print $3; exit}' "$CUDA_HOME/include/cuda.h")"
    echo "double $double"
    echo "libgcspy.so needs glibc only, up to $glibc"
  } >"$dir/MANIFEST"
  rm -f "$dir/build.log"
  say "prepared $dir ($(du -sh "$dir" | cut -f1)): $(ls "$dir/programs" | wc -l) programs, the probe, libgcspy.so (glibc only, up to $glibc)"
}

# ---- --run ----

T0=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET_S:-450}
left() { echo $((BUDGET - ($(date +%s) - T0))); }
# stage NAME SECONDS CMD...: runs CMD with a limit of SECONDS (or what is
# left of the budget), keeping stdout, stderr and the exit status in
# $W/NAME/; never fails the run.
stage() {
  local name=$1 limit=$2 l; shift 2
  l=$(($(left) - 15))
  [ "$limit" -lt "$l" ] || limit=$l
  mkdir -p "$W/$name"
  if [ "$limit" -lt 5 ]; then
    echo "$name: not run, out of time" | tee -a "$W/summary.txt"
    echo skipped >"$W/$name/rc"
    return 0
  fi
  local t=$(date +%s)
  (cd "$W/$name" && timeout -k 5 "$limit" "$@" >out 2>err)
  local rc=$?
  echo "$rc" >"$W/$name/rc"
  echo "$name: rc=$rc $(($(date +%s) - t))s (limit ${limit}s)" | tee -a "$W/summary.txt"
}
# pack FILE STAGE...: the stages' folders into one .tgz under $OUT (the
# device tool returns at most 8 files, none over 16 MiB, no deeper than two
# folders). A larger one is cut into FILE.part0, .part1, ... of 15 MiB
# (GPU_CHECK_PART_BYTES), which --judge puts together again (each part is
# a file of the 8).
pack() {
  local f=$1; shift
  rm -f "$OUT/$f" "$OUT/$f".part*
  (cd "$W" && tar -czf "$OUT/$f" $(for a in "$@"; do ls -d $a 2>/dev/null; done))
  local part=${GPU_CHECK_PART_BYTES:-15728640}
  if [ "$(stat -c %s "$OUT/$f")" -gt "$part" ]; then
    split -b "$part" -d -a 1 "$OUT/$f" "$OUT/$f.part" && rm -f "$OUT/$f"
    echo "$f: $(ls "$OUT/$f".part* | wc -l) parts of $part bytes" | tee -a "$W/summary.txt"
  fi
  cp "$W/summary.txt" "$OUT/summary.txt"
}

# The folder of the libcudart a python's torch loads (pip's nvidia/cu13/lib
# for torch 2.11+cu130), or nothing.
torch_runtime_dir() {
  timeout 60 "$1" - <<'PY' 2>/dev/null
import os, torch
torch.cuda.init()
for l in open('/proc/self/maps'):
    p = l.split()[-1]
    if '/libcudart.so' in p:
        print(os.path.dirname(os.path.realpath(p)))
        break
PY
}

run_checks() { # CARRY DOUBLE
  local carry=$1 double=$2 p
  carry=$(cd "$carry" && pwd) || { say "no folder $1: run --prepare first"; return 2; }
  [ -f "$carry/MANIFEST" ] || { say "$carry has no MANIFEST: run --prepare first"; return 2; }
  OUT=${OUT:-${GPU_CHECK_OUT:-$ROOT/build/gpu-check/out}}
  mkdir -p "$OUT"
  W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
  : >"$W/summary.txt"
  local lib=$carry/lib/libgcspy.so cupti_lib=$carry/lib/libgcspy_cupti.so
  local py= rtdir= cands
  [ "$double" = 1 ] && cands= || cands="${GPU_CHECK_PYTHON:-} python3 /opt/torch/.venv/bin/python3"
  for p in $cands; do
    command -v "$p" >/dev/null 2>&1 || continue
    rtdir=$(torch_runtime_dir "$p") && [ -n "$rtdir" ] && { py=$(command -v "$p"); break; }
  done
  if [ "$double" = 1 ]; then
    rtdir=$ROOT/build/cuda_double
  elif [ -z "$rtdir" ]; then
    rtdir=$CUDA_HOME/lib64 # no torch that sees the GPU: the toolkit's runtime
  fi
  # ---- inventory ----
  mkdir -p "$W/inventory"
  {
    echo "root $ROOT"
    echo "carry $carry"
    sed 's/^/manifest /' "$carry/MANIFEST"
    echo "date $(date -u +%FT%TZ)"
    echo "uname $(uname -srm)"
    echo "glibc $(ldd --version 2>&1 | head -1)"
    echo "gpu $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 | grep . || echo 'none (no nvidia-smi answer)')"
    echo "driver $(head -1 /proc/driver/nvidia/version 2>&1)"
    echo "libcuda $(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" {print $NF; exit}')"
    echo "libunwind $(ldconfig -p 2>/dev/null | awk '$1 == "libunwind.so.8" {print $NF; exit}')"
    echo "runtime_dir $rtdir"
    echo "runtime $(ls "$rtdir"/libcudart.so.* 2>/dev/null | tr '\n' ' ')"
    echo "cupti_beside_runtime $(ls "$rtdir"/libcupti.so.* 2>/dev/null | tr '\n' ' ')"
    echo "cupti_toolkit $(ls "$CUDA_HOME"/lib64/libcupti.so.* "$CUDA_HOME"/extras/CUPTI/lib64/libcupti.so.* 2>/dev/null | tr '\n' ' ')"
    echo "nvcc $(nvcc --version 2>/dev/null | tail -1)"
    echo "python ${py:-none}"
    [ -n "$py" ] && echo "torch $(timeout 60 "$py" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda)' 2>&1 | tail -1)"
    echo "ldd_libgcspy $(ldd "$lib" 2>&1 | tr -s ' \n\t' ' ')"
    echo "ldd_cuda_three $(LD_LIBRARY_PATH=$rtdir ldd "$carry/programs/cuda_three" 2>&1 | grep -E 'cuda|not found' | tr -s ' \n\t' ' ')"
  } >"$W/inventory/inventory.txt" 2>&1
  grep -E '^(gpu|runtime_dir|python|torch|glibc) ' "$W/inventory/inventory.txt" | sed 's/^/inventory: /' | tee -a "$W/summary.txt"
  pack 1-host.tgz inventory
  # ---- probe ----
  local probe=$carry/bin/gpu_probe cupti
  cupti=$(ls "$rtdir"/libcupti.so.* 2>/dev/null | head -1)
  [ -n "$cupti" ] || cupti=$(ls "$CUDA_HOME"/lib64/libcupti.so.* 2>/dev/null | head -1)
  local selftest=
  [ "$double" = 1 ] && selftest=PROBE_SELFTEST=1
  stage probe-alone 40 env LD_LIBRARY_PATH="$rtdir" $selftest "$probe"
  [ "$double" = 1 ] || stage probe-cudart 40 env LD_LIBRARY_PATH="$rtdir" PROBE_CUDART="$(ls "$rtdir"/libcudart.so.* | head -1)" "$probe"
  [ "$double" = 1 ] || [ -z "$cupti" ] ||
    stage probe-cupti 40 env LD_LIBRARY_PATH="$rtdir" PROBE_CUDART="$(ls "$rtdir"/libcudart.so.* | head -1)" \
      PROBE_CUPTI="$cupti" "$probe"
  for c in 1 $([ "$double" = 1 ] || echo 0); do
    stage "probe-shim-cupti$c" 60 env LD_LIBRARY_PATH="$rtdir" LD_PRELOAD="$lib" GCSPY_QUIET=0 GCSPY_CUPTI=$c \
      GCSPY_FLUSH_MS=10 GCSPY_OUTPUT=%e-%p.trace PROBE_VIA=default "$probe"
  done
  pack 1-host.tgz inventory 'probe-*'
  # ---- programs ----
  local progs=
  for p in $RT_PROGS $DRV_PROGS $CXX_PROGS; do
    [ -x "$carry/programs/$p" ] && progs="$progs $p"
  done
  for p in $progs; do
    stage "programs/$p" 40 env LD_LIBRARY_PATH="$rtdir" LD_PRELOAD="$lib" GCSPY_QUIET=0 GCSPY_FLUSH_MS=10 \
      GCSPY_OUTPUT=%e-%p.trace "$carry/programs/$p"
    stage "programs/$p-nocupti" 40 env LD_LIBRARY_PATH="$rtdir" LD_PRELOAD="$lib" GCSPY_QUIET=0 GCSPY_FLUSH_MS=10 \
      GCSPY_CUPTI=0 GCSPY_OUTPUT=%e-%p.trace "$carry/programs/$p"
  done
  pack 2-programs.tgz programs
  # ---- the subscriber loaded by the driver alone ----
  if [ "$double" = 1 ]; then
    echo "inject: not run, the double loads no injection library" | tee -a "$W/summary.txt"
  else
    stage inject 40 env LD_LIBRARY_PATH="$rtdir" CUDA_INJECTION64_PATH="$cupti_lib" GCSPY_QUIET=0 \
      GCSPY_OUTPUT=%e-%p.trace "$carry/programs/cuda_three"
  fi
  pack 1-host.tgz inventory 'probe-*' inject
  # ---- PyTorch ----
  if [ -z "$py" ]; then
    echo "torch: not run, no python whose torch sees the GPU" | tee -a "$W/summary.txt"
  else
    local train="$py $ROOT/examples/train.py --device cuda --steps $STEPS --workers 0 --log-every 10 --leak-bytes $PLANT"
    # Reachable blocks are not written (GCSPY_SCAN_REACHABLE=0): the judgment
    # needs none, and each torch trace must fit the 16 MiB a file comes back in.
    local shim="env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_NO_CUDA_MEMORY_CACHING LD_PRELOAD=$lib GCSPY_QUIET=0 GCSPY_OUTPUT=%e-%p.trace GCSPY_SCAN_REACHABLE=0"
    local n=3 m conf
    for m in aware expandable async nocache; do
      case $m in
        aware) conf= ;;
        expandable) conf=PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True ;;
        async) conf=PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync ;;
        nocache) conf=PYTORCH_NO_CUDA_MEMORY_CACHING=1 ;;
      esac
      stage torch/$m 90 $shim $conf $train $([ $m = nocache ] && echo --cuda-leak || echo --cached-leak)
      echo "torch/$m: traces $(ls -l "$W/torch/$m"/*.trace 2>/dev/null | awk '{printf "%s ", $5}')bytes" >>"$W/summary.txt"
      pack $n-$m.tgz torch/$m
      n=$((n + 1))
    done
    stage torch-probe 60 "$py" "$ROOT/tests/gpu_probe/torch_probe.py"
    stage torch-probe-expandable 60 "$py" "$ROOT/tests/gpu_probe/torch_probe.py" --expandable
    pack 1-host.tgz inventory 'probe-*' inject 'torch-probe*'
  fi
  echo "done in $(($(date +%s) - T0))s; outputs in $OUT" | tee -a "$W/summary.txt"
  cp "$W/summary.txt" "$OUT/summary.txt"
  rm -rf "$W"
}

# ---- --judge ----

results=()
npass=0 nfail=0 nskip=0
result() {
  local st=$1; shift
  results+=("$(printf '%-4s %s' "$st" "$*")")
  case $st in PASS) npass=$((npass + 1)) ;; FAIL) nfail=$((nfail + 1)) ;; *) nskip=$((nskip + 1)) ;; esac
  say "$st $*"
}

judge() { # DIR CARRY
  local from=$1 carry=$2 J
  [ -d "$from" ] || { say "no folder $from to judge"; return 2; }
  [ -x build/gcspy ] || { say "no build/gcspy here: run make first"; return 2; }
  J=${GPU_CHECK_JUDGE:-$ROOT/build/gpu-check/judge}
  rm -rf "$J"
  mkdir -p "$J"
  local t
  for t in "$from"/*.tgz "$from"/*.tgz.part0; do
    [ -f "$t" ] || continue
    case $t in
      *.part0) cat "${t%0}"? | tar -xzf - -C "$J" 2>/dev/null ;;
      *) tar -xzf "$t" -C "$J" 2>/dev/null ;;
    esac || say "$(basename "${t%.part0}") does not unpack (a part missing or cut short?): what it held is judged as not run"
  done
  ls "$J"/inventory/inventory.txt >/dev/null 2>&1 ||
    { say "$from holds no inventory (not an output of gpu-check.sh --run)"; return 2; }
  local inv=$J/inventory/inventory.txt double remote_root remote_carry
  double=$(awk '$1 == "manifest" && $2 == "double" {print $3}' "$inv")
  remote_root=$(awk '$1 == "root" {print $2}' "$inv")
  remote_carry=$(awk '$1 == "carry" {print $2}' "$inv")
  say "judging $(grep '^gpu ' "$inv" | cut -c5-) ($(grep '^manifest commit' "$inv" | cut -d' ' -f3-))"
  diff -q <(sed 's/^/manifest /' "$carry/MANIFEST" 2>/dev/null) <(grep '^manifest ' "$inv") >/dev/null ||
    say "warning: $carry is not the build that ran there (the MANIFESTs differ): stacks may not resolve"
  # The traces name the modules where they ran: the carried files, found
  # here through a sysroot of links.
  local sys=$J/sysroot
  mkdir -p "$sys$remote_carry"
  rmdir "$sys$remote_carry"
  ln -s "$(cd "$carry" && pwd)" "$sys$remote_carry"

  # -- probe: the facts, and on the double its self-test --
  local pa=$J/probe-alone/out
  if [ ! -s "$pa" ]; then
    result FAIL "probe: no output ($(cat "$J/probe-alone/rc" 2>/dev/null))"
  else
    sed -n 's/^probe: //p' "$J"/probe-*/out | grep -E '^(driver|cuInit|copies (live|freed) total|procaddr|cupti )' |
      sort | uniq -c | sed 's/^/    /'
    grep -h 'rt_blocked=[1-9]' "$J"/probe-*/out | sed 's/^probe: /    blocks real-time signals: /' | sort -u
    if [ "$double" = 1 ]; then
      if grep -qx 'probe: copies live target dev1M: 1' "$pa" && grep -qx 'probe: done' "$pa"; then
        result PASS "probe: runs on the double; its search finds the one planted copy"
      else
        result FAIL "probe: the planted copy not found: $(grep 'dev1M' "$pa" | head -2)"
      fi
    elif grep -qx 'probe: done' "$pa"; then
      result PASS "probe: ran ($(grep -c '^probe: copy live' "$pa") copies of live device addresses shown; facts above)"
    else
      result FAIL "probe: did not finish: $(tail -2 "$pa")"
    fi
  fi
  local ps=$J/probe-shim-cupti1
  if ls "$ps"/*.trace >/dev/null 2>&1 && grep -qx 'probe: done' "$ps/out"; then
    build/gcspy dump "$(ls "$ps"/*.trace | head -1)" >"$ps/dump.txt" 2>&1
    local skipped
    skipped=$(grep -c 'scan skipped\|did not stop' "$ps/err")
    grep '^scan_block id=1 ' "$ps/dump.txt" | grep -v 'kind=host\|kind=device' |
      sed -E 's/.* size=([0-9]+) .* kind=([a-z]+) class=([a-z]+).*/    also at its gcspy_scan: \2 \1 bytes \3/' | sort
    result PASS "probe under the shim: $(grep -c '^scan_begin' "$ps/dump.txt") scans ($skipped skipped); its device blocks at its gcspy_scan: $(grep '^scan_block id=1 ' "$ps/dump.txt" | grep 'kind=device' | sed -E 's/.* size=([0-9]+) .* class=([a-z]+).*/\1:\2/' | sort -n | paste -sd' ' -)"
  else
    result FAIL "probe under the shim: $(tail -2 "$ps/err" 2>/dev/null)"
  fi

  # -- programs: cuda_shim.sh's real-GPU mode on the recorded runs --
  local cases=
  for d in "$J"/programs/*/; do
    d=$(basename "$d")
    case $d in *-nocupti) ;; *) cases="$cases $d" ;; esac
  done
  if [ -z "$cases" ]; then
    result FAIL "CUDA programs: none ran"
  elif GS_CUDA_REAL=1 GS_CUDA_FROM="$J/programs" GS_CUDA_PROGS="$carry/programs" GS_CUDA_SYSROOT="$sys" \
       GS_CUDA_CUPTI=$([ "$double" = 1 ] && echo refused || echo attached) GS_CUDA_CASES="${cases# }" \
       bash tests/integration/cuda_shim.sh >"$J/cuda_shim.log" 2>&1; then
    result PASS "CUDA programs under the shim ($(wc -w <<<"$cases")): outcomes as expected, CUPTI $([ "$double" = 1 ] && echo 'refused in one line' || echo attached), same events without it"
  else
    grep -E '^FAIL' "$J/cuda_shim.log" | head -12 | sed 's/^/    /'
    result FAIL "CUDA programs under the shim ($J/cuda_shim.log)"
  fi

  # -- the subscriber loaded by the driver alone --
  if [ "$double" = 1 ]; then
    result SKIP "CUDA_INJECTION64_PATH alone: the double does not load injection libraries"
  elif ! ls "$J"/inject/*.trace >/dev/null 2>&1; then
    result FAIL "CUDA_INJECTION64_PATH alone: no trace (rc $(cat "$J/inject/rc" 2>/dev/null)): $(grep -i cupti "$J/inject/err" | head -1)"
  else
    local tr_ sizes
    tr_=$(ls "$J"/inject/*.trace | head -1)
    build/gcspy dump "$tr_" >"$tr_.txt" 2>&1
    sizes=$(grep '^alloc_ex' "$tr_.txt" | grep 'kind=device' | sed -E 's/.* size=([0-9]+).*/\1/' | sort -n | paste -sd' ' -)
    if [ "$sizes" = "1048576 2097152 3145728" ]; then
      result PASS "CUDA_INJECTION64_PATH alone: the 3 device blocks recorded"
    else
      result FAIL "CUDA_INJECTION64_PATH alone: device blocks '$sizes', expected '1048576 2097152 3145728' ($(grep -i cupti "$J/inject/err" | head -1))"
    fi
  fi

  # -- PyTorch --
  if [ ! -d "$J/torch" ]; then
    result SKIP "PyTorch runs: $(grep -m1 '^torch: not run' "$from/summary.txt" 2>/dev/null | cut -d, -f2- | sed 's/^ //')"
  else
    local plant_line cached_line mode line d rc tr_
    plant_line=$(awk '/^def leak_cuda/ {f = 1; next} f && /^def / {exit} f && /[mM]alloc\(/ {print NR; exit}' examples/train.py)
    cached_line=$(awk '/^def leak_cached/ {f = 1; next} f && /^def / {exit} f && /caching_allocator_alloc\(/ {print NR; exit}' examples/train.py)
    for mode in aware expandable async nocache; do
      d=$J/torch/$mode
      [ "$mode" = nocache ] && line=$plant_line || line=$cached_line
      if [ ! -d "$d" ]; then
        result FAIL "torch, $mode: not run"
        continue
      fi
      rc=$(cat "$d/rc" 2>/dev/null)
      # the job's own trace: the largest (a helper process torch runs has its own)
      tr_=$(ls -S "$d"/*.trace 2>/dev/null | head -1)
      if [ "$rc" != 0 ] || [ -z "$tr_" ]; then
        result FAIL "torch, $mode: exit $rc, $(ls "$d"/*.trace 2>/dev/null | wc -l) traces: $(tail -2 "$d/err" | tr '\n' ' ')"
        continue
      fi
      build/gcspy report --sysroot "$sys" --format json "$tr_" >"$d/report.json" 2>"$d/report.err" ||
        { result FAIL "torch, $mode: gcspy report: $(head -2 "$d/report.err")"; continue; }
      python3 scripts/gpu_check_torch.py "$d/report.json" "$d/err" $PLANT $STEPS "$line" "$mode" >"$d/check" 2>&1
      rc=$?
      sed 's/^/    /' "$d/check"
      if [ $rc -eq 0 ]; then
        result PASS "torch, $mode: the planted device leak found$(grep -q '^SKIP' "$d/check" && echo ' (attribution skipped, see above)')"
      else
        result FAIL "torch, $mode: $(grep -m1 '^FAIL' "$d/check" | cut -c1-200)"
      fi
    done
  fi
  echo
  echo "gpu-check summary (outputs in ${J#$ROOT/}$([ "$double" = 1 ] && echo '; on the CUDA test double')):"
  printf '  %s\n' "${results[@]}"
  echo "gpu-check: $npass passed, $nfail failed, $nskip skipped"
  [ "$nfail" -eq 0 ]
}

case $MODE in
  prepare) prepare "${ARG:-build/gpu-carry}" 0 ;;
  run) run_checks "${ARG:-build/gpu-carry}" 0 ;;
  judge) judge "$ARG" "${GPU_CHECK_CARRY:-build/gpu-carry}" ;;
  double)
    base=${GPU_CHECK_OUT:-$ROOT/build/gpu-check}
    prepare "$base/carry" 1 || exit $?
    OUT=$base/out GPU_CHECK_OUT= run_checks "$base/carry" 1 >"$base/run.log" 2>&1 ||
      { cat "$base/run.log"; exit 1; }
    GPU_CHECK_JUDGE=$base/judge judge "$base/out" "$base/carry" ;;
  all)
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
      say "no NVIDIA GPU here (nvidia-smi missing or lists no GPU): nothing to check"
      exit 77
    fi
    base=${GPU_CHECK_OUT:-$ROOT/build/gpu-check}
    prepare "$base/carry" 0 || exit $?
    OUT=$base/out run_checks "$base/carry" 0 || exit $?
    GPU_CHECK_JUDGE=$base/judge judge "$base/out" "$base/carry" ;;
esac
