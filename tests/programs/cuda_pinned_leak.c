/* A pinned host buffer leaked.
 *
 * Expected under gcspy, at the gcspy_scan() call and again at exit:
 *   definite leak: 1 block, GS_MEM_PINNED, 4096 bytes, allocated by
 *                  cudaMallocHost in leak_pinned();
 *   no other CUDA block live (the device buffer used for the check is freed
 *   before the scan).
 *
 * Alone: the pinned buffer is host-readable and -writable and copies to and
 * from the device; prints "ok". */
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

static __attribute__((noinline)) void leak_pinned(void)
{
    unsigned char *p = NULL;
    CK(cudaMallocHost((void **)&p, 4096));
    for (int i = 0; i < 4096; i++)
        p[i] = (unsigned char)i;
    struct cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, p + 100));
    EXPECT(a.type == cudaMemoryTypeHost);

    void *d = NULL;
    CK(cudaMalloc(&d, 4096));
    CK(cudaMemcpy(d, p, 4096, cudaMemcpyHostToDevice));
    memset(p, 0, 4096);
    CK(cudaMemcpy(p, d, 4096, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4096; i++)
        EXPECT(p[i] == (unsigned char)i);
    CK(cudaFree(d));
    p = NULL; /* the only pointer to the pinned buffer, dropped */
}

int main(void)
{
    leak_pinned();
    clobber_stack();
    maybe_scan();
    printf("ok\n");
    return 0;
}
