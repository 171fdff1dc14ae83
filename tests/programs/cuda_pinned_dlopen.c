/* A pinned host buffer leaked right after a library was loaded.
 *
 * dlopen of a library the process does not have yet maps /etc/ld.so.cache,
 * looks the name up and unmaps the cache again, and glibc's loader keeps a
 * dangling pointer to where the cache was (cache_new, in ld.so's bss). The
 * next mapping of the cache's size lands on the same address: here the
 * pinned buffer (the double maps each pinned block on its own, as the real
 * driver maps its larger pinned chunks), so a word of the loader's data
 * holds the buffer's address. That pointer is the loader's, not the
 * program's: the loader keeps no CUDA memory.
 *
 * Expected under gcspy, at the gcspy_scan() call and again at exit:
 *   definite leak: 1 block, GS_MEM_PINNED, the size of /etc/ld.so.cache
 *                  rounded up to pages, allocated by cudaMallocHost in
 *                  leak_pinned(); no other CUDA block live.
 *
 * Alone: prints the block's size on one line, then "ok". */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_double_check.h"

static __attribute__((noinline)) void leak_pinned(size_t n)
{
    unsigned char *p = NULL;
    CK(cudaMallocHost((void **)&p, n));
    memset(p, 1, n);
    p = NULL; /* the only pointer to the pinned buffer, dropped */
}

int main(void)
{
    struct stat st;
    EXPECT(stat("/etc/ld.so.cache", &st) == 0);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = ((size_t)st.st_size + page - 1) / page * page;
    CK(cudaFree(NULL)); /* the runtime and the driver loaded first */
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(h != NULL);
    leak_pinned(n);
    clobber_stack();
    maybe_scan();
    printf("%zu\nok\n", n);
    return 0;
}
