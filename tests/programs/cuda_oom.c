/* Allocations beyond the device's memory fail, cleanly.
 *
 * Run with GS_CUDA_DOUBLE_MEM set small (the selftest uses 67108864) so the
 * double's device small; on a real GPU the sizes follow cudaMemGetInfo.
 * Expected under gcspy: the failed calls record no allocation; no leak,
 * nothing live at exit.
 *
 * Alone: cudaMalloc and cuMemAlloc of more than the device holds fail with
 * cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY, leave the out
 * pointer alone (on the double; a real runtime may also write NULL), set
 * the runtime's last error; three quarters of free memory can be taken
 * once but not twice. Prints "ok". */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#define SENTINEL ((void *)0x5e57)

int main(void)
{
    size_t free_b, total;
    CK(cudaMemGetInfo(&free_b, &total));
    CU(cuInit(0));
    int strict = on_double();
    const char *mem = getenv("GS_CUDA_DOUBLE_MEM");
    if (strict && mem && mem[strspn(mem, "0123456789")] == '\0')
        EXPECT(total == strtoull(mem, NULL, 10));

    void *p = SENTINEL;
    CK_FAILS(cudaMalloc(&p, total + ((size_t)1 << 30)), cudaErrorMemoryAllocation);
    EXPECT(p == SENTINEL || (!strict && p == NULL));
    CK_FAILS(cudaGetLastError(), cudaErrorMemoryAllocation);
    CK(cudaGetLastError());

    CUdeviceptr d = 0x5e57;
    CU_FAILS(cuMemAlloc(&d, total + ((size_t)1 << 30)), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(d == 0x5e57 || (!strict && d == 0));

    size_t big = free_b / 4 * 3;
    void *a = NULL;
    CK(cudaMalloc(&a, big));
    p = SENTINEL;
    CK_FAILS(cudaMalloc(&p, big), cudaErrorMemoryAllocation);
    EXPECT(p == SENTINEL || (!strict && p == NULL));
    CU_FAILS(cuMemAlloc(&d, big), CUDA_ERROR_OUT_OF_MEMORY);
    CK_FAILS(cudaGetLastError(), cudaErrorMemoryAllocation);
    CK(cudaFree(a));
    CK(cudaMalloc(&a, big));
    CK(cudaFree(a));
    printf("ok\n");
    return 0;
}
