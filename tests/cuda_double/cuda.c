/* The driver API entry points of the CUDA double (libcuda.so.1), apart
 * from virtual memory management (vmm.c).
 *
 * Compiled against the real cuda.h with __CUDA_API_VERSION_INTERNAL, as the
 * real driver is, so every exported name (cuMemAlloc_v2, cuCtxCreate_v4,
 * ...) has the header's prototype and the compiler checks each signature.
 * Driver manners are kept: nothing works before cuInit, allocation needs a
 * current context, sizes of 0 are errors where the driver documents so.
 *
 * cuGetProcAddress returns these same functions, by the base name a CUDA
 * version asks for ("cuMemAlloc" -> cuMemAlloc_v2), so a program can reach
 * them without going through the dynamic linker, as with the real driver,
 * and like it through internal entry points (trampolines) whose addresses
 * differ from the exported names'. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ROUND_UP(v, a) (((v) + (a) - 1) / (a) * (a))

/* ---- errors ---- */

#define GS_CD_ERRORS(X)                                                        \
    X(CUDA_SUCCESS, "no error")                                                \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                            \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                               \
    X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                      \
    X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                        \
    X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")             \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                     \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                    \
    X(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped")                    \
    X(CUDA_ERROR_NOT_MAPPED, "resource not mapped")                            \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                    \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                          \
    X(CUDA_ERROR_NOT_READY, "device not ready")                                \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")  \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                 \
    X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                     \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                     \
    X(CUDA_ERROR_UNKNOWN, "unknown error")

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define X(code, text)                                                          \
    case code:                                                                 \
        *pStr = text;                                                          \
        return CUDA_SUCCESS;
        GS_CD_ERRORS(X)
#undef X
    default:
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define X(code, text)                                                          \
    case code:                                                                 \
        *pStr = #code;                                                         \
        return CUDA_SUCCESS;
        GS_CD_ERRORS(X)
#undef X
    default:
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- initialisation, devices ---- */

CUresult cuInit(unsigned int Flags)
{
    return Flags ? CUDA_ERROR_INVALID_VALUE : gs_cd_init();
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = gs_cd_cfg.devices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = gs_cd_check_device(ordinal);
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "gcspy CUDA double");
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult r = gs_cd_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = gs_cd_cfg.mem;
    return CUDA_SUCCESS;
}

/* ---- contexts ---- */

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    (void)flags;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    return gs_cd_ctx_create(dev, pctx);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                        unsigned int flags, CUdevice dev)
{
    (void)ctxCreateParams; /* affinity and CIG parameters: nothing to model */
    return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) { return gs_cd_ctx_destroy(ctx); }

CUresult cuCtxSetCurrent(CUcontext ctx) { return gs_cd_ctx_set_current(ctx); }

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = gs_cd_ctx_get_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->device;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    CUcontext c;
    return gs_cd_ctx_driver(&c);
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    return gs_cd_primary_retain(dev, pctx);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return gs_cd_primary_release(dev); }

/* ---- memory ---- */

static CUresult alloc_in_ctx(int kind, size_t size, uintptr_t *out)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    return gs_cd_alloc(kind, size, c->device, c, NULL, out);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    gs_cd_sync_pause();
    if (!dptr || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t a;
    CUresult r = alloc_in_ctx(GS_CD_K_DEVICE, bytesize, &a);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)a;
    return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    gs_cd_sync_pause();
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS || !dptr)
        return r;
    return gs_cd_free(1u << GS_CD_K_DEVICE | 1u << GS_CD_K_MANAGED, (uintptr_t)dptr);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                            size_t Height, unsigned int ElementSizeBytes)
{
    if (!dptr || !pPitch || !WidthInBytes || !Height ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = ROUND_UP(WidthInBytes, GS_CD_PITCH_ALIGN);
    if (pitch < WidthInBytes || Height > (size_t)-1 / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t a;
    CUresult r = alloc_in_ctx(GS_CD_K_DEVICE, pitch * Height, &a);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)a;
        *pPitch = pitch;
    }
    return r;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    if (!pp || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t a;
    CUresult r = alloc_in_ctx(GS_CD_K_PINNED, bytesize, &a);
    if (r == CUDA_SUCCESS)
        *pp = (void *)a;
    return r;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return cuMemAllocHost_v2(pp, bytesize);
}

CUresult cuMemFreeHost(void *p)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    return gs_cd_free(1u << GS_CD_K_PINNED, (uintptr_t)p);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (!dptr || !bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t a;
    CUresult r = alloc_in_ctx(GS_CD_K_MANAGED, bytesize, &a);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)a;
    return r;
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                CUstream hStream)
{
    if (!dptr || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r == CUDA_SUCCESS)
        r = gs_cd_stream_check(hStream);
    if (r == CUDA_SUCCESS && !pool)
        r = gs_cd_pool_default(c->device, &pool);
    else if (r == CUDA_SUCCESS)
        r = gs_cd_pool_check(pool);
    uintptr_t a;
    if (r == CUDA_SUCCESS)
        r = gs_cd_alloc(GS_CD_K_DEVICE, bytesize, pool->device, NULL, pool, &a);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)a;
    return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_from_pool(dptr, bytesize, NULL, hStream);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_from_pool(dptr, bytesize, pool, hStream);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    CUresult r = gs_cd_check_init();
    if (r == CUDA_SUCCESS)
        r = gs_cd_stream_check(hStream);
    if (r != CUDA_SUCCESS)
        return r;
    return gs_cd_free(1u << GS_CD_K_DEVICE, (uintptr_t)dptr);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    return gs_cd_copy((void *)(uintptr_t)dstDevice, GS_CD_SIDE_DEVICE, srcHost,
                      GS_CD_SIDE_HOST, ByteCount);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    return gs_cd_copy(dstHost, GS_CD_SIDE_HOST, (const void *)(uintptr_t)srcDevice,
                      GS_CD_SIDE_DEVICE, ByteCount);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    return gs_cd_copy((void *)(uintptr_t)dstDevice, GS_CD_SIDE_DEVICE,
                      (const void *)(uintptr_t)srcDevice, GS_CD_SIDE_DEVICE, ByteCount);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    return gs_cd_set((void *)(uintptr_t)dstDevice, uc, N);
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    return gs_cd_mem_info(c->device, free, total);
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    struct gs_cd_attr a;
    gs_cd_attr((uintptr_t)dptr, &a);
    if (a.kind == GS_CD_K_HOST)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)a.base;
    if (psize)
        *psize = a.size;
    return CUDA_SUCCESS;
}

/* ---- streams and pools ---- */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    CUcontext c;
    CUresult r = gs_cd_ctx_driver(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!phStream || (Flags != CU_STREAM_DEFAULT && Flags != CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    return gs_cd_stream_create(c->device, Flags, phStream);
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    CUresult r = gs_cd_check_init();
    return r == CUDA_SUCCESS ? gs_cd_stream_destroy(hStream) : r;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    CUresult r = gs_cd_check_init();
    return r == CUDA_SUCCESS ? gs_cd_stream_check(hStream) : r;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    return gs_cd_pool_default(dev, pool_out);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    CUresult r = gs_cd_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return gs_cd_pool_create(poolProps->location.id, pool);
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult r = gs_cd_check_init();
    return r == CUDA_SUCCESS ? gs_cd_pool_destroy(pool) : r;
}

/* ---- cuGetProcAddress ---- */

/* Base name, function, the CUDA version that introduced this variant. For
 * a name listed twice, the newest variant the caller's version allows wins. */
#define GS_CD_PROCS(X) \
    X("cuInit", cuInit, 2000) \
    X("cuDriverGetVersion", cuDriverGetVersion, 2020) \
    X("cuGetErrorString", cuGetErrorString, 6000) \
    X("cuGetErrorName", cuGetErrorName, 6000) \
    X("cuDeviceGet", cuDeviceGet, 2000) \
    X("cuDeviceGetCount", cuDeviceGetCount, 2000) \
    X("cuDeviceGetName", cuDeviceGetName, 2000) \
    X("cuDeviceTotalMem", cuDeviceTotalMem_v2, 3020) \
    X("cuCtxCreate", cuCtxCreate_v2, 3020) \
    X("cuCtxCreate", cuCtxCreate_v4, 12050) \
    X("cuCtxDestroy", cuCtxDestroy_v2, 4000) \
    X("cuCtxSetCurrent", cuCtxSetCurrent, 4000) \
    X("cuCtxGetCurrent", cuCtxGetCurrent, 4000) \
    X("cuCtxGetDevice", cuCtxGetDevice, 2000) \
    X("cuCtxSynchronize", cuCtxSynchronize, 2000) \
    X("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000) \
    X("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2, 11000) \
    X("cuMemAlloc", cuMemAlloc_v2, 3020) \
    X("cuMemFree", cuMemFree_v2, 3020) \
    X("cuMemAllocPitch", cuMemAllocPitch_v2, 3020) \
    X("cuMemAllocHost", cuMemAllocHost_v2, 3020) \
    X("cuMemHostAlloc", cuMemHostAlloc, 2020) \
    X("cuMemFreeHost", cuMemFreeHost, 2000) \
    X("cuMemAllocManaged", cuMemAllocManaged, 6000) \
    X("cuMemAllocAsync", cuMemAllocAsync, 11020) \
    X("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020) \
    X("cuMemFreeAsync", cuMemFreeAsync, 11020) \
    X("cuMemcpyHtoD", cuMemcpyHtoD_v2, 3020) \
    X("cuMemcpyDtoH", cuMemcpyDtoH_v2, 3020) \
    X("cuMemcpyDtoD", cuMemcpyDtoD_v2, 3020) \
    X("cuMemsetD8", cuMemsetD8_v2, 3020) \
    X("cuMemGetInfo", cuMemGetInfo_v2, 3020) \
    X("cuMemGetAddressRange", cuMemGetAddressRange_v2, 3020) \
    X("cuStreamCreate", cuStreamCreate, 2000) \
    X("cuStreamDestroy", cuStreamDestroy_v2, 4000) \
    X("cuStreamSynchronize", cuStreamSynchronize, 2000) \
    X("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool, 11020) \
    X("cuMemPoolCreate", cuMemPoolCreate, 11020) \
    X("cuMemPoolDestroy", cuMemPoolDestroy, 11020) \
    X("cuMemAddressReserve", cuMemAddressReserve, 10020) \
    X("cuMemAddressFree", cuMemAddressFree, 10020) \
    X("cuMemCreate", cuMemCreate, 10020) \
    X("cuMemRelease", cuMemRelease, 10020) \
    X("cuMemMap", cuMemMap, 10020) \
    X("cuMemUnmap", cuMemUnmap, 10020) \
    X("cuMemSetAccess", cuMemSetAccess, 10020) \
    X("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity, 10020) \
    X("cuGetProcAddress", cuGetProcAddress, 11030) \
    X("cuGetProcAddress", cuGetProcAddress_v2, 12000)

/* The real driver hands cuGetProcAddress callers its internal entry points,
 * not the addresses its exported names resolve to (PyTorch, NCCL and the
 * runtime's cudaGetDriverEntryPoint take them so). The double does the
 * same: each function of the table is reached through a trampoline of its
 * own, a jump to the exported function (bound inside the library by
 * -Bsymbolic), so a pointer from here never equals dlsym's for its name. */
#define GS_CD_STR(x) #x
#define GS_CD_XSTR(x) GS_CD_STR(x)
#if defined(__x86_64__)
#define EP_DEF(name, fn, since)                                                \
    __attribute__((visibility("hidden"))) extern char gs_cd_ep_##fn[];         \
    __asm__(".text\n.p2align 4\n.globl gs_cd_ep_" GS_CD_XSTR(fn) "\n"          \
            ".hidden gs_cd_ep_" GS_CD_XSTR(fn) "\n.type gs_cd_ep_" GS_CD_XSTR(fn) \
            ",@function\ngs_cd_ep_" GS_CD_XSTR(fn) ":\n\tjmp " GS_CD_XSTR(fn) "\n");
#define EP(fn) ((void *)gs_cd_ep_##fn)
#else
#define EP_DEF(name, fn, since)
#define EP(fn) ((void *)fn)
#endif
GS_CD_PROCS(EP_DEF)

static const struct proc {
    const char *name;
    void *fn;
    int since;
} procs[] = {
#define PROC_ROW(name, fn, since) {name, EP(fn), since},
    GS_CD_PROCS(PROC_ROW)
#undef PROC_ROW
};

CUresult gs_cd_get_proc(const char *sym, void **fn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status)
{
    if (!sym || !fn || flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    const struct proc *best = NULL;
    int named = 0;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, sym) != 0)
            continue;
        named = 1;
        if (procs[i].since <= version && (!best || procs[i].since > best->since))
            best = &procs[i];
    }
    *fn = best ? best->fn : NULL;
    if (status)
        *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                 : named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                         : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    return gs_cd_get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return gs_cd_get_proc(symbol, pfn, cudaVersion, flags, NULL);
}
