/*
 * leak_scan_bytes: GCSPY_SCAN_BYTES=1M requests a scan after every MiB
 * allocated. The program leaks 1001 bytes, then allocates and frees 64 KiB
 * forty times (2.5 MiB), pausing 5 ms between rounds so the writer thread
 * can run the scans it was woken for: at least two such scans, plus the exit
 * scan, each reporting the leak and nothing else.
 *
 * The trace format has no trigger code of its own for byte-count scans: the
 * shim records them as trigger=signal, so they are counted with "any".
 *
 * @env GCSPY_SCAN_BYTES=1M
 * @scans any >=3
 * @scan any definite=1/1001 indirect=0/0 possible=0/0
 * @scans exit 1
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leak_case.h"

static __attribute__((noinline)) void leak(void)
{
    char *p = malloc(1001);
    memset(p, 24, 1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static __attribute__((noinline)) void churn(void)
{
    char *volatile p = malloc(65536);
    p[0] = 1;
    free(p);
}

int main(void)
{
    leak();
    clobber_stack();
    for (int i = 0; i < 40; i++) {
        churn();
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    clobber_stack();
    return 0;
}
