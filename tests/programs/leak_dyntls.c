/*
 * leak_dyntls: blocks whose only pointers are in a __thread variable of a
 * dlopen'ed library (leak_libtls.so), that is in dynamic TLS, allocated on
 * first use and reached through the thread's DTV: one set by the main thread
 * (1001 bytes), one by a second thread that stays blocked until the process
 * exits (2010 bytes). The 3003-byte block main leaks is the control.
 *
 * The main thread's DTV was made by the loader before malloc was hooked, so
 * it is untracked memory, a root: the 1001-byte block is reachable. The
 * second thread's DTV is a calloc'd block its TCB reaches only through
 * dtv+1, an interior pointer: the DTV (304 bytes), the 8-byte TLS block it
 * points at and the 2010-byte block are possibly lost, as memcheck reports
 * them too. The fourth possible block is ld.so's _dl_find_object segment
 * (2304 bytes): glibc stores its malloc'd address rounded up to 128 bytes
 * (_dlfo_mappings_segment_allocate), an interior pointer, unless malloc
 * returned a multiple of 128, where the stored pointer is the block's start
 * and the block is rightly reachable (seen on a new machine's heap layout).
 *
 * @scans api 1
 * @scan api definite=1/3003 indirect=0/0 possible=4/4626
 * @block api 1001=reachable 2010=possible 3003=definite 8=possible 304=possible 2304=possible|reachable@128
 * @scans exit 1
 * @scan exit definite=1/3003 indirect=0/0 possible=4/4626
 * @block exit 1001=reachable 2010=possible 3003=definite 2304=possible|reachable@128
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leak_case.h"

static void (*tls_set)(void *);
static int ready[2], never[2];

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 7, n);
    return p;
}

static __attribute__((noinline)) void leak(void)
{
    void *p = make(3003);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static __attribute__((noinline)) void set_tls(size_t n)
{
    tls_set(make(n));
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
    void *lib = dlopen("leak_libtls.so", RTLD_NOW);
    if (!lib || !(tls_set = (void (*)(void *))dlsym(lib, "leak_libtls_set")))
        return 2;
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
