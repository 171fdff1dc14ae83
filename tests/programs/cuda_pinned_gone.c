/* A pinned block freed by a path gcspy does not see (issue 18, risk 8): the
 * driver double's own free, called through its private table (as an
 * internal alias of cuMemFreeHost would be), unmaps it; gcspy's table still
 * lists it, and the program still points to it.
 *
 * The block is 64 MiB, so that the mappings made after the free (gcspy's
 * own, for the scan) cannot fill its hole: most of it stays unmapped.
 * Expected under gcspy: the gcspy_scan() call completes (no fault: pinned
 * memory is read with process_vm_readv), the scan counts at least half of
 * the block's bytes unreadable; the program prints "ok" and exits 0.
 * Alone: prints "ok". */
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "core.h"
#include "cuda_double_check.h"

void *g_pinned;

int main(void)
{
    CK(cudaMallocHost(&g_pinned, (size_t)64 << 20));
    memset(g_pinned, 0, 4096);
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    gs_cd_core_fn core = drv ? (gs_cd_core_fn)dlsym(drv, GS_CD_CORE_SYMBOL) : NULL;
    EXPECT(core != NULL);
    EXPECT(core()->free(1u << GS_CD_K_PINNED, g_pinned) == CUDA_SUCCESS);
    maybe_scan();
    printf("ok\n");
    return 0;
}
