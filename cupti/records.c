/*
 * The CUPTI subscriber's record handling (records.h): API callbacks and
 * activity records turned into bridge calls, with the dedupe between the
 * two. Needs CUPTI's headers, not its library and not a GPU: everything it
 * calls goes through struct gs_cupti_ops.
 *
 * Threads: gs_cupti_on_api runs on any program thread, inside the CUDA call;
 * gs_cupti_on_record on the subscriber's buffer thread. The parameter
 * structs (generated_cuda_meta.h, generated_cuda_runtime_api_meta.h) come
 * in through cupti.h, which must define the _v1 types they use first. They share the
 * pending table (c->lock) and the in-flight slots (atomics). The per-thread
 * nesting state is thread-local (initial-exec: this library may be dlopened,
 * and a few bytes fit the loader's static TLS reserve).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gcspy/trace_format.h"
#include "records.h"

/* ---- the subscribed calls ---- */

enum op {
    OP_ALLOC = 1,  /* out pointer on exit */
    OP_FREE,       /* address on entry */
    OP_MAP,        /* cuMemMap: a VMM block */
    OP_UNMAP,      /* cuMemUnmap */
    OP_RESERVE,    /* VMM figures only */
    OP_ADDR_FREE,
    OP_CREATE,
    OP_RELEASE,
};

struct api {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    uint8_t op, kind, fn;
};

/* The calls the PLT hooks also wrap (preload/cuda_hooks.c), with the same
 * kind and fn, plus their per-thread-stream variants. One list for the
 * table below and for gs_cupti_cbids (what the subscriber enables). */
#define GS_CUPTI_APIS(X)                                                       \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, OP_ALLOC, GS_MEM_PINNED, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, OP_ALLOC, GS_MEM_PINNED, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, OP_ALLOC, GS_MEM_MANAGED, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, OP_FREE, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, OP_FREE, GS_MEM_PINNED, GS_FN_CUDA_RUNTIME) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, OP_FREE, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020, OP_FREE, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, OP_ALLOC, GS_MEM_PINNED, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, OP_ALLOC, GS_MEM_PINNED, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, OP_ALLOC, GS_MEM_MANAGED, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, OP_ALLOC, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, OP_FREE, GS_MEM_DEVICE, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, OP_FREE, GS_MEM_PINNED, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, OP_FREE, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, OP_FREE, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, OP_RESERVE, GS_MEM_VMM, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, OP_ADDR_FREE, GS_MEM_VMM, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, OP_CREATE, GS_MEM_VMM, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemRelease, OP_RELEASE, GS_MEM_VMM, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemMap, OP_MAP, GS_MEM_VMM, GS_FN_CUDA_DRIVER) \
    X(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, OP_UNMAP, GS_MEM_VMM, GS_FN_CUDA_DRIVER)

#define API_ENTRY(dom, id, op, kind, fn) {CUPTI_CB_DOMAIN_##dom##_API, id, op, kind, fn},
#define CBID_ENTRY(dom, id, op, kind, fn) {CUPTI_CB_DOMAIN_##dom##_API, id},
static const struct api apis[] = {GS_CUPTI_APIS(API_ENTRY)};
const struct gs_cupti_cbid gs_cupti_cbids[] = {GS_CUPTI_APIS(CBID_ENTRY)};
#define NAPIS (sizeof apis / sizeof apis[0])
const unsigned gs_cupti_ncbids = NAPIS;

static const struct api *api_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    for (size_t i = 0; i < NAPIS; i++)
        if (apis[i].cbid == cbid && apis[i].domain == domain)
            return &apis[i];
    return NULL;
}

/* The arguments of a call, from its parameter struct (the generated_*_meta.h
 * layouts). Allocations: where the result pointer is written, and the size
 * (which for pitched and 3D calls needs the results too, so it is read on
 * exit). Frees: the address. */
struct args {
    uint64_t addr;   /* OP_FREE, OP_MAP, OP_UNMAP, OP_ADDR_FREE: the address */
    uint64_t size;
    uint64_t stream;
};

#define P(type) ((const type *)params)

/* Allocations, read on exit (results written). 0: unknown cbid. */
static int alloc_args(const struct api *a, const void *params, struct args *o)
{
    memset(o, 0, sizeof *o);
    switch (a->cbid + (a->domain == CUPTI_CB_DOMAIN_DRIVER_API ? 100000u : 0u)) {
#define RTC(name) case CUPTI_RUNTIME_TRACE_CBID_##name:
#define DRC(name) case 100000u + CUPTI_DRIVER_TRACE_CBID_##name:
    RTC(cudaMalloc_v3020)
        o->addr = (uintptr_t)*P(cudaMalloc_v3020_params)->devPtr;
        o->size = P(cudaMalloc_v3020_params)->size;
        return 1;
    RTC(cudaMallocPitch_v3020)
        o->addr = (uintptr_t)*P(cudaMallocPitch_v3020_params)->devPtr;
        o->size = *P(cudaMallocPitch_v3020_params)->pitch * P(cudaMallocPitch_v3020_params)->height;
        return 1;
    RTC(cudaMalloc3D_v3020) {
        const cudaMalloc3D_v3020_params *p = P(cudaMalloc3D_v3020_params);
        o->addr = (uintptr_t)p->pitchedDevPtr->ptr;
        o->size = p->pitchedDevPtr->pitch * p->extent.height * p->extent.depth;
        return 1;
    }
    RTC(cudaMallocHost_v3020)
        o->addr = (uintptr_t)*P(cudaMallocHost_v3020_params)->ptr;
        o->size = P(cudaMallocHost_v3020_params)->size;
        return 1;
    RTC(cudaHostAlloc_v3020)
        o->addr = (uintptr_t)*P(cudaHostAlloc_v3020_params)->pHost;
        o->size = P(cudaHostAlloc_v3020_params)->size;
        return 1;
    RTC(cudaMallocManaged_v6000)
        o->addr = (uintptr_t)*P(cudaMallocManaged_v6000_params)->devPtr;
        o->size = P(cudaMallocManaged_v6000_params)->size;
        return 1;
    RTC(cudaMallocAsync_v11020)
    RTC(cudaMallocAsync_ptsz_v11020) /* same layout */
        o->addr = (uintptr_t)*P(cudaMallocAsync_v11020_params)->devPtr;
        o->size = P(cudaMallocAsync_v11020_params)->size;
        o->stream = (uintptr_t)P(cudaMallocAsync_v11020_params)->hStream;
        return 1;
    RTC(cudaMallocFromPoolAsync_v11020)
    RTC(cudaMallocFromPoolAsync_ptsz_v11020)
        o->addr = (uintptr_t)*P(cudaMallocFromPoolAsync_v11020_params)->ptr;
        o->size = P(cudaMallocFromPoolAsync_v11020_params)->size;
        o->stream = (uintptr_t)P(cudaMallocFromPoolAsync_v11020_params)->stream;
        return 1;
    DRC(cuMemAlloc_v2)
        o->addr = *P(cuMemAlloc_v2_params)->dptr;
        o->size = P(cuMemAlloc_v2_params)->bytesize;
        return 1;
    DRC(cuMemAllocPitch_v2)
        o->addr = *P(cuMemAllocPitch_v2_params)->dptr;
        o->size = *P(cuMemAllocPitch_v2_params)->pPitch * P(cuMemAllocPitch_v2_params)->Height;
        return 1;
    DRC(cuMemAllocHost_v2)
        o->addr = (uintptr_t)*P(cuMemAllocHost_v2_params)->pp;
        o->size = P(cuMemAllocHost_v2_params)->bytesize;
        return 1;
    DRC(cuMemHostAlloc)
        o->addr = (uintptr_t)*P(cuMemHostAlloc_params)->pp;
        o->size = P(cuMemHostAlloc_params)->bytesize;
        return 1;
    DRC(cuMemAllocManaged)
        o->addr = *P(cuMemAllocManaged_params)->dptr;
        o->size = P(cuMemAllocManaged_params)->bytesize;
        return 1;
    DRC(cuMemAllocAsync)
    DRC(cuMemAllocAsync_ptsz)
        o->addr = *P(cuMemAllocAsync_params)->dptr;
        o->size = P(cuMemAllocAsync_params)->bytesize;
        o->stream = (uintptr_t)P(cuMemAllocAsync_params)->hStream;
        return 1;
    DRC(cuMemAllocFromPoolAsync)
    DRC(cuMemAllocFromPoolAsync_ptsz)
        o->addr = *P(cuMemAllocFromPoolAsync_params)->dptr;
        o->size = P(cuMemAllocFromPoolAsync_params)->bytesize;
        o->stream = (uintptr_t)P(cuMemAllocFromPoolAsync_params)->hStream;
        return 1;
    /* VMM: read on exit too (the reservation's address is a result). */
    DRC(cuMemAddressReserve)
        o->addr = *P(cuMemAddressReserve_params)->ptr;
        o->size = P(cuMemAddressReserve_params)->size;
        return 1;
    DRC(cuMemAddressFree)
        o->addr = P(cuMemAddressFree_params)->ptr;
        o->size = P(cuMemAddressFree_params)->size;
        return 1;
    DRC(cuMemCreate)
        o->size = P(cuMemCreate_params)->size;
        return 1;
    DRC(cuMemRelease)
        return 1;
    DRC(cuMemMap)
        o->addr = P(cuMemMap_params)->ptr;
        o->size = P(cuMemMap_params)->size;
        return 1;
    DRC(cuMemUnmap)
        o->addr = P(cuMemUnmap_params)->ptr;
        o->size = P(cuMemUnmap_params)->size;
        return 1;
    default:
        return 0;
    }
}

/* Frees, read on entry. */
static uint64_t free_addr(const struct api *a, const void *params)
{
    switch (a->cbid + (a->domain == CUPTI_CB_DOMAIN_DRIVER_API ? 100000u : 0u)) {
    RTC(cudaFree_v3020)
        return (uintptr_t)P(cudaFree_v3020_params)->devPtr;
    RTC(cudaFreeHost_v3020)
        return (uintptr_t)P(cudaFreeHost_v3020_params)->ptr;
    RTC(cudaFreeAsync_v11020)
    RTC(cudaFreeAsync_ptsz_v11020)
        return (uintptr_t)P(cudaFreeAsync_v11020_params)->devPtr;
    DRC(cuMemFree_v2)
        return P(cuMemFree_v2_params)->dptr;
    DRC(cuMemFreeHost)
        return (uintptr_t)P(cuMemFreeHost_params)->p;
    DRC(cuMemFreeAsync)
    DRC(cuMemFreeAsync_ptsz)
        return P(cuMemFreeAsync_params)->dptr;
    DRC(cuMemUnmap)
        return P(cuMemUnmap_params)->ptr;
    default:
        return 0;
    }
#undef RTC
#undef DRC
}
#undef P

/* ---- set-up and clock ---- */

void gs_cupti_init(struct gs_cupti *c, const struct gs_cupti_ops *ops, int activity,
                   int vmm_samples)
{
    memset(c, 0, sizeof *c);
    c->ops = ops;
    c->activity = activity;
    c->vmm_samples = vmm_samples;
    pthread_mutex_init(&c->lock, NULL);
}

void gs_cupti_calibrate(struct gs_cupti *c, uint64_t cupti_ns, uint64_t gcspy_ns)
{
    c->clock_offset = (int64_t)(gcspy_ns - cupti_ns);
}

uint64_t gs_cupti_time(const struct gs_cupti *c, uint64_t cupti_ns)
{
    int64_t t = (int64_t)cupti_ns + c->clock_offset;
    return t > 0 ? (uint64_t)t : 0;
}

/* ---- pending entries (c->lock held) ---- */

static inline uint64_t hide(uint64_t addr)
{
    return ~addr;
}

static inline uint32_t slot_of(uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 40) & (GS_CUPTI_PENDING - 1);
}

static struct gs_cupti_pend *pend_find(struct gs_cupti *c, uint64_t key)
{
    for (uint32_t i = slot_of(key), n = 0; n < GS_CUPTI_PENDING; i = (i + 1) & (GS_CUPTI_PENDING - 1), n++) {
        if (c->pend[i].key == key)
            return &c->pend[i];
        if (!c->pend[i].key)
            return NULL;
    }
    return NULL;
}

/* Linear probing with backward-shift deletion: no tombstones to sweep. */
static void pend_delete(struct gs_cupti *c, struct gs_cupti_pend *e)
{
    uint32_t i = (uint32_t)(e - c->pend);
    for (uint32_t j = (i + 1) & (GS_CUPTI_PENDING - 1);; j = (j + 1) & (GS_CUPTI_PENDING - 1)) {
        if (!c->pend[j].key)
            break;
        uint32_t home = slot_of(c->pend[j].key);
        /* j's entry may move into i when its home is not in (i, j]. */
        if (((j - home) & (GS_CUPTI_PENDING - 1)) >= ((j - i) & (GS_CUPTI_PENDING - 1))) {
            c->pend[i] = c->pend[j];
            i = j;
        }
    }
    memset(&c->pend[i], 0, sizeof c->pend[i]);
    c->npend--;
}

static int stale(const struct gs_cupti *c, const struct gs_cupti_pend *e, uint64_t abandon_before)
{
    return (c->newest_ns > e->t_ns && c->newest_ns - e->t_ns > GS_CUPTI_STALE_NS) ||
           (c->flushed_ns > e->t_ns && c->flushed_ns - e->t_ns > GS_CUPTI_FLUSHED_NS) ||
           e->t_ns < abandon_before;
}

/* Drops entries no record will match any more. */
static void pend_sweep(struct gs_cupti *c, uint64_t now)
{
    for (int pass = 0; pass < 2; pass++) {
        uint64_t abandon = pass && now > GS_CUPTI_ABANDON_NS ? now - GS_CUPTI_ABANDON_NS : 0;
        for (uint32_t i = 0; i < GS_CUPTI_PENDING;) {
            struct gs_cupti_pend *e = &c->pend[i];
            if (e->key && stale(c, e, abandon)) {
                atomic_fetch_add(&c->st.pending_stale, 1);
                pend_delete(c, e); /* may shift a later entry into slot i */
                continue;
            }
            i++;
        }
        if (c->npend < GS_CUPTI_PENDING * 3 / 4)
            break;
    }
}

void gs_cupti_flushed(struct gs_cupti *c, uint64_t t)
{
    pthread_mutex_lock(&c->lock);
    if (t > c->flushed_ns)
        c->flushed_ns = t;
    if (c->npend)
        pend_sweep(c, c->ops->now_ns());
    pthread_mutex_unlock(&c->lock);
}

/* Another CUPTI client that registers its own activity callbacks after us
 * (Nsight Systems attaching, torch.profiler's Kineto) takes the activity
 * buffers: our API callbacks go on seeing the allocation calls, but their
 * MEMORY2 records never come back to us, and the pending entries the calls
 * left go stale (gs_cupti_flushed sweeps them). Between two calls: entries
 * went stale (2 or more), no record at all arrived, and CUPTI dropped none
 * (dropped records also leave entries unmatched). */
int gs_cupti_taken_over(struct gs_cupti *c)
{
    uint64_t r = atomic_load(&c->st.records), st = atomic_load(&c->st.pending_stale),
             d = atomic_load(&c->st.dropped);
    int yes = c->activity && !c->taken && r == c->to_records && d == c->to_dropped &&
              st >= c->to_stale + 2;
    c->to_records = r;
    c->to_stale = st;
    c->to_dropped = d;
    if (yes)
        c->taken = 1;
    return yes;
}

/* A callback handled an event: its record is to be dropped. */
static void pend_add(struct gs_cupti *c, uint64_t addr, int is_free, uint64_t now)
{
    uint64_t key = hide(addr);
    pthread_mutex_lock(&c->lock);
    struct gs_cupti_pend *e = pend_find(c, key);
    if (!e) {
        /* Sweeping reads the whole table: at most every 50 ms. */
        if (c->npend >= GS_CUPTI_PENDING / 2 && now - c->last_sweep_ns >= 50000000ull) {
            c->last_sweep_ns = now;
            pend_sweep(c, now);
        }
        if (c->npend >= GS_CUPTI_PENDING * 3 / 4) {
            atomic_fetch_add(&c->st.pending_full, 1);
            pthread_mutex_unlock(&c->lock);
            return;
        }
        uint32_t i = slot_of(key);
        while (c->pend[i].key)
            i = (i + 1) & (GS_CUPTI_PENDING - 1);
        e = &c->pend[i];
        e->key = key;
        c->npend++;
    }
    if (is_free)
        e->frees++;
    else
        e->allocs++;
    e->t_ns = now;
    pthread_mutex_unlock(&c->lock);
}

/* A record for addr: 1 when a callback already handled its event. */
static int pend_take(struct gs_cupti *c, uint64_t addr, int is_free)
{
    int hit = 0;
    pthread_mutex_lock(&c->lock);
    struct gs_cupti_pend *e = pend_find(c, hide(addr));
    if (e) {
        uint32_t *n = is_free ? &e->frees : &e->allocs;
        if (*n) {
            (*n)--;
            hit = 1;
            if (!e->allocs && !e->frees)
                pend_delete(c, e);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

/* ---- calls in flight ---- */

static __thread __attribute__((tls_model("initial-exec"))) struct {
    int depth;           /* subscribed calls this thread is inside */
    int nslots;
    uint16_t slots[8];   /* in-flight slots this thread holds */
    uint64_t t_enter;    /* gcspy time at the outermost call's entry */
} tls;

static uint64_t self_tid(void)
{
    return (uint64_t)syscall(SYS_gettid);
}

static void flight_enter(struct gs_cupti *c, uint32_t corr)
{
    if (tls.nslots >= (int)(sizeof tls.slots / sizeof tls.slots[0]))
        return;
    unsigned long long v = (unsigned long long)corr | self_tid() << 32;
    for (uint32_t i = 0; i < GS_CUPTI_INFLIGHT; i++) {
        unsigned long long zero = 0;
        if (atomic_compare_exchange_strong(&c->inflight[(corr + i) % GS_CUPTI_INFLIGHT], &zero, v)) {
            tls.slots[tls.nslots++] = (uint16_t)((corr + i) % GS_CUPTI_INFLIGHT);
            return;
        }
    }
}

static void flight_leave_all(struct gs_cupti *c)
{
    for (int i = 0; i < tls.nslots; i++)
        atomic_store(&c->inflight[tls.slots[i]], 0);
    tls.nslots = 0;
}

/* Whether call corr is between its entry and exit callbacks on another
 * thread (on this one it cannot finish while we wait). */
static int flight_busy(struct gs_cupti *c, uint32_t corr)
{
    uint64_t me = self_tid();
    for (uint32_t i = 0; i < GS_CUPTI_INFLIGHT; i++) {
        unsigned long long v = atomic_load(&c->inflight[(corr + i) % GS_CUPTI_INFLIGHT]);
        if (v && (uint32_t)v == corr && (v >> 32) != me)
            return 1;
    }
    return 0;
}

/* ---- API callbacks ---- */

static unsigned device_of(struct gs_cupti *c, CUcontext ctx)
{
    uint32_t d = 0;
    if (!ctx || !c->ops->device_id || c->ops->device_id(ctx, &d) != CUPTI_SUCCESS)
        return 0;
    return d;
}

static int call_ok(CUpti_CallbackDomain domain, const CUpti_CallbackData *cb)
{
    if (!cb->functionReturnValue)
        return 0;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        return *(const cudaError_t *)cb->functionReturnValue == cudaSuccess;
    return *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
}

static void vmm_sample(struct gs_cupti *c, unsigned device)
{
    if (c->vmm_samples && c->ops->device_sample)
        c->ops->device_sample(device, GS_MEM_VMM, atomic_load(&c->vmm_reserved),
                              atomic_load(&c->vmm_mapped), atomic_load(&c->vmm_handles), 0);
}

static void pause_if_long(struct gs_cupti *c, uint64_t t0, uint64_t t1, unsigned device)
{
    if (t1 > t0 && t1 - t0 >= GS_CUPTI_SYNC_NS && c->ops->pause)
        c->ops->pause(t0, t1, GS_PAUSE_CUDA_SYNC, device, 0);
}

static int on_enter(struct gs_cupti *c, const struct api *a, const CUpti_CallbackData *cb)
{
    int nested = tls.depth++ > 0;
    if (a->op == OP_ALLOC || a->op == OP_MAP)
        flight_enter(c, cb->correlationId);
    if (nested) {
        atomic_fetch_add(&c->st.api_nested, 1);
        return 0;
    }
    uint64_t now = c->ops->now_ns();
    tls.t_enter = now;
    if (a->op != OP_FREE && a->op != OP_UNMAP)
        return 0;
    /* Frees are recorded before the memory can be reused (as the hooks do). */
    uint64_t addr = free_addr(a, cb->functionParams);
    if (!addr)
        return 0;
    if (c->activity && a->op == OP_FREE)
        pend_add(c, addr, 1, now);
    c->ops->device_free(addr);
    atomic_fetch_add(&c->st.api_events, 1);
    return 1;
}

static int on_exit_cb(struct gs_cupti *c, CUpti_CallbackDomain domain, const struct api *a,
                      const CUpti_CallbackData *cb)
{
    /* An exit without its entry (subscribed mid-call) counts as top-level. */
    if (tls.depth > 0 && --tls.depth > 0)
        return 0;
    int made = 0;
    uint64_t now = c->ops->now_ns();
    uint64_t t0 = tls.t_enter && tls.t_enter <= now ? tls.t_enter : now;
    tls.t_enter = 0;
    struct args ar;
    if (!call_ok(domain, cb)) {
        if (a->op == OP_ALLOC)
            atomic_fetch_add(&c->st.api_failed, 1);
        /* A failed free releases nothing: no record will match its entry.
         * (The bridge free already made stays: under the shim the hook,
         * which saw the call first, puts the block back itself.) */
        uint64_t addr;
        if (a->op == OP_FREE && c->activity && (addr = free_addr(a, cb->functionParams)))
            pend_take(c, addr, 1);
    } else if (a->op == OP_FREE) {
        pause_if_long(c, t0, now, device_of(c, cb->context));
    } else if (alloc_args(a, cb->functionParams, &ar)) {
        unsigned dev = device_of(c, cb->context);
        switch (a->op) {
        case OP_ALLOC:
            if (!ar.addr)
                break;
            /* Pending first: the record may be handled the moment the
             * in-flight slot is released below. */
            if (c->activity)
                pend_add(c, ar.addr, 0, now);
            c->ops->device_alloc(ar.addr, ar.size, a->kind, a->fn, dev, ar.stream, now - t0, 1);
            pause_if_long(c, t0, now, dev);
            made = 1;
            break;
        case OP_MAP:
            c->ops->device_alloc(ar.addr, ar.size, GS_MEM_VMM, a->fn, dev, 0, now - t0, 1);
            atomic_fetch_add(&c->vmm_mapped, ar.size);
            vmm_sample(c, dev);
            made = 1;
            break;
        case OP_UNMAP:
            atomic_fetch_sub(&c->vmm_mapped, ar.size);
            vmm_sample(c, dev);
            break;
        case OP_RESERVE:
            atomic_fetch_add(&c->vmm_reserved, ar.size);
            vmm_sample(c, dev);
            break;
        case OP_ADDR_FREE:
            atomic_fetch_sub(&c->vmm_reserved, ar.size);
            vmm_sample(c, dev);
            break;
        case OP_CREATE:
            atomic_fetch_add(&c->vmm_handles, 1);
            vmm_sample(c, dev);
            break;
        case OP_RELEASE:
            atomic_fetch_sub(&c->vmm_handles, 1);
            vmm_sample(c, dev);
            break;
        }
    }
    flight_leave_all(c);
    if (made)
        atomic_fetch_add(&c->st.api_events, 1);
    return made;
}

int gs_cupti_on_api(struct gs_cupti *c, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const CUpti_CallbackData *cb)
{
    const struct api *a = api_of(domain, cbid);
    if (!a || !cb)
        return 0;
    int e = errno;
    int made = cb->callbackSite == CUPTI_API_ENTER ? on_enter(c, a, cb) : on_exit_cb(c, domain, a, cb);
    errno = e;
    return made;
}

/* ---- activity records ---- */

static int mem_kind(CUpti_ActivityMemoryKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
        return GS_MEM_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
        return GS_MEM_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
        return GS_MEM_MANAGED;
    default: /* pageable, arrays, static (module) memory: not allocations */
        return -1;
    }
}

/* Sums the pools of one device into a DEVICE_SAMPLE (reserved: pool sizes,
 * in_use: their used bytes, segments: how many pools). */
static void pool_sample(struct gs_cupti *c, uint32_t device)
{
    uint64_t size = 0, used = 0, n = 0;
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < GS_CUPTI_POOLS; i++)
        if (c->pools[i].key && c->pools[i].device == device) {
            size += c->pools[i].size;
            used += c->pools[i].used;
            n++;
        }
    pthread_mutex_unlock(&c->lock);
    if (c->ops->device_sample)
        c->ops->device_sample(device, GS_MEM_DEVICE, size, used, n, 0);
    atomic_fetch_add(&c->st.pool_samples, 1);
}

/* Sets (or with gone, removes) a pool's figures; 1 when they changed. */
static int pool_set(struct gs_cupti *c, uint32_t device, uint64_t base, uint64_t size,
                    uint64_t used, int gone)
{
    uint64_t key = hide(base);
    int changed = 0;
    pthread_mutex_lock(&c->lock);
    struct gs_cupti_pool *p = NULL, *free_slot = NULL;
    for (uint32_t i = 0; i < GS_CUPTI_POOLS; i++) {
        if (c->pools[i].key == key && c->pools[i].device == device)
            p = &c->pools[i];
        else if (!c->pools[i].key && !free_slot)
            free_slot = &c->pools[i];
    }
    if (gone) {
        if (p) {
            memset(p, 0, sizeof *p);
            changed = 1;
        }
    } else {
        if (!p && free_slot) {
            p = free_slot;
            p->key = key;
            p->device = device;
            changed = 1;
        }
        if (p && (p->size != size || p->used != used)) {
            p->size = size;
            p->used = used;
            changed = 1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return changed;
}

static void saw_time(struct gs_cupti *c, uint64_t cupti_ns)
{
    if (!cupti_ns)
        return;
    uint64_t t = gs_cupti_time(c, cupti_ns);
    pthread_mutex_lock(&c->lock);
    if (t > c->newest_ns)
        c->newest_ns = t;
    pthread_mutex_unlock(&c->lock);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static int on_memory(struct gs_cupti *c, const CUpti_ActivityMemory4 *m)
{
    int kind = mem_kind(m->memoryKind);
    int is_free = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    if (kind < 0 || !m->address ||
        (!is_free && m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION))
        return GS_CUPTI_IGNORED;
    saw_time(c, m->timestamp);
    if (m->memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL &&
        m->memoryPoolConfig.address &&
        pool_set(c, m->deviceId, m->memoryPoolConfig.address, m->memoryPoolConfig.pool.size,
                 m->memoryPoolConfig.utilizedSize, 0))
        pool_sample(c, m->deviceId);

    int repeat = pend_take(c, m->address, is_free);
    if (!repeat && !is_free && flight_busy(c, m->correlationId)) {
        /* The call that made this record has not reached its exit callback:
         * wait for it to leave its pending entry. */
        atomic_fetch_add(&c->st.waits, 1);
        uint64_t until = mono_ns() + GS_CUPTI_WAIT_NS;
        while (flight_busy(c, m->correlationId) && mono_ns() < until)
            sleep_ns(20000);
        repeat = pend_take(c, m->address, is_free);
    }
    if (repeat) {
        atomic_fetch_add(&c->st.repeats, 1);
        return GS_CUPTI_REPEAT;
    }
    if (is_free) {
        c->ops->device_free(m->address);
    } else {
        uint64_t stream = m->isAsync && m->streamId != CUPTI_INVALID_STREAM_ID ? m->streamId : 0;
        c->ops->device_alloc(m->address, m->bytes, (unsigned)kind, GS_FN_CUPTI, m->deviceId,
                             stream, 0, 0);
    }
    atomic_fetch_add(&c->st.sent, 1);
    return GS_CUPTI_SENT;
}

static int on_pool(struct gs_cupti *c, const CUpti_ActivityMemoryPool3 *p)
{
    if (p->memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL || !p->address)
        return GS_CUPTI_IGNORED;
    saw_time(c, p->timestamp);
    int changed;
    switch (p->memoryPoolOperationType) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
        changed = pool_set(c, p->deviceId, p->address, p->size, p->utilizedSize, 0);
        break;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
        changed = pool_set(c, p->deviceId, p->address, 0, 0, 1);
        break;
    default:
        return GS_CUPTI_IGNORED;
    }
    if (changed)
        pool_sample(c, p->deviceId);
    return GS_CUPTI_SAMPLED;
}

int gs_cupti_on_record(struct gs_cupti *c, const CUpti_Activity *rec)
{
    int r;
    atomic_fetch_add(&c->st.records, 1);
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        r = on_memory(c, (const CUpti_ActivityMemory4 *)rec);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
        r = on_pool(c, (const CUpti_ActivityMemoryPool3 *)rec);
        break;
    default:
        r = GS_CUPTI_IGNORED;
        break;
    }
    if (r == GS_CUPTI_IGNORED)
        atomic_fetch_add(&c->st.ignored, 1);
    return r;
}

size_t gs_cupti_on_buffer(struct gs_cupti *c, uint8_t *buf, size_t valid)
{
    size_t n = 0;
    CUpti_Activity *rec = NULL;
    if (!buf || !valid)
        return 0;
    int e = errno;
    while (c->ops->next_record(buf, valid, &rec) == CUPTI_SUCCESS && rec) {
        gs_cupti_on_record(c, rec);
        n++;
    }
    errno = e;
    return n;
}
