/*
 * rel_tinystack: threads with the smallest stacks a program may ask for
 * (tests/integration/rel_odd.sh runs it with both unwinders and periodic
 * scans, whose stop signal runs its handler on these stacks too).
 *
 * 8 threads with PTHREAD_STACK_MIN (16 KiB) stacks and 8 threads on 16 KiB
 * stacks the program maps itself (pthread_attr_setstack) each run
 * tiny_recurse to depth 12, allocating a 7777-byte block at every level and
 * freeing them on the way back, 200 times; the main thread waits for them
 * and prints "tiny threads=16 allocs=A frees=F" (A = F = 16 * 200 * 12).
 *
 * Expected under the shim: exit 0 (no stack overflow), exactly A
 * allocations and F frees of 7777 bytes, each with tiny_recurse in its
 * stack, 16 thread starts and exits besides main's; the trace consistent.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define DEPTH 12
#define ROUNDS 200

static atomic_ulong allocs, frees;

__attribute__((noinline)) static void tiny_recurse(int depth)
{
    char *volatile p = malloc(7777);
    if (!p)
        abort();
    p[0] = (char)depth;
    allocs++;
    if (depth > 1)
        tiny_recurse(depth - 1);
    free(p);
    frees++;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++)
        tiny_recurse(DEPTH);
    return NULL;
}

int main(void)
{
    pthread_t th[16];
    pthread_attr_t a;
    for (int i = 0; i < 16; i++) {
        pthread_attr_init(&a);
        if (i < 8) {
            if (pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN))
                return 1;
        } else {
            void *stk = mmap(NULL, PTHREAD_STACK_MIN, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
            if (stk == MAP_FAILED || pthread_attr_setstack(&a, stk, PTHREAD_STACK_MIN))
                return 1;
        }
        if (pthread_create(&th[i], &a, worker, NULL)) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
        pthread_attr_destroy(&a);
    }
    for (int i = 0; i < 16; i++)
        pthread_join(th[i], NULL);
    printf("tiny threads=16 allocs=%lu frees=%lu\n", (unsigned long)allocs,
           (unsigned long)frees);
    return 0;
}
