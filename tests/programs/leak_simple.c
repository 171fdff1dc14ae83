/*
 * leak_simple: the simplest leak. One 1001-byte block whose only pointer
 * dies with the frame that made it: definitely lost, and nothing else is.
 *
 * The allocation happens in a noinline helper and the stack is clobbered
 * before exit, so no stale copy of the pointer survives in a dead stack slot
 * (a conservative scanner would take it for a live reference).
 *
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 * @block exit 1001=definite
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

int main(void)
{
    leak_bytes(1001, 1);
    clobber_stack();
    return 0;
}
