/*
 * shim_dlsym_cuda LIBCUDA: a CUDA driver loaded the way PyTorch's driver
 * loader and ctypes do it: dlopen(RTLD_LOCAL) of the library given, entry
 * points through dlsym on its handle, never linked. Allocates 3 MiB of
 * device memory with cuMemAlloc_v2 and leaks it. tests/integration/
 * shim_dlsym.sh runs it on the CUDA double (build/cuda_double): the trace
 * must have that device allocation (the lookup returned gcspy's hook) and
 * the exit scan must call it definitely lost. Prints "ok" and exits 0 when
 * every call succeeded.
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*init_t)(unsigned);
typedef int (*device_get_t)(int *, int);
typedef int (*ctx_create_t)(void **, unsigned, int);
typedef int (*mem_alloc_t)(unsigned long long *, size_t);

int main(int argc, char **argv)
{
    void *h = argc == 2 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h)
        return 2;
    init_t init = (init_t)dlsym(h, "cuInit");
    device_get_t device_get = (device_get_t)dlsym(h, "cuDeviceGet");
    ctx_create_t ctx_create = (ctx_create_t)dlsym(h, "cuCtxCreate_v2");
    mem_alloc_t mem_alloc = (mem_alloc_t)dlsym(h, "cuMemAlloc_v2");
    if (!init || !device_get || !ctx_create || !mem_alloc)
        return 3;
    int dev = 0;
    void *ctx = NULL;
    unsigned long long p = 0;
    if (init(0) || device_get(&dev, 0) || ctx_create(&ctx, 0, dev) || mem_alloc(&p, 3u << 20) || !p)
        return 4;
    p = 0; /* leaked */
    printf("ok\n");
    return 0;
}
