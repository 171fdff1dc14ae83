/* The runtime's manners, as a program depending on them sees them: device
 * selection, versions, the last-error protocol, pointer attributes of every
 * kind of memory, copy directions, pitched and managed memory, runtime and
 * driver sharing one device memory, driver entry points via the runtime,
 * no CUDA in a forked child.
 *
 * Not a leak scenario: under gcspy, no leak and nothing live at exit.
 * Alone: prints "ok". With GS_CUDA_DOUBLE_DEVICES=N (N > 1) it also checks
 * that allocations land on the device selected. */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

static void devices_and_versions(void)
{
    int n = 0, dev = -1, v = 0;
    CK(cudaGetDeviceCount(&n));
    EXPECT(n >= 1);
    const char *want = getenv("GS_CUDA_DOUBLE_DEVICES");
    if (want && on_double())
        EXPECT(n == atoi(want));
    CK(cudaGetDevice(&dev));
    EXPECT(dev == 0);
    CK_FAILS(cudaSetDevice(n), cudaErrorInvalidDevice);
    CK_FAILS(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    CK_FAILS(cudaGetLastError(), cudaErrorInvalidDevice);
    CK(cudaGetLastError());
    CK(cudaRuntimeGetVersion(&v));
    EXPECT(v == CUDART_VERSION);
    CK(cudaDriverGetVersion(&v));
    EXPECT(v >= CUDART_VERSION);
    EXPECT(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
    EXPECT(strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0);

    for (int d = 1; d < n; d++) {
        void *p = NULL;
        struct cudaPointerAttributes a;
        CK(cudaSetDevice(d));
        CK(cudaGetDevice(&dev));
        EXPECT(dev == d);
        CK(cudaMalloc(&p, 4096));
        CK(cudaPointerGetAttributes(&a, p));
        EXPECT(a.type == cudaMemoryTypeDevice && a.device == d);
        CK(cudaFree(p));
    }
    CK(cudaSetDevice(0));
}

static void attributes(void)
{
    struct cudaPointerAttributes a;
    int local = 0;
    CK(cudaPointerGetAttributes(&a, &local));
    EXPECT(a.type == cudaMemoryTypeUnregistered);

    void *m = NULL;
    CK(cudaMallocManaged(&m, 1000, cudaMemAttachGlobal));
    CK(cudaPointerGetAttributes(&a, (char *)m + 999));
    EXPECT(a.type == cudaMemoryTypeManaged && a.device == 0);
    memset(m, 0x42, 1000); /* managed memory is host memory too */
    unsigned char b[8];
    CK(cudaMemcpy(b, m, sizeof b, cudaMemcpyDefault));
    EXPECT(b[0] == 0x42 && b[7] == 0x42);
    CK_FAILS(cudaMallocManaged(&m, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
    CK(cudaFree(m));

    void *h = NULL;
    CK(cudaHostAlloc(&h, 100, cudaHostAllocPortable | cudaHostAllocMapped));
    CK(cudaPointerGetAttributes(&a, h));
    EXPECT(a.type == cudaMemoryTypeHost);
    CK_FAILS(cudaHostAlloc(&h, 100, 0x80), cudaErrorInvalidValue);
    CK(cudaFreeHost(h));
}

static void copies(void)
{
    void *d = NULL;
    char host[256] = "payload";
    CK(cudaMalloc(&d, 256));
    CK(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice));
    /* Wrong directions and bad kinds are refused. */
    CK_FAILS(cudaMemcpy(host, d, sizeof host, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CK_FAILS(cudaMemcpy(host, d, sizeof host, (enum cudaMemcpyKind)7),
             cudaErrorInvalidMemcpyDirection);
    char back[256];
    CK(cudaMemcpy(back, host, 8, cudaMemcpyHostToHost));
    EXPECT(memcmp(back, "payload", 8) == 0);
    CK_FAILS(cudaMemcpy(back, d, 8, cudaMemcpyHostToHost), cudaErrorInvalidValue);
    CK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDefault));
    EXPECT(strcmp(back, "payload") == 0);
    void *d2 = NULL;
    CK(cudaMalloc(&d2, 256));
    CK(cudaMemcpy(d2, d, 256, cudaMemcpyDeviceToDevice));
    CK(cudaMemset(d, 0, 256));
    CK(cudaMemcpy(back, d2, sizeof back, cudaMemcpyDeviceToHost));
    EXPECT(strcmp(back, "payload") == 0);
    CK_FAILS(cudaFreeHost(d2), cudaErrorInvalidValue);
    CK(cudaFree(d2));
    /* A freed buffer is gone: copies and a second free are refused. */
    CK_FAILS(cudaMemcpy(back, d2, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    CK_FAILS(cudaFree(d2), cudaErrorInvalidValue);
    CK(cudaFree(d));
    CK_FAILS(cudaGetLastError(), cudaErrorInvalidValue);
}

static void pitched(void)
{
    void *p = NULL;
    size_t pitch = 0;
    CK(cudaMallocPitch(&p, &pitch, 1000, 10));
    EXPECT(pitch >= 1000 && pitch % 256 == 0);
    CK(cudaMemset(p, 1, pitch * 10));
    CK(cudaFree(p));
    struct cudaPitchedPtr pp;
    struct cudaExtent ext = {.width = 300, .height = 4, .depth = 5};
    CK(cudaMalloc3D(&pp, ext));
    EXPECT(pp.pitch >= 300 && pp.xsize == 300 && pp.ysize == 4);
    CK(cudaMemset(pp.ptr, 2, pp.pitch * 4 * 5));
    CK(cudaFree(pp.ptr));
}

static void runtime_and_driver(void)
{
    /* One device memory: a runtime buffer is a driver buffer. */
    void *p = NULL;
    CK(cudaMalloc(&p, 4096));
    CU(cuInit(0));
    CUdeviceptr base = 0;
    size_t size = 0;
    CU(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)p + 10));
    EXPECT(base == (CUdeviceptr)(uintptr_t)p && size >= 4096);
    CU(cuMemFree((CUdeviceptr)(uintptr_t)p));

    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, CUDART_VERSION, cudaEnableDefault, &q));
    EXPECT(q == cudaDriverEntryPointSuccess && fn != NULL);
    CUdeviceptr d = 0;
    CU(((CUresult(*)(CUdeviceptr *, size_t))fn)(&d, 512));
    CK(cudaFree((void *)(uintptr_t)d));
}

/* A child of fork cannot use the device its parent initialised. */
static void forked_child(void)
{
    fflush(NULL);
    pid_t pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
        void *p = NULL;
        _exit(cudaMalloc(&p, 4096) == cudaErrorInitializationError ? 0 : 1);
    }
    int st = 0;
    EXPECT(waitpid(pid, &st, 0) == pid);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    devices_and_versions();
    attributes();
    copies();
    pitched();
    runtime_and_driver();
    forked_child();
    CK(cudaDeviceSynchronize());
    printf("ok\n");
    return 0;
}
