/*
 * leak_realloc: a block grown by realloc (and moved: a neighbour allocated
 * right after it keeps it from growing in place), then leaked. Only the new
 * block exists and it is definitely lost with its new size, 5005 bytes; the
 * old 1001-byte block is gone (realloc freed it) and the neighbour is still
 * reachable. Exit status 3 if realloc did not move the block (the case would
 * then prove less than it claims).
 *
 * @scans exit 1
 * @scan exit definite=1/5005 indirect=0/0 possible=0/0
 * @block exit 5005=definite 2010=reachable 1001=absent
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile neighbour;
static volatile int moved;

static __attribute__((noinline)) void grow_and_leak(void)
{
    char *p = malloc(1001);
    memset(p, 9, 1001);
    neighbour = malloc(2010);
    uintptr_t before = (uintptr_t)p;
    p = realloc(p, 5005);
    moved = (uintptr_t)p != before;
    memset(p + 1001, 9, 5005 - 1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
    grow_and_leak();
    clobber_stack();
    return moved ? 0 : 3;
}
