/* The only pointer to a heap block kept inside managed memory (issue 18,
 * risk 8).
 *
 * Expected under gcspy, at the gcspy_scan() call:
 *   by default managed memory is not read (a host read migrates pages the
 *   GPU holds): the managed block (4096 bytes, reached from g_managed) is
 *   reachable, and the 100-byte malloc block whose only pointer is
 *   g_managed[3] is possible, never definite (gcspy cannot know what unread
 *   managed memory holds);
 *   with GCSPY_SCAN_MANAGED=1 the malloc block is reachable.
 * At exit: nothing live (both freed after the scan).
 * Alone: prints "ok". */
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "cuda_double_check.h"

void **g_managed;

static __attribute__((noinline)) void stash_heap_block(void)
{
    char *h = malloc(100);
    EXPECT(h != NULL);
    memset(h, 1, 100);
    g_managed[3] = h;
}

int main(void)
{
    void *p = NULL;
    CK(cudaMallocManaged(&p, 4096, cudaMemAttachGlobal));
    g_managed = p;
    p = NULL;
    memset(g_managed, 0, 4096);
    stash_heap_block();
    clobber_stack();
    maybe_scan();
    free(g_managed[3]);
    CK(cudaFree(g_managed));
    g_managed = NULL;
    printf("ok\n");
    return 0;
}
