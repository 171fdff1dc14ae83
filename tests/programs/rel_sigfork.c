/*
 * rel_sigfork [N]: fork() from a signal handler while the program allocates
 * (tests/integration/rel_sigfork.sh). A SIGALRM handler (a one-shot setitimer of a
 * millisecond, re-armed by the handler) forks; the child _exits at once with status 0, the handler
 * waits for it. The main thread meanwhile loops malloc/free of blocks of
 * 24..1047 bytes, so the handler often interrupts a free or a malloc in the
 * middle of the shim's bookkeeping, with one of its locks held. After N
 * clean forks (default 300) it prints "forks=N bad=B" (B: children that did
 * not exit 0) and exits 0 (1 if B is not 0).
 *
 * Expected under the shim: no deadlock (the child of a fork that
 * interrupted the shim must not wait on a lock the interrupted frame holds,
 * nor the parent), "forks=300 bad=0", exit 0, and the parent's trace
 * complete and consistent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t forks, bad;

static void on_alarm(int sig)
{
    (void)sig;
    int e = errno;
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    if (p > 0) {
        int st;
        while (waitpid(p, &st, 0) < 0)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
        forks++;
    }
    /* one-shot, re-armed here: the main loop always gets its millisecond */
    struct itimerval it = {{0, 0}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    errno = e;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 300;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    unsigned x = 1;
    void *keep[64] = {0};
    while (forks < n) {
        x = x * 1103515245 + 12345;
        unsigned i = (x >> 8) % 64;
        free(keep[i]);
        keep[i] = malloc(24 + (x >> 16) % 1024);
    }
    signal(SIGALRM, SIG_IGN);
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    printf("forks=%d bad=%d\n", (int)forks, (int)bad);
    return bad != 0;
}
