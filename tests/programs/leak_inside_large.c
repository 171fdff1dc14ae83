/*
 * leak_inside_large: pointers kept inside large blocks (>= 64 KiB, which the
 * scanner indexes apart from small ones and never treats as roots). A
 * 100000-byte block (from the brk heap) kept by a global holds, at offset
 * 50000, the only pointer to a 1001-byte block: both reachable. A
 * 300000-byte block (mmap'd by glibc) that is leaked holds the only pointer
 * to a 2010-byte block: 1 definite (300000) + 1 indirect (2010).
 *
 * @scans exit 1
 * @scan exit definite=1/300000 indirect=1/2010 possible=0/0
 * @block exit 100000=reachable 1001=reachable 300000=definite 2010=indirect
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile kept;

static __attribute__((noinline)) void setup(void)
{
    char *big = leak_case_block(100000);
    *(void **)(big + 50000) = leak_case_block(1001);
    kept = big;
    char *lost = leak_case_block(300000);
    *(void **)(lost + 150000) = leak_case_block(2010);
    __asm__ volatile("" : : "r"(lost) : "memory");
}

int main(void)
{
    setup();
    clobber_stack();
    return 0;
}
