/*
 * exit() from a thread that is not the main thread, while three other
 * threads keep allocating: each loops malloc(40 + k)/free and keeps every
 * 100th block (so there are live blocks at exit). The main thread waits in
 * pthread_join on the exiting thread, which never returns: once the three
 * have made 5,000 allocations between them it prints "exiting" and calls
 * exit(42) (soon, so the trace stays small).
 *
 * Expected (tests/integration/shim_thread_exit.sh): exit status 42, stdout
 * "exiting", nothing on stderr with GCSPY_QUIET=1; one complete trace whose
 * exit record has status 42; the trace consistent (checker), including
 * TRACE_END's counts against the records, although threads allocate while
 * the exit runs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_long made;

static void *allocator(void *arg)
{
    size_t size = 40 + (size_t)(long)arg;
    for (unsigned long i = 0;; i++) {
        char *volatile p = malloc(size);
        if (!p)
            abort();
        p[0] = 1;
        if (i % 100)
            free(p);
        atomic_fetch_add_explicit(&made, 1, memory_order_relaxed);
    }
    return NULL;
}

static void *exiter(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 100 * 1000};
    while (atomic_load(&made) < 5000)
        nanosleep(&ts, NULL);
    printf("exiting\n");
    exit(42);
}

int main(void)
{
    pthread_t t[4];
    for (long k = 0; k < 3; k++)
        if (pthread_create(&t[k], NULL, allocator, (void *)k))
            return 2;
    if (pthread_create(&t[3], NULL, exiter, NULL))
        return 2;
    pthread_join(t[3], NULL);
    return 3; /* not reached */
}
