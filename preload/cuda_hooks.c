/*
 * The CUDA allocation hooks: runtime (cuda*) and driver (cu*) entry points
 * that allocate or free device, pinned, managed or VMM memory.
 *
 * All are optional: the real function is looked up with dlsym(RTLD_NEXT) at
 * the first call, so a program without CUDA never calls into this file, and
 * nothing here runs at load time. (A program that probes for CUDA with
 * dlsym(RTLD_DEFAULT, "cudaMalloc") finds these wrappers; without a CUDA
 * library behind them they return cudaErrorInsufficientDriver /
 * CUDA_ERROR_NOT_INITIALIZED, what a machine without a driver returns.)
 *
 * Only calls that succeed make events. An allocation is recorded after the
 * real call returns, with its duration; a free is recorded before the real
 * call (so no other thread can record a new block at that address first, as
 * for free() in core.c), and its duration goes into a PAUSE record when the
 * call took long enough to count as a device synchronisation.
 *
 * Calls made while the thread is already inside a hook (the runtime calling
 * the driver, CUPTI's callbacks) pass through: one call, one event.
 * Virtual memory management: mapped ranges (cuMemMap) are blocks of kind VMM;
 * reserved address space, mapped bytes and live physical handles are written
 * as DEVICE_SAMPLE records (kind VMM) at every change.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "core.h"
#include "elfsym.h"
#include "emit.h"
#include "mem.h"
#include "modules.h"
#include "stack.h"
#include "threads.h"
#include "torch.h"

#define GS_EXPORT __attribute__((visibility("default")))
#define GS_SYNC_PAUSE_NS 50000ull /* calls longer than 50 µs are pauses */

#define GS_CUDA_HOOK(name) static __typeof__(name) *real_##name;
#include "cuda_hooks.def"
#undef GS_CUDA_HOOK

static __typeof__(cudaGetDevice) *real_cudaGetDevice;
static __typeof__(cuCtxGetDevice) *real_cuCtxGetDevice;

/* The real function: the next definition after ours in the global scope,
 * or, when the library was loaded with RTLD_LOCAL (Python extensions are:
 * a ctypes.CDLL, or libtorch_cuda's libcudart), its definition in whichever
 * loaded module has one. Calls from such a library still reach our wrapper
 * (LD_PRELOAD comes first in every lookup scope), so without the second
 * search they would fail. */
static void *lookup(const char *name)
{
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1; /* dlsym may allocate */
    void *p = dlsym(RTLD_NEXT, name);
    if (!p)
        p = gs_elf_find(name);
    gs_restore(saved);
    return p;
}

/* ---- the real function of the caller's runtime ---- */

/* Two CUDA runtimes may live in one process (torch's libcudart.so.12 beside
 * another library's .so.13, each bound by its own DT_NEEDED; issue 18, risk
 * 10). Our wrapper interposes both, so the real function is the one the
 * calling module would have bound to without us: looked up in the caller's
 * own dependency tree (dlsym on its handle, whose search list is the module
 * and its dependencies, never the preloaded shim), once per (module,
 * function). A call from the executable, or from a module whose tree has no
 * definition (a runtime it dlopened itself: the RTLD_LOCAL case), takes the
 * global one (lookup()). The cache holds up to 64 pairs; past that the
 * caller's tree is searched on every call (correct, slower). */
struct by_caller {
    uintptr_t base;   /* the calling module's load address; 0: empty */
    const char *name; /* the hook's name (a literal: compared by pointer) */
    void *fn;
};
static struct by_caller by_caller[64];
static atomic_int by_caller_lock;

static void *search_caller(const char *path, const char *name)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *p = dlsym(h, name);
    dlclose(h);
    /* our own wrapper (the caller depends on libgcspy) is no answer */
    if (p && (uintptr_t)p >= gs_self_lo && (uintptr_t)p < gs_self_hi)
        p = NULL;
    return p;
}

static void *resolve_for(void **global, const char *name, void *ret)
{
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1; /* dladdr, dlopen and dlsym may allocate */
    void *p = NULL;
    Dl_info di;
    /* the executable (an empty name, or a path dlopen does not know: it
     * searches the global scope anyway) ends in the global lookup */
    if (ret && dladdr(ret, &di) && di.dli_fbase && di.dli_fname && di.dli_fname[0]) {
        uintptr_t base = (uintptr_t)di.dli_fbase;
        int found = 0;
        gs_spin_lock(&by_caller_lock);
        for (size_t i = 0; i < 64 && by_caller[i].base; i++)
            if (by_caller[i].base == base && by_caller[i].name == name) {
                p = by_caller[i].fn;
                found = 1;
                break;
            }
        gs_spin_unlock(&by_caller_lock);
        if (!found) {
            p = search_caller(di.dli_fname, name);
            gs_spin_lock(&by_caller_lock);
            for (size_t i = 0; i < 64; i++)
                if (!by_caller[i].base) {
                    by_caller[i] = (struct by_caller){base, name, p};
                    break;
                }
            gs_spin_unlock(&by_caller_lock);
        }
    }
    if (!p) {
        if (!*global)
            *global = lookup(name);
        p = *global;
    }
    gs_restore(saved);
    return p;
}

/* The name is expanded before it is stringized: cuda.h maps cuMemAlloc to
 * cuMemAlloc_v2, and the versioned name is the one the library exports.
 * RESOLVE declares a local real_NAME, the caller's runtime's function,
 * that shadows the file's (the global one) for the rest of the hook. */
#define GS_STR(x) #x
#define GS_XSTR(x) GS_STR(x)
#define RESOLVE(name, fail)                                                   \
    __typeof__(real_##name) real_##name##_c = (__typeof__(real_##name))resolve_for( \
        (void **)&real_##name, GS_XSTR(name), __builtin_return_address(0));   \
    __typeof__(real_##name) real_##name = real_##name##_c;                    \
    if (!real_##name)                                                         \
        return fail

static inline int active(void)
{
    return gs_tracing() && gs_opt.cuda && !gs_tls.in_hook;
}

static unsigned runtime_device(void)
{
    int d = 0;
    if (!real_cudaGetDevice)
        real_cudaGetDevice = (__typeof__(real_cudaGetDevice))lookup("cudaGetDevice");
    if (real_cudaGetDevice && real_cudaGetDevice(&d) != cudaSuccess)
        d = 0;
    return (unsigned)d;
}

static unsigned driver_device(void)
{
    CUdevice d = 0;
    if (!real_cuCtxGetDevice)
        real_cuCtxGetDevice = (__typeof__(real_cuCtxGetDevice))lookup("cuCtxGetDevice");
    if (real_cuCtxGetDevice && real_cuCtxGetDevice(&d) != CUDA_SUCCESS)
        d = 0;
    return (unsigned)d;
}

static void pause_if_long(uint64_t t0, uint64_t t1, unsigned device)
{
    if (t1 - t0 >= GS_SYNC_PAUSE_NS)
        gs_emit_pause(t0, t1, GS_PAUSE_CUDA_SYNC, device, 0);
}

/* ---- which context each block belongs to ---- */

/* Destroying a context (cuCtxDestroy, cudaDeviceReset of the runtime's
 * primary context) frees its blocks and no others: each block the hooks
 * record notes its context and device here, an open-addressing table in
 * gcspy's pages (an entry whose context is NULL is empty or dropped). A
 * block the table does not know (CUPTI saw it alone, or the table was full)
 * is left for CUPTI's activity records to free. Runtime calls use the
 * device's primary context, which the runtime may not have made current:
 * they note GS_CTX_RUNTIME and their device. Lock order: a shard lock
 * (gs_drop_device_blocks calls ctx_match under it), then ctx_lock. */
#define GS_CTX_SLOTS (1u << 16)
#define GS_CTX_RUNTIME ((CUcontext)(uintptr_t)1)
struct ctx_slot {
    uint64_t addr;
    CUcontext ctx;
    unsigned device;
};
static struct ctx_slot *ctx_slots;
static atomic_int ctx_lock;
static __typeof__(cuCtxGetCurrent) *real_cuCtxGetCurrent;

static struct ctx_slot *ctx_find_locked(uint64_t addr, int insert)
{
    if (!ctx_slots && !(insert && (ctx_slots = gs_pages_alloc(GS_CTX_SLOTS * sizeof *ctx_slots))))
        return NULL;
    uint64_t i = (addr >> 8) * 0x9E3779B97F4A7C15ull >> 48;
    struct ctx_slot *reuse = NULL; /* the first dropped entry on the way */
    for (unsigned n = 0; n < GS_CTX_SLOTS; n++, i = (i + 1) & (GS_CTX_SLOTS - 1)) {
        struct ctx_slot *s = &ctx_slots[i];
        if (s->addr == addr)
            return s;
        if (!s->addr)
            return insert ? (reuse ? reuse : s) : NULL;
        if (!s->ctx && !reuse)
            reuse = s;
    }
    return insert ? reuse : NULL;
}

static void ctx_note(uint64_t addr, CUcontext ctx, unsigned device)
{
    gs_spin_lock(&ctx_lock);
    struct ctx_slot *s = ctx_find_locked(addr, 1);
    if (s)
        *s = (struct ctx_slot){addr, ctx, device};
    gs_spin_unlock(&ctx_lock);
}

static void ctx_forget(uint64_t addr)
{
    gs_spin_lock(&ctx_lock);
    struct ctx_slot *s = ctx_find_locked(addr, 0);
    if (s)
        s->ctx = NULL;
    gs_spin_unlock(&ctx_lock);
}

struct ctx_gone {
    CUcontext ctx;     /* the destroyed context */
    int runtime_device; /* and the runtime's blocks of this device, or -1 */
};

static int ctx_match(uint64_t addr, void *arg)
{
    const struct ctx_gone *g = arg;
    gs_spin_lock(&ctx_lock);
    struct ctx_slot *s = ctx_find_locked(addr, 0);
    int hit = s && s->ctx &&
              ((g->ctx && s->ctx == g->ctx) ||
               (g->runtime_device >= 0 && s->ctx == GS_CTX_RUNTIME &&
                s->device == (unsigned)g->runtime_device));
    if (hit)
        s->ctx = NULL;
    gs_spin_unlock(&ctx_lock);
    return hit;
}

static CUcontext current_ctx(void)
{
    CUcontext c = NULL;
    if (!real_cuCtxGetCurrent)
        real_cuCtxGetCurrent = (__typeof__(real_cuCtxGetCurrent))lookup("cuCtxGetCurrent");
    if (!real_cuCtxGetCurrent || real_cuCtxGetCurrent(&c) != CUDA_SUCCESS)
        c = NULL;
    return c;
}

/* Called with in_hook set, after a successful allocation. */
static void record_alloc(void *frame, uint64_t addr, uint64_t size, unsigned kind, unsigned fn,
                         unsigned device, uint64_t stream, uint64_t t0)
{
    uint64_t t1 = gs_now_fine();
    int e = errno;
    if (!gs_tls.th && !gs_tls.exited)
        gs_thread_get();
    uintptr_t ips[GS_MAX_DEPTH];
    int n = gs_stack_capture(frame, ips, (int)gs_opt.depth);
    uint32_t stack = gs_stack_intern(ips, n);
    gs_torch_note_kind(kind);
    gs_on_alloc_ex(addr, size, stack, kind, fn, device, stream, t1 - t0);
    ctx_note(addr, fn == GS_FN_CUDA_RUNTIME ? GS_CTX_RUNTIME : current_ctx(), device);
    pause_if_long(t0, t1, device);
    errno = e;
}

/* ---- runtime API ---- */

#define RT_ALLOC(call, ptr, size, kind, fn, stream)                           \
    if (!active())                                                            \
        return call;                                                          \
    gs_tls.in_hook = 1;                                                       \
    uint64_t t0 = gs_now_fine();                                              \
    gs_tls.in_hook = GS_IN_CUDA;                                              \
    cudaError_t rc = call;                                                    \
    gs_tls.in_hook = 1;                                                       \
    if (rc == cudaSuccess && (ptr))                                           \
        record_alloc(__builtin_frame_address(0), (uint64_t)(uintptr_t)(ptr),  \
                     size, kind, fn, runtime_device(), (uint64_t)(uintptr_t)(stream), t0); \
    gs_leave();                                                               \
    return rc;

GS_EXPORT cudaError_t cudaMalloc(void **p, size_t n)
{
    RESOLVE(cudaMalloc, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaMalloc(p, n), *p, n, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0)
}

GS_EXPORT cudaError_t cudaMallocHost(void **p, size_t n)
{
    RESOLVE(cudaMallocHost, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaMallocHost(p, n), *p, n, GS_MEM_PINNED, GS_FN_CUDA_RUNTIME, 0)
}

GS_EXPORT cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    RESOLVE(cudaHostAlloc, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaHostAlloc(p, n, flags), *p, n, GS_MEM_PINNED, GS_FN_CUDA_RUNTIME, 0)
}

GS_EXPORT cudaError_t cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
    RESOLVE(cudaMallocManaged, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaMallocManaged(p, n, flags), *p, n, GS_MEM_MANAGED, GS_FN_CUDA_RUNTIME, 0)
}

GS_EXPORT cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    RESOLVE(cudaMallocPitch, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaMallocPitch(p, pitch, width, height), *p, *pitch * height, GS_MEM_DEVICE,
             GS_FN_CUDA_RUNTIME, 0)
}

GS_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pp, struct cudaExtent e)
{
    RESOLVE(cudaMalloc3D, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaMalloc3D(pp, e), pp->ptr, pp->pitch * e.height * e.depth, GS_MEM_DEVICE,
             GS_FN_CUDA_RUNTIME, 0)
}

GS_EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
    RESOLVE(cudaMallocAsync, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaMallocAsync(p, n, s), *p, n, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC, s)
}

GS_EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
    RESOLVE(cudaMallocFromPoolAsync, cudaErrorInsufficientDriver);
    RT_ALLOC(real_cudaMallocFromPoolAsync(p, n, pool, s), *p, n, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC, s)
}

/* Frees: the FREE is recorded first; the real call's duration afterwards.
 * A free that fails (cuMemFree of pinned memory, say) leaves the block live:
 * it is recorded again, as the same block. */
#define FREE_HOOK(call, ptr, errt, ok, device)                                \
    if (!active() || !(ptr))                                                  \
        return call;                                                          \
    gs_tls.in_hook = 1;                                                       \
    int e = errno;                                                            \
    struct gs_block was;                                                      \
    int found = gs_on_free_block((uint64_t)(uintptr_t)(ptr), &was);           \
    if (found)                                                                \
        ctx_forget(was.addr);                                                 \
    errno = e;                                                                \
    uint64_t t0 = gs_now_fine();                                              \
    gs_tls.in_hook = GS_IN_CUDA;                                              \
    errt rc = call;                                                           \
    gs_tls.in_hook = 1;                                                       \
    if (rc == ok)                                                             \
        pause_if_long(t0, gs_now_fine(), device);                             \
    else if (found) {                                                         \
        gs_torch_note_kind(was.kind);                                         \
        gs_on_alloc_ex(was.addr, was.size, was.stack, was.kind, was.fn, 0, 0, 0); \
    }                                                                         \
    gs_leave();                                                               \
    return rc;

GS_EXPORT cudaError_t cudaFree(void *p)
{
    RESOLVE(cudaFree, cudaErrorInsufficientDriver);
    FREE_HOOK(real_cudaFree(p), p, cudaError_t, cudaSuccess, runtime_device())
}

GS_EXPORT cudaError_t cudaFreeHost(void *p)
{
    RESOLVE(cudaFreeHost, cudaErrorInsufficientDriver);
    FREE_HOOK(real_cudaFreeHost(p), p, cudaError_t, cudaSuccess, runtime_device())
}

GS_EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    RESOLVE(cudaFreeAsync, cudaErrorInsufficientDriver);
    FREE_HOOK(real_cudaFreeAsync(p, s), p, cudaError_t, cudaSuccess, runtime_device())
}

/* ---- driver API ---- */

#define DRV_ALLOC(call, ptr, size, kind, fn, stream)                          \
    if (!active())                                                            \
        return call;                                                          \
    gs_tls.in_hook = 1;                                                       \
    uint64_t t0 = gs_now_fine();                                              \
    gs_tls.in_hook = GS_IN_CUDA;                                              \
    CUresult rc = call;                                                       \
    gs_tls.in_hook = 1;                                                       \
    if (rc == CUDA_SUCCESS && (ptr))                                          \
        record_alloc(__builtin_frame_address(0), (uint64_t)(uintptr_t)(ptr),  \
                     size, kind, fn, driver_device(), (uint64_t)(uintptr_t)(stream), t0); \
    gs_leave();                                                               \
    return rc;

GS_EXPORT CUresult cuMemAlloc(CUdeviceptr *p, size_t n)
{
    RESOLVE(cuMemAlloc, CUDA_ERROR_NOT_INITIALIZED);
    DRV_ALLOC(real_cuMemAlloc(p, n), *p, n, GS_MEM_DEVICE, GS_FN_CUDA_DRIVER, 0)
}

GS_EXPORT CUresult cuMemAllocPitch(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int es)
{
    RESOLVE(cuMemAllocPitch, CUDA_ERROR_NOT_INITIALIZED);
    DRV_ALLOC(real_cuMemAllocPitch(p, pitch, w, h, es), *p, *pitch * h, GS_MEM_DEVICE,
              GS_FN_CUDA_DRIVER, 0)
}

GS_EXPORT CUresult cuMemAllocHost(void **p, size_t n)
{
    RESOLVE(cuMemAllocHost, CUDA_ERROR_NOT_INITIALIZED);
    DRV_ALLOC(real_cuMemAllocHost(p, n), *p, n, GS_MEM_PINNED, GS_FN_CUDA_DRIVER, 0)
}

GS_EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags)
{
    RESOLVE(cuMemHostAlloc, CUDA_ERROR_NOT_INITIALIZED);
    DRV_ALLOC(real_cuMemHostAlloc(p, n, flags), *p, n, GS_MEM_PINNED, GS_FN_CUDA_DRIVER, 0)
}

GS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
    RESOLVE(cuMemAllocManaged, CUDA_ERROR_NOT_INITIALIZED);
    DRV_ALLOC(real_cuMemAllocManaged(p, n, flags), *p, n, GS_MEM_MANAGED, GS_FN_CUDA_DRIVER, 0)
}

GS_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    RESOLVE(cuMemAllocAsync, CUDA_ERROR_NOT_INITIALIZED);
    DRV_ALLOC(real_cuMemAllocAsync(p, n, s), *p, n, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC, s)
}

GS_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
    RESOLVE(cuMemAllocFromPoolAsync, CUDA_ERROR_NOT_INITIALIZED);
    DRV_ALLOC(real_cuMemAllocFromPoolAsync(p, n, pool, s), *p, n, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC, s)
}

GS_EXPORT CUresult cuMemFree(CUdeviceptr p)
{
    RESOLVE(cuMemFree, CUDA_ERROR_NOT_INITIALIZED);
    FREE_HOOK(real_cuMemFree(p), p, CUresult, CUDA_SUCCESS, driver_device())
}

GS_EXPORT CUresult cuMemFreeHost(void *p)
{
    RESOLVE(cuMemFreeHost, CUDA_ERROR_NOT_INITIALIZED);
    FREE_HOOK(real_cuMemFreeHost(p), p, CUresult, CUDA_SUCCESS, driver_device())
}

GS_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    RESOLVE(cuMemFreeAsync, CUDA_ERROR_NOT_INITIALIZED);
    FREE_HOOK(real_cuMemFreeAsync(p, s), p, CUresult, CUDA_SUCCESS, driver_device())
}

/* ---- context teardown: the driver frees every allocation of it ---- */

GS_EXPORT cudaError_t cudaDeviceReset(void)
{
    RESOLVE(cudaDeviceReset, cudaErrorInsufficientDriver);
    if (!active())
        return real_cudaDeviceReset();
    gs_tls.in_hook = 1;
    /* The runtime's primary context of the current device goes: the
     * runtime's blocks of that device, and the driver's made in it. */
    struct ctx_gone g = {current_ctx(), (int)runtime_device()};
    cudaError_t rc = real_cudaDeviceReset();
    if (rc == cudaSuccess)
        gs_drop_device_blocks(ctx_match, &g);
    gs_leave();
    return rc;
}

GS_EXPORT CUresult cuCtxDestroy(CUcontext c)
{
    RESOLVE(cuCtxDestroy, CUDA_ERROR_NOT_INITIALIZED);
    if (!active())
        return real_cuCtxDestroy(c);
    gs_tls.in_hook = 1;
    CUresult rc = real_cuCtxDestroy(c);
    struct ctx_gone g = {c, -1};
    if (rc == CUDA_SUCCESS && c)
        gs_drop_device_blocks(ctx_match, &g);
    gs_leave();
    return rc;
}

/* ---- dlsym through a handle (dlsym.c, registered by hooks.c) ---- */

/* A program that opens the CUDA library itself and looks an entry point up
 * through its handle (ctypes, PyTorch's driver loader) gets the hook. When
 * the hook has not found its real function yet, the one the program found
 * by that name in a library it opened is it: the hook adopts it rather
 * than look it up now (a failed dlsym here would leave an error for the
 * program's dlerror() after its own successful call). */
void *gs_cuda_dlsym_filter(const char *name, void *p);
void *gs_cuda_dlsym_filter(const char *name, void *p)
{
    if (name[0] != 'c' || name[1] != 'u')
        return p;
#define GS_CUDA_HOOK(fn)                                                      \
    if (!strcmp(name, GS_XSTR(fn))) {                                         \
        __typeof__(real_##fn) want = (__typeof__(real_##fn))p, none = NULL;   \
        __atomic_compare_exchange_n(&real_##fn, &none, want, 0, __ATOMIC_ACQ_REL, \
                                    __ATOMIC_ACQUIRE);                        \
        return (void *)real_##fn == p ? (void *)&fn : p;                      \
    }
#include "cuda_hooks.def"
#undef GS_CUDA_HOOK
    return p;
}

/* ---- entry points a PLT hook cannot see ---- */

/* cuGetProcAddress (both ABIs), and the runtime's cudaGetDriverEntryPoint
 * and cudaGetDriverEntryPointByVersion (which reach the driver through its
 * private table, never through the exported cuGetProcAddress), hand out
 * driver functions by name. The real driver returns its internal entry
 * points, not what the exported names resolve to, so the substitution goes
 * by name: when the caller asks, by its CUDA version and flags, for the very
 * variant a hook wraps (cuMemAlloc from 3.2 on is cuMemAlloc_v2), it gets
 * the hook, which calls the exported function of that variant (the same
 * code behind another door), or, when no exported one can be found, the
 * pointer the driver returned. Any other variant (an older ABI, the
 * per-thread default stream's _ptsz functions) is returned untouched:
 * CUPTI covers those (docs/gpu.md). */
CUresult gs_cuGetProcAddress_v1(const char *symbol, void **pfn, int version, cuuint64_t flags)
    __asm__("cuGetProcAddress");
static __typeof__(gs_cuGetProcAddress_v1) *real_cuGetProcAddress_v1;
/* cudaGetDriverEntryPoint is deprecated (for ...ByVersion), not gone. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static __typeof__(cudaGetDriverEntryPoint) *real_cudaGetDriverEntryPoint;
static __typeof__(cudaGetDriverEntryPointByVersion) *real_cudaGetDriverEntryPointByVersion;

struct proc_hook {
    const char *name;
    void *hook;
    void **real;
    const char *export_name;
    int since;  /* the CUDA version that brought the variant the hook wraps */
    int stream; /* has a stream argument: the per-thread flag picks another variant */
    int until;  /* a newer variant from this version on (0: none) */
};
#define PROC(base, fn, since, stream, until) \
    {base, (void *)&fn, (void **)&real_##fn, GS_XSTR(fn), since, stream, until}
static const struct proc_hook proc_hooks[] = {
    PROC("cuMemAlloc", cuMemAlloc, 3020, 0, 0),
    PROC("cuMemFree", cuMemFree, 3020, 0, 0),
    PROC("cuMemAllocHost", cuMemAllocHost, 3020, 0, 0),
    PROC("cuMemHostAlloc", cuMemHostAlloc, 2020, 0, 0),
    PROC("cuMemFreeHost", cuMemFreeHost, 2000, 0, 0),
    PROC("cuMemAllocManaged", cuMemAllocManaged, 6000, 0, 0),
    PROC("cuMemAllocPitch", cuMemAllocPitch, 3020, 0, 0),
    PROC("cuMemAllocAsync", cuMemAllocAsync, 11020, 1, 0),
    PROC("cuMemFreeAsync", cuMemFreeAsync, 11020, 1, 0),
    PROC("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020, 1, 0),
    PROC("cuMemMap", cuMemMap, 10020, 0, 0),
    PROC("cuMemUnmap", cuMemUnmap, 10020, 0, 0),
    PROC("cuMemCreate", cuMemCreate, 10020, 0, 0),
    PROC("cuMemRelease", cuMemRelease, 10020, 0, 0),
    PROC("cuMemAddressReserve", cuMemAddressReserve, 10020, 0, 0),
    PROC("cuMemAddressFree", cuMemAddressFree, 10020, 0, 0),
    PROC("cuCtxDestroy", cuCtxDestroy, 4000, 0, 0),
    {"cuGetProcAddress", (void *)&gs_cuGetProcAddress_v1, (void **)&real_cuGetProcAddress_v1,
     "cuGetProcAddress", 11030, 0, 12000},
    PROC("cuGetProcAddress", cuGetProcAddress, 12000, 0, 0),
};

static void substitute(const char *symbol, void **pfn, int version, uint64_t flags)
{
    if (!gs_opt.cuda || !symbol || !pfn || !*pfn)
        return;
    for (size_t i = 0; i < sizeof proc_hooks / sizeof proc_hooks[0]; i++) {
        const struct proc_hook *h = &proc_hooks[i];
        if (strcmp(symbol, h->name) || version < h->since || (h->until && version >= h->until))
            continue;
        if (h->stream && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
            return;
        if (!*h->real)
            *h->real = lookup(h->export_name);
        if (!*h->real) /* adopted once; the driver's entry is the same function */
            __atomic_compare_exchange_n(h->real, &(void *){NULL}, *pfn, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
        *pfn = h->hook;
        return;
    }
}

GS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    RESOLVE(cuGetProcAddress, CUDA_ERROR_NOT_INITIALIZED);
    CUresult rc = real_cuGetProcAddress(symbol, pfn, version, flags, status);
    if (rc == CUDA_SUCCESS)
        substitute(symbol, pfn, version, flags);
    return rc;
}

GS_EXPORT CUresult gs_cuGetProcAddress_v1(const char *symbol, void **pfn, int version,
                                          cuuint64_t flags)
{
    if (GS_UNLIKELY(!real_cuGetProcAddress_v1)) {
        real_cuGetProcAddress_v1 = (__typeof__(real_cuGetProcAddress_v1))lookup("cuGetProcAddress");
        if (!real_cuGetProcAddress_v1)
            return CUDA_ERROR_NOT_INITIALIZED;
    }
    CUresult rc = real_cuGetProcAddress_v1(symbol, pfn, version, flags);
    if (rc == CUDA_SUCCESS)
        substitute(symbol, pfn, version, flags);
    return rc;
}

/* The runtime asks for the variants of its own CUDA version, at least 11.3
 * (the first with this call): newer than any variant a hook wraps but the
 * v1 cuGetProcAddress, which the runtime never hands out for 12 and later. */
#define GS_RUNTIME_ENTRY_VERSION 12000

GS_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                              unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *status)
{
    RESOLVE(cudaGetDriverEntryPoint, cudaErrorInsufficientDriver);
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    cudaError_t rc = real_cudaGetDriverEntryPoint(symbol, funcPtr, flags, &st);
    if (status)
        *status = st;
    if (rc == cudaSuccess && st == cudaDriverEntryPointSuccess)
        substitute(symbol, funcPtr, GS_RUNTIME_ENTRY_VERSION, flags);
    return rc;
}

GS_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                       unsigned int version,
                                                       unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult *status)
{
    RESOLVE(cudaGetDriverEntryPointByVersion, cudaErrorInsufficientDriver);
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    cudaError_t rc = real_cudaGetDriverEntryPointByVersion(symbol, funcPtr, version, flags, &st);
    if (status)
        *status = st;
    if (rc == cudaSuccess && st == cudaDriverEntryPointSuccess)
        substitute(symbol, funcPtr, (int)version, flags);
    return rc;
}

/* ---- virtual memory management ---- */

static atomic_uint_fast64_t vmm_reserved, vmm_mapped, vmm_handles;

static void vmm_sample(void)
{
    gs_emit_device_sample(driver_device(), GS_MEM_VMM, atomic_load(&vmm_reserved),
                          atomic_load(&vmm_mapped), atomic_load(&vmm_handles), 0);
}

GS_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
                                       unsigned long long flags)
{
    RESOLVE(cuMemAddressReserve, CUDA_ERROR_NOT_INITIALIZED);
    if (!active())
        return real_cuMemAddressReserve(p, size, align, addr, flags);
    gs_tls.in_hook = 1;
    CUresult rc = real_cuMemAddressReserve(p, size, align, addr, flags);
    if (rc == CUDA_SUCCESS) {
        atomic_fetch_add(&vmm_reserved, size);
        vmm_sample();
    }
    gs_leave();
    return rc;
}

GS_EXPORT CUresult cuMemAddressFree(CUdeviceptr p, size_t size)
{
    RESOLVE(cuMemAddressFree, CUDA_ERROR_NOT_INITIALIZED);
    if (!active())
        return real_cuMemAddressFree(p, size);
    gs_tls.in_hook = 1;
    CUresult rc = real_cuMemAddressFree(p, size);
    if (rc == CUDA_SUCCESS) {
        atomic_fetch_sub(&vmm_reserved, size);
        vmm_sample();
    }
    gs_leave();
    return rc;
}

GS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
    RESOLVE(cuMemCreate, CUDA_ERROR_NOT_INITIALIZED);
    if (!active())
        return real_cuMemCreate(h, size, prop, flags);
    gs_tls.in_hook = 1;
    CUresult rc = real_cuMemCreate(h, size, prop, flags);
    if (rc == CUDA_SUCCESS) {
        atomic_fetch_add(&vmm_handles, 1);
        vmm_sample();
    }
    gs_leave();
    return rc;
}

GS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    RESOLVE(cuMemRelease, CUDA_ERROR_NOT_INITIALIZED);
    if (!active())
        return real_cuMemRelease(h);
    gs_tls.in_hook = 1;
    CUresult rc = real_cuMemRelease(h);
    if (rc == CUDA_SUCCESS) {
        atomic_fetch_sub(&vmm_handles, 1);
        vmm_sample();
    }
    gs_leave();
    return rc;
}

GS_EXPORT CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset,
                            CUmemGenericAllocationHandle h, unsigned long long flags)
{
    RESOLVE(cuMemMap, CUDA_ERROR_NOT_INITIALIZED);
    if (!active())
        return real_cuMemMap(p, size, offset, h, flags);
    gs_tls.in_hook = 1;
    uint64_t t0 = gs_now_fine();
    CUresult rc = real_cuMemMap(p, size, offset, h, flags);
    if (rc == CUDA_SUCCESS) {
        record_alloc(__builtin_frame_address(0), p, size, GS_MEM_VMM, GS_FN_CUDA_DRIVER,
                     driver_device(), 0, t0);
        atomic_fetch_add(&vmm_mapped, size);
        vmm_sample();
    }
    gs_leave();
    return rc;
}

GS_EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t size)
{
    RESOLVE(cuMemUnmap, CUDA_ERROR_NOT_INITIALIZED);
    if (!active())
        return real_cuMemUnmap(p, size);
    gs_tls.in_hook = 1;
    int e = errno;
    int was = gs_on_free(p);
    errno = e;
    CUresult rc = real_cuMemUnmap(p, size);
    if (rc == CUDA_SUCCESS && was) {
        atomic_fetch_sub(&vmm_mapped, size);
        vmm_sample();
    }
    gs_leave();
    return rc;
}
