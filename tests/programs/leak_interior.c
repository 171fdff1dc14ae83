/*
 * leak_interior: blocks reached only through an interior pointer are
 * "possibly lost". A global holds a pointer 16 bytes into a 1001-byte block;
 * that block holds the start pointer of a 505-byte block, which is reached
 * only through the interior chain and so is possibly lost too (memcheck
 * propagates the possible state the same way). A second global holds the
 * start of a 2010-byte block: reachable.
 *
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=2/1506 
 * @block exit 1001=possible 505=possible 2010=reachable
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

char *volatile into_middle;
void *volatile to_start;

static __attribute__((noinline)) void setup(void)
{
    void **a = leak_case_block(1001);
    a[0] = leak_case_block(505);
    into_middle = (char *)a + 16;
    to_start = leak_case_block(2010);
}

int main(void)
{
    setup();
    clobber_stack();
    return 0;
}
