/*
 * leak_beside_data: blocks held only by the program's globals, in an address
 * layout without ASLR (@wrap setarch -R: a debugger's default, and any
 * system with randomization off), where malloc's heap begins right after the
 * program's .bss, in the same 64 KiB as its globals. The scanner keeps a
 * 64 KiB region around tracked blocks out of the roots (the heap's free
 * neighbours hold stale pointers); before the regions were clipped to the
 * modules' data (preload/roots.c, exclude_heap) that region took the globals
 * with it, and every block they held came out definite. A third block is
 * dropped: the one definite leak.
 *
 * @wrap setarch -R
 * @scans exit 1
 * @scan exit definite=1/3333 indirect=0/0 possible=0/0
 * @block exit 1111=reachable 2222=reachable 3333=definite
 */
#include "leak_case.h"

void *volatile kept_bss;            /* .bss, next to the heap */
void *volatile kept_data = (void *)1; /* .data */

int main(void)
{
    kept_bss = leak_case_block(1111);
    kept_data = leak_case_block(2222);
    leak_bytes(3333, 5);
    clobber_stack();
    return 0;
}
