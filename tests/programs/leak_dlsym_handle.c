/*
 * leak_dlsym_handle: blocks allocated through functions looked up by handle,
 * as ctypes, cffi and plugin loaders do: dlopen("libc.so.6") and
 * dlsym(h, "malloc") / dlsym(h, "calloc") / dlvsym(h, "malloc",
 * "GLIBC_2.2.5") return libc's own functions, which bypass LD_PRELOAD
 * wrappers. gcspy interposes dlsym and dlvsym so that such lookups return
 * its hooks: the 1001-byte malloc, 2010-byte calloc and 3003-byte dlvsym'd
 * malloc are leaked and definite; the 505-byte one is kept (a global).
 * A lookup of a function gcspy does not hook (strlen) is passed through.
 *
 * @scans exit 1
 * @scan exit definite=3/6014 indirect=0/0 possible=0/0
 * @block exit 1001=definite 2010=definite 3003=definite 505=reachable
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile kept;

static __attribute__((noinline)) int leak(void *h)
{
    void *(*m)(size_t) = (void *(*)(size_t))dlsym(h, "malloc");
    void *(*c)(size_t, size_t) = (void *(*)(size_t, size_t))dlsym(h, "calloc");
    void *(*v)(size_t) = (void *(*)(size_t))dlvsym(h, "malloc", "GLIBC_2.2.5");
    size_t (*len)(const char *) = (size_t (*)(const char *))dlsym(h, "strlen");
    if (!m || !c || !v || !len || len("abc") != 3)
        return 1;
    memset(m(1001), 1, 1001);
    memset(c(1, 2010), 2, 2010);
    memset(v(3003), 3, 3003);
    kept = m(505);
    return 0;
}

int main(void)
{
    void *h = dlopen("libc.so.6", RTLD_NOW);
    if (!h || leak(h))
        return 2;
    clobber_stack();
    return 0;
}
