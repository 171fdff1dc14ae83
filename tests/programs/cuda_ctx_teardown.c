/* Destroying one context frees that context's memory, not another's.
 *
 * Two contexts of device 0 (cuCtxCreate): a 1 MiB block allocated in the
 * first and a 2 MiB block in the second, both pointers dropped; the first
 * context is destroyed (the driver frees its block with it).
 *
 * Expected under gcspy, at the gcspy_scan() call and again at exit:
 *   definite leak: the 2 MiB device block from leak_in(), fn cuda_driver;
 *   the 1 MiB block freed (its context took it along), not live at exit.
 *
 * Alone: prints "ok". */
#include <cuda.h>

#include "cuda_double_check.h"

static __attribute__((noinline)) void leak_in(CUcontext c, size_t n)
{
    CUdeviceptr d = 0;
    CU(cuCtxSetCurrent(c));
    CU(cuMemAlloc(&d, n));
    CU(cuMemsetD8(d, 1, n));
}

int main(void)
{
    CUdevice dev;
    CUcontext a, b;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuCtxCreate(&a, NULL, 0, dev));
    CU(cuCtxCreate(&b, NULL, 0, dev));
    leak_in(a, 1 << 20);
    leak_in(b, 2 << 20);
    CU(cuCtxDestroy(a));
    CU(cuCtxSetCurrent(b));
    clobber_stack();
    maybe_scan();
    printf("ok\n");
    return 0;
}
