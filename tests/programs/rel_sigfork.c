/*
 * rel_sigfork [N [malloc]]: fork() from a signal handler while the program allocates
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
 *
 * "malloc" mode: the child takes every malloc arena's lock (mallinfo2)
 * before _exit, under a 2 s alarm, as a child calling malloc would take
 * one. The main arena holds 30,000 free chunks (made with glibc's own
 * entry points, so gcspy's table stays empty), so glibc's mallinfo2, which
 * gcspy's writer samples (GCSPY_SAMPLE_MS), walks them with that arena's
 * lock held for many milliseconds. The loop runs on a worker thread (an
 * arena of its own, which that walk does not hold): it takes blocks with
 * __libc_malloc (not interposed) with SIGALRM blocked, and frees them
 * through gcspy's free with it unblocked: mmapped blocks (M_MMAP_THRESHOLD
 * fixed), so that free holds no arena lock, and a handler that interrupts
 * gcspy there leaves its child no lock of its own thread's. A child that
 * does not exit 0 (killed by its alarm: the lock the writer held at the
 * fork is never let go in the child) counts as bad; the loop stops after
 * 2 bad ones.
 * Expected: "forks=N bad=0", exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t forks, bad;
static int child_mallocs;

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static void on_alarm(int sig)
{
    (void)sig;
    int e = errno;
    pid_t p = fork();
    if (p == 0) {
        if (child_mallocs) {
            /* the handler runs with SIGALRM blocked: unblock it for the alarm */
            sigset_t a;
            sigemptyset(&a);
            sigaddset(&a, SIGALRM);
            signal(SIGALRM, SIG_DFL);
            sigprocmask(SIG_UNBLOCK, &a, NULL);
            alarm(2);
            struct mallinfo2 mi = mallinfo2();
            _exit(mi.arena ? 0 : 1);
        }
        _exit(0);
    }
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

static void *loop(void *arg)
{
    int n = *(int *)arg;
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    while (forks < n && bad < 2) {
        sigprocmask(SIG_BLOCK, &alrm, NULL);
        void *b = __libc_malloc(256 * 1024);
        sigprocmask(SIG_UNBLOCK, &alrm, NULL);
        free(b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 300;
    child_mallocs = argc > 2 && strcmp(argv[2], "malloc") == 0;
    void **frag = NULL;
    if (child_mallocs) {
        /* 60,000 blocks, every other one freed: 30,000 free chunks the
         * in-use ones keep apart (no coalescing), all in the main arena;
         * made and freed with glibc's own entry points, so that gcspy's
         * table stays empty (a traced child would write them all again) */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        frag = __libc_malloc(60000 * sizeof *frag);
        for (int i = 0; i < 60000; i++)
            frag[i] = __libc_malloc(150 + (i % 7) * 16);
        for (int i = 0; i < 60000; i += 2)
            __libc_free(frag[i]);
    }
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    unsigned x = 1;
    void *keep[64] = {0};
    if (child_mallocs) {
        /* the loop runs on a worker: its blocks come from an arena of its
         * own, so the writer's walk of the main arena does not hold it
         * back; SIGALRM, blocked here, goes to the worker */
        sigprocmask(SIG_BLOCK, &alrm, NULL);
        pthread_t t;
        pthread_create(&t, NULL, loop, &n);
        pthread_join(t, NULL);
    }
    while (!child_mallocs && forks < n) {
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
