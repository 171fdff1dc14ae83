/* A device pointer kept only inside pinned host memory.
 *
 * Expected under gcspy, at the gcspy_scan() call:
 *   no leak;
 *   reachable: the pinned block (GS_MEM_PINNED, 4096 bytes) from the global
 *              g_pinned, and through it the device block (GS_MEM_DEVICE,
 *              1048576 bytes) whose only pointer is g_pinned[7]: pinned
 *              memory is host memory and must be scanned.
 * At exit: nothing live (both are freed after the scan).
 *
 * Alone: the pinned buffer is host-readable, the device pointer read back
 * from it works, attributes say "host" and "device"; prints "ok". */
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#define MIB ((size_t)1 << 20)

void **g_pinned;

static __attribute__((noinline)) void stash_device_buffer(void)
{
    void *d = NULL;
    CK(cudaMalloc(&d, MIB));
    CK(cudaMemset(d, 0x5a, MIB));
    g_pinned[7] = d;
}

int main(void)
{
    void *p = NULL;
    CK(cudaMallocHost(&p, 4096));
    g_pinned = p;
    p = NULL;
    memset(g_pinned, 0, 4096); /* host memory: the host writes it directly */
    stash_device_buffer();
    clobber_stack();
    maybe_scan();

    struct cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, g_pinned));
    EXPECT(a.type == cudaMemoryTypeHost);
    EXPECT(a.hostPointer == (void *)g_pinned);
    CK(cudaPointerGetAttributes(&a, g_pinned[7]));
    EXPECT(a.type == cudaMemoryTypeDevice);
    unsigned char back[64];
    CK(cudaMemcpy(back, (char *)g_pinned[7] + MIB - sizeof back, sizeof back,
                  cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sizeof back; i++)
        EXPECT(back[i] == 0x5a);
    /* Pinned memory is not device memory: cudaFree refuses it. */
    CK_FAILS(cudaFree(g_pinned), cudaErrorInvalidValue);
    CK(cudaFree(g_pinned[7]));
    CK(cudaFreeHost(g_pinned));
    g_pinned = NULL;
    printf("ok\n");
    return 0;
}
