/*
 * leak_thread_dead_stack: a thread leaks a block and exits; the only copy of
 * the pointer is in a dead frame of its stack (below the stack pointer it
 * had when it went on). glibc keeps an exited thread's stack mapped in its
 * stack cache for reuse, but dead frames are not roots: memcheck knows
 * them as undefined memory and says definitely lost, and so must gcspy.
 * Contrast leak_thread_stack, where the thread is alive and the pointer is
 * in a live frame.
 *
 * The thread's DTV stays in the stack cache too (possibly lost, as in
 * leak_threads_exited).
 *
 * @scans exit 1
 * @scan exit definite=1/2010 indirect=0/0 possible=1/288
 * @block exit 2010=definite
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

static __attribute__((noinline)) void leak(void)
{
    void *volatile slot = malloc(2010); /* stays in this (soon dead) frame */
    memset(slot, 22, 2010);
}

static void *worker(void *arg)
{
    (void)arg;
    leak();
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
        return 2;
    clobber_stack();
    return 0;
}
