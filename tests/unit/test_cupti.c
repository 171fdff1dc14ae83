/*
 * Unit tests of the CUPTI subscriber's record handling (cupti/records.c),
 * without a GPU: synthetic CUpti_CallbackData with the real cbids and
 * parameter structs, synthetic MEMORY2 (CUpti_ActivityMemory4) and
 * MEMORY_POOL (CUpti_ActivityMemoryPool3) records in buffers read with the
 * real libcupti's cuptiActivityGetNextRecord. The bridge is a recorder of
 * calls; each test asserts the exact calls made (kind, fn, size, address,
 * device, stream, stack flag), the dedupe between callbacks and records,
 * and that what is of no use is ignored. The last tests load the built
 * libgcspy_cupti.so and check it refuses, in one line, to attach with no
 * NVIDIA driver in the process.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "gcspy/trace_format.h"
#include "load.h"
#include "records.h"

/* ---- the fake bridge ---- */

enum { C_ALLOC = 1, C_FREE, C_SAMPLE, C_PAUSE };

struct call {
    int what;
    uint64_t addr, size;
    unsigned kind, fn, device;
    uint64_t stream, dur;
    int with_stack;
    uint64_t reserved, in_use, segments; /* samples */
    uint64_t t0, t1;                      /* pauses */
};

static struct call calls[256];
static int ncalls;
static int keep_calls = 1; /* 0: count them only (long runs) */
static struct call scratch;
static uint64_t fake_now = 1000000000ull; /* gcspy clock, ns */
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;

static struct call *add_call(int what)
{
    pthread_mutex_lock(&calls_lock);
    struct call *k = &scratch;
    if (keep_calls) {
        cr_assert_lt(ncalls, 256);
        k = &calls[ncalls];
    }
    ncalls++;
    memset(k, 0, sizeof *k);
    k->what = what;
    pthread_mutex_unlock(&calls_lock);
    return k;
}

static int f_alloc(uint64_t addr, uint64_t size, unsigned kind, unsigned fn, unsigned device,
                   uint64_t stream, uint64_t dur, int with_stack)
{
    struct call *k = add_call(C_ALLOC);
    k->addr = addr, k->size = size, k->kind = kind, k->fn = fn, k->device = device;
    k->stream = stream, k->dur = dur, k->with_stack = with_stack;
    return 1;
}

static int f_free(uint64_t addr)
{
    add_call(C_FREE)->addr = addr;
    return 1;
}

static void f_pause(uint64_t t0, uint64_t t1, unsigned kind, uint64_t a, uint64_t b)
{
    (void)b;
    struct call *k = add_call(C_PAUSE);
    k->t0 = t0, k->t1 = t1, k->kind = kind, k->device = (unsigned)a;
}

static void f_sample(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                     uint64_t segments, uint64_t largest_free)
{
    (void)largest_free;
    struct call *k = add_call(C_SAMPLE);
    k->device = device, k->kind = kind, k->reserved = reserved, k->in_use = in_use;
    k->segments = segments;
}

static uint64_t f_now(void)
{
    return fake_now;
}

/* Contexts are fake pointers: 0x1000 * (device + 1). */
static CUptiResult f_device_id(CUcontext ctx, uint32_t *dev)
{
    *dev = (uint32_t)((uintptr_t)ctx / 0x1000 - 1);
    return CUPTI_SUCCESS;
}

/* next_record is the real libcupti's (it needs no driver), loaded by the
 * tests that read buffers: the others keep the process free of libcupti. */
static struct gs_cupti_ops ops = {
    .device_alloc = f_alloc,
    .device_free = f_free,
    .pause = f_pause,
    .device_sample = f_sample,
    .now_ns = f_now,
    .device_id = f_device_id,
};

#ifndef GS_CUPTI_LIB
#define GS_CUPTI_LIB "/usr/local/cuda/lib64/libcupti.so"
#endif

static void load_real_cupti(void)
{
    void *h = dlopen(GS_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    ops.next_record = (__typeof__(ops.next_record))dlsym(h, "cuptiActivityGetNextRecord");
    cr_assert_not_null(ops.next_record);
}

static struct gs_cupti c;

#define CTX(dev) ((CUcontext)(uintptr_t)(0x1000 * ((dev) + 1)))

/* ---- driving the callbacks ---- */

static uint32_t next_corr = 100;

static void api(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                void *params, void *rc, unsigned dev, uint32_t corr)
{
    CUpti_CallbackData cb;
    memset(&cb, 0, sizeof cb);
    cb.callbackSite = site;
    cb.functionName = "test";
    cb.functionParams = params;
    cb.functionReturnValue = site == CUPTI_API_EXIT ? rc : NULL;
    cb.context = CTX(dev);
    cb.correlationId = corr;
    gs_cupti_on_api(&c, dom, cbid, &cb);
}

#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API
#define RTID(n) CUPTI_RUNTIME_TRACE_CBID_##n
#define DRVID(n) CUPTI_DRIVER_TRACE_CBID_##n

/* A runtime call whose out pointer gets `result` (the CUDA library's doing,
 * between entry and exit), lasting dur ns, returning rc. */
static void rt_call(CUpti_CallbackId cbid, void *params, void **out, void *result, int rc,
                    unsigned dev, uint64_t dur)
{
    cudaError_t e = (cudaError_t)rc;
    uint32_t corr = next_corr++;
    api(RT, cbid, CUPTI_API_ENTER, params, NULL, dev, corr);
    if (out && rc == 0)
        *out = result;
    fake_now += dur;
    api(RT, cbid, CUPTI_API_EXIT, params, &e, dev, corr);
}

static void drv_call(CUpti_CallbackId cbid, void *params, CUdeviceptr *out, CUdeviceptr result,
                     int rc, unsigned dev, uint64_t dur)
{
    CUresult e = (CUresult)rc;
    uint32_t corr = next_corr++;
    api(DRV, cbid, CUPTI_API_ENTER, params, NULL, dev, corr);
    if (out && rc == 0)
        *out = result;
    fake_now += dur;
    api(DRV, cbid, CUPTI_API_EXIT, params, &e, dev, corr);
}

static void setup(void)
{
    ncalls = 0;
    gs_cupti_init(&c, &ops, 1, 1);
    gs_cupti_calibrate(&c, 0, 0);
}

static void expect_alloc(int i, uint64_t addr, uint64_t size, unsigned kind, unsigned fn,
                         unsigned dev, uint64_t stream, int with_stack)
{
    cr_assert_lt(i, ncalls, "call %d missing (%d calls)", i, ncalls);
    struct call *k = &calls[i];
    cr_assert_eq(k->what, C_ALLOC, "call %d is not an allocation", i);
    cr_assert_eq(k->addr, addr, "call %d addr 0x%llx", i, (unsigned long long)k->addr);
    cr_assert_eq(k->size, size, "call %d size %llu", i, (unsigned long long)k->size);
    cr_assert_eq(k->kind, kind, "call %d kind %u", i, k->kind);
    cr_assert_eq(k->fn, fn, "call %d fn %u", i, k->fn);
    cr_assert_eq(k->device, dev, "call %d device %u", i, k->device);
    cr_assert_eq(k->stream, stream, "call %d stream %llx", i, (unsigned long long)k->stream);
    cr_assert_eq(k->with_stack, with_stack, "call %d with_stack", i);
}

static void expect_free(int i, uint64_t addr)
{
    cr_assert_lt(i, ncalls, "call %d missing (%d calls)", i, ncalls);
    cr_assert_eq(calls[i].what, C_FREE, "call %d is not a free", i);
    cr_assert_eq(calls[i].addr, addr, "call %d addr 0x%llx", i, (unsigned long long)calls[i].addr);
}

#define DEV_A 0x7f2000000000ull
#define DEV_B 0x7f2000200000ull
#define HOST_P 0x7f5500001000ull

/* ---- API callbacks ---- */

TestSuite(cupti_api, .init = setup);

Test(cupti_api, cuda_malloc_recorded_on_exit_with_stack_and_duration)
{
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 2097152};
    cudaError_t ok = cudaSuccess;
    uint32_t corr = next_corr++;
    api(RT, RTID(cudaMalloc_v3020), CUPTI_API_ENTER, &prm, NULL, 1, corr);
    cr_assert_eq(ncalls, 0, "nothing is recorded before the call returns");
    p = (void *)DEV_A;
    fake_now += 7000;
    api(RT, RTID(cudaMalloc_v3020), CUPTI_API_EXIT, &prm, &ok, 1, corr);
    cr_assert_eq(ncalls, 1);
    expect_alloc(0, DEV_A, 2097152, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 1, 0, 1);
    cr_assert_eq(calls[0].dur, 7000);
    cr_assert_eq(atomic_load(&c.st.api_events), 1);
}

Test(cupti_api, failed_allocation_makes_no_event)
{
    void *p = (void *)0x5e57;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = (size_t)1 << 40};
    rt_call(RTID(cudaMalloc_v3020), &prm, NULL, NULL, cudaErrorMemoryAllocation, 0, 1000);
    CUdeviceptr d = 0x5e57;
    cuMemAlloc_v2_params dp = {.dptr = &d, .bytesize = (size_t)1 << 40};
    drv_call(DRVID(cuMemAlloc_v2), &dp, NULL, 0, CUDA_ERROR_OUT_OF_MEMORY, 0, 1000);
    cr_assert_eq(ncalls, 0, "%d bridge calls for failed allocations", ncalls);
    cr_assert_eq(atomic_load(&c.st.api_failed), 2);
    /* ... and left no pending entry: a record for that address is new. */
    cr_assert_eq(c.npend, 0);
}

Test(cupti_api, free_recorded_on_entry_once)
{
    cudaFree_v3020_params prm = {.devPtr = (void *)DEV_A};
    cudaError_t ok = cudaSuccess;
    uint32_t corr = next_corr++;
    api(RT, RTID(cudaFree_v3020), CUPTI_API_ENTER, &prm, NULL, 0, corr);
    cr_assert_eq(ncalls, 1, "the free is recorded before the memory can be reused");
    expect_free(0, DEV_A);
    api(RT, RTID(cudaFree_v3020), CUPTI_API_EXIT, &prm, &ok, 0, corr);
    cr_assert_eq(ncalls, 1);
    /* cudaFree(NULL), the runtime's warm-up call, frees nothing. */
    cudaFree_v3020_params null = {.devPtr = NULL};
    rt_call(RTID(cudaFree_v3020), &null, NULL, NULL, 0, 0, 10);
    cr_assert_eq(ncalls, 1);
}

Test(cupti_api, failed_free_leaves_no_pending_entry)
{
    cudaFree_v3020_params prm = {.devPtr = (void *)HOST_P};
    rt_call(RTID(cudaFree_v3020), &prm, NULL, NULL, cudaErrorInvalidValue, 0, 10);
    cr_assert_eq(ncalls, 1, "the free is made on entry, before the result is known");
    expect_free(0, HOST_P);
    cr_assert_eq(c.npend, 0, "a failed free left a pending entry");
    /* So a later release of that address, seen by CUPTI only, counts. */
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.address = HOST_P;
    cr_assert_eq(gs_cupti_on_record(&c, (CUpti_Activity *)&m), GS_CUPTI_SENT);
}

Test(cupti_api, nested_driver_call_is_the_runtime_calls_business)
{
    void *p = NULL;
    CUdeviceptr d = 0;
    cudaMalloc_v3020_params rp = {.devPtr = &p, .size = 4096};
    cuMemAlloc_v2_params dp = {.dptr = &d, .bytesize = 4096};
    cudaError_t ok = cudaSuccess;
    CUresult dok = CUDA_SUCCESS;
    api(RT, RTID(cudaMalloc_v3020), CUPTI_API_ENTER, &rp, NULL, 0, 1);
    api(DRV, DRVID(cuMemAlloc_v2), CUPTI_API_ENTER, &dp, NULL, 0, 2);
    d = DEV_A;
    api(DRV, DRVID(cuMemAlloc_v2), CUPTI_API_EXIT, &dp, &dok, 0, 2);
    p = (void *)DEV_A;
    api(RT, RTID(cudaMalloc_v3020), CUPTI_API_EXIT, &rp, &ok, 0, 1);
    cr_assert_eq(ncalls, 1, "one call, one event (%d)", ncalls);
    expect_alloc(0, DEV_A, 4096, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 1);
    cr_assert_eq(atomic_load(&c.st.api_nested), 1);
    /* The same for a free, then a top-level driver call is recorded again. */
    cudaFree_v3020_params rf = {.devPtr = (void *)DEV_A};
    cuMemFree_v2_params df = {.dptr = DEV_A};
    api(RT, RTID(cudaFree_v3020), CUPTI_API_ENTER, &rf, NULL, 0, 3);
    api(DRV, DRVID(cuMemFree_v2), CUPTI_API_ENTER, &df, NULL, 0, 4);
    api(DRV, DRVID(cuMemFree_v2), CUPTI_API_EXIT, &df, &dok, 0, 4);
    api(RT, RTID(cudaFree_v3020), CUPTI_API_EXIT, &rf, &ok, 0, 3);
    cr_assert_eq(ncalls, 2);
    expect_free(1, DEV_A);
    drv_call(DRVID(cuMemAlloc_v2), &dp, &d, DEV_B, 0, 0, 10);
    cr_assert_eq(ncalls, 3);
    expect_alloc(2, DEV_B, 4096, GS_MEM_DEVICE, GS_FN_CUDA_DRIVER, 0, 0, 1);
}

Test(cupti_api, every_allocation_call_with_its_kind_fn_size_and_stream)
{
    void *p = NULL;
    CUdeviceptr d = 0;
    size_t pitch = 1024;
    cudaStream_t s = (cudaStream_t)0xabc0;

    cudaMallocHost_v3020_params mh = {.ptr = &p, .size = 4096};
    rt_call(RTID(cudaMallocHost_v3020), &mh, &p, (void *)HOST_P, 0, 0, 10);
    expect_alloc(0, HOST_P, 4096, GS_MEM_PINNED, GS_FN_CUDA_RUNTIME, 0, 0, 1);

    cudaHostAlloc_v3020_params ha = {.pHost = &p, .size = 100, .flags = 0};
    rt_call(RTID(cudaHostAlloc_v3020), &ha, &p, (void *)(HOST_P + 0x1000), 0, 0, 10);
    expect_alloc(1, HOST_P + 0x1000, 100, GS_MEM_PINNED, GS_FN_CUDA_RUNTIME, 0, 0, 1);

    cudaMallocManaged_v6000_params mm = {.devPtr = &p, .size = 1000, .flags = 1};
    rt_call(RTID(cudaMallocManaged_v6000), &mm, &p, (void *)(HOST_P + 0x2000), 0, 2, 10);
    expect_alloc(2, HOST_P + 0x2000, 1000, GS_MEM_MANAGED, GS_FN_CUDA_RUNTIME, 2, 0, 1);

    cudaMallocPitch_v3020_params mp = {.devPtr = &p, .pitch = &pitch, .width = 1000, .height = 10};
    rt_call(RTID(cudaMallocPitch_v3020), &mp, &p, (void *)DEV_A, 0, 0, 10);
    expect_alloc(3, DEV_A, 10240, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 1);

    struct cudaPitchedPtr pp = {.ptr = NULL, .pitch = 512, .xsize = 300, .ysize = 4};
    cudaMalloc3D_v3020_params m3 = {.pitchedDevPtr = &pp, .extent = {.width = 300, .height = 4, .depth = 5}};
    rt_call(RTID(cudaMalloc3D_v3020), &m3, &pp.ptr, (void *)DEV_B, 0, 0, 10);
    expect_alloc(4, DEV_B, 512 * 4 * 5, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 1);

    cudaMallocAsync_v11020_params ma = {.devPtr = &p, .size = 1 << 20, .hStream = s};
    rt_call(RTID(cudaMallocAsync_v11020), &ma, &p, (void *)(DEV_A + 0x100000), 0, 0, 10);
    expect_alloc(5, DEV_A + 0x100000, 1 << 20, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC, 0, 0xabc0, 1);

    cudaMallocFromPoolAsync_ptsz_v11020_params mf = {.ptr = &p, .size = 512, .memPool = NULL, .stream = s};
    rt_call(RTID(cudaMallocFromPoolAsync_ptsz_v11020), &mf, &p, (void *)(DEV_A + 0x200000), 0, 0, 10);
    expect_alloc(6, DEV_A + 0x200000, 512, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC, 0, 0xabc0, 1);

    cuMemAllocPitch_v2_params dpp = {.dptr = &d, .pPitch = &pitch, .WidthInBytes = 1000, .Height = 3, .ElementSizeBytes = 4};
    drv_call(DRVID(cuMemAllocPitch_v2), &dpp, &d, DEV_A + 0x300000, 0, 1, 10);
    expect_alloc(7, DEV_A + 0x300000, 3072, GS_MEM_DEVICE, GS_FN_CUDA_DRIVER, 1, 0, 1);

    cuMemHostAlloc_params dha = {.pp = &p, .bytesize = 8192, .Flags = 0};
    rt_call(0, NULL, NULL, NULL, 0, 0, 0); /* cbid 0 (invalid): not ours, no call */
    api(DRV, DRVID(cuMemHostAlloc), CUPTI_API_ENTER, &dha, NULL, 0, 900);
    p = (void *)(HOST_P + 0x3000);
    CUresult ok = CUDA_SUCCESS;
    api(DRV, DRVID(cuMemHostAlloc), CUPTI_API_EXIT, &dha, &ok, 0, 900);
    expect_alloc(8, HOST_P + 0x3000, 8192, GS_MEM_PINNED, GS_FN_CUDA_DRIVER, 0, 0, 1);

    cuMemAllocManaged_params dam = {.dptr = &d, .bytesize = 64, .flags = 1};
    drv_call(DRVID(cuMemAllocManaged), &dam, &d, HOST_P + 0x4000, 0, 0, 10);
    expect_alloc(9, HOST_P + 0x4000, 64, GS_MEM_MANAGED, GS_FN_CUDA_DRIVER, 0, 0, 1);

    cuMemAllocFromPoolAsync_ptsz_params dfp = {.dptr = &d, .bytesize = 12345, .pool = NULL, .hStream = (CUstream)0xdef0};
    drv_call(DRVID(cuMemAllocFromPoolAsync_ptsz), &dfp, &d, DEV_A + 0x400000, 0, 0, 10);
    expect_alloc(10, DEV_A + 0x400000, 12345, GS_MEM_DEVICE, GS_FN_CUDA_ASYNC, 0, 0xdef0, 1);
    cr_assert_eq(ncalls, 11);

    /* And the driver's frees. */
    cuMemFreeHost_params fh = {.p = (void *)(HOST_P + 0x3000)};
    drv_call(DRVID(cuMemFreeHost), &fh, NULL, 0, 0, 0, 10);
    cuMemFreeAsync_params fa = {.dptr = DEV_A + 0x400000, .hStream = (CUstream)0xdef0};
    drv_call(DRVID(cuMemFreeAsync), &fa, NULL, 0, 0, 0, 10);
    cudaFreeAsync_ptsz_v11020_params rfa = {.devPtr = (void *)(DEV_A + 0x200000), .hStream = s};
    rt_call(RTID(cudaFreeAsync_ptsz_v11020), &rfa, NULL, NULL, 0, 0, 10);
    cr_assert_eq(ncalls, 14);
    expect_free(11, HOST_P + 0x3000);
    expect_free(12, DEV_A + 0x400000);
    expect_free(13, DEV_A + 0x200000);
}

Test(cupti_api, calls_not_subscribed_do_nothing)
{
    cudaMemcpy_v3020_params cp = {0};
    cudaError_t ok = cudaSuccess;
    api(RT, RTID(cudaMemcpy_v3020), CUPTI_API_ENTER, &cp, NULL, 0, 1);
    api(RT, RTID(cudaMemcpy_v3020), CUPTI_API_EXIT, &cp, &ok, 0, 1);
    cr_assert_eq(ncalls, 0);
    /* The enable list holds exactly what the handler reads. */
    cr_assert_eq(gs_cupti_ncbids, 33);
    int has_malloc = 0, has_map = 0, has_memcpy = 0;
    for (unsigned i = 0; i < gs_cupti_ncbids; i++) {
        if (gs_cupti_cbids[i].domain == RT && gs_cupti_cbids[i].cbid == RTID(cudaMalloc_v3020))
            has_malloc = 1;
        if (gs_cupti_cbids[i].domain == DRV && gs_cupti_cbids[i].cbid == DRVID(cuMemMap))
            has_map = 1;
        if (gs_cupti_cbids[i].cbid == RTID(cudaMemcpy_v3020) && gs_cupti_cbids[i].domain == RT)
            has_memcpy = 1;
    }
    cr_assert(has_malloc && has_map && !has_memcpy);
}

Test(cupti_api, long_calls_are_sync_pauses)
{
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 256};
    uint64_t t0 = fake_now;
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)DEV_A, 0, 3, GS_CUPTI_SYNC_NS);
    cr_assert_eq(ncalls, 2);
    cr_assert_eq(calls[1].what, C_PAUSE);
    cr_assert_eq(calls[1].kind, GS_PAUSE_CUDA_SYNC);
    cr_assert_eq(calls[1].t0, t0);
    cr_assert_eq(calls[1].t1, t0 + GS_CUPTI_SYNC_NS);
    cr_assert_eq(calls[1].device, 3);
    cudaFree_v3020_params f = {.devPtr = (void *)DEV_A};
    rt_call(RTID(cudaFree_v3020), &f, NULL, NULL, 0, 0, GS_CUPTI_SYNC_NS - 1);
    cr_assert_eq(ncalls, 3, "a free shorter than %u ns is no pause", GS_CUPTI_SYNC_NS);
}

Test(cupti_api, vmm_blocks_and_figures)
{
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h = 0;
    const size_t g = 2 << 20;
    cuMemAddressReserve_params rs = {.ptr = &va, .size = 4 * g, .alignment = 0, .addr = 0, .flags = 0};
    drv_call(DRVID(cuMemAddressReserve), &rs, &va, DEV_A, 0, 0, 10);
    cuMemCreate_params cr = {.handle = &h, .size = 2 * g, .prop = NULL, .flags = 0};
    drv_call(DRVID(cuMemCreate), &cr, NULL, 0, 0, 0, 10);
    cuMemMap_params mp = {.ptr = DEV_A, .size = 2 * g, .offset = 0, .handle = h, .flags = 0};
    drv_call(DRVID(cuMemMap), &mp, NULL, 0, 0, 0, 10);
    cuMemMap_params mp2 = {.ptr = DEV_A + 2 * g, .size = 2 * g, .offset = 0, .handle = h, .flags = 0};
    drv_call(DRVID(cuMemMap), &mp2, NULL, 0, 0, 0, 10);
    cuMemRelease_params rl = {.handle = h};
    drv_call(DRVID(cuMemRelease), &rl, NULL, 0, 0, 0, 10);
    cuMemUnmap_params um = {.ptr = DEV_A + 2 * g, .size = 2 * g};
    drv_call(DRVID(cuMemUnmap), &um, NULL, 0, 0, 0, 10);
    cuMemUnmap_params um2 = {.ptr = DEV_A, .size = 2 * g};
    drv_call(DRVID(cuMemUnmap), &um2, NULL, 0, 0, 0, 10);
    cuMemAddressFree_params af = {.ptr = DEV_A, .size = 4 * g};
    drv_call(DRVID(cuMemAddressFree), &af, NULL, 0, 0, 0, 10);

    /* reserved, mapped, handles after each change; blocks for each mapping. */
    struct {
        int what;
        uint64_t addr, a, b, n;
    } want[] = {
        {C_SAMPLE, 0, 4 * g, 0, 0},
        {C_SAMPLE, 0, 4 * g, 0, 1},
        {C_ALLOC, DEV_A, 2 * g, 0, 0},
        {C_SAMPLE, 0, 4 * g, 2 * g, 1},
        {C_ALLOC, DEV_A + 2 * g, 2 * g, 0, 0},
        {C_SAMPLE, 0, 4 * g, 4 * g, 1},
        {C_SAMPLE, 0, 4 * g, 4 * g, 0},
        {C_FREE, DEV_A + 2 * g, 0, 0, 0},
        {C_SAMPLE, 0, 4 * g, 2 * g, 0},
        {C_FREE, DEV_A, 0, 0, 0},
        {C_SAMPLE, 0, 4 * g, 0, 0},
        {C_SAMPLE, 0, 0, 0, 0},
    };
    cr_assert_eq(ncalls, (int)(sizeof want / sizeof want[0]), "%d calls", ncalls);
    for (int i = 0; i < ncalls; i++) {
        cr_assert_eq(calls[i].what, want[i].what, "call %d", i);
        if (want[i].what == C_SAMPLE) {
            cr_assert_eq(calls[i].kind, GS_MEM_VMM);
            cr_assert_eq(calls[i].reserved, want[i].a, "call %d reserved", i);
            cr_assert_eq(calls[i].in_use, want[i].b, "call %d mapped", i);
            cr_assert_eq(calls[i].segments, want[i].n, "call %d handles", i);
        } else if (want[i].what == C_ALLOC) {
            expect_alloc(i, want[i].addr, want[i].a, GS_MEM_VMM, GS_FN_CUDA_DRIVER, 0, 0, 1);
        } else {
            expect_free(i, want[i].addr);
        }
    }
    /* VMM calls leave no pending entry: MEMORY2 has no record for them. */
    cr_assert_eq(c.npend, 0);
}

Test(cupti_api, no_vmm_figures_when_the_hooks_write_them)
{
    gs_cupti_init(&c, &ops, 1, 0);
    CUdeviceptr va = 0;
    cuMemAddressReserve_params rs = {.ptr = &va, .size = 1 << 21};
    drv_call(DRVID(cuMemAddressReserve), &rs, &va, DEV_A, 0, 0, 10);
    cuMemMap_params mp = {.ptr = DEV_A, .size = 1 << 21};
    drv_call(DRVID(cuMemMap), &mp, NULL, 0, 0, 0, 10);
    cr_assert_eq(ncalls, 1);
    expect_alloc(0, DEV_A, 1 << 21, GS_MEM_VMM, GS_FN_CUDA_DRIVER, 0, 0, 1);
}

/* ---- activity records ---- */

static CUpti_ActivityMemory4 mem_rec(int op, int mkind, uint64_t addr, uint64_t bytes,
                                     uint32_t dev, uint32_t corr)
{
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = (CUpti_ActivityMemoryOperationType)op;
    m.memoryKind = (CUpti_ActivityMemoryKind)mkind;
    m.correlationId = corr;
    m.address = addr;
    m.bytes = bytes;
    m.timestamp = fake_now;
    m.deviceId = dev;
    m.contextId = 1;
    m.streamId = CUPTI_INVALID_STREAM_ID;
    return m;
}

#define ALLOC_OP CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
#define RELEASE_OP CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE

static int feed(CUpti_ActivityMemory4 m)
{
    return gs_cupti_on_record(&c, (CUpti_Activity *)&m);
}

TestSuite(cupti_activity, .init = setup);

Test(cupti_activity, records_of_calls_the_callbacks_saw_are_repeats)
{
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 1 << 20};
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)DEV_A, 0, 0, 10);
    cudaFree_v3020_params f = {.devPtr = (void *)DEV_A};
    rt_call(RTID(cudaFree_v3020), &f, NULL, NULL, 0, 0, 10);
    cr_assert_eq(ncalls, 2);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 1 << 20, 0, 100)),
                 GS_CUPTI_REPEAT);
    cr_assert_eq(feed(mem_rec(RELEASE_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 1 << 20, 0, 101)),
                 GS_CUPTI_REPEAT);
    cr_assert_eq(ncalls, 2, "records of seen calls made %d more calls", ncalls - 2);
    cr_assert_eq(c.npend, 0, "matched entries are gone");
    cr_assert_eq(atomic_load(&c.st.repeats), 2);
}

Test(cupti_activity, records_nothing_saw_go_to_the_bridge_without_stack)
{
    CUpti_ActivityMemory4 m = mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 5 << 20, 2, 7);
    m.isAsync = 1;
    m.streamId = 13;
    cr_assert_eq(feed(m), GS_CUPTI_SENT);
    expect_alloc(0, DEV_A, 5 << 20, GS_MEM_DEVICE, GS_FN_CUPTI, 2, 13, 0);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, HOST_P, 4096, 0, 8)), GS_CUPTI_SENT);
    expect_alloc(1, HOST_P, 4096, GS_MEM_PINNED, GS_FN_CUPTI, 0, 0, 0);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, HOST_P + 4096, 64, 1, 9)), GS_CUPTI_SENT);
    expect_alloc(2, HOST_P + 4096, 64, GS_MEM_MANAGED, GS_FN_CUPTI, 1, 0, 0);
    cr_assert_eq(feed(mem_rec(RELEASE_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 5 << 20, 2, 10)), GS_CUPTI_SENT);
    expect_free(3, DEV_A);
    cr_assert_eq(ncalls, 4);
}

Test(cupti_activity, one_address_reused_counts_each_event)
{
    /* Callbacks: alloc, free, alloc at one address; then a context
     * teardown frees it with no API free call. */
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 256};
    cudaFree_v3020_params f = {.devPtr = (void *)DEV_A};
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)DEV_A, 0, 0, 10);
    rt_call(RTID(cudaFree_v3020), &f, NULL, NULL, 0, 0, 10);
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)DEV_A, 0, 0, 10);
    cr_assert_eq(ncalls, 3);
    int want[] = {GS_CUPTI_REPEAT, GS_CUPTI_REPEAT, GS_CUPTI_REPEAT, GS_CUPTI_SENT};
    int ops_[] = {ALLOC_OP, RELEASE_OP, ALLOC_OP, RELEASE_OP};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(feed(mem_rec(ops_[i], CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 256, 0, 200 + i)),
                     want[i], "record %d", i);
    cr_assert_eq(ncalls, 4);
    expect_free(3, DEV_A);
    /* A repeat of the last record is new again (the bridge sorts out that
     * nothing is live there). */
    cr_assert_eq(feed(mem_rec(RELEASE_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 256, 0, 300)),
                 GS_CUPTI_SENT);
}

Test(cupti_activity, without_memory2_callbacks_leave_no_pending_entries)
{
    gs_cupti_init(&c, &ops, 0, 1);
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 256};
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)DEV_A, 0, 0, 10);
    cr_assert_eq(ncalls, 1);
    cr_assert_eq(c.npend, 0);
}

Test(cupti_activity, what_is_of_no_use_is_ignored)
{
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, DEV_A, 256, 0, 1)), GS_CUPTI_IGNORED);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC, DEV_A, 256, 0, 1)), GS_CUPTI_IGNORED);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, DEV_A, 256, 0, 1)), GS_CUPTI_IGNORED);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, DEV_A, 256, 0, 1)), GS_CUPTI_IGNORED);
    cr_assert_eq(feed(mem_rec(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 256, 0, 1)),
                 GS_CUPTI_IGNORED);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 256, 0, 1)), GS_CUPTI_IGNORED);
    CUpti_ActivityAPI k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    k.cbid = RTID(cudaMalloc_v3020);
    cr_assert_eq(gs_cupti_on_record(&c, (CUpti_Activity *)&k), GS_CUPTI_IGNORED);
    CUpti_ActivityMemoryPool3 ip;
    memset(&ip, 0, sizeof ip);
    ip.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    ip.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
    ip.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
    ip.address = DEV_B;
    cr_assert_eq(gs_cupti_on_record(&c, (CUpti_Activity *)&ip), GS_CUPTI_IGNORED);
    cr_assert_eq(ncalls, 0);
    cr_assert_eq(atomic_load(&c.st.ignored), 8);
    cr_assert_eq(atomic_load(&c.st.records), 8);
}

static CUpti_ActivityMemoryPool3 pool_rec(int op, uint64_t base, uint64_t size, uint64_t used,
                                          uint32_t dev)
{
    CUpti_ActivityMemoryPool3 p;
    memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    p.memoryPoolOperationType = (CUpti_ActivityMemoryPoolOperationType)op;
    p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    p.deviceId = dev;
    p.address = base;
    p.size = size;
    p.utilizedSize = used;
    p.timestamp = fake_now;
    return p;
}

static void expect_sample(int i, unsigned dev, uint64_t reserved, uint64_t used, uint64_t pools)
{
    cr_assert_lt(i, ncalls, "call %d missing", i);
    cr_assert_eq(calls[i].what, C_SAMPLE, "call %d is not a sample", i);
    cr_assert_eq(calls[i].kind, GS_MEM_DEVICE);
    cr_assert_eq(calls[i].device, dev, "call %d device", i);
    cr_assert_eq(calls[i].reserved, reserved, "call %d reserved %llu", i, (unsigned long long)calls[i].reserved);
    cr_assert_eq(calls[i].in_use, used, "call %d in_use %llu", i, (unsigned long long)calls[i].in_use);
    cr_assert_eq(calls[i].segments, pools, "call %d pools", i);
}

Test(cupti_activity, pool_records_become_device_samples)
{
#define POOL_OP(x) CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_##x
    CUpti_ActivityMemoryPool3 r;
    r = pool_rec(POOL_OP(CREATED), DEV_A, 32 << 20, 0, 1);
    cr_assert_eq(gs_cupti_on_record(&c, (CUpti_Activity *)&r), GS_CUPTI_SAMPLED);
    expect_sample(0, 1, 32 << 20, 0, 1);
    r = pool_rec(POOL_OP(CREATED), DEV_B, 2 << 20, 1 << 20, 1);
    gs_cupti_on_record(&c, (CUpti_Activity *)&r);
    expect_sample(1, 1, 34 << 20, 1 << 20, 2);
    r = pool_rec(POOL_OP(TRIMMED), DEV_A, 8 << 20, 0, 1);
    gs_cupti_on_record(&c, (CUpti_Activity *)&r);
    expect_sample(2, 1, 10 << 20, 1 << 20, 2);
    /* A record with nothing new makes no sample. */
    gs_cupti_on_record(&c, (CUpti_Activity *)&r);
    cr_assert_eq(ncalls, 3);
    /* Another device's pool is summed apart. */
    r = pool_rec(POOL_OP(CREATED), DEV_A, 4096, 0, 0);
    gs_cupti_on_record(&c, (CUpti_Activity *)&r);
    expect_sample(3, 0, 4096, 0, 1);
    r = pool_rec(POOL_OP(DESTROYED), DEV_A, 0, 0, 1);
    gs_cupti_on_record(&c, (CUpti_Activity *)&r);
    expect_sample(4, 1, 2 << 20, 1 << 20, 1);
    r = pool_rec(POOL_OP(DESTROYED), DEV_B, 0, 0, 1);
    gs_cupti_on_record(&c, (CUpti_Activity *)&r);
    expect_sample(5, 1, 0, 0, 0);
    cr_assert_eq(ncalls, 6);
    /* Pool allocations carry their pool's figures too. */
    CUpti_ActivityMemory4 m = mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A + 0x1000, 4096, 0, 50);
    m.isAsync = 1;
    m.streamId = 7;
    m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    m.memoryPoolConfig.address = DEV_A;
    m.memoryPoolConfig.pool.size = 2 << 20;
    m.memoryPoolConfig.utilizedSize = 8192;
    cr_assert_eq(feed(m), GS_CUPTI_SENT);
    cr_assert_eq(ncalls, 8);
    expect_sample(6, 0, 2 << 20, 8192, 1);
    expect_alloc(7, DEV_A + 0x1000, 4096, GS_MEM_DEVICE, GS_FN_CUPTI, 0, 7, 0);
    /* Pool addresses are kept complemented, never as plain pointers. */
    for (unsigned i = 0; i < GS_CUPTI_POOLS; i++)
        cr_assert_neq(c.pools[i].key, DEV_A);
}

Test(cupti_activity, a_buffer_read_with_the_real_cupti)
{
    load_real_cupti();
    /* A MEMORY2 allocation, a pool creation, a MEMORY2 release: laid out as
     * CUPTI lays them (each record 8-aligned, its kind first). */
    static uint8_t buf[4096] __attribute__((aligned(8)));
    size_t off = 0;
    CUpti_ActivityMemory4 a = mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_B, 3 << 20, 0, 1);
    CUpti_ActivityMemoryPool3 p = pool_rec(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, DEV_A, 1 << 20, 0, 0);
    CUpti_ActivityMemory4 r = mem_rec(RELEASE_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_B, 3 << 20, 0, 2);
    memcpy(buf + off, &a, sizeof a), off += sizeof a;
    memcpy(buf + off, &p, sizeof p), off += sizeof p;
    memcpy(buf + off, &r, sizeof r), off += sizeof r;
    cr_assert_eq(gs_cupti_on_buffer(&c, buf, off), 3);
    cr_assert_eq(ncalls, 3);
    expect_alloc(0, DEV_B, 3 << 20, GS_MEM_DEVICE, GS_FN_CUPTI, 0, 0, 0);
    expect_sample(1, 0, 1 << 20, 0, 1);
    expect_free(2, DEV_B);
    cr_assert_eq(gs_cupti_on_buffer(&c, buf, 0), 0);
    cr_assert_eq(gs_cupti_on_buffer(&c, NULL, 100), 0);
}

/* A record handled while its call has not reached its exit callback (CUPTI
 * completed the buffer on another thread in between) waits for it. */
static CUpti_ActivityMemory4 racing;
static int racing_outcome;

static void *handle_racing(void *arg)
{
    (void)arg;
    racing_outcome = gs_cupti_on_record(&c, (CUpti_Activity *)&racing);
    return NULL;
}

Test(cupti_activity, a_record_waits_for_its_calls_exit_callback)
{
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 4096};
    cudaError_t ok = cudaSuccess;
    api(RT, RTID(cudaMalloc_v3020), CUPTI_API_ENTER, &prm, NULL, 0, 4242);
    p = (void *)DEV_A;
    racing = mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 4096, 0, 4242);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, handle_racing, NULL), 0);
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_assert_eq(ncalls, 0, "the record was handled before its call returned");
    api(RT, RTID(cudaMalloc_v3020), CUPTI_API_EXIT, &prm, &ok, 0, 4242);
    pthread_join(t, NULL);
    cr_assert_eq(racing_outcome, GS_CUPTI_REPEAT);
    cr_assert_eq(ncalls, 1);
    expect_alloc(0, DEV_A, 4096, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 1);
    cr_assert_eq(atomic_load(&c.st.waits), 1);
}

Test(cupti_activity, no_wait_for_a_call_on_the_same_thread)
{
    /* CUPTI completing a buffer inside the very call: waiting would never end. */
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 4096};
    api(RT, RTID(cudaMalloc_v3020), CUPTI_API_ENTER, &prm, NULL, 0, 77);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 4096, 0, 77)), GS_CUPTI_SENT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_lt((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec), 50000000L);
    cr_assert_eq(atomic_load(&c.st.waits), 0);
}

Test(cupti_activity, clock_calibration)
{
    gs_cupti_calibrate(&c, 1796032852168894918ull, 5000000ull);
    cr_assert_eq(gs_cupti_time(&c, 1796032852168894918ull + 123), 5000123ull);
    cr_assert_eq(gs_cupti_time(&c, 1796032852168894918ull - 6000000ull), 0, "before t=0 is 0");
}

Test(cupti_activity, stale_pending_entries_are_dropped)
{
    gs_cupti_calibrate(&c, 0, 0);
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 256};
    /* 40000 allocations whose records never come (CUPTI dropped them). */
    keep_calls = 0;
    for (uint64_t i = 0; i < 40000; i++)
        rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)(DEV_A + i * 256), 0, 0, 10);
    cr_assert_eq(c.npend, 40000);
    cr_assert_eq(ncalls, 40000);
    ncalls = 0;
    keep_calls = 1;
    /* Records 3 s later arrive for other addresses... */
    fake_now += 3000000000ull;
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_B + (1ull << 32), 256, 0, 1)),
                 GS_CUPTI_SENT);
    /* ... and the next pending entry made sweeps the stale ones out. */
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)(DEV_B + (2ull << 32)), 0, 0, 10);
    cr_assert_eq(atomic_load(&c.st.pending_stale), 40000);
    cr_assert_eq(c.npend, 1);
    /* The survivor still matches its record; a swept address is new again. */
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_B + (2ull << 32), 256, 0, 2)),
                 GS_CUPTI_REPEAT);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A + 256, 256, 0, 3)),
                 GS_CUPTI_SENT);
    /* No plain address in the table. */
    for (uint32_t i = 0; i < GS_CUPTI_PENDING; i++)
        cr_assert(!c.pend[i].key || c.pend[i].key > 0xffff000000000000ull);
}

Test(cupti_activity, entries_a_flush_did_not_match_are_dropped)
{
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 256};
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)DEV_A, 0, 0, 10);
    uint64_t t_a = fake_now;
    fake_now += 500000000ull;
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)DEV_B, 0, 0, 10);
    cr_assert_eq(c.npend, 2);
    /* A flush begun 0.9 s after the first event: too close to judge. */
    gs_cupti_flushed(&c, t_a + 900000000ull);
    cr_assert_eq(c.npend, 2);
    /* One begun 1.2 s after it delivered everything made before: the first
     * entry's record is not coming; the second is still too young. */
    fake_now += 1000000000ull;
    gs_cupti_flushed(&c, t_a + 1200000000ull);
    cr_assert_eq(c.npend, 1);
    cr_assert_eq(atomic_load(&c.st.pending_stale), 1);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_A, 256, 0, 1)), GS_CUPTI_SENT);
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_B, 256, 0, 2)), GS_CUPTI_REPEAT);
}

/* Another CUPTI client registering its activity callbacks after ours: the
 * calls keep coming, their records do not, the entries go stale. */
Test(cupti_activity, another_client_taking_the_buffers_is_told_once)
{
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 256};
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_B, 256, 0, 1)), GS_CUPTI_SENT);
    cr_assert_eq(gs_cupti_taken_over(&c), 0, "records flow");
    uint64_t t0 = fake_now;
    for (uint64_t i = 0; i < 3; i++)
        rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)(DEV_A + i * 256), 0, 0, 10);
    fake_now += 1500000000ull;
    gs_cupti_flushed(&c, t0 + 1200000000ull);
    cr_assert_eq(atomic_load(&c.st.pending_stale), 3);
    cr_assert_eq(gs_cupti_taken_over(&c), 1);
    cr_assert(c.taken);
    rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)(DEV_A + 4096), 0, 0, 10);
    fake_now += 1500000000ull;
    gs_cupti_flushed(&c, fake_now - 1200000000ull);
    cr_assert_eq(gs_cupti_taken_over(&c), 0, "said once");
}

Test(cupti_activity, unmatched_entries_with_records_flowing_are_no_takeover)
{
    void *p = NULL;
    cudaMalloc_v3020_params prm = {.devPtr = &p, .size = 256};
    uint64_t t0 = fake_now;
    for (uint64_t i = 0; i < 3; i++)
        rt_call(RTID(cudaMalloc_v3020), &prm, &p, (void *)(DEV_A + i * 256), 0, 0, 10);
    fake_now += 1500000000ull;
    /* records of other calls arrive: CUPTI lost these three, nothing more */
    cr_assert_eq(feed(mem_rec(ALLOC_OP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, DEV_B, 256, 0, 1)), GS_CUPTI_SENT);
    gs_cupti_flushed(&c, t0 + 1200000000ull);
    cr_assert_eq(atomic_load(&c.st.pending_stale), 3);
    cr_assert_eq(gs_cupti_taken_over(&c), 0);
    /* without MEMORY2 records nothing is expected back */
    c.activity = 0;
    cr_assert_eq(gs_cupti_taken_over(&c), 0);
}

/* ---- which libcupti: its CUDA version against the driver's ---- */

Test(cupti_library, the_cupti_soname_gives_its_cuda_version)
{
    void *h = dlopen(GS_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    cr_assert_eq(gs_cupti_soname_major(h), 13, "the toolkit here is CUDA 13");
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_eq(gs_cupti_soname_major(libc), 6);
    cr_assert_eq(gs_cupti_soname_major(NULL), -1);
    cr_assert(gs_cupti_fits(13000, 13) && gs_cupti_fits(13020, 12) && !gs_cupti_fits(12080, 13));
    cr_assert(gs_cupti_fits(0, 13) && gs_cupti_fits(12080, -1), "unknown versions fit");
}

Test(cupti_library, a_cupti_newer_than_the_driver_is_passed_over_in_one_line)
{
    struct gs_cupti_lib l;
    char err[512];
    /* A CUDA 12.8 driver: the toolkit's CUDA 13 CUPTI would refuse to attach. */
    cr_assert_eq(gs_cupti_lib_load(&l, 12080, err, sizeof err), -1);
    cr_assert(!strncmp(err, "no libcupti fits the driver (CUDA 12.8): ", 41), "%s", err);
    cr_assert_not_null(strstr(err, "libcupti.so (CUDA 13)"), "%s", err);
    cr_assert_not_null(strstr(err, ", newer than the driver"), "%s", err);
    cr_assert_null(strchr(err, '\n'));
    cr_assert_null(l.handle);
    /* A CUDA 13.0 driver, or one that does not say: it loads. */
    cr_assert_eq(gs_cupti_lib_load(&l, 13000, err, sizeof err), 0, "%s", err);
    cr_assert_eq(l.cuda_major, 13);
    cr_assert_not_null(strstr(l.path, "libcupti.so"), "%s", l.path);
    cr_assert_eq(gs_cupti_lib_load(&l, 0, err, sizeof err), 0, "%s", err);
}

/* ---- the built library, with no NVIDIA driver ---- */

#ifndef GS_CUPTI_SO
#define GS_CUPTI_SO "build/libgcspy_cupti.so"
#endif

Test(cupti_library, refuses_to_attach_without_a_driver_in_one_line)
{
    void *h = dlopen(GS_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    int (*inject)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
    int (*attach)(void) = (int (*)(void))dlsym(h, "gcspy_cupti_attach");
    int (*flush)(void) = (int (*)(void))dlsym(h, "gcspy_cupti_flush");
    const char *(*error)(void) = (const char *(*)(void))dlsym(h, "gcspy_cupti_error");
    cr_assert(inject && attach && flush && error, "an entry point is not exported");
    cr_assert_null(error());
    setenv("GCSPY_QUIET", "1", 1);
    cr_assert_eq(attach(), -1);
    cr_assert_str_eq(error(), "no CUDA driver (libcuda.so.1) in the process");
    cr_assert_eq(inject(), 0, "the driver's entry point says 0 on failure");
    cr_assert_eq(flush(), -1);
    /* Nothing was loaded on the way: neither CUPTI nor the gcspy core. */
    cr_assert_null(dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD));
    cr_assert_null(dlopen("libgcspy.so", RTLD_NOW | RTLD_NOLOAD));
    cr_assert_eq(strchr(error(), '\n'), NULL);
}

Test(cupti_library, refuses_a_driver_that_is_not_nvidias)
{
    /* The CUDA test double has the driver's soname and API but no export
     * tables, which CUPTI needs. */
    void *drv = dlopen(GS_CUDA_DOUBLE_DRIVER, RTLD_NOW | RTLD_GLOBAL);
    cr_assert_not_null(drv, "%s", dlerror());
    void *h = dlopen(GS_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    int (*attach)(void) = (int (*)(void))dlsym(h, "gcspy_cupti_attach");
    const char *(*error)(void) = (const char *(*)(void))dlsym(h, "gcspy_cupti_error");
    cr_assert_eq(attach(), -1);
    cr_assert_str_eq(error(), "the libcuda.so.1 in the process is not NVIDIA's driver "
                              "(no cuGetExportTable): CUPTI cannot attach to it");
    cr_assert_eq(attach(), -1, "a failed attach is not retried");
    cr_assert_null(dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD));
}
