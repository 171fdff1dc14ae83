/*
 * leak_blocked_signals: a second thread blocks every signal and then waits
 * on a pipe forever, so the exit scan cannot stop it. The scan must give up
 * (after its 3 s timeout) with exactly one "gcspy: scan skipped" line on
 * stderr and no scan in the trace, and the program must still finish
 * normally with its own exit status, 3.
 *
 * valgrind is not compared: there is no gcspy scan to compare with.
 *
 * @env GCSPY_QUIET=0
 * @status 3
 * @stderr-once gcspy: scan skipped
 * @scans any 0
 * @valgrind skip: the scan is skipped by design, nothing to compare
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ready[2], never[2];

static void *blocker(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
        return NULL;
    while (read(never[0], &c, 1) != 0)
        ;
    return NULL;
}

int main(void)
{
    pthread_t t;
    char c;
    if (pipe(ready) || pipe(never) || pthread_create(&t, NULL, blocker, NULL))
        return 2;
    if (read(ready[0], &c, 1) != 1)
        return 2;
    char *p = malloc(1001);
    memset(p, 18, 1001);
    free(p);
    return 3;
}
