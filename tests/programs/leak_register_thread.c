/*
 * leak_register_thread: a pointer held only in a register (r12) of another
 * thread, which spins in a loop of inline assembly while main calls
 * gcspy_scan(). The stopped thread's registers come from its signal context
 * and are roots: the 2010-byte block is reachable. Then the thread is
 * released and frees the block, so the exit scan finds nothing.
 *
 * A 1001-byte block leaked by main is the control: it must be definite in
 * both scans, so a scan that saw nothing would not pass.
 *
 * The one possibly-lost block is glibc's: the second thread's DTV (288
 * bytes, calloc'd by pthread_create), which its TCB reaches only through
 * dtv+1, an interior pointer. memcheck says the same of it. After the
 * join the stack, TCB and DTV stay in glibc's stack cache.
 *
 * @scans api 1
 * @scan api definite=1/1001 indirect=0/0 possible=1/288
 * @block api 1001=definite 2010=reachable 288=possible
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=1/288
 * @block exit 1001=definite
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

static atomic_int state; /* 0 starting, 1 spinning, 2 released */

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 4, n);
    return p;
}

static __attribute__((noinline)) void leak(void)
{
    void *p = make(1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static void *spinner(void *arg)
{
    (void)arg;
    register char *p __asm__("r12") = make(2010);
    clobber_stack();
    atomic_store(&state, 1);
    /* The loop is all assembly: p stays in r12 and nowhere else. */
    __asm__ volatile("1: pause\n\t"
                     "cmpl $1, %[st]\n\t"
                     "je 1b"
                     : "+r"(p)
                     : [st] "m"(state)
                     : "memory", "cc");
    free(p);
    return NULL;
}

int main(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    pthread_t t;
    if (pthread_create(&t, NULL, spinner, NULL))
        return 2;
    while (atomic_load(&state) != 1)
        sched_yield();
    leak();
    clobber_stack();
    int rc = scan ? scan() : 0;
    atomic_store(&state, 2);
    pthread_join(t, NULL);
    clobber_stack();
    return rc == 0 ? 0 : 1;
}
