/*
 * leak_thread_stack: a block whose only pointer is on the stack of another
 * thread, which stays blocked (on a pipe nobody writes) until the process
 * exits. Both the gcspy_scan() made while it waits and the exit scan must
 * find the 2010-byte block reachable through that stack; the 1001-byte
 * block main leaks is the control (definite).
 *
 * At exit the thread still exists: the exit scan stops it like any other.
 * Its DTV (288 bytes, reached only through the TCB's dtv+1, an interior
 * pointer) is possibly lost in both scans, as memcheck reports it. Its size
 * grows by 16 bytes for each module with TLS loaded at start (libgcspy.so
 * is one; it was 304 while libgcspy.so pulled in libunwind.so.8).
 *
 * @scans api 1
 * @scan api definite=1/1001 indirect=0/0 possible=1/288
 * @block api 1001=definite 2010=reachable 288=possible
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=1/288
 * @block exit 1001=definite 2010=reachable
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leak_case.h"

static int ready[2], never[2];

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 5, n);
    return p;
}

static __attribute__((noinline)) void leak(void)
{
    void *p = make(1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static void *holder(void *arg)
{
    (void)arg;
    void *volatile slot = make(2010); /* on this thread's stack only */
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
        return NULL;
    while (read(never[0], &c, 1) != 0)
        ;
    return slot;
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
    leak();
    clobber_stack();
    int rc = scan ? scan() : 0;
    clobber_stack();
    return rc == 0 ? 0 : 1;
}
