/*
 * 4 worker threads, each doing exactly 2,500 malloc/free pairs (10,000 in
 * all) from the function pair_worker, with sizes 20000 + i % 4096 (bytes
 * 20000..24095: no other code in this program allocates in that range).
 *
 * Expected under the shim (tests/integration/shim_pairs.sh):
 *   - exactly 10,000 ALLOC records with sizes 20000..24095, each size count
 *     matching the loop, each with pair_worker in its stack, and exactly
 *     10,000 FREE records of those addresses;
 *   - a THREAD_START for each of the 4 workers (their tids are printed on
 *     stdout as "worker K tid T") and a THREAD_EXIT for each;
 *   - the trace consistent (checker), exit status 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTHREADS 4
#define PAIRS 2500

static int tids[NTHREADS];
static pthread_barrier_t ready;

__attribute__((noinline)) static void *pair_worker(void *arg)
{
    int k = (int)(long)arg;
    tids[k] = gettid();
    pthread_barrier_wait(&ready);
    for (int i = 0; i < PAIRS; i++) {
        size_t n = 20000 + (size_t)(k * PAIRS + i) % 4096;
        char *volatile p = malloc(n);
        if (!p)
            abort();
        p[0] = (char)i;
        p[n - 1] = (char)k;
        free(p);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[NTHREADS];
    pthread_barrier_init(&ready, NULL, NTHREADS);
    for (long k = 0; k < NTHREADS; k++)
        if (pthread_create(&t[k], NULL, pair_worker, (void *)k))
            return 1;
    for (int k = 0; k < NTHREADS; k++)
        pthread_join(t[k], NULL);
    for (int k = 0; k < NTHREADS; k++)
        printf("worker %d tid %d\n", k, tids[k]);
    return 0;
}
