/* The three-buffer scenario through the driver API, plus one allocation
 * through a function pointer from cuGetProcAddress.
 *
 * Expected under gcspy, at the gcspy_scan() call and again at exit:
 *   definite leaks: 2 blocks, GS_MEM_DEVICE:
 *     2097152 bytes (2 MiB) by cuMemAlloc_v2 in alloc_dev() called from
 *       alloc_dropped(), through the PLT;
 *     5242880 bytes (5 MiB) by the cuMemAlloc_v2 pointer cuGetProcAddress
 *       returned, called in alloc_by_proc(): no PLT call is made, so a tool
 *       that only interposes cuMemAlloc_v2 misses this one (that is what
 *       this case tests);
 *   reachable: 2 blocks, GS_MEM_DEVICE, 1048576 and 3145728 bytes, held by
 *              the globals g_keep1 and g_keep3.
 *
 * Alone: the driver needs cuInit and a current context (checked), every
 * buffer round-trips its bytes; prints "ok". */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "cuda_double_check.h"

#define MIB ((size_t)1 << 20)

CUdeviceptr g_keep1, g_keep3;
volatile CUdeviceptr g_dropped;

static __attribute__((noinline)) CUdeviceptr alloc_dev(size_t n, unsigned char fill)
{
    CUdeviceptr d = 0;
    CU(cuMemAlloc(&d, n));
    CU(cuMemsetD8(d, fill, n));
    CUdeviceptr base = 0;
    size_t size = 0;
    CU(cuMemGetAddressRange(&base, &size, d + n / 2));
    EXPECT(base == d && size >= n);
    return d;
}

static void expect_filled(CUdeviceptr d, size_t n, unsigned char fill)
{
    static unsigned char host[5 << 20];
    CU(cuMemcpyDtoH(host, d, n));
    for (size_t i = 0; i < n; i++)
        EXPECT(host[i] == fill);
}

static __attribute__((noinline)) void alloc_dropped(void)
{
    g_dropped = alloc_dev(2 * MIB, 0x22);
    expect_filled(g_dropped, 2 * MIB, 0x22);
    g_dropped = 0;
}

static __attribute__((noinline)) void alloc_by_proc(void)
{
    PFN_cuMemAlloc_v3020 alloc = NULL;
    CUdriverProcAddressQueryResult st;
    CU(cuGetProcAddress("cuMemAlloc", (void **)&alloc, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
                        &st));
    EXPECT(st == CU_GET_PROC_ADDRESS_SUCCESS && alloc != NULL);
    g_dropped = 0;
    CUdeviceptr d = 0;
    CU(alloc(&d, 5 * MIB));
    CU(cuMemsetD8(d, 0x55, 5 * MIB));
    expect_filled(d, 5 * MIB, 0x55);
    d = 0;
}

int main(void)
{
    CUdeviceptr d;
    CU_FAILS(cuMemAlloc(&d, 4096), CUDA_ERROR_NOT_INITIALIZED);
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CU_FAILS(cuMemAlloc(&d, 4096), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));

    void *unknown = (void *)1;
    CUdriverProcAddressQueryResult st;
    CU_FAILS(cuGetProcAddress("cuNoSuchCall", &unknown, CUDA_VERSION, 0, &st),
             CUDA_ERROR_NOT_FOUND);
    EXPECT(unknown == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);

    g_keep1 = alloc_dev(1 * MIB, 0x11);
    alloc_dropped();
    g_keep3 = alloc_dev(3 * MIB, 0x33);
    alloc_by_proc();
    clobber_stack();
    maybe_scan();

    expect_filled(g_keep1, 1 * MIB, 0x11);
    expect_filled(g_keep3, 3 * MIB, 0x33);
    printf("ok\n");
    return 0;
}
