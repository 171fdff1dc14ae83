/* Three device buffers, one of them dropped.
 *
 * Expected under gcspy, at the gcspy_scan() call and again at exit:
 *   definite leak: 1 block, GS_MEM_DEVICE, 2097152 bytes (2 MiB),
 *                  allocated by cudaMalloc in alloc_dev() called from
 *                  alloc_dropped();
 *   reachable:     2 blocks, GS_MEM_DEVICE, 1048576 and 3145728 bytes,
 *                  held by the globals g_keep1 and g_keep3.
 * No host (malloc) leak.
 *
 * Alone (against the double or a real GPU): every buffer takes and gives
 * back its bytes, pointer attributes say "device", prints "ok", exits 0. */
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#define MIB ((size_t)1 << 20)

void *g_keep1, *g_keep3;
void *volatile g_dropped;

static __attribute__((noinline)) void *alloc_dev(size_t n, unsigned char fill)
{
    void *d = NULL;
    CK(cudaMalloc(&d, n));
    CK(cudaMemset(d, fill, n));
    struct cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, d));
    EXPECT(a.type == cudaMemoryTypeDevice);
    EXPECT(a.devicePointer == d);
    EXPECT(a.hostPointer == NULL);
    EXPECT((uintptr_t)d % 256 == 0);
    return d;
}

static void expect_filled(const void *d, size_t n, unsigned char fill)
{
    static unsigned char host[3 << 20];
    CK(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        EXPECT(host[i] == fill);
}

static __attribute__((noinline)) void alloc_dropped(void)
{
    g_dropped = alloc_dev(2 * MIB, 0x22);
    expect_filled(g_dropped, 2 * MIB, 0x22);
    g_dropped = NULL; /* the only copy of the pointer, overwritten */
}

int main(void)
{
    g_keep1 = alloc_dev(1 * MIB, 0x11);
    alloc_dropped();
    g_keep3 = alloc_dev(3 * MIB, 0x33);
    clobber_stack();
    maybe_scan();

    expect_filled(g_keep1, 1 * MIB, 0x11);
    expect_filled(g_keep3, 3 * MIB, 0x33);
    /* A copy across the end of a buffer is refused, not performed. */
    static unsigned char two[2 * MIB];
    CK_FAILS(cudaMemcpy(two, g_keep1, 2 * MIB, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    CK_FAILS(cudaGetLastError(), cudaErrorInvalidValue);
    CK(cudaGetLastError());
    printf("ok\n");
    return 0;
}
