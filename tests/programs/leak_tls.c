/*
 * leak_tls: blocks whose only pointers are in a __thread variable, one of
 * the main thread (1001 bytes: its static TLS lives in memory the loader
 * mapped) and one of a second thread (2010 bytes: its TLS sits at the top of
 * its stack mapping), which stays blocked until the process exits. Both are
 * reachable in a gcspy_scan() and in the exit scan. The 3003-byte block main
 * leaks is the control (definite).
 *
 * The second thread's DTV (304 bytes here: the executable has TLS too) is
 * possibly lost in both scans: its TCB reaches it only through dtv+1, an
 * interior pointer, and memcheck says the same. Static TLS does not go
 * through the DTV, so the 2010-byte block is reachable regardless.
 *
 * @scans api 1
 * @scan api definite=1/3003 indirect=0/0 possible=1/304
 * @block api 1001=reachable 2010=reachable 3003=definite 304=possible
 * @scans exit 1
 * @scan exit definite=1/3003 indirect=0/0 possible=1/304
 * @block exit 1001=reachable 2010=reachable 3003=definite
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leak_case.h"

__thread void *leak_tls_ptr; /* not static: a write-only static would be optimized away */
static int ready[2], never[2];

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 6, n);
    return p;
}

static __attribute__((noinline)) void leak(void)
{
    void *p = make(3003);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static __attribute__((noinline)) void set_tls(size_t n)
{
    leak_tls_ptr = make(n);
}

static void *holder(void *arg)
{
    (void)arg;
    set_tls(2010);
    clobber_stack();
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
        return NULL;
    while (read(never[0], &c, 1) != 0)
        ;
    return NULL;
}

int main(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    pthread_t t;
    char c;
    if (pipe(ready) || pipe(never) || pthread_create(&t, NULL, holder, NULL))
        return 2;
    if (read(ready[0], &c, 1) != 1)
        return 2;
    set_tls(1001);
    leak();
    clobber_stack();
    int rc = scan ? scan() : 0;
    clobber_stack();
    return rc == 0 ? 0 : 1;
}
