/*
 * leak_thread_dead_tls: an exited thread's __thread variable held the only
 * pointer to a block. glibc keeps the stacks of exited threads cached for
 * reuse, with their thread descriptor and static TLS at the top, so that
 * pointer is still in memory at exit; but the thread is gone, and memcheck
 * and LeakSanitizer call the block definitely lost: so must gcspy (it read
 * the cached static TLS as a root and said reachable). A live thread's TLS
 * stays a root (leak_tls). The dead thread's DTV, which glibc keeps in the
 * cached descriptor for the stack's reuse, is still reached through it:
 * possibly lost, as before.
 *
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=0/0 possible=*
 * @block exit 1001=definite
 * @only exit possible size%16=0
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

__thread void *mine;

static void *worker(void *arg)
{
    (void)arg;
    mine = malloc(1001);
    memset(mine, 1, 1001);
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
        return 1;
    clobber_stack();
    return 0;
}
