/*
 * rel_pause: threads blocked in calls that a signal handler interrupts
 * with EINTR whatever SA_RESTART says (signal(7)), while gcspy stops the
 * world for scans (tests/integration/rel_pause.sh).
 *
 * Eight threads each keep a block of 4321 bytes whose only pointer is on
 * their stack, then block forever (or until a deadline 1000 s away) in one
 * call: pause, sigsuspend (empty mask), clock_nanosleep (TIMER_ABSTIME),
 * poll (no fds, no timeout),
 * epoll_wait (no timeout), select (no timeout), ppoll (no timeout),
 * sem_timedwait (a deadline far away). When a call returns, its thread
 * prints "<call> woke: <errno name>" and counts it. Main waits until
 * /proc/self/task/TID/syscall shows every thread inside its call, asks for
 * three scans (gcspy_scan, looked up at run time), waits 200 ms, prints
 * "woke=N" and exits 0 (the exit scan runs then, with the threads still
 * blocked).
 *
 * Expected under the shim: "woke=0" and no "woke:" line (the stop signal
 * is never seen as an interruption), exit 0, and every scan reports the 8
 * blocks of 4321 bytes reachable (the blocked threads' stacks are roots).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define N 8
static const char *names[N] = {"pause", "sigsuspend", "clock_nanosleep", "poll",
                               "epoll_wait", "select", "ppoll", "sem_timedwait"};
static const long nrs[N] = {SYS_pause, SYS_rt_sigsuspend, SYS_clock_nanosleep, SYS_poll,
                            SYS_epoll_wait, SYS_pselect6, SYS_ppoll, SYS_futex};
static atomic_int tids[N], woke;
static sem_t sem;
static int epfd;

static void block(int i)
{
    sigset_t none;
    sigemptyset(&none);
    int rc = 0;
    switch (i) {
    case 0: rc = pause(); break;
    case 1: rc = sigsuspend(&none); break;
    case 2: {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += 1000;
        rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL);
        rc = rc ? (errno = rc, -1) : 0;
        break;
    }
    case 3: rc = poll(NULL, 0, -1); break;
    case 4: {
        struct epoll_event ev;
        rc = epoll_wait(epfd, &ev, 1, -1);
        break;
    }
    case 5: rc = select(0, NULL, NULL, NULL, NULL); break;
    case 6: rc = ppoll(NULL, 0, NULL, NULL); break;
    case 7: {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 1000;
        rc = sem_timedwait(&sem, &dl);
        break;
    }
    }
    char b[96];
    int n = snprintf(b, sizeof b, "%s woke: %s\n", names[i], rc ? strerrorname_np(errno) : "0");
    if (write(1, b, (size_t)n) != n)
        _exit(9);
    atomic_fetch_add(&woke, 1);
}

static void *run(void *arg)
{
    int i = (int)(long)arg;
    void *volatile keep = malloc(4321);
    memset(keep, 1, 4321);
    atomic_store(&tids[i], (int)syscall(SYS_gettid));
    for (;;)
        block(i);
    return (void *)keep;
}

/* Whether thread i is blocked inside its call. */
static int inside(int i)
{
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", atomic_load(&tids[i]));
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(buf, sizeof buf, f))
        buf[0] = 0;
    fclose(f);
    return atol(buf) == nrs[i] && buf[0] != 'r';
}

int main(void)
{
    if (sem_init(&sem, 0, 0) || (epfd = epoll_create1(0)) < 0)
        return 2;
    pthread_t t;
    for (long i = 0; i < N; i++)
        if (pthread_create(&t, NULL, run, (void *)i))
            return 2;
    for (int i = 0; i < N; i++)
        while (!atomic_load(&tids[i]) || !inside(i))
            usleep(1000);
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    for (int k = 0; scan && k < 3; k++)
        scan();
    usleep(200000);
    printf("woke=%d\n", atomic_load(&woke));
    fflush(stdout);
    return 0;
}
