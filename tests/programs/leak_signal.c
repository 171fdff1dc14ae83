/*
 * leak_signal: a scan requested by signal. With GCSPY_SCAN_SIGNAL=12 the
 * shim handles SIGUSR2 by waking its writer thread, which runs the scan
 * (trigger=signal) while main sleeps (1 s). The scan and the exit scan
 * both show the 1001-byte leak as definite.
 *
 * @env GCSPY_SCAN_SIGNAL=12
 * @scans signal 1
 * @scan signal definite=1/1001 indirect=0/0 possible=0/0
 * @block signal 1001=definite
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 * @block exit 1001=definite
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "leak_case.h"

static __attribute__((noinline)) void leak(void)
{
    char *p = malloc(1001);
    memset(p, 14, 1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
    /* Without the shim SIGUSR2 would kill the process: ignore it then. */
    struct sigaction cur;
    if (sigaction(SIGUSR2, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL)
        signal(SIGUSR2, SIG_IGN);
    leak();
    clobber_stack();
    raise(SIGUSR2);
    struct timespec ts = {1, 0}; /* time for the writer thread, even on a loaded machine */
    while (nanosleep(&ts, &ts))
        ;
    return 0;
}
