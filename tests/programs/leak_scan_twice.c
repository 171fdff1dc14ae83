/*
 * leak_scan_twice: gcspy_scan() twice, with a leak made between the calls.
 * The first scan has no definite block, the second has the 1001-byte one;
 * scans are independent (marks reset after each).
 *
 * @scans api 2
 * @scan api#1 definite=0/0 indirect=0/0 possible=0/0
 * @block api#1 1001=absent
 * @scan api#2 definite=1/1001 indirect=0/0 possible=0/0
 * @block api#2 1001=definite
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

static __attribute__((noinline)) void leak(void)
{
    char *p = malloc(1001);
    memset(p, 15, 1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    int rc1 = scan ? scan() : 0;
    leak();
    clobber_stack();
    int rc2 = scan ? scan() : 0;
    return rc1 == 0 && rc2 == 0 ? 0 : 1;
}
