/*
 * A small library that shim_dlopen loads with dlopen: its allocations come
 * from its own code, so their innermost frame lies in this module's
 * executable segment (inside dlib_alloc).
 */
#include <stdlib.h>

__attribute__((noinline)) void *dlib_alloc(size_t n)
{
    char *volatile p = malloc(n);
    if (p)
        p[0] = 1;
    return p;
}
