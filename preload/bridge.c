/*
 * The bridge (include/gcspy/bridge.h): how the CUPTI subscriber feeds device
 * events into the shim's table and trace. Every entry point checks the
 * recursion flag first: a call from inside one of the shim's hooks (CUPTI
 * calls back from within the real cudaMalloc the hook is wrapping) is left to
 * the hook, so each allocation is recorded once.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "gcspy/bridge.h"
#include "core.h"
#include "emit.h"
#include "modules.h"
#include "pyframes.h"
#include "stack.h"
#include "threads.h"
#include "torch.h"
#include "libunwind_dl.h"

#define GS_EXPORT __attribute__((visibility("default")))

/* The stack of a CUPTI callback starts inside libgcspy_cupti.so and libcupti,
 * which have no frame pointers: it is taken with libunwind (these calls are
 * rare: allocations no PLT hook saw) and the companion's own frames are
 * dropped, so the stack starts at the program's call. Without libunwind
 * installed (unwind.c) such a stack has only its Python frames. */
static uint32_t caller_stack(void)
{
    void *buf[GS_MAX_DEPTH + 32];
    int got = gs_unw_backtrace(buf, GS_MAX_DEPTH + 32), i = 0; /* -1: no libunwind */
    while (i < got) {
        Dl_info info;
        uintptr_t ip = (uintptr_t)buf[i];
        int ours = ip >= gs_self_lo && ip < gs_self_hi;
        if (!ours && dladdr(buf[i], &info) && info.dli_fname)
            ours = strstr(info.dli_fname, "libgcspy_cupti") || strstr(info.dli_fname, "libcupti");
        if (!ours)
            break;
        i++;
    }
    uintptr_t ips[GS_MAX_DEPTH];
    int n = 0;
    for (; i < got && n < (int)gs_opt.depth; i++)
        ips[n++] = (uintptr_t)buf[i];
    n = gs_py_merge(ips, n, (int)gs_opt.depth);
    return gs_stack_intern(ips, n);
}

GS_EXPORT int gcspy_bridge_version(void)
{
    return GCSPY_BRIDGE_VERSION;
}

GS_EXPORT uint64_t gcspy_now_ns(void)
{
    return gs_now_fine();
}

GS_EXPORT __attribute__((noinline)) int gcspy_device_alloc(uint64_t addr, uint64_t size,
                                                           unsigned kind, unsigned fn,
                                                           unsigned device, uint64_t stream,
                                                           uint64_t dur_ns, int with_stack)
{
    if (!gs_tracing() || gs_tls.in_hook || !addr || kind >= GS_MEM__N)
        return 0;
    gs_tls.in_hook = 1;
    int e = errno, rc = 0;
    struct gs_shard *sh = gs_shard_of(addr);
    gs_spin_lock(&sh->s.lock);
    int known = gs_table_lookup(sh, addr) != NULL;
    gs_spin_unlock(&sh->s.lock);
    if (!known) {
        uint32_t stack = 0;
        if (with_stack) {
            if (!gs_tls.th && !gs_tls.exited)
                gs_thread_get();
            stack = caller_stack();
        }
        gs_torch_note_kind(kind);
        gs_on_alloc_ex(addr, size, stack, kind, fn, device, stream, dur_ns);
        rc = 1;
    }
    errno = e;
    gs_leave();
    return rc;
}

GS_EXPORT int gcspy_device_free(uint64_t addr)
{
    if (!gs_tracing() || gs_tls.in_hook || !addr)
        return 0;
    gs_tls.in_hook = 1;
    int e = errno;
    int rc = gs_on_free(addr);
    errno = e;
    gs_leave();
    return rc;
}

GS_EXPORT void gcspy_pause(uint64_t t0, uint64_t t1, unsigned kind, uint64_t a, uint64_t b)
{
    if (!gs_tracing() || gs_tls.in_hook)
        return;
    gs_tls.in_hook = 1;
    gs_emit_pause(t0, t1, kind, a, b);
    gs_leave();
}

GS_EXPORT void gcspy_device_sample(unsigned device, unsigned kind, uint64_t reserved,
                                   uint64_t in_use, uint64_t segments, uint64_t largest_free)
{
    if (!gs_tracing() || gs_tls.in_hook)
        return;
    gs_tls.in_hook = 1;
    gs_emit_device_sample(device, kind, reserved, in_use, segments, largest_free);
    gs_leave();
}
