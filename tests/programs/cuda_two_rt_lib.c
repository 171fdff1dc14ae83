/* One library of cuda_two_runtimes: built twice, as libcuda_rt12.so (linked
 * against the double's libcudart.so.12) and libcuda_rt13.so (against
 * libcudart.so.13), each exporting RT_CHECK (rt12_check, rt13_check).
 *
 * Each call must reach the runtime the library is bound to: a failed
 * cudaMalloc sets that runtime's own last error (a thread-local of each
 * libcudart), which the library reads back through its own binding. Under
 * a shim that sends every caller to one runtime, the other library's
 * runtime never sees its calls. Returns 0, or the step that failed. */
#include <cuda_runtime_api.h>
#include <stddef.h>

int RT_CHECK(size_t size);

int RT_CHECK(size_t size)
{
    void *p = NULL;
    (void)cudaGetLastError();
    if (cudaMalloc(&p, (size_t)1 << 50) != cudaErrorMemoryAllocation)
        return 1;
    if (cudaGetLastError() != cudaErrorMemoryAllocation)
        return 2; /* the failed call went to another runtime */
    if (cudaMalloc(&p, size) != cudaSuccess || !p)
        return 3;
    if (cudaFree(p) != cudaSuccess)
        return 4;
    if (cudaFree(p) != cudaErrorInvalidValue || cudaGetLastError() != cudaErrorInvalidValue)
        return 5; /* the second free went to another runtime */
    return 0;
}
