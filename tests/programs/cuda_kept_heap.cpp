/* A device pointer kept only inside a C++ object on the heap.
 *
 * Expected under gcspy, at the gcspy_scan() call:
 *   no leak;
 *   reachable: the Holder object (GS_MEM_HOST, allocated by operator new)
 *              from the global g_holder, and through its member the device
 *              block (GS_MEM_DEVICE, 2097152 bytes).
 * At exit: nothing live (the Holder is deleted, its destructor frees the
 * device buffer).
 *
 * Alone: the buffer round-trips its bytes through the object's pointer;
 * prints "ok". Uses the C++ template overloads of cuda_runtime.h. */
#include <cuda_runtime.h>

#include "cuda_double_check.h"

struct Holder {
    long tag = 0x600d;
    float *weights = nullptr;
    size_t count = 0;

    explicit Holder(size_t n) : count(n) { CK(cudaMalloc(&weights, n * sizeof(float))); }
    ~Holder() { CK(cudaFree(weights)); }
    Holder(const Holder &) = delete;
    Holder &operator=(const Holder &) = delete;
};

Holder *g_holder;

static __attribute__((noinline)) void make_holder()
{
    g_holder = new Holder((2u << 20) / sizeof(float));
    float host[256];
    for (int i = 0; i < 256; i++)
        host[i] = (float)i;
    CK(cudaMemcpy(g_holder->weights, host, sizeof host, cudaMemcpyHostToDevice));
}

int main()
{
    make_holder();
    clobber_stack();
    maybe_scan();

    float back[256];
    CK(cudaMemcpy(back, g_holder->weights, sizeof back, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 256; i++)
        EXPECT(back[i] == (float)i);
    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, g_holder->weights));
    EXPECT(a.type == cudaMemoryTypeDevice);
    delete g_holder;
    g_holder = nullptr;
    printf("ok\n");
    return 0;
}
