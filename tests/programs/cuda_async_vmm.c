/* Stream-ordered allocation and virtual memory management, all freed.
 *
 * Expected under gcspy: no leak and nothing live at the gcspy_scan() call
 * at the end. Seen on the way (each allocated and freed):
 *   cudaMallocAsync 1 MiB on a stream, cudaFreeAsync;
 *   cudaMallocFromPoolAsync 512 KiB from a created pool and 256 KiB from
 *   the device's default pool, cudaFreeAsync;
 *   VMM: a 4-granule reservation (cuMemAddressReserve), a 2-granule
 *   physical allocation (cuMemCreate) mapped twice (cuMemMap at the start
 *   and at +2 granules), unmapped (cuMemUnmap), released (cuMemRelease),
 *   the reservation freed (cuMemAddressFree).
 *
 * Alone: bytes written through one mapping are read through the other;
 * an unmapped or not-yet-accessible range cannot be copied to; on the
 * double, free memory returns to its starting value. Prints "ok". */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#define KIB ((size_t)1 << 10)

static void stream_ordered(void)
{
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    void *a = NULL;
    CK(cudaMallocAsync(&a, 1024 * KIB, s));
    CK(cudaMemsetAsync(a, 1, 1024 * KIB, s));
    CK(cudaFreeAsync(a, s));

    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool, dflt;
    CK(cudaMemPoolCreate(&pool, &props));
    CK(cudaDeviceGetDefaultMemPool(&dflt, 0));
    EXPECT(pool != dflt);
    void *b = NULL, *c = NULL;
    CK(cudaMallocFromPoolAsync(&b, 512 * KIB, pool, s));
    CK(cudaMallocFromPoolAsync(&c, 256 * KIB, dflt, s));
    CK(cudaMemcpyAsync(c, b, 256 * KIB, cudaMemcpyDeviceToDevice, s));
    CK(cudaFreeAsync(b, s));
    CK(cudaFreeAsync(c, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemPoolDestroy(pool));
    /* The default pool belongs to the device. */
    CK_FAILS(cudaMemPoolDestroy(dflt), cudaErrorInvalidValue);
    CK_FAILS(cudaGetLastError(), cudaErrorInvalidValue);
    CK(cudaStreamDestroy(s));
}

static void vmm(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t g = 0;
    CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(g > 0);

    CUdeviceptr va = 0;
    CU(cuMemAddressReserve(&va, 4 * g, 0, 0, 0));
    EXPECT(va != 0 && va % g == 0);
    CUmemGenericAllocationHandle h;
    CU(cuMemCreate(&h, 2 * g, &prop, 0));
    CU(cuMemMap(va, 2 * g, 0, h, 0));
    CU(cuMemMap(va + 2 * g, 2 * g, 0, h, 0));
    static unsigned char host[4096], back[4096];
    if (on_double()) /* mapped, not yet accessible */
        CU_FAILS(cuMemcpyHtoD(va, host, sizeof host), CUDA_ERROR_INVALID_VALUE);
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = 0;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(cuMemSetAccess(va, 4 * g, &acc, 1));
    /* The handle may be released while mapped; the memory lives on. */
    CU(cuMemRelease(h));

    for (size_t i = 0; i < sizeof host; i++)
        host[i] = (unsigned char)(i * 7);
    CU(cuMemcpyHtoD(va + g + 123, host, sizeof host));
    CU(cuMemcpyDtoH(back, va + 3 * g + 123, sizeof back)); /* the other mapping */
    EXPECT(memcmp(host, back, sizeof host) == 0);
    CK(cudaMemcpy(back, (void *)(va + g + 123), sizeof back, cudaMemcpyDefault));
    EXPECT(memcmp(host, back, sizeof host) == 0);
    struct cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, (void *)(va + 5)));
    EXPECT(a.type == cudaMemoryTypeDevice);

    CU(cuMemUnmap(va + 2 * g, 2 * g));
    if (on_double()) /* a real GPU may take this as a sticky illegal address */
        CU_FAILS(cuMemcpyHtoD(va + 2 * g, host, sizeof host), CUDA_ERROR_INVALID_VALUE);
    CU(cuMemUnmap(va, 2 * g));
    CU(cuMemAddressFree(va, 4 * g));
}

int main(void)
{
    CK(cudaFree(NULL));
    CU(cuInit(0));
    size_t free0, free1, total;
    CK(cudaMemGetInfo(&free0, &total));
    stream_ordered();
    vmm();
    CK(cudaDeviceSynchronize());
    CK(cudaMemGetInfo(&free1, &total));
    if (on_double())
        EXPECT(free1 == free0);
    maybe_scan();
    printf("ok\n");
    return 0;
}
