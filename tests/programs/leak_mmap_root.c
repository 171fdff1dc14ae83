/*
 * leak_mmap_root: a private anonymous mapping the program manages itself (as
 * CPython does with its arenas) is a root. The only pointer to a 1001-byte
 * block lives in such a 256 KiB mapping: reachable. The only pointer to a
 * 2010-byte block lived in a second mapping that was then unmapped:
 * definitely lost.
 *
 * @scans exit 1
 * @scan exit definite=1/2010 indirect=0/0 possible=0/0
 * @block exit 1001=reachable 2010=definite
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "leak_case.h"

void *volatile arena;

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 20, n);
    return p;
}

static __attribute__((noinline)) int setup(void)
{
    char *a = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *b = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED || b == MAP_FAILED)
        return -1;
    *(void **)(a + 200000) = make(1001);
    *(void **)(b + 200000) = make(2010);
    arena = a;
    return munmap(b, 256 << 10);
}

int main(void)
{
    int rc = setup();
    clobber_stack();
    return rc ? 2 : 0;
}
