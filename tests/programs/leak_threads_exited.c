/*
 * leak_threads_exited: a control with threads that have exited. Four threads
 * each allocate blocks, free some, and hand the rest to a global table; they
 * are joined, then a detached thread runs and exits. At exit every block the
 * threads made is reachable or freed: no definite or indirect block, and no
 * possibly-lost block of the program's (its sizes are 1001 + 16k, never a
 * multiple of 16).
 *
 * The exited threads' stacks stay mapped in glibc's stack cache with their
 * DTVs (calloc'd, reached only through the cached TCB's dtv+1, an interior
 * pointer): those, and only those, are possibly lost, as memcheck would say
 * without its exit-time freeres.
 *
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=*
 * @only exit possible size%16=0
 * @block exit 1001x4=reachable 1017x4=reachable 1033x4=absent
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leak_case.h"

void *volatile table[8];
static atomic_int detached_done;

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 17, n);
    return p;
}

static void *worker(void *arg)
{
    int i = (int)(size_t)arg;
    table[2 * i] = make(1001);
    table[2 * i + 1] = make(1017);
    free(make(1033));
    return NULL;
}

static void *detached(void *arg)
{
    (void)arg;
    free(make(1033));
    atomic_store(&detached_done, 1);
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(size_t)i))
            return 2;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    pthread_t d;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&d, &at, detached, NULL))
        return 2;
    while (!atomic_load(&detached_done))
        sched_yield();
    /* let the detached thread finish exiting */
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    clobber_stack();
    return 0;
}
