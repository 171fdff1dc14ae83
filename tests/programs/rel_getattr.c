/*
 * rel_getattr: threads whose first allocation happens inside
 * pthread_getattr_np() on themselves (tests/integration/rel_getattr.sh).
 * glibc 2.36 calls realloc there (for the affinity mask) while it holds the
 * thread's own lock; a shim that registers the thread at its first event
 * with pthread_getattr_np waits on that lock forever (OpenJDK's `java
 * -version` does exactly this in its first threads).
 *
 * 8 threads each call pthread_getattr_np(pthread_self()) first, then
 * allocate one block of 5151 bytes (kept); main joins them and prints
 * "threads=8 stack_ok=N" (N: threads whose reported stack holds a local
 * variable) and exits 0.
 *
 * Expected under the shim: no hang, exit 0, "threads=8 stack_ok=8", and 8
 * blocks of 5151 bytes in the trace, each with an allocation stack of more
 * than one frame (the thread's stack bounds, which bound the frame walk,
 * are right).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int stack_ok;
static void *volatile keep[8];

__attribute__((noinline)) static void *leaf(int i)
{
    keep[i] = malloc(5151);
    return NULL;
}

static void *run(void *arg)
{
    int i = (int)(long)arg;
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *lo;
        size_t sz;
        if (pthread_attr_getstack(&a, &lo, &sz) == 0 && (char *)&a > (char *)lo &&
            (char *)&a < (char *)lo + sz)
            atomic_fetch_add(&stack_ok, 1);
        pthread_attr_destroy(&a);
    }
    return leaf(i);
}

int main(void)
{
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        if (pthread_create(&t[i], NULL, run, (void *)i))
            return 1;
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    printf("threads=8 stack_ok=%d\n", atomic_load(&stack_ok));
    return 0;
}
