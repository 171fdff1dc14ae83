/* Many threads allocating and freeing device buffers at random.
 *
 * Four threads each run 2000 steps: allocate a buffer of 1 byte to 256 KiB
 * (cudaMalloc, cudaMallocAsync or cuMemAlloc), fill it with a byte of its
 * own, or check and free a random live one. Overlapping buffers would
 * corrupt each other's bytes; a free that lost track of memory would leave
 * cudaMemGetInfo short at the end. On the double, one buffer of all the
 * device memory fits at the end (the free address space coalesced).
 *
 * Not a leak scenario (everything is freed): under gcspy, no leak; the
 * trace holds 8000 allocation-or-free events from 4 threads.
 * Prints "ok". */
#include <pthread.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cuda_double_check.h"

#define THREADS 4
#define STEPS 2000
#define SLOTS 64

struct slot {
    void *p;
    size_t n;
    unsigned char fill;
};

static void check_and_free(struct slot *s, int how)
{
    static __thread unsigned char buf[256 << 10];
    CK(cudaMemcpy(buf, s->p, s->n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < s->n; i++)
        EXPECT(buf[i] == s->fill);
    if (how == 2)
        CU(cuMemFree((CUdeviceptr)(uintptr_t)s->p));
    else if (how == 1)
        CK(cudaFreeAsync(s->p, cudaStreamPerThread));
    else
        CK(cudaFree(s->p));
    s->p = NULL;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    struct slot slots[SLOTS] = {{0}};
    CK(cudaSetDevice(0));
    for (int step = 0; step < STEPS; step++) {
        struct slot *s = &slots[rand_r(&seed) % SLOTS];
        int how = rand_r(&seed) % 3;
        if (s->p) {
            check_and_free(s, how);
            continue;
        }
        s->n = 1 + (size_t)rand_r(&seed) % (256 << 10);
        s->fill = (unsigned char)(1 + rand_r(&seed) % 255);
        if (how == 2) {
            CUdeviceptr d;
            CU(cuMemAlloc(&d, s->n));
            s->p = (void *)(uintptr_t)d;
        } else if (how == 1) {
            CK(cudaMallocAsync(&s->p, s->n, cudaStreamPerThread));
        } else {
            CK(cudaMalloc(&s->p, s->n));
        }
        CK(cudaMemset(s->p, s->fill, s->n));
    }
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].p)
            check_and_free(&slots[i], 0);
    return NULL;
}

int main(void)
{
    size_t free0, free1, total;
    CK(cudaMemGetInfo(&free0, &total));
    CU(cuInit(0));
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++)
        EXPECT(pthread_join(t[i], NULL) == 0);
    CK(cudaDeviceSynchronize());
    CK(cudaMemGetInfo(&free1, &total));
    if (on_double()) {
        EXPECT(free1 == free0 && free1 == total);
        void *all = NULL;
        CK(cudaMalloc(&all, total));
        CK(cudaFree(all));
    }
    printf("ok\n");
    return 0;
}
