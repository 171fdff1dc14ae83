/*
 * rel_sigblock: programs whose signal handling gets in the way of the leak
 * scanner's stop-the-world (tests/integration/rel_signals.sh).
 *
 * rel_sigblock THREADS MS: a program that blocks every signal in every
 * thread, so a stop-the-world scan cannot stop any of them
 * (tests/integration/rel_signals.sh runs it with periodic scans).
 *
 * The main thread blocks all signals before it creates anything, so every
 * thread inherits the full mask. THREADS workers loop malloc/free of
 * 3000..3099 bytes for MS milliseconds; main joins them and prints
 * "phase1 allocs=A frees=F". Then it starts 2 more blocked threads that
 * keep allocating 3100..3199 bytes and calls exit(6) while they run, so the
 * exit scan meets blocked threads too.
 *
 * Expected under the shim: no hang (each scan gives up within 100 ms,
 * the workers running with the signal blocked: one "gcspy: scan skipped: ..."
 * line for the first); exit status 6; the
 * trace complete and consistent with exactly A allocations and F frees of
 * 3000..3099 bytes, and no completed scan.
 *
 * rel_sigblock steal: after start-up (so after gcspy picked its stop
 * signal) the program installs its own handler on every real-time signal,
 * gcspy's included, leaks one block of 4242 bytes, waits 600 ms (periodic
 * scans run meanwhile), prints "stray signals=N" (deliveries to its
 * handlers; it raises none itself) and exits with status 7.
 * Expected under the shim: "stray signals=0" (gcspy never sends its stop
 * signal to a handler that is not its own), exit status 7 without a hang,
 * and every scan either skipped with one line naming the replaced handler
 * or completed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_int stop;
static atomic_ullong allocs, frees;

static void *worker(void *arg)
{
    size_t base = (size_t)(long)arg;
    unsigned long a = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        char *p = malloc(base + a % 100);
        if (!p)
            abort();
        p[0] = 1;
        free(p);
        a++;
    }
    atomic_fetch_add(&allocs, a);
    atomic_fetch_add(&frees, a);
    return NULL;
}

static atomic_int stray;

static void count_signal(int sig)
{
    (void)sig;
    atomic_fetch_add(&stray, 1);
}

static void *volatile leak;

static int steal(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count_signal;
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        sigaction(s, &sa, NULL);
    leak = malloc(4242);
    leak = NULL;
    struct timespec d = {0, 600000000};
    nanosleep(&d, NULL);
    printf("stray signals=%d\n", atomic_load(&stray));
    return 7;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "steal"))
        return steal();
    if (argc != 3) {
        fprintf(stderr, "usage: rel_sigblock THREADS MS | rel_sigblock steal\n");
        return 2;
    }
    int n = atoi(argv[1]);
    long ms = atol(argv[2]);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);

    pthread_t th[256];
    if (n < 1 || n > 256)
        return 2;
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)3000L))
            return 1;
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&d, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    printf("phase1 allocs=%llu frees=%llu\n", (unsigned long long)allocs,
           (unsigned long long)frees);
    fflush(stdout);

    atomic_store(&stop, 0);
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)3100L))
            return 1;
    struct timespec d2 = {0, 50000000};
    nanosleep(&d2, NULL);
    exit(6);
}
