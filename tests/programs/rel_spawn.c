/*
 * rel_spawn MODE: new processes and threads made without fork() or
 * pthread_create (tests/integration/rel_spawn.sh).
 *
 *   vfork         allocates 11111 bytes, vfork()s; the child execs this
 *                 program as "child vfork" at once; the parent waits, prints
 *                 "parent child-status=9", frees the block, exits 0.
 *   spawn         the same with posix_spawn() ("child spawn").
 *   child TAG     allocates three blocks of 22222 bytes, frees two, prints
 *                 "child TAG", exits 9.
 *   clone-proc    clone(SIGCHLD) without CLONE_VM (a process, but no atfork
 *                 handlers run): the child allocates and frees 33333 bytes
 *                 and exits 5; the parent allocates and frees 33334 bytes,
 *                 waits, prints "parent clone-status=5", exits 0.
 *   clone-thread  a thread made with the raw clone syscall (CLONE_VM |
 *                 CLONE_THREAD ..., no TLS of its own): it only spins on a
 *                 flag with raw syscalls, holding on its stack the only
 *                 pointer to a 44444-byte block; meanwhile the main thread
 *                 allocates and frees 1,000 blocks of 55555 bytes, sleeps
 *                 400 ms (periodic scans may run) and asks for a scan
 *                 (gcspy_scan, when the shim provides it). Then
 *                 the thread exits, the main thread prints "clone-thread
 *                 done scan=R" and exits 0.
 *
 * Expected under the shim (LD_PRELOAD inherited by exec'd children):
 *   vfork/spawn: two traces, both complete and consistent; the parent's
 *     holds the 11111-byte block (freed) and nothing of the child; the
 *     child's (exe this program, ppid the parent) holds the 3 blocks of
 *     22222 bytes, 2 freed. Exit status 0, output as without the shim.
 *   clone-proc: exit 0, output as without the shim; the parent's trace
 *     complete, consistent, with its 33334-byte block and not the child's
 *     33333 (the child has no trace of its own: no atfork handler ran).
 *   clone-thread: exit 0 well within the timeout (each scan either stops
 *     the raw thread or is skipped with one line), the trace consistent, the
 *     1,000 blocks of 55555 bytes allocated and freed; no scan made while
 *     the raw thread lived calls the 44444-byte block a definite leak (its
 *     only reference is on that thread's stack).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int child(const char *tag)
{
    void *a = malloc(22222), *b = malloc(22222), *c = malloc(22222);
    if (!a || !b || !c)
        return 1;
    free(a);
    free(b);
    printf("child %s\n", tag);
    fflush(stdout);
    static void *volatile keep;
    keep = c;
    (void)keep;
    return 9;
}

static int status_of(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int do_vfork(const char *self)
{
    char *block = malloc(11111);
    if (!block)
        return 1;
    fflush(stdout);
    pid_t pid = vfork();
    if (pid == 0) {
        char *argv[] = {(char *)self, "child", "vfork", NULL};
        execv(self, argv);
        _exit(127);
    }
    printf("parent child-status=%d\n", status_of(pid));
    free(block);
    return 0;
}

static int do_spawn(const char *self)
{
    char *block = malloc(11111);
    if (!block)
        return 1;
    fflush(stdout);
    pid_t pid;
    char *argv[] = {(char *)self, "child", "spawn", NULL};
    if (posix_spawn(&pid, self, NULL, NULL, argv, environ))
        return 1;
    printf("parent child-status=%d\n", status_of(pid));
    free(block);
    return 0;
}

static int clone_proc_child(void *arg)
{
    (void)arg;
    char *volatile p = malloc(33333);
    if (p)
        p[0] = 1;
    free(p);
    return 5;
}

static int do_clone_proc(void)
{
    size_t sz = 1 << 20;
    char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED)
        return 1;
    fflush(stdout);
    pid_t pid = clone(clone_proc_child, stack + sz, SIGCHLD, NULL);
    if (pid < 0)
        return 1;
    char *volatile p = malloc(33334);
    if (!p)
        return 1;
    p[0] = 1;
    free(p);
    printf("parent clone-status=%d\n", status_of(pid));
    return 0;
}

/* ---- a raw clone thread ---- */

static atomic_int go_home;
static atomic_int thread_ready;
static atomic_int thread_gone; /* cleared by the kernel at thread exit (CLONE_CHILD_CLEARTID) */

__attribute__((noinline)) static int raw_thread(void *arg)
{
    /* the only copy of the block's address lives in this frame */
    void *volatile held = arg;
    atomic_store(&thread_ready, 1);
    while (!atomic_load(&go_home))
        syscall(SYS_sched_yield);
    (void)held;
    syscall(SYS_exit, 0);
    return 0;
}

static int do_clone_thread(void)
{
    size_t sz = 256 << 10;
    char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED)
        return 1;
    void *block = malloc(44444);
    if (!block)
        return 1;
    atomic_store(&thread_gone, 1);
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                CLONE_SYSVSEM | CLONE_CHILD_CLEARTID;
    if (clone(raw_thread, stack + sz, flags, block, NULL, NULL, &thread_gone) < 0)
        return 1;
    block = NULL;
    while (!atomic_load(&thread_ready))
        sched_yield();
    for (int i = 0; i < 1000; i++) {
        char *volatile p = malloc(55555);
        if (!p)
            return 1;
        p[0] = 1;
        free(p);
    }
    /* periodic scans (GCSPY_SCAN_INTERVAL_MS) run meanwhile from gcspy's
     * writer thread while this thread sleeps outside gcspy */
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 400000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    /* a scan's stop signal interrupts the sleep (EINTR): sleep on */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    int r = scan ? scan() : -100;
    atomic_store(&go_home, 1);
    /* wait until the kernel has cleared thread_gone at the thread's exit */
    while (atomic_load(&thread_gone))
        syscall(SYS_futex, &thread_gone, FUTEX_WAIT, 1, NULL, NULL, 0);
    printf("clone-thread done scan=%s\n", r == -100 ? "none" : r == 0 ? "ok" : "failed");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child"))
        return child(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "vfork"))
        return do_vfork(argv[0]);
    if (argc == 2 && !strcmp(argv[1], "spawn"))
        return do_spawn(argv[0]);
    if (argc == 2 && !strcmp(argv[1], "clone-proc"))
        return do_clone_proc();
    if (argc == 2 && !strcmp(argv[1], "clone-thread"))
        return do_clone_thread();
    fprintf(stderr, "usage: rel_spawn vfork|spawn|clone-proc|clone-thread\n");
    return 2;
}
