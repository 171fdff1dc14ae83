/* The double never keeps a plain pointer to a program's allocation where a
 * leak scanner looks.
 *
 * gcspy, like LeakSanitizer, takes every private writable mapping (data,
 * bss, anonymous memory) as a root. If the double's own tables held the
 * addresses it hands out, every CUDA buffer would look reachable and no
 * device leak could ever be found. This program makes one allocation of
 * each kind, keeps their addresses only XOR-encoded, and scans every
 * private writable mapping of its own process but its stack for a word
 * pointing into any of them: there must be none. (The shadow of device
 * memory is a shared mapping, skipped by such scanners, as real device
 * memory is not host memory at all.)
 *
 * A check of the double alone, not a leak scenario: run it without gcspy,
 * whose own tables (which its scanner excludes) point at every tracked
 * block and so fail this check by design. Prints "ok". */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#define KEY ((uintptr_t)0x3c3c3c3c3c3c3c3cull)
#define NT 5

static uintptr_t enc_lo[NT], enc_hi[NT];
static const char *what[NT] = {"device", "pinned", "managed", "VMM", "async"};
static char maps_text[1 << 20];

static void keep(int i, const void *p, size_t n)
{
    enc_lo[i] = (uintptr_t)p ^ KEY;
    enc_hi[i] = ((uintptr_t)p + n) ^ KEY;
}

static __attribute__((noinline)) void allocate(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 1 << 20));
    keep(0, p, 1 << 20);
    CK(cudaMallocHost(&p, 4096));
    keep(1, p, 4096);
    CK(cudaMallocManaged(&p, 4096, cudaMemAttachGlobal));
    keep(2, p, 4096);

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t g = 0;
    CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va = 0;
    CU(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    CUmemGenericAllocationHandle h;
    CU(cuMemCreate(&h, g, &prop, 0));
    CU(cuMemMap(va, g, 0, h, 0));
    CU(cuMemRelease(h));
    keep(3, (void *)(uintptr_t)va, 2 * g);

    CK(cudaMallocAsync(&p, 65536, 0));
    keep(4, p, 65536);
    p = NULL;
    va = 0;
}

static __attribute__((noinline)) int scan_own_memory(void)
{
    int fd = open("/proc/self/maps", O_RDONLY);
    EXPECT(fd >= 0);
    size_t len = 0;
    ssize_t got;
    while ((got = read(fd, maps_text + len, sizeof maps_text - 1 - len)) > 0)
        len += (size_t)got;
    close(fd);
    maps_text[len] = '\0';

    int hits = 0;
    for (char *line = maps_text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        unsigned long lo, hi;
        char perms[5] = "";
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &lo, &hi, perms, &name_at) >= 3 &&
            perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' &&
            strstr(line, "[stack]") == NULL && strstr(line, "[vvar") == NULL) {
            for (const uintptr_t *w = (const uintptr_t *)lo; w < (const uintptr_t *)hi; w++)
                for (int i = 0; i < NT; i++)
                    if (*w >= (enc_lo[i] ^ KEY) && *w < (enc_hi[i] ^ KEY)) {
                        fprintf(stderr, "a pointer into the %s allocation at %p in %s\n",
                                what[i], (const void *)w, line);
                        hits++;
                    }
        }
        line = nl ? nl + 1 : line + strlen(line);
    }
    return hits;
}

int main(void)
{
    CK(cudaFree(NULL));
    CU(cuInit(0));
    allocate();
    clobber_stack();
    EXPECT(scan_own_memory() == 0);

    CK(cudaFree((void *)(enc_lo[0] ^ KEY)));
    CK(cudaFreeHost((void *)(enc_lo[1] ^ KEY)));
    CK(cudaFree((void *)(enc_lo[2] ^ KEY)));
    CUdeviceptr va = (CUdeviceptr)(enc_lo[3] ^ KEY);
    size_t g = ((enc_hi[3] ^ KEY) - (enc_lo[3] ^ KEY)) / 2;
    CU(cuMemUnmap(va, g));
    CU(cuMemAddressFree(va, 2 * g));
    CK(cudaFreeAsync((void *)(enc_lo[4] ^ KEY), 0));
    printf("ok\n");
    return 0;
}
