#!/usr/bin/env bash
# The CUDA test double checks itself, without gcspy: every CUDA test program
# (tests/programs/cuda_*) runs against build/cuda_double and must exit 0
# having printed "ok"; a device address read on the host must kill the
# reader with SIGSEGV; the double's knobs (GS_CUDA_DOUBLE_MEM, _DEVICES,
# _SYNC_US) must do what they say and reject malformed values in one line;
# a program linked against the toolkit's real libcudart must run on the
# double, and a program linked against the double must bind to the real
# library. Builds nothing: `make test` builds TEST_DEPS first.
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
P=$BUILD/tests/programs
D=$BUILD/cuda_double

if [ ! -f "$CUDA_HOME/include/cuda_runtime_api.h" ] || [ ! -f "$CUDA_HOME/include/cuda.h" ]; then
    echo "no CUDA headers under $CUDA_HOME (HAVE_CUDA is not 1)"
    exit 77
fi
for f in "$D/libcudart.so.13" "$D/libcuda.so.1" "$P/cuda_three"; do
    if [ ! -e "$f" ]; then echo "FAIL: $f is missing (run make test-build)"; exit 1; fi
done

# Nothing from the caller's environment may change the double's behaviour.
unset GS_CUDA_DOUBLE_MEM GS_CUDA_DOUBLE_DEVICES GS_CUDA_DOUBLE_SYNC_US LD_PRELOAD LD_LIBRARY_PATH

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run NAME [VAR=VALUE...]: the program must exit 0 and print "ok" last.
run() {
    local name=$1; shift
    local out rc
    out=$(env "$@" timeout 60 "$P/$name" 2>&1); rc=$?
    if [ $rc -ne 0 ] || [ "$(tail -n1 <<<"$out")" != "ok" ]; then
        fail "$name ${*:-} exited $rc:"; sed 's/^/    /' <<<"$out"
    else
        echo "ok   $name ${*:-}"
    fi
}

# The scenarios and API checks, with the double's defaults.
for name in cuda_three cuda_kept_pinned cuda_kept_heap cuda_kept_thread cuda_async_vmm \
            cuda_pinned_leak cuda_driver cuda_driver_api cuda_api cuda_fault cuda_sync cuda_hidden \
            cuda_pinned_dlopen cuda_entry_points cuda_ctx_teardown; do
    run "$name"
done
run cuda_oom GS_CUDA_DOUBLE_MEM=67108864
run cuda_oom                              # 16 GiB, never touched
run cuda_stress GS_CUDA_DOUBLE_MEM=134217728
run cuda_api GS_CUDA_DOUBLE_DEVICES=3

# The binaries really use the double, through RUNPATH.
for lib in libcudart.so.13; do
    where=$(ldd "$P/cuda_three" | awk -v l="$lib" '$1 == l {print $3}')
    [ "$(readlink -f "$where")" = "$(readlink -f "$D/$lib")" ] ||
        fail "cuda_three loads $lib from '$where', not $D"
done

# A device byte read on the host faults, as on a GPU.
{ "$P/cuda_fault" deref >/dev/null 2>&1; } 2>/dev/null
rc=$?
[ $rc -eq 139 ] && echo "ok   cuda_fault deref: SIGSEGV" ||
    fail "cuda_fault deref exited $rc, expected 139 (SIGSEGV)"

# GS_CUDA_DOUBLE_SYNC_US lengthens cudaMalloc and cudaFree.
out=$(GS_CUDA_DOUBLE_SYNC_US=30000 "$P/cuda_sync" 2>&1)
if [ $? -eq 0 ] && [[ $out =~ malloc_us=([0-9]+)\ free_us=([0-9]+) ]] &&
   [ "${BASH_REMATCH[1]}" -ge 30000 ] && [ "${BASH_REMATCH[2]}" -ge 30000 ]; then
    echo "ok   cuda_sync GS_CUDA_DOUBLE_SYNC_US=30000: $out" | head -1
else
    fail "GS_CUDA_DOUBLE_SYNC_US=30000 not honoured: $out"
fi
out=$("$P/cuda_sync" 2>&1)
[[ $out =~ malloc_us=([0-9]+)\ free_us=([0-9]+) ]] && [ "${BASH_REMATCH[2]}" -lt 30000 ] ||
    fail "cudaFree is slow without GS_CUDA_DOUBLE_SYNC_US: $out"

# Zero devices: the runtime says so, the driver's cuInit too.
out=$(GS_CUDA_DOUBLE_DEVICES=0 "$P/cuda_three" 2>&1)
[ $? -eq 1 ] && grep -q 'cudaErrorNoDevice' <<<"$out" ||
    fail "GS_CUDA_DOUBLE_DEVICES=0: expected cudaErrorNoDevice, got: $out"
out=$(GS_CUDA_DOUBLE_DEVICES=0 "$P/cuda_driver" 2>&1)
[ $? -eq 1 ] && grep -q 'cuInit(0): CUDA_ERROR_NO_DEVICE' <<<"$out" ||
    fail "GS_CUDA_DOUBLE_DEVICES=0: expected CUDA_ERROR_NO_DEVICE from cuInit, got: $out"

# Malformed settings: one line naming the variable, then calls fail.
for bad in "GS_CUDA_DOUBLE_MEM=12Q" "GS_CUDA_DOUBLE_DEVICES=65" "GS_CUDA_DOUBLE_SYNC_US=-1"; do
    out=$(env "$bad" "$P/cuda_three" 2>&1); rc=$?
    first=$(head -n1 <<<"$out")
    if [ $rc -eq 1 ] && [ "$first" = "gcspy cuda double: ${bad%%=*}='${bad#*=}' is not $(
        case $bad in
            *MEM*) echo "a byte count up to 16T" ;;
            *DEVICES*) echo "a device count from 0 to 64" ;;
            *) echo "microseconds up to 10000000" ;;
        esac)" ] && grep -q 'cudaErrorInitializationError' <<<"$out"; then
        echo "ok   $bad refused"
    else
        fail "$bad: exit $rc, output: $out"
    fi
done
# Suffixes are binary multiples.
out=$(GS_CUDA_DOUBLE_MEM=64M "$P/cuda_oom" 2>&1) || fail "GS_CUDA_DOUBLE_MEM=64M: $out"

# Same ABI both ways. Linked against the real libcudart, running on the double
# (cuda.mk builds it when the toolkit has lib64/libcudart.so):
if [ -f "$CUDA_HOME/lib64/libcudart.so" ]; then
    out=$(LD_LIBRARY_PATH=$D timeout 60 "$P/cuda_three_reallink" 2>&1); rc=$?
    [ $rc -eq 0 ] && [ "$(tail -n1 <<<"$out")" = ok ] && echo "ok   cuda_three_reallink on the double" ||
        fail "cuda_three_reallink on the double exited $rc: $out"
fi
# Linked against the double, bound (every symbol, now) to the real library:
# with no GPU here it can only fail in CUDA terms, never in the loader's.
if [ -f "$CUDA_HOME/lib64/libcudart.so.13" ]; then
    out=$(LD_BIND_NOW=1 LD_LIBRARY_PATH=$CUDA_HOME/lib64 timeout 60 "$P/cuda_three" 2>&1); rc=$?
    if grep -qiE 'symbol lookup error|version .* not found|undefined symbol' <<<"$out"; then
        fail "cuda_three does not bind to the real libcudart: $out"
    elif [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
        fail "cuda_three on the real libcudart exited $rc: $out"
    else
        echo "ok   cuda_three binds to the real libcudart (exit $rc)"
    fi
fi

# Symbols: every name the double exports exists in the real library, with
# the same version node.
if command -v objdump >/dev/null && [ -f "$CUDA_HOME/lib64/libcudart.so.13" ]; then
    syms() { objdump -T "$1" | awk '$2 == "g" && $4 == ".text" {print $(NF-1), $NF}' | sort; }
    extra=$(comm -23 <(syms "$D/libcudart.so.13") <(syms "$CUDA_HOME/lib64/libcudart.so.13"))
    [ -z "$extra" ] && echo "ok   libcudart.so.13 exports match the real ones" ||
        fail "exports not in the real libcudart.so.13 (version name): $extra"
fi

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all CUDA double checks passed"
