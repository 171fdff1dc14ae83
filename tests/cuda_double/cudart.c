/* The runtime API of the CUDA double (libcudart.so.13): the memory,
 * stream, pool, device and error calls a training job makes, with the real
 * library's soname, symbol version (libcudart.so.13) and prototypes. It is
 * compiled against the real cuda_runtime_api.h with
 * __CUDA_API_VERSION_INTERNAL, which declares the plain names and their
 * per-thread-stream twins (cudaMemcpy_ptds, cudaMallocAsync_ptsz, ...), so
 * the compiler checks every signature exported here.
 *
 * Like the real runtime, it loads the driver lazily: the first call dlopens
 * libcuda.so.1 (found through this library's RUNPATH, $ORIGIN) and takes
 * the double's private table from it (core.h). Without the driver double
 * every call fails with cudaErrorInsufficientDriver, as the real runtime
 * does on a machine without a driver.
 *
 * The last error is per thread, set by every failing call and cleared by
 * cudaGetLastError, as in the real runtime. Streams are synchronous: an
 * async call has finished when it returns. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core.h"

static const struct gs_cd_core *core;
static cudaError_t load_status = cudaErrorInsufficientDriver;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static __thread cudaError_t last_error;

static void load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    gs_cd_core_fn get = (gs_cd_core_fn)dlsym(h, GS_CD_CORE_SYMBOL);
    const struct gs_cd_core *c = get ? get() : NULL;
    if (!c || c->abi != GS_CD_CORE_ABI) {
        fprintf(stderr, "gcspy cuda double: the libcuda.so.1 loaded is not the double's "
                        "(or another version of it); runtime calls will fail\n");
        return;
    }
    core = c;
    load_status = cudaSuccess;
}

static cudaError_t map_error(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return cudaErrorContextIsDestroyed;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    case CUDA_ERROR_ALREADY_MAPPED: return cudaErrorAlreadyMapped;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
    }
}

static cudaError_t fail(cudaError_t e)
{
    if (e != cudaSuccess)
        last_error = e;
    return e;
}

static cudaError_t result(CUresult r) { return fail(map_error(r)); }

/* The driver double is loaded and initialised. A driver that cannot start
 * (bad GS_CUDA_DOUBLE_* value, no address space) is an initialisation error
 * to the runtime; zero devices is cudaErrorNoDevice. */
static cudaError_t ready(void)
{
    pthread_once(&load_once, load_driver);
    if (load_status != cudaSuccess)
        return load_status;
    CUresult r = core->init();
    if (r == CUDA_ERROR_NO_DEVICE)
        return cudaErrorNoDevice;
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInitializationError;
}

#define READY()                                                                \
    do {                                                                       \
        cudaError_t ready_e = ready();                                         \
        if (ready_e != cudaSuccess)                                            \
            return fail(ready_e);                                              \
    } while (0)

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* ---- device memory ---- */

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    READY();
    core->sync_pause();
    if (!devPtr)
        return fail(cudaErrorInvalidValue);
    if (!size) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    return result(core->alloc(GS_CD_K_DEVICE, size, NULL, devPtr));
}

cudaError_t cudaFree(void *devPtr)
{
    READY();
    core->sync_pause();
    if (!devPtr)
        return cudaSuccess;
    return result(core->free(1u << GS_CD_K_DEVICE | 1u << GS_CD_K_MANAGED, devPtr));
}

static cudaError_t malloc_pitched(void **devPtr, size_t *pitch, size_t width, size_t rows)
{
    READY();
    if (!devPtr || !pitch)
        return fail(cudaErrorInvalidValue);
    size_t p = round_up(width, 512);
    if (p < width || (rows && p > (size_t)-1 / rows))
        return fail(cudaErrorMemoryAllocation);
    if (!width || !rows) {
        *devPtr = NULL;
        *pitch = p;
        return cudaSuccess;
    }
    cudaError_t e = result(core->alloc(GS_CD_K_DEVICE, p * rows, NULL, devPtr));
    if (e == cudaSuccess)
        *pitch = p;
    return e;
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    return malloc_pitched(devPtr, pitch, width, height);
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    if (!pitchedDevPtr)
        return fail(cudaErrorInvalidValue);
    if (extent.depth && extent.height > (size_t)-1 / extent.depth)
        return fail(cudaErrorMemoryAllocation);
    void *p;
    size_t pitch;
    cudaError_t e = malloc_pitched(&p, &pitch, extent.width, extent.height * extent.depth);
    if (e == cudaSuccess) {
        pitchedDevPtr->ptr = p;
        pitchedDevPtr->pitch = pitch;
        pitchedDevPtr->xsize = extent.width;
        pitchedDevPtr->ysize = extent.height;
    }
    return e;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    READY();
    if (!devPtr || !size || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return fail(cudaErrorInvalidValue);
    return result(core->alloc(GS_CD_K_MANAGED, size, NULL, devPtr));
}

/* ---- pinned host memory ---- */

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    READY();
    if (!pHost || (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped |
                                       cudaHostAllocWriteCombined)))
        return fail(cudaErrorInvalidValue);
    if (!size) {
        *pHost = NULL;
        return cudaSuccess;
    }
    return result(core->alloc(GS_CD_K_PINNED, size, NULL, pHost));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

cudaError_t cudaFreeHost(void *ptr)
{
    READY();
    if (!ptr)
        return cudaSuccess;
    return result(core->free(1u << GS_CD_K_PINNED, ptr));
}

/* ---- stream-ordered allocation ---- */

static cudaError_t malloc_async(void **devPtr, size_t size, cudaMemPool_t pool,
                                cudaStream_t stream)
{
    READY();
    if (!devPtr)
        return fail(cudaErrorInvalidValue);
    CUresult r = core->stream_check(stream);
    if (r != CUDA_SUCCESS)
        return result(r);
    if (!pool) {
        int dev;
        if ((r = core->get_device(&dev)) == CUDA_SUCCESS)
            r = core->pool_default(dev, &pool);
        if (r != CUDA_SUCCESS)
            return result(r);
    }
    if (!size) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    return result(core->alloc(GS_CD_K_DEVICE, size, pool, devPtr));
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(devPtr, size, NULL, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(devPtr, size, NULL, hStream);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream)
{
    if (!memPool)
        return fail(cudaErrorInvalidValue);
    return malloc_async(ptr, size, memPool, stream);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream)
{
    return cudaMallocFromPoolAsync(ptr, size, memPool, stream);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    READY();
    CUresult r = core->stream_check(hStream);
    if (r != CUDA_SUCCESS)
        return result(r);
    if (!devPtr)
        return cudaSuccess;
    return result(core->free(1u << GS_CD_K_DEVICE, devPtr));
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    return cudaFreeAsync(devPtr, hStream);
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    READY();
    if (!memPool)
        return fail(cudaErrorInvalidValue);
    return result(core->pool_default(device, memPool));
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    READY();
    if (!memPool || !poolProps || poolProps->allocType != cudaMemAllocationTypePinned ||
        poolProps->location.type != cudaMemLocationTypeDevice)
        return fail(cudaErrorInvalidValue);
    return result(core->pool_create(poolProps->location.id, memPool));
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    READY();
    return result(core->pool_destroy(memPool));
}

/* ---- copies ---- */

static cudaError_t copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    static const int sides[][2] = {
        [cudaMemcpyHostToHost] = {GS_CD_SIDE_HOST, GS_CD_SIDE_HOST},
        [cudaMemcpyHostToDevice] = {GS_CD_SIDE_DEVICE, GS_CD_SIDE_HOST},
        [cudaMemcpyDeviceToHost] = {GS_CD_SIDE_HOST, GS_CD_SIDE_DEVICE},
        [cudaMemcpyDeviceToDevice] = {GS_CD_SIDE_DEVICE, GS_CD_SIDE_DEVICE},
        [cudaMemcpyDefault] = {GS_CD_SIDE_ANY, GS_CD_SIDE_ANY},
    };
    READY();
    if ((unsigned)kind > cudaMemcpyDefault)
        return fail(cudaErrorInvalidMemcpyDirection);
    if (!count)
        return cudaSuccess;
    return result(core->copy(dst, sides[kind][0], src, sides[kind][1], count));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return copy(dst, src, count, kind);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return copy(dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind, cudaStream_t stream)
{
    READY();
    CUresult r = core->stream_check(stream);
    return r == CUDA_SUCCESS ? copy(dst, src, count, kind) : result(r);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return cudaMemcpyAsync(dst, src, count, kind, stream);
}

static cudaError_t set(void *devPtr, int value, size_t count)
{
    READY();
    if (!count)
        return cudaSuccess;
    return result(core->set(devPtr, value, count));
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return set(devPtr, value, count);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return set(devPtr, value, count);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    READY();
    CUresult r = core->stream_check(stream);
    return r == CUDA_SUCCESS ? set(devPtr, value, count) : result(r);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return cudaMemsetAsync(devPtr, value, count, stream);
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    READY();
    if (!free || !total)
        return fail(cudaErrorInvalidValue);
    return result(core->mem_info(free, total));
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    READY();
    if (!attributes)
        return fail(cudaErrorInvalidValue);
    struct gs_cd_attr a;
    CUresult r = core->attr(ptr, &a);
    if (r != CUDA_SUCCESS)
        return result(r);
    memset(attributes, 0, sizeof *attributes);
    attributes->device = a.device;
    switch (a.kind) {
    case GS_CD_K_DEVICE:
    case GS_CD_K_VMM:
        attributes->type = cudaMemoryTypeDevice;
        attributes->devicePointer = (void *)ptr;
        break;
    case GS_CD_K_PINNED:
        attributes->type = cudaMemoryTypeHost;
        attributes->devicePointer = (void *)ptr; /* mapped under UVA */
        attributes->hostPointer = (void *)ptr;
        break;
    case GS_CD_K_MANAGED:
        attributes->type = cudaMemoryTypeManaged;
        attributes->devicePointer = (void *)ptr;
        attributes->hostPointer = (void *)ptr;
        break;
    default:
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = cudaInvalidDeviceId;
        attributes->hostPointer = (void *)ptr;
        break;
    }
    return cudaSuccess;
}

/* ---- streams and synchronisation ---- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    READY();
    if (!pStream || (flags != cudaStreamDefault && flags != cudaStreamNonBlocking))
        return fail(cudaErrorInvalidValue);
    return result(core->stream_create(flags, pStream));
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    READY();
    return result(core->stream_destroy(stream));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    READY();
    return result(core->stream_check(stream));
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    return cudaStreamSynchronize(stream);
}

cudaError_t cudaDeviceSynchronize(void)
{
    READY();
    return cudaSuccess;
}

/* ---- devices, versions, errors ---- */

cudaError_t cudaGetDeviceCount(int *count)
{
    pthread_once(&load_once, load_driver);
    if (load_status != cudaSuccess)
        return fail(load_status);
    if (!count)
        return fail(cudaErrorInvalidValue);
    CUresult r = core->device_count(count);
    if (r == CUDA_ERROR_NO_DEVICE)
        return fail(cudaErrorNoDevice);
    return r == CUDA_SUCCESS ? cudaSuccess : fail(cudaErrorInitializationError);
}

cudaError_t cudaSetDevice(int device)
{
    READY();
    return result(core->set_device(device));
}

cudaError_t cudaGetDevice(int *device)
{
    READY();
    if (!device)
        return fail(cudaErrorInvalidValue);
    return result(core->get_device(device));
}

cudaError_t cudaDeviceReset(void)
{
    READY();
    last_error = cudaSuccess;
    return result(core->device_reset());
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return fail(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return fail(cudaErrorInvalidValue);
    pthread_once(&load_once, load_driver);
    /* No driver is not an error here: the version is 0. */
    *driverVersion = load_status == cudaSuccess ? core->driver_version : 0;
    return cudaSuccess;
}

static cudaError_t entry_point(const char *symbol, void **funcPtr, int version,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus)
{
    READY();
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = core->get_proc(symbol, funcPtr, version, flags, &st);
    if (driverStatus)
        *driverStatus = st == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                        : st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            ? cudaDriverEntryPointVersionNotSufficent
                            : cudaDriverEntryPointSymbolNotFound;
    /* The runtime reports a missing symbol through driverStatus only. */
    return r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : result(r);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, (int)cudaVersion, flags, driverStatus);
}
