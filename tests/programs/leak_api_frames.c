/*
 * leak_api_frames: a block dropped just before gcspy_scan_leaks(), with no
 * clobber_stack() in between. The calling thread's stack is a root from
 * the caller's stack pointer up, and gcspy's own frames below it are not:
 * gcspy_scan_leaks() holds locals it writes only after the scan, and until
 * then they hold what the allocation's frames (gcspy's malloc hook among
 * them) left in that stack memory. Before the API's entry stubs
 * (preload/scan_trigger.c) the block stayed reachable in every run, through
 * such a slot; sid's python3.14 kept a block a test had just dropped the
 * same way (py_pymalloc.sh).
 *
 * @scans api 2
 * @scan api#1 definite=0/0 indirect=0/0 possible=0/0
 * @scan api#2 definite=1/2222 indirect=0/0 possible=0/0
 * @block api#2 2222=definite
 * @scans exit 1
 * @scan exit definite=1/2222 indirect=0/0 possible=0/0
 */
#include <dlfcn.h>

#include "gcspy.h"
#include "leak_case.h"

int main(void)
{
    int (*scan)(struct gcspy_leaks *) =
        (int (*)(struct gcspy_leaks *))dlsym(RTLD_DEFAULT, "gcspy_scan_leaks");
    struct gcspy_leaks l;
    int rc1 = scan ? scan(&l) : 0;
    leak_bytes(2222, 7);
    int rc2 = scan ? scan(&l) : 0;
    /* what the API returns agrees with the trace (valgrind's run: no API) */
    int counted = !scan || (l.new_definite.blocks == 1 && l.new_definite.bytes == 2222);
    return rc1 == 0 && rc2 == 0 && counted ? 0 : 1;
}
