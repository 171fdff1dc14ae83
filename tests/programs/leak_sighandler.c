/*
 * leak_sighandler: gcspy_scan() called from inside a SIGALRM handler, with
 * the timer firing every 2 ms while main loops through malloc and free (so
 * the signal often lands inside the shim's hooks or inside glibc malloc).
 * gcspy_scan() must then either scan or refuse (-1, when it interrupted the
 * shim itself) without deadlocking; the handler retries on the next tick
 * until one scan succeeded. That scan, and the exit scan, show the
 * 1001-byte leak and nothing else.
 *
 * Exit status 3 if no scan succeeded within 5 s (only when the shim is
 * loaded).
 *
 * @scans api 1
 * @scan api definite=1/1001 indirect=0/0 possible=0/0
 * @block api 1001=definite
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=0/0
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "leak_case.h"

static int (*scan)(void);
static atomic_int done, refused;

static void on_alarm(int sig)
{
    (void)sig;
    if (atomic_load(&done))
        return;
    if (!scan || scan() == 0)
        atomic_store(&done, 1);
    else
        atomic_fetch_add(&refused, 1);
}

static __attribute__((noinline)) void leak(void)
{
    char *p = malloc(1001);
    memset(p, 16, 1001);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static __attribute__((noinline)) void churn(void)
{
    for (int i = 0; i < 64; i++) {
        char *volatile p = malloc(24 + 16 * (size_t)i);
        p[0] = 1;
        free(p);
    }
}

int main(void)
{
    scan = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    leak();
    clobber_stack();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_REAL, &it, NULL);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        churn();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (!atomic_load(&done) && t.tv_sec - t0.tv_sec < 5);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    clobber_stack();
    return atomic_load(&done) ? 0 : 3;
}
