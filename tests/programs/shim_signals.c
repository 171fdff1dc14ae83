/*
 * Allocation inside a signal handler while the program allocates. An
 * interval timer (ITIMER_REAL, every 100 us) raises SIGALRM; the handler
 * does malloc(200) + malloc(300) and frees both. Meanwhile the main thread
 * loops malloc(33)/free and a second thread loops malloc(34)/free, 60,000
 * pairs each, and on in steps of 1,000 until the handler has run 50 times
 * (the trace stays small however loaded the machine). Then, the worker
 * joined, the main thread sleeps until the handler has run 5 more times:
 * runs that interrupt no hook, so that some handler allocations are tracked
 * however the signals fell during the loops (the loops spend nearly all
 * their time in hooks, and once all 87 runs of a CI run landed there).
 * Then the timer stops (and SIGALRM is blocked) and the program prints
 * "main N worker M handler H" (pairs done, handler runs).
 *
 * glibc's malloc is not async-signal-safe by itself: a handler that mallocs
 * while its thread holds an arena lock deadlocks without any shim. So both
 * threads warm their tcache bins for every size first (allocations served
 * from the thread cache take no lock), and the timer starts only then.
 * What is left is the shim's part: a handler that interrupts a hook (holding
 * a shard lock, say) must not wait on that lock; its allocations pass
 * through untracked.
 *
 * Expected (tests/integration/shim_signals.sh): exit 0 well within the
 * timeout (no deadlock); exactly N ALLOC of 33 bytes and M of 34, all freed;
 * between 1 and H ALLOC of 200 bytes and as many of 300, all freed; the
 * trace consistent. Exit status 3 if the timer never fires.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static atomic_long handled;
static atomic_int stop;

static void on_alarm(int sig)
{
    (void)sig;
    int e = errno;
    char *volatile a = malloc(200);
    char *volatile b = malloc(300);
    if (a)
        a[199] = 1;
    free(a);
    free(b);
    atomic_fetch_add(&handled, 1);
    errno = e;
}

#define PAIRS 60000
#define MIN_HANDLED 50

/* PAIRS malloc/free pairs, then on in steps of 1,000 until the handler has
 * run MIN_HANDLED times (or 20 s have passed, or the other thread says stop). */
static long loop(size_t size)
{
    long n = 0;
    time_t start = time(NULL);
    while (n < PAIRS || (atomic_load(&handled) < MIN_HANDLED && !atomic_load(&stop) &&
                         time(NULL) - start < 20)) {
        for (int i = 0; i < 1000; i++) {
            char *volatile p = malloc(size);
            if (!p)
                abort();
            p[0] = 1;
            free(p);
        }
        n += 1000;
    }
    return n;
}

static pthread_barrier_t warm;

/* One allocation of each size this thread will make, handler's included. */
static void warm_up(void)
{
    static const size_t sizes[] = {33, 34, 200, 300};
    for (int i = 0; i < 4; i++) {
        char *volatile p = malloc(sizes[i]);
        free(p);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    warm_up();
    pthread_barrier_wait(&warm);
    return (void *)loop(34);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    pthread_barrier_init(&warm, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL))
        return 2;
    warm_up();
    pthread_barrier_wait(&warm);
    struct itimerval it = {{0, 100}, {0, 100}};
    if (setitimer(ITIMER_REAL, &it, NULL))
        return 2;
    long n = loop(33);
    atomic_store(&stop, 1);
    void *r;
    pthread_join(t, &r);
    long quiet = atomic_load(&handled) + 5;
    time_t start = time(NULL);
    while (atomic_load(&handled) < quiet && time(NULL) - start < 20) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL); /* EINTR when the handler runs: fine */
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    sigprocmask(SIG_BLOCK, &s, NULL);
    long h = atomic_load(&handled);
    printf("main %ld worker %ld handler %ld\n", n, (long)r, h);
    return h > 0 ? 0 : 3;
}
