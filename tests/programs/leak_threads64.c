/*
 * leak_threads64: 64 threads allocating and freeing for 600 ms while the
 * shim scans every 20 ms (GCSPY_SCAN_INTERVAL_MS=20), plus one 1001-byte
 * leak made by main before the threads start. Every periodic scan and the
 * exit scan must report exactly that leak as definite and nothing else
 * definite or indirect: the threads' blocks in flight (in registers, on
 * their stacks, in their rings) are reachable. No deadlock, and it ends in
 * well under the runner's timeout.
 *
 * The threads' blocks are 24 + 16k bytes (never a multiple of 16); the only
 * possibly-lost blocks allowed are glibc's thread DTVs (multiples of 16,
 * reached through the TCB's dtv+1, an interior pointer), counted per scan
 * by the number of threads alive or cached.
 *
 * @env GCSPY_SCAN_INTERVAL_MS=20
 * @timeout 60
 * Only the periodic scans that begin after main's "settled" mark are
 * judged: one that falls between the leak's malloc and clobber_stack()
 * rightly finds the block reachable.
 *
 * @scans periodic>settled >=2
 * @scan periodic>settled definite=1/1001 indirect=0/0 possible=*
 * @block periodic>settled 1001=definite
 * @only periodic>settled possible size%16=0
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=*
 * @only exit possible size%16=0
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leak_case.h"

#define NTHREADS 64
#define RING 8

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 13, n);
    return p;
}

static __attribute__((noinline)) void leak(void)
{
    void *p = make(1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double deadline;

static void *worker(void *arg)
{
    unsigned k = (unsigned)(size_t)arg;
    void *ring[RING] = {0};
    struct timespec pause = {0, 1000 * 1000};
    while (now() < deadline) {
        for (int i = 0; i < RING; i++) {
            free(ring[i]);
            k = k * 1103515245u + 12345u;
            ring[i] = make(24 + 16 * ((k >> 16) % 60));
        }
        nanosleep(&pause, NULL);
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    return NULL;
}

int main(void)
{
    leak();
    clobber_stack();
    mark_settled();
    deadline = now() + 0.6;
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(size_t)i))
            return 2;
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    clobber_stack();
    return 0;
}
