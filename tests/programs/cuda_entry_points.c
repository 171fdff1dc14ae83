/* Device memory allocated through driver entry points the runtime hands out.
 *
 * cudaGetDriverEntryPoint, cudaGetDriverEntryPointByVersion and a
 * cuGetProcAddress taken from the first return the driver's internal entry
 * points (the double's trampolines, as the real driver's), never the
 * addresses the exported names resolve to: PyTorch's and NCCL's driver
 * loaders call cuMemAlloc and friends this way only.
 *
 * Expected under gcspy, at the gcspy_scan() call and again at exit:
 *   definite leaks, device, fn cuda_driver:
 *     1 MiB from alloc_by_entry()    (cudaGetDriverEntryPoint "cuMemAlloc")
 *     2 MiB from alloc_by_version()  (cudaGetDriverEntryPointByVersion 12.0)
 *     3 MiB from alloc_by_proc()     (cuGetProcAddress from the runtime)
 *   a 4 MiB block allocated and freed through entry points (cuMemAlloc,
 *   cuMemFree): recorded both ways, not live at exit.
 *
 * Alone: prints "ok". */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *entry(const char *name)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &q));
    EXPECT(q == cudaDriverEntryPointSuccess && fn != NULL);
    return fn;
}

static __attribute__((noinline)) void alloc_by_entry(void)
{
    CUdeviceptr d = 0;
    EXPECT(((alloc_fn)entry("cuMemAlloc"))(&d, 1 << 20) == CUDA_SUCCESS && d);
}

static __attribute__((noinline)) void alloc_by_version(void)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 12000, cudaEnableDefault, &q));
    EXPECT(q == cudaDriverEntryPointSuccess && fn != NULL);
    CUdeviceptr d = 0;
    EXPECT(((alloc_fn)fn)(&d, 2 << 20) == CUDA_SUCCESS && d);
}

static __attribute__((noinline)) void alloc_by_proc(void)
{
    proc_fn proc = (proc_fn)entry("cuGetProcAddress");
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    EXPECT(proc("cuMemAlloc", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS);
    EXPECT(st == CU_GET_PROC_ADDRESS_SUCCESS && fn != NULL);
    CUdeviceptr d = 0;
    EXPECT(((alloc_fn)fn)(&d, 3 << 20) == CUDA_SUCCESS && d);
}

static __attribute__((noinline)) void alloc_and_free(void)
{
    CUdeviceptr d = 0;
    EXPECT(((alloc_fn)entry("cuMemAlloc"))(&d, 4 << 20) == CUDA_SUCCESS && d);
    EXPECT(((free_fn)entry("cuMemFree"))(d) == CUDA_SUCCESS);
}

int main(void)
{
    CK(cudaFree(NULL));
    /* The device's primary context current for the driver calls, through
     * entry points too (the program does not link libcuda). */
    CUcontext ctx = NULL;
    EXPECT(((CUresult(*)(CUcontext *, CUdevice))entry("cuDevicePrimaryCtxRetain"))(&ctx, 0) ==
           CUDA_SUCCESS);
    EXPECT(((CUresult(*)(CUcontext))entry("cuCtxSetCurrent"))(ctx) == CUDA_SUCCESS);
    alloc_by_entry();
    alloc_by_version();
    alloc_by_proc();
    alloc_and_free();
    clobber_stack();
    maybe_scan();
    printf("ok\n");
    return 0;
}
