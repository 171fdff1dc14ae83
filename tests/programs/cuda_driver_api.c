/* The driver API's manners, as a program depending on them sees them:
 * device queries, pinned/managed/pitched/stream-ordered allocation through
 * the driver, contexts (a context's memory goes with it), error names.
 *
 * Under gcspy: no leak and nothing live at exit is expected, but note two
 * things a tool must get right:
 *   - the 65536-byte device buffer allocated in the context made by
 *     cuCtxCreate is freed by cuCtxDestroy, with no cuMemFree call (and
 *     nothing else here frees it): a tool that only sees cuMemFree reports
 *     it as not freed at exit;
 *   - some calls here must fail and free nothing (cuMemFree of the pinned
 *     8192-byte buffer, which cuMemFreeHost frees afterwards): a tool that
 *     records a free before the call returns must not count these.
 * Alone: prints "ok". */
#include <stdint.h>

#include <cuda.h>

#include "cuda_double_check.h"

static void memory_kinds(void)
{
    void *h = NULL;
    CU(cuMemAllocHost(&h, 8192));
    memset(h, 1, 8192); /* host memory */
    CU_FAILS(cuMemFree((CUdeviceptr)(uintptr_t)h), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemFreeHost(h));
    CU(cuMemHostAlloc(&h, 100, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CU(cuMemFreeHost(h));
    CU_FAILS(cuMemHostAlloc(&h, 100, 0x80), CUDA_ERROR_INVALID_VALUE);

    CUdeviceptr m = 0;
    CU(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
    ((volatile char *)(uintptr_t)m)[4095] = 9; /* host memory too */
    CU_FAILS(cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemFree(m));

    CUdeviceptr p = 0;
    size_t pitch = 0;
    CU(cuMemAllocPitch(&p, &pitch, 1000, 3, 4));
    EXPECT(pitch >= 1000);
    CU(cuMemsetD8(p, 7, pitch * 3));
    CU_FAILS(cuMemAllocPitch(&p, &pitch, 1000, 3, 3), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemFree(p));
    CU_FAILS(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);

    CUstream s;
    CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a = 0;
    CU(cuMemAllocAsync(&a, 12345, s));
    CUmemoryPool pool;
    CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CUdeviceptr b = 0;
    CU(cuMemAllocFromPoolAsync(&b, 777, pool, s));
    CU(cuMemcpyDtoD(b, a, 777));
    CU(cuMemFreeAsync(a, s));
    CU(cuMemFreeAsync(b, s));
    CU(cuStreamSynchronize(s));
    CU(cuStreamDestroy(s));
    CU_FAILS(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
}

static void contexts(CUdevice dev)
{
    size_t free0, free1, total;
    CU(cuMemGetInfo(&free0, &total));
    CUcontext primary, mine, current;
    CU(cuCtxGetCurrent(&primary));
    CU(cuCtxCreate(&mine, NULL, 0, dev));
    CU(cuCtxGetCurrent(&current));
    EXPECT(current == mine && mine != primary);
    CUdeviceptr d = 0;
    CU(cuMemAlloc(&d, 65536));
    CU(cuCtxDestroy(mine));
    CU(cuCtxGetCurrent(&current));
    EXPECT(current == NULL);
    CU(cuCtxSetCurrent(primary));
    /* The destroyed context's memory went with it. */
    CU(cuMemGetInfo(&free1, &total));
    EXPECT(free1 == free0);
    CUdeviceptr base;
    size_t size;
    CU_FAILS(cuMemGetAddressRange(&base, &size, d), CUDA_ERROR_NOT_FOUND);
    CU_FAILS(cuCtxDestroy(mine), CUDA_ERROR_INVALID_CONTEXT);
}

int main(void)
{
    int n = -1;
    CU_FAILS(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CU(cuInit(0));
    CU(cuDeviceGetCount(&n));
    EXPECT(n >= 1);
    CUdevice dev;
    CU_FAILS(cuDeviceGet(&dev, n), CUDA_ERROR_INVALID_DEVICE);
    CU(cuDeviceGet(&dev, 0));
    char name[128];
    CU(cuDeviceGetName(name, (int)sizeof name, dev));
    size_t mem = 0;
    CU(cuDeviceTotalMem(&mem, dev));
    EXPECT(mem > 0);
    int v = 0;
    CU(cuDriverGetVersion(&v));
    EXPECT(v >= CUDA_VERSION);
    const char *s = NULL;
    CU(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    EXPECT(strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
    CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    EXPECT(strcmp(s, "out of memory") == 0);

    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CUdevice got = -1;
    CU(cuCtxGetDevice(&got));
    EXPECT(got == dev);
    memory_kinds();
    if (on_double()) /* other processes may change a real GPU's free memory */
        contexts(dev);
    CU(cuCtxSynchronize());
    CU(cuDevicePrimaryCtxRelease(dev));
    printf("ok\n");
    return 0;
}
