#!/usr/bin/env bash
# The CUDA test programs (tests/programs/cuda_*, real CUDA headers, linked
# against the CUDA test double: no GPU here) under the shim, each checked
# against the outcome written at its top, from `gcspy dump` and
# `gcspy report --format json`:
#   cuda_three       2 MiB device block definite at the gcspy_scan() call and
#                    at exit, allocated in alloc_dev() from alloc_dropped();
#                    the 1 and 3 MiB blocks reachable; no definite host leak
#   cuda_driver      the same through cuMemAlloc_v2 (fn cuda_driver), plus a
#                    5 MiB definite block allocated through the pointer
#                    cuGetProcAddress returned, from alloc_by_proc()
#   cuda_kept_*      a device pointer kept only in pinned memory, in a C++
#                    object on the heap, on a blocked thread's stack: no
#                    device or pinned block unreachable at the scan, the scan
#                    counted them reachable; nothing but host memory at exit
#   cuda_pinned_leak the 4096-byte pinned block definite (host-visible, leak
#                    classes as for heap blocks), from leak_pinned()
#   cuda_pinned_dlopen the same for a pinned block mapped where ld.so.cache
#                    was (the loader's dangling pointer to it keeps nothing)
#   cuda_entry_points device blocks allocated (and one freed) through the
#                    internal entry points cudaGetDriverEntryPoint(ByVersion)
#                    and cuGetProcAddress hand out: 1, 2, 3 MiB definite
#   cuda_ctx_teardown cuCtxDestroy of one context frees its 1 MiB block only;
#                    the other context's 2 MiB block definite
#   cuda_async_vmm   stream-ordered blocks each allocated and freed (fn
#                    cuda_async, on the stream); VMM mappings as vmm blocks,
#                    each unmapped; the exact DEVICE_SAMPLE (vmm) sequence
#   cuda_oom         failed calls make no event: exactly the two successful
#                    48 MiB allocations of a 64 MiB device
#   cuda_stress      4 threads, 8000 steps: every block freed, the trace
#                    consistent
#   cuda_driver_api  driver manners: a context's memory goes with it, failed
#                    frees free nothing: no CUDA block unreachable or live
#                    at exit
#   *_table          cuda_three, cuda_driver and cuda_pinned_leak with the
#                    double keeping a plain address table as the real libcuda
#                    does (GS_CUDA_DOUBLE_TABLE=1: a malloc'd array grown from
#                    libcuda's code, and a copy in its .bss): the dropped
#                    blocks are "runtime" (held by the CUDA runtime: only the
#                    driver's memory reaches them), exactly those, never
#                    definite and never reachable; the kept ones reachable;
#                    SCAN_END's runtime totals and the report's leak entries
#                    say the same (issue 18, risk 1)
#   cuda_managed_keep the only pointer to a 100-byte malloc block kept in
#                    managed memory: not read by default (possible, never
#                    definite), read with GCSPY_SCAN_MANAGED=1 (reachable)
#   cuda_pinned_gone a pinned block the driver unmapped by a path the hooks
#                    did not see, still pointed to: the scan completes, most
#                    of its 64 MiB counted unreadable (issue 18, risk 8)
#   cuda_two_runtimes two builds of the runtime double (libcudart.so.12 and
#                    .13), each bound by a library of its own: every hooked
#                    call reaches its caller's runtime (the program checks
#                    each runtime's last error); 1 and 2 MiB device blocks,
#                    both freed (issue 18, risk 10)
#   *_helper         cuda_three and cuda_driver with GS_CUDA_DOUBLE_HELPER=1:
#                    a driver helper thread that blocks every signal and
#                    sleeps in poll(); every scan ends, results as without
#                    it (issue 18, risk 4)
#   cuda_sync        a 200 ms cudaMalloc and cudaFree are CUDA_SYNC pauses;
#                    the shim tries to attach libgcspy_cupti.so (the double
#                    is not NVIDIA's driver: refused in one line) and the
#                    trace is the same as with GCSPY_CUPTI=0
# Every trace must also pass the consistency checker (tests/lib.sh).
#
# GS_CUDA_REAL=1 (scripts/gpu-check.sh, on a machine with a GPU): the same
# programs linked against the toolkit's real libcudart, from GS_CUDA_PROGS,
# on the real driver, with libgcspy_cupti.so attached: what only the double
# can do is left out (its memory size and call delays, the refusal), the
# host side of the scans is not judged (the real libraries allocate), and
# each program must give the same CUDA events with GCSPY_CUPTI=0 as with
# CUPTI attached (one call, one event). docs/gpu.md says which paths are
# tested where. GS_CUDA_CUPTI=refused (scripts/gpu-check.sh --double: the
# same real-GPU mode on the double's libraries) expects the subscriber's
# one-line refusal instead of CUPTI attached. GS_CUDA_FROM=DIR (with
# GS_CUDA_REAL=1; gpu-check.sh --judge) runs nothing: each run's out, err, rc
# and trace are read from DIR/NAME (DIR/NAME-nocupti for GCSPY_CUPTI=0), as
# the GPU machine recorded them, and reports look for the modules under
# GS_CUDA_SYSROOT.
set -u
cd "$(dirname "$0")/../.." || exit 2
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
REAL=${GS_CUDA_REAL:-0}
if [ ! -f "$CUDA_HOME/include/cuda_runtime_api.h" ]; then
  echo "no CUDA toolkit headers under $CUDA_HOME (HAVE_CUDA is not 1): CUDA programs not built"
  exit 77
fi
. tests/lib.sh
gs_init cuda_shim
[ "$REAL" = 1 ] && GS_PROGS=$(realpath "${GS_CUDA_PROGS:-build/gpu-check/programs}")
ALL_CASES="cuda_three cuda_driver cuda_kept_pinned cuda_kept_heap cuda_kept_thread
           cuda_pinned_leak cuda_pinned_dlopen cuda_entry_points cuda_ctx_teardown cuda_async_vmm
           cuda_oom cuda_stress cuda_sync cuda_driver_api cuda_two_runtimes
           cuda_managed_keep cuda_pinned_gone"
# GS_CUDA_CASES: the real-GPU mode's programs, a subset of ALL_CASES (the
# double run of gpu-check.sh keeps to a few, to stay short).
CASES=${GS_CUDA_CASES:-$ALL_CASES}
if [ "$REAL" = 1 ]; then gs_need $CASES; else gs_need $ALL_CASES; fi
unset GS_CUDA_DOUBLE_MEM GS_CUDA_DOUBLE_DEVICES GS_CUDA_DOUBLE_SYNC_US LD_LIBRARY_PATH

cat >"$GS_T/cudacheck.py" <<'PY'
"""Checks of one CUDA program's trace: cudacheck.py CASE DUMP REPORT_JSON PROG"""
import json
import sys
from gstrace import *

import os
case, dump, report, prog = sys.argv[1:5]
# *_table: the program run with GS_CUDA_DOUBLE_TABLE=1 (the driver's own
# table): the blocks it drops are held by the CUDA runtime, not definite
TABLE = case.endswith('_table')
if TABLE:
    case = case[:-len('_table')]
LOST = "runtime" if TABLE else "definite"
# *_helper: run with GS_CUDA_DOUBLE_HELPER=1, a driver helper thread that
# blocks every signal and sleeps in the kernel (issue 18, risk 4): the
# scans must pass over it, with the same results as without it
HELPER = case.endswith('_helper')
if HELPER:
    case = case[:-len('_helper')]
REAL = os.environ.get('GS_CUDA_REAL') == '1'
tr = Trace(dump)
if HELPER:
    main_tid = min(r.thread for r in tr.of('alloc'))
    h = [r for r in tr.of('alloc') if r.size == 96 and r.thread != main_tid]
    assert h, 'no 96-byte allocation from the helper thread: the helper did not run'
    sb = [r for r in tr.of('scan_begin')]
    assert sb and all(r.id in {e.id for e in tr.of('scan_end')} for r in sb), \
        'a scan did not end with the blocking helper thread'
rep = json.load(open(report))['processes'][0]
MIB = 1 << 20

def scans():
    """{id: (scan_begin, [scan_block], scan_end)} in id order."""
    out = {}
    for r in tr.of('scan_begin'):
        out[r.id] = [r, [], None]
    for r in tr.of('scan_block'):
        out[r.id][1].append(r)
    for r in tr.of('scan_end'):
        out[r.id][2] = r
    for k, v in out.items():
        assert v[2] is not None, 'scan %d has no scan_end' % k
    return out

def by_trigger(trigger):
    s = [v for v in scans().values() if v[0].trigger == trigger]
    assert len(s) == 1, '%d scans with trigger %s, expected 1' % (len(s), trigger)
    return s[0]

def cuda_blocks(blocks, cls=None):
    """(kind, size, class) of the non-host blocks, sorted."""
    return sorted((b.kind, b.size, b['class']) for b in blocks
                  if b.kind != 'host' and (cls is None or b['class'] == cls))

def no_definite_host(blocks, where):
    if REAL:
        return  # the real runtime and driver allocate, and may leak, on their own
    bad = [(b.size, b['class']) for b in blocks if b.kind == 'host' and b['class'] == 'definite']
    assert not bad, '%s: definite host leaks %s (the program leaks no host memory)' % (where, bad)

def frames_of(leak):
    return [(f.get('function'), f.get('file')) for f in leak['stack']]

def leak(memory, cls, nbytes):
    got = [l for l in rep['leaks'] if l['memory'] == memory and l['class'] == cls
           and l['bytes'] == nbytes]
    assert len(got) == 1, 'report: %d %s %s leaks of %d bytes: %s' % (
        len(got), cls, memory, nbytes,
        [(l['class'], l['memory'], l['bytes']) for l in rep['leaks']])
    return got[0]

def expect_stack(l, *functions):
    """The leak's stack starts at functions[0] and holds the others, in the program's source."""
    fr = frames_of(l)
    names = [f for f, _ in fr]
    assert fr and fr[0][0] == functions[0], 'innermost frame %s, expected %s (stack %s)' % (
        fr[0] if fr else None, functions[0], names)
    src = 'tests/programs/%s.c' % case
    for fn in functions:
        hit = [f for f in fr if f[0] == fn]
        assert hit and (hit[0][1] or '').endswith(src), 'no frame %s in %s: %s' % (fn, src, fr)

def allocs(kind=None, fn=None):
    return [r for r in tr.of('alloc_ex') if (kind is None or r.kind == kind)
            and (fn is None or r.fn == fn)]

def freed(addr_list):
    """Every address in the list is freed as often as it is allocated."""
    from collections import Counter
    a = Counter(r.addr for r in tr.of('alloc_ex') if r.addr in addr_list)
    f = Counter(r.addr for r in tr.of('free_ex') if r.addr in addr_list)
    return a == f

def nothing_cuda_live_at_end():
    _, _, live = check(tr)
    kinds = {}
    for r in tr.of('alloc_ex'):
        if r.addr in live:
            kinds[r.addr] = r.kind
    left = {hex(a): k for a, k in kinds.items() if k != 'host'}
    assert not left, 'CUDA blocks live at exit: %s' % left

def runtime_totals(end, blocks, nbytes):
    """SCAN_END's held-by-the-CUDA-runtime totals (trailing fields, 2.1)."""
    got = (int(end.get('runtime_blocks', 0)), int(end.get('runtime_bytes', 0)))
    assert got == (blocks, nbytes), 'scan %d: runtime totals %s, expected %s' % (
        end.id, got, (blocks, nbytes))

def three(fn, extra=()):
    """extra: more dropped device blocks (sizes) than cuda_three's."""
    api_b, api_blocks, api_end = by_trigger('api')
    ex_b, ex_blocks, ex_end = by_trigger('exit')
    want_api = sorted([('device', 2 * MIB, LOST)] + [('device', n, LOST) for n in extra])
    got = cuda_blocks(api_blocks)
    assert got == want_api, 'gcspy_scan(): CUDA blocks %s, expected %s' % (got, want_api)
    want_exit = sorted(want_api + [('device', 1 * MIB, 'reachable'), ('device', 3 * MIB, 'reachable')])
    got = cuda_blocks(ex_blocks)
    assert got == want_exit, 'exit scan: CUDA blocks %s, expected %s' % (got, want_exit)
    no_definite_host(api_blocks + ex_blocks, 'scans')
    if TABLE:
        for end in (api_end, ex_end):
            runtime_totals(end, 1 + len(extra), 2 * MIB + sum(extra))
    dev = allocs('device')
    assert sorted(r.size for r in dev) == sorted([MIB, 2 * MIB, 3 * MIB] + list(extra)), dev
    assert all(r.fn == fn for r in dev), 'fn %s, expected %s' % ([r.fn for r in dev], fn)
    l = leak('device', LOST, 2 * MIB)
    expect_stack(l, 'alloc_dev', 'alloc_dropped', 'main')
    return dev

if case == 'cuda_three':
    three('cuda_runtime')
    print('three: 2 MiB %s from alloc_dev <- alloc_dropped; 1, 3 MiB reachable' % LOST)
elif case == 'cuda_driver':
    three('cuda_driver', extra=(5 * MIB,))
    expect_stack(leak('device', LOST, 5 * MIB), 'alloc_by_proc', 'main')
    print('driver: as cuda_three, plus the 5 MiB cuGetProcAddress allocation %s' % LOST)
elif case.startswith('cuda_kept_'):
    size = {'cuda_kept_pinned': MIB, 'cuda_kept_heap': 2 * MIB, 'cuda_kept_thread': 3 * MIB}[case]
    _, blocks, end = by_trigger('api')
    got = cuda_blocks(blocks)
    assert not got, 'gcspy_scan(): unreachable CUDA blocks %s (all are kept)' % got
    no_definite_host(blocks, 'gcspy_scan()')
    dev = allocs('device')
    assert [r.size for r in dev] == [size], 'device blocks %s, expected one of %d' % (
        [r.size for r in dev], size)
    kept = size + (4096 if case == 'cuda_kept_pinned' else 0)
    assert end.reachable_bytes >= kept, 'the scan found %d bytes reachable, < %d kept' % (
        end.reachable_bytes, kept)
    if case == 'cuda_kept_pinned' and not REAL:
        # One pinned block (a failed cudaFree of it may re-record it).
        pin = {(r.addr, r.size) for r in allocs('pinned')}
        assert [n for _, n in pin] == [4096], pin
        # the host blocks live are the CUDA libraries' own (their loading
        # mallocs inside the hooked call): all reachable, as the two are,
        # but for ld.so's _dl_find_object segment (2304 bytes, made by the
        # runtime's dlopen), reached through its address rounded up to 128
        # bytes: possible unless malloc gave a multiple of 128 (leak_dyntls)
        odd = [(b.size, b['class'], b.addr % 128) for b in blocks]
        dlfo = [o for o in odd if o[:2] == (2304, 'possible') and o[2]]
        assert len(dlfo) == len(odd) <= 1 and \
            end.live_bytes - end.reachable_bytes == 2304 * len(dlfo) and end.reachable_bytes >= kept, \
            'scan: %d live blocks, %d bytes, %d reachable, unreached %s; expected all reachable' % (
                end.live_blocks, end.live_bytes, end.reachable_bytes, odd)
    nothing_cuda_live_at_end()
    print('%s: the %d-byte device block reachable at the scan, freed by exit' % (case, size))
elif case in ('cuda_pinned_leak', 'cuda_pinned_dlopen'):
    size = 4096
    if case == 'cuda_pinned_dlopen':  # the loader's dangling ld.so.cache pointer lands on it
        page = os.sysconf('SC_PAGESIZE')
        size = (os.stat('/etc/ld.so.cache').st_size + page - 1) // page * page
    for trig in ('api', 'exit'):
        _, blocks, end = by_trigger(trig)
        got = cuda_blocks(blocks, 'definite') + cuda_blocks(blocks, 'indirect') + \
            cuda_blocks(blocks, 'possible') + cuda_blocks(blocks, 'runtime')
        assert got == [('pinned', size, LOST)], '%s scan: unreachable %s' % (trig, got)
        no_definite_host(blocks, trig)
        if TABLE:
            runtime_totals(end, 1, size)
    if case == 'cuda_pinned_leak':
        dev = allocs('device')
        assert [r.size for r in dev] == [4096] and freed([dev[0].addr]), 'device check buffer: %s' % dev
    expect_stack(leak('pinned', LOST, size), 'leak_pinned', 'main')
    print('%s: %d pinned bytes %s from leak_pinned' % (case, size, LOST))
elif case == 'cuda_entry_points':
    for trig in ('api', 'exit'):
        _, blocks, _ = by_trigger(trig)
        got = cuda_blocks(blocks)
        want = [('device', n * MIB, 'definite') for n in (1, 2, 3)]
        assert got == want, '%s scan: CUDA blocks %s, expected %s' % (trig, got, want)
    dev = allocs('device')
    assert sorted(r.size for r in dev) == [n * MIB for n in (1, 2, 3, 4)], dev
    assert all(r.fn == 'cuda_driver' for r in dev), [r.fn for r in dev]
    assert freed([r.addr for r in dev if r.size == 4 * MIB]), 'the 4 MiB block is not freed'
    for n, fn in ((1, 'alloc_by_entry'), (2, 'alloc_by_version'), (3, 'alloc_by_proc')):
        expect_stack(leak('device', 'definite', n * MIB), fn, 'main')
    print('entry_points: 1, 2, 3 MiB definite from the runtime-given entry points; 4 MiB freed')
elif case == 'cuda_ctx_teardown':
    for trig in ('api', 'exit'):
        _, blocks, _ = by_trigger(trig)
        got = cuda_blocks(blocks)
        assert got == [('device', 2 * MIB, 'definite')], '%s scan: CUDA blocks %s' % (trig, got)
    dev = allocs('device')
    assert sorted(r.size for r in dev) == [MIB, 2 * MIB], dev
    assert freed([r.addr for r in dev if r.size == MIB]), 'the destroyed context kept its block'
    expect_stack(leak('device', 'definite', 2 * MIB), 'leak_in', 'main')
    print('ctx_teardown: the destroyed context took its 1 MiB; the other\'s 2 MiB definite')
elif case == 'cuda_async_vmm':
    for v in scans().values():
        assert not cuda_blocks(v[1]), 'scan %d: CUDA blocks %s' % (v[0].id, cuda_blocks(v[1]))
    asy = allocs('device', 'cuda_async')
    assert sorted(r.size for r in asy) == [256 << 10, 512 << 10, 1 << 20], asy
    assert len({r.stream for r in asy}) == 1 and asy[0].stream != 0, \
        'stream-ordered blocks not on the program stream: %s' % [r.stream for r in asy]
    vmm = allocs('vmm', 'cuda_driver')
    assert [r.size for r in vmm] == [4 * MIB, 4 * MIB], vmm
    assert freed([r.addr for r in asy + vmm]), 'a stream-ordered or VMM block is not freed'
    fx = [r for r in tr.of('free_ex') if r.kind in ('vmm',)]
    assert len(fx) == 2, fx
    seq = [(r.reserved, r.in_use, r.segments) for r in tr.of('device_sample') if r.kind == 'vmm']
    R = 8 * MIB
    want = [(R, 0, 0), (R, 0, 1), (R, 4 * MIB, 1), (R, R, 1), (R, R, 0), (R, 4 * MIB, 0),
            (R, 0, 0), (0, 0, 0)]
    assert seq == want, 'vmm samples %s, expected %s' % (seq, want)
    nothing_cuda_live_at_end()
    print('async_vmm: 3 stream-ordered and 2 VMM blocks each freed; vmm samples exact')
elif case in ('cuda_managed_keep', 'cuda_managed_keep_read'):
    _, blocks, end = by_trigger('api')
    host = sorted((b.size, b['class']) for b in blocks if b.kind == 'host' and b.size == 100)
    want = [] if case.endswith('_read') else [(100, 'possible')]
    assert host == want, 'gcspy_scan(): the 100-byte block %s, expected %s' % (host, want)
    bad = [(b.kind, b.size, b['class']) for b in blocks if b['class'] in ('definite', 'indirect')]
    assert not bad, 'gcspy_scan(): %s (nothing may be definite with managed memory unread)' % bad
    assert not cuda_blocks(blocks), cuda_blocks(blocks)
    nothing_cuda_live_at_end()
    print('%s: the block kept only in managed memory is %s' % (case, want[0][1] if want else 'reachable'))
elif case == 'cuda_pinned_gone':
    _, blocks, end = by_trigger('api')
    got = int(end.get('unreadable', 0))
    assert 32 * MIB <= got <= 64 * MIB, \
        'gcspy_scan(): %d bytes unreadable, expected most of the unmapped 64 MiB block' % got
    print('pinned_gone: the scan completed, %d bytes of the unmapped pinned block unreadable' % got)
elif case == 'cuda_two_runtimes':
    dev = allocs('device')
    assert sorted(r.size for r in dev) == [MIB, 2 * MIB], dev
    assert all(r.fn == 'cuda_runtime' for r in dev), [r.fn for r in dev]
    assert freed([r.addr for r in dev]), 'a block of one runtime is not freed'
    nothing_cuda_live_at_end()
    print('two_runtimes: each library\'s calls reached its own runtime; 1 and 2 MiB freed')
elif case == 'cuda_oom':
    dev = allocs('device')
    sizes = [r.size for r in dev]
    if REAL:  # three quarters of the free memory, twice
        assert len(sizes) == 2 and sizes[0] == sizes[1] and sizes[0] >= 256 * MIB, \
            'device allocations %s: the failed calls made events' % sizes
    else:
        assert sizes == [48 * MIB, 48 * MIB], 'device allocations %s: the failed calls made events' % sizes
        assert not [r for r in tr.of('alloc_ex', 'alloc') if r.size > 64 * MIB]
    assert freed([r.addr for r in dev])
    nothing_cuda_live_at_end()
    print('oom: only the two successful allocations of %d bytes recorded' % sizes[0])
elif case == 'cuda_stress':
    ev = [r for r in tr.of('alloc_ex', 'free_ex') if r.kind == 'device']
    na = sum(1 for r in ev if r.type == 'alloc_ex')
    nf = len(ev) - na
    assert na == nf and na + nf >= 8000, '%d device allocations, %d frees' % (na, nf)
    from collections import Counter
    per = Counter(r.thread for r in ev)
    busy = [t for t, n in per.items() if n >= 1000]
    # 4 workers; on the double main adds one allocation and its free.
    assert len(busy) == 4 and len(per) <= 5, 'events per thread: %s' % dict(per)
    fns = {r.fn for r in ev if r.type == 'alloc_ex'}
    assert fns == {'cuda_runtime', 'cuda_async', 'cuda_driver'}, fns
    nothing_cuda_live_at_end()
    print('stress: %d allocations and %d frees from 4 threads' % (na, nf))
elif case == 'cuda_driver_api':
    for v in scans().values():
        bad = [b for b in v[1] if b.kind != 'host' and b['class'] != 'reachable']
        assert not bad, 'scan %d: unreachable CUDA blocks %s' % (
            v[0].id, [(b.kind, b.size, b['class']) for b in bad])
    assert {r.size for r in allocs('device')} >= {65536}, 'the context-owned block is missing'
    nothing_cuda_live_at_end()
    print('driver_api: no CUDA block unreachable; the context took its memory along')
elif case == 'cuda_sync':
    dev = allocs('device')
    assert [r.size for r in dev] == [65536] and freed([dev[0].addr]), dev
    if REAL:
        print('sync: one 65536-byte device block allocated and freed')
    else:
        p = [r for r in tr.of('pause') if r.kind == 'cuda_sync']
        long_ = [r for r in p if r.t_end - r.t >= 200000000]
        assert len(long_) == 2, 'cuda_sync pauses of >= 200 ms: %d (%s)' % (
            len(long_), [(r.t_end - r.t) for r in p])
        print('sync: malloc and free are two CUDA_SYNC pauses of >= 200 ms')
else:
    sys.exit('unknown case ' + case)
PY

# run NAME [VAR=VALUE...]: the program under the shim; must print "ok".
run() {
  local name=$1; shift
  if [ -n "${GS_CUDA_FROM:-}" ]; then
    local from=$GS_CUDA_FROM/$name$([ "${GCSPY_CUPTI:-1}" = 0 ] && echo -nocupti)
    GS_DIR=$GS_T/$name
    rm -rf "$GS_DIR"; mkdir -p "$GS_DIR"
    cp "$from"/out "$from"/err "$from"/*.trace "$GS_DIR"/ 2>/dev/null
    GS_RC=$(cat "$from/rc" 2>/dev/null || echo 255)
    [ "$GS_RC" = 124 ] && fail "$name: timed out (deadlock?)"
  else
    GS_TIMEOUT=120 gs_run "${GS_CASE:-$name}" "$@" "$GS_PROGS/$name"  # env takes VAR=VALUE first
  fi
  if [ "$GS_RC" -ne 0 ] || [ "$(tail -n1 "$GS_DIR/out")" != ok ]; then
    fail "$name: exit $GS_RC: $(tail -3 "$GS_DIR/err" "$GS_DIR/out")"
    return 1
  fi
  gs_one_trace || return 1
  gs_check "$GS_DUMP"
  "$GS_CLI" report ${GS_CUDA_SYSROOT:+--sysroot "$GS_CUDA_SYSROOT"} --format json "$GS_TRACE" >"$GS_DIR/report.json" 2>"$GS_DIR/report.err" ||
    { fail "$name: gcspy report: $(cat "$GS_DIR/report.err")"; return 1; }
  gs_py "$GS_T/cudacheck.py" "${GS_CASE:-$name}" "$GS_DUMP" "$GS_DIR/report.json" "$GS_PROGS/$name" ||
    fail "${GS_CASE:-$name}: see above"
}

# The CUDA events of a dump with what varies from run to run taken out.
cuda_events() {
  grep -E '^(alloc_ex|free_ex)' "$1" | grep -v 'kind=host' |
    sed -E 's/ (t|dur_ns|addr|thread|stream|stack)=[^ ]*//g' | sort
}

if [ "$REAL" = 1 ]; then
  # The shim attaches CUPTI on the writer's first tick after libcuda.so.1
  # loads: tick often, so short programs have it attached early.
  export GCSPY_FLUSH_MS=10
  # CUPTI attached (its exit line), and one call is one event: the same CUDA
  # events as without it.
  for p in $CASES; do
    GCSPY_QUIET=0 run "$p" || continue
    if [ "${GS_CUDA_CUPTI:-attached}" = refused ]; then
      # the attempt comes on the writer's first tick after libcuda loads: a
      # program done sooner ends without one (and without a line); never twice
      n=$(grep -c 'CUPTI subscriber not attached' "$GS_DIR/err")
      [ "$n" -le 1 ] || fail "$p: $n lines refusing CUPTI on stderr, expected at most 1"
      refusals=$((${refusals:-0} + n))
    else
      grep -q '^gcspy: cupti: ' "$GS_DIR/err" ||
        fail "$p: CUPTI not attached: $(grep -i cupti "$GS_DIR/err" | head -3)"
    fi
    cuda_events "$GS_DUMP" >"$GS_T/$p.with"
    GCSPY_CUPTI=0 run "$p" || continue
    cuda_events "$GS_DUMP" >"$GS_T/$p.without"
    cmp -s "$GS_T/$p.with" "$GS_T/$p.without" ||
      fail "$p: CUDA events differ with CUPTI attached: $(diff "$GS_T/$p.without" "$GS_T/$p.with" | head -8)"
  done
  [ "${GS_CUDA_CUPTI:-attached}" != refused ] || [ "${refusals:-0}" -ge 1 ] ||
    fail "no case printed the line refusing CUPTI"
  gs_done
fi

for p in cuda_three cuda_driver cuda_kept_pinned cuda_kept_heap cuda_kept_thread \
         cuda_pinned_leak cuda_pinned_dlopen cuda_entry_points cuda_ctx_teardown cuda_async_vmm \
         cuda_driver_api cuda_two_runtimes cuda_managed_keep cuda_pinned_gone; do
  run "$p"
done
GS_CASE=cuda_managed_keep_read run cuda_managed_keep GCSPY_SCAN_MANAGED=1
# The driver's own address table (the real libcuda's manner): its copies
# make nothing reachable; what only they reach is held by the CUDA runtime.
for p in cuda_three cuda_driver cuda_pinned_leak; do
  GS_CASE=${p}_table run "$p" GS_CUDA_DOUBLE_TABLE=1
done
# A driver helper thread that blocks every signal and sleeps in poll()
# (risk 4): each scan passes over it, results as without it.
for p in cuda_three cuda_driver; do
  GS_CASE=${p}_helper run "$p" GS_CUDA_DOUBLE_HELPER=1
done
run cuda_oom GS_CUDA_DOUBLE_MEM=67108864
run cuda_stress GS_CUDA_DOUBLE_MEM=134217728

# The shim attaches libgcspy_cupti.so from its writer thread once libcuda.so.1
# is loaded; a 200 ms cudaMalloc leaves it time. On the double the subscriber
# refuses (not NVIDIA's driver) and the shim says so once, unless quiet.
if [ -f build/libgcspy_cupti.so ]; then
  GCSPY_QUIET=0 run cuda_sync GS_CUDA_DOUBLE_SYNC_US=200000
  n=$(grep -c 'CUPTI subscriber not attached' "$GS_DIR/err")
  [ "$n" -eq 1 ] || fail "cuda_sync: $n lines about the CUPTI subscriber on stderr, expected 1: $(cat "$GS_DIR/err")"
  cuda_events "$GS_DUMP" >"$GS_T/sync.with"
  GCSPY_QUIET=0 GCSPY_CUPTI=0 run cuda_sync GS_CUDA_DOUBLE_SYNC_US=200000
  grep -q 'CUPTI' "$GS_DIR/err" && fail "cuda_sync: GCSPY_CUPTI=0 still tried CUPTI: $(cat "$GS_DIR/err")"
  cuda_events "$GS_DUMP" >"$GS_T/sync.without"
  cmp -s "$GS_T/sync.with" "$GS_T/sync.without" ||
    fail "cuda_sync: CUDA events differ with and without the CUPTI attempt"
else
  echo "build/libgcspy_cupti.so not built (no CUPTI headers): the attach attempt is not checked"
  run cuda_sync GS_CUDA_DOUBLE_SYNC_US=200000
fi
gs_done
