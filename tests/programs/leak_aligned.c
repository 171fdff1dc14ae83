/*
 * leak_aligned: one leak from each aligned allocator, each block's start the
 * aligned address the program got: posix_memalign(64, 1001),
 * aligned_alloc(256, 2048), memalign(4096, 3003). All three definitely lost,
 * 6052 bytes. A fourth, posix_memalign(128, 505), is kept by a global: the
 * aligned start is what the scanner must match, not glibc's chunk header.
 *
 * @scans exit 1
 * @scan exit definite=3/6052 indirect=0/0 possible=0/0
 * @block exit 1001=definite 2048=definite 3003=definite 505=reachable
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile kept;

static __attribute__((noinline)) void use(void *p, size_t n)
{
    memset(p, 10, n);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static __attribute__((noinline)) int leak(void)
{
    void *a, *k;
    if (posix_memalign(&a, 64, 1001) || posix_memalign(&k, 128, 505))
        return -1;
    use(a, 1001);
    char *b = aligned_alloc(256, 2048);
    char *c = memalign(4096, 3003);
    if (!b || !c)
        return -1;
    use(b, 2048);
    use(c, 3003);
    kept = k;
    return 0;
}

int main(void)
{
    int rc = leak();
    clobber_stack();
    return rc ? 1 : 0;
}
