/*
 * leak_scan_interval: GCSPY_SCAN_INTERVAL_MS=20 is a period of 20 ms. The
 * program leaks 1001 bytes, marks "settled" once its stack holds no copy of
 * the pointer, and then idles for 500 ms: about 25 periodic scans are due;
 * at least 10 are required after the mark (slack for a loaded machine), and
 * each reports the leak and nothing else. A scan that falls between the
 * malloc and the mark may rightly find the block reachable (the pointer is
 * still in a register or a dead slot), so only scans after it are judged.
 *
 * @env GCSPY_SCAN_INTERVAL_MS=20
 * @scans periodic>settled >=10
 * @scan periodic>settled definite=1/1001 indirect=0/0 possible=0/0
 * @block periodic>settled 1001=definite
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leak_case.h"

/* gcspy's API when the shim is loaded; null under valgrind or bare. */
extern void gcspy_mark(const char *label) __attribute__((weak));

static __attribute__((noinline)) void leak(void)
{
    char *p = malloc(1001);
    memset(p, 23, 1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
    leak();
    clobber_stack();
    if (gcspy_mark)
        gcspy_mark("settled");
    for (int i = 0; i < 50; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}
