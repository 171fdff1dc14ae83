/*
 * leak_calloc: calloc(13, 77) = 1001 bytes, leaked, and calloc(10, 201) =
 * 2010 bytes kept by a global. The block size the scanner reports is the
 * product, as memcheck's.
 *
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 * @block exit 1001=definite 2010=reachable
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile kept;

static __attribute__((noinline)) void leak(void)
{
    char *p = calloc(13, 77);
    __asm__ volatile("" : : "r"(p) : "memory");
    kept = calloc(10, 201);
}

int main(void)
{
    leak();
    clobber_stack();
    return 0;
}
