/*
 * Ways a program ends that are not exit() (tests/integration/rel_life.sh).
 * Each mode makes 100 allocations of 4000..4099 bytes and frees 60 of them
 * (40 stay live), then ends:
 *
 *   pthread_exit  main calls pthread_exit(): the process ends with status 0
 *   worker        main calls pthread_exit() while a worker still runs; the
 *                 worker makes its 100 allocations 200 ms later and returns:
 *                 status 0
 *   rawexit       main ends with the raw SYS_exit system call, status 7:
 *                 the process's status is 7
 *   seccomp       main enters seccomp strict mode (read, write, exit only)
 *                 and ends with SYS_exit 0: status 0
 *   segv          main writes through a null pointer: killed by SIGSEGV
 *                 (status 139 from the shell)
 *   exit          main returns 0 (the plain case)
 *   zombie        main loses 5 blocks of 6000 bytes (their only pointers,
 *                 in a global, overwritten), starts a worker and calls
 *                 pthread_exit(); the worker makes its 100 allocations,
 *                 then lives 1.2 s more (allocating and freeing a block
 *                 every 10 ms) and returns: status 0. Under periodic scans
 *                 the main thread, a zombie in /proc/self/task until the
 *                 process ends, must not make them wait and give up, and
 *                 the process's end gets its exit scan: the 5 blocks
 *                 definite, the 40 live ones reachable.
 *
 * Without gcspy every mode ends at once; with it, the writer thread must not
 * keep the process alive (issue 15, item 3) nor a scan handler keep a
 * faulting program from dying (item 9: GCSPY_SCAN_SIGNAL=11).
 */
#define _GNU_SOURCE
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *kept[100];

static void allocate(void)
{
    for (int i = 0; i < 100; i++) {
        kept[i] = malloc(4000 + (size_t)i);
        if (!kept[i])
            exit(2);
        memset(kept[i], i, 16);
    }
    for (int i = 0; i < 60; i++) {
        free(kept[i]);
        kept[i] = NULL;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    usleep(200000);
    allocate();
    for (int i = 0; arg && i < 120; i++) {
        void *volatile p = malloc(7000);
        usleep(10000);
        free(p);
    }
    return NULL;
}

static void *volatile lost[5];

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "worker")) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL))
            return 2;
        pthread_exit(NULL);
    }
    if (!strcmp(mode, "zombie")) {
        for (int i = 0; i < 5; i++) {
            lost[i] = malloc(6000);
            memset(lost[i], 1, 6000);
        }
        for (int i = 0; i < 5; i++)
            lost[i] = NULL;
        pthread_t t;
        if (pthread_create(&t, NULL, worker, "zombie"))
            return 2;
        pthread_exit(NULL);
    }
    allocate();
    if (!strcmp(mode, "pthread_exit"))
        pthread_exit(NULL);
    if (!strcmp(mode, "rawexit"))
        syscall(SYS_exit, 7);
    if (!strcmp(mode, "seccomp")) {
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT))
            return 3;
        syscall(SYS_exit, 0);
    }
    if (!strcmp(mode, "exit"))
        return 0;
    if (!strcmp(mode, "segv")) {
        volatile int *p = NULL;
        *p = 1;
    }
    fprintf(stderr, "usage: rel_endings pthread_exit|worker|zombie|rawexit|seccomp|segv|exit\n");
    return 2;
}
