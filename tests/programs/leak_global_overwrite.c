/*
 * leak_global_overwrite: a global pointer overwritten. The global first holds
 * a 1001-byte block, then a 2010-byte one: the first is definitely lost, the
 * second still reachable from the program's data segment (a root).
 *
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 * @block exit 1001=definite 2010=reachable
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile global_ptr;

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 2, n);
    return p;
}

int main(void)
{
    global_ptr = make(1001);
    global_ptr = make(2010);
    clobber_stack();
    return 0;
}
