/*
 * leak_blocked_signals: a second thread blocks every signal, so the scan's
 * stop signal cannot stop it, keeps a 2002-byte block whose only pointer is
 * on its own stack, and waits on a pipe forever (a helper thread such as
 * node's inspector thread). Main leaks a 1001-byte block and exits 3.
 *
 * The exit scan parks the blocked thread instead of stopping it (it waits
 * in the kernel: its stack is scanned whole, its registers are not read):
 * the scan completes without the stop timeout it used to wait for (3 s,
 * then skipped), the thread's block is reachable and main's leak definite. (The 288-byte block possibly lost is the thread's
 * DTV: leak_thread_stack.c says why; valgrind counts 272.)
 *
 * @env GCSPY_QUIET=0
 * @status 3
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=1/288
 * @block exit 1001=definite 2002=reachable
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leak_case.h"

static int ready[2], never[2];

static void *blocker(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    char *volatile mine = malloc(2002);
    memset(mine, 2, 2002);
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
        return NULL;
    while (read(never[0], &c, 1) != 0)
        ;
    return (void *)mine;
}

int main(void)
{
    pthread_t t;
    char c;
    if (pipe(ready) || pipe(never) || pthread_create(&t, NULL, blocker, NULL))
        return 2;
    if (read(ready[0], &c, 1) != 1)
        return 2;
    leak_bytes(1001, 1);
    clobber_stack();
    return 3;
}
