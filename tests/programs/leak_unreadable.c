/*
 * leak_unreadable: the program protects live heap memory, as guard pages and
 * debug allocators do. A kept 16 KiB page-aligned block (a global points at
 * it) holds a pointer to 2010 in its first page and the only pointer to
 * 1001 in its third; its last two pages are then made PROT_NONE. The scans
 * must not fault: they read the first two pages, leave the other two unread
 * and count them (unreadable=8192 in the scan's record), so 2010 is
 * reachable and 1001, whose pointer cannot be read, is definitely lost.
 * memcheck skips unreadable memory in its leak check too.
 *
 * @scans api 1
 * @scans exit 1
 * @scan any definite=1/1001 indirect=0/0 possible=0/0
 * @block exit 1001=definite 2010=reachable 16384=reachable
 * @unreadable any 8192
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "leak_case.h"

void *volatile guarded;

static __attribute__((noinline)) void setup(void)
{
    uintptr_t *g = aligned_alloc(4096, 16384);
    memset(g, 0, 16384);
    g[0] = (uintptr_t)malloc(2010);
    g[2 * 4096 / 8] = (uintptr_t)malloc(1001);
    memset((void *)g[0], 1, 2010);
    memset((void *)g[2 * 4096 / 8], 2, 1001);
    mprotect((char *)g + 8192, 8192, PROT_NONE);
    guarded = g;
}

int main(void)
{
    setup();
    clobber_stack();
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    if (scan)
        scan();
    return 0;
}
