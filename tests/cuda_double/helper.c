/* The driver's helper threads, as the real libcuda starts them
 * (GS_CUDA_DOUBLE_HELPER=1; off by default).
 *
 * The real driver starts threads of its own at initialisation (event and
 * callback handling) that may block every signal, real-time ones included,
 * and sleep in the kernel for the process's whole life. A leak scanner that
 * stops the world with a signal must pass over such a thread, not wait for
 * it until its stop times out and the scan is skipped (issue 18, risk 4;
 * cuda_shim.sh's *_helper cases). With this setting on, the first
 * gs_cd_init starts one such thread: it allocates once from this library's
 * code (the driver's threads do; it is then a thread the trace knows), then
 * blocks every signal and waits in poll() on a pipe nobody writes, detached,
 * until the process ends. Started once (pthread_once); a failure to start
 * it leaves the double as without the setting, with one line on stderr. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *volatile helper_state; /* the helper's one allocation, kept */

static void *helper_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    helper_state = malloc(96);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;)
        poll(&p, 1, -1);
    return NULL;
}

static void start_helper(void)
{
    const char *s = getenv("GS_CUDA_DOUBLE_HELPER");
    if (!s || s[0] != '1' || s[1])
        return;
    int fds[2];
    pthread_t t;
    pthread_attr_t a;
    if (pipe(fds) != 0) {
        fputs("cuda double: helper thread not started (pipe)\n", stderr);
        return;
    }
    /* Created with every signal blocked, so none reaches it before its
     * own mask is set (the thread inherits this mask). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_attr_init(&a);
    if (rc == 0) {
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&t, &a, helper_main, (void *)(intptr_t)fds[0]);
        pthread_attr_destroy(&a);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        fputs("cuda double: helper thread not started\n", stderr);
}

void gs_cd_helper_start(void)
{
    pthread_once(&once, start_helper);
}
