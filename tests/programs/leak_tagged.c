/*
 * leak_tagged: a pointer whose low bits carry a tag still holds its block.
 * glibc's tsearch keeps a node's colour in the low bit of its left link
 * (setenv's old strings hang off such nodes), CPython 3.14 tags its stack
 * references, LLVM's PointerIntPair packs flags there. A global holds the
 * 1001-byte block's address + 1 and another the 2010-byte block's + 7:
 * both reachable. A third holds the 3003-byte block's address + 8, a real
 * interior pointer: possible, as memcheck says. The 505-byte block, reached
 * only from the tagged 1001-byte one, is reachable too.
 *
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=1/3003
 * @block exit 1001=reachable 505=reachable 2010=reachable 3003=possible
 * @valgrind expect definite=0 indirect=0 possible=6519: memcheck has no tagged pointers: 1001, 505, 2010 and 3003 are possibly lost
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

volatile uintptr_t tagged1, tagged7, interior8;

static __attribute__((noinline)) void setup(void)
{
    void **a = leak_case_block(1001);
    a[0] = leak_case_block(505);
    tagged1 = (uintptr_t)a | 1;
    tagged7 = (uintptr_t)leak_case_block(2010) + 7;
    interior8 = (uintptr_t)leak_case_block(3003) + 8;
}

int main(void)
{
    setup();
    clobber_stack();
    return 0;
}
