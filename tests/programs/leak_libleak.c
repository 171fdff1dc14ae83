/*
 * leak_libleak.so: a library whose own code allocates, for leak_dlclose.
 * leak_lib_drop() makes a block and forgets it at once; leak_lib_hold()
 * keeps one in the library's bss, which stops being a root (it is unmapped)
 * when the library is dlclose'd.
 */
#include <stdlib.h>
#include <string.h>

static void *held;

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 11, n);
    return p;
}

void leak_lib_drop(size_t n)
{
    void *p = make(n);
    __asm__ volatile("" : : "r"(p) : "memory");
}

void leak_lib_hold(size_t n)
{
    held = make(n);
}

void *leak_lib_held(void)
{
    return held;
}
