/*
 * rel_load: load for the shim (tests/integration/rel_load.sh in CI, scaled
 * down; `make soak` at full size). Every mode prints its exact counts, which
 * the test compares with the trace (build/tests/programs/rel_tracecount).
 *
 *   rel_load churn THREADS MS
 *     THREADS worker threads run at all times for MS milliseconds; each
 *     lives for 300..3,299 operations and exits, and the main thread joins
 *     it and starts a new one, so threads start and end throughout. An
 *     operation allocates a block of 5000..5999 bytes (malloc, calloc or
 *     posix_memalign in turn) into a ring of 32 and frees the block it
 *     replaces; an exiting thread frees its ring. Prints
 *     "rss_kb phase=qK kb=N" (VmRSS) at each quarter of the run, at the end
 *     and the peak (VmHWM), then "churn threads=T active=N allocs=A
 *     frees=F" (N: threads that got to allocate before the end; A == F).
 *     Expected under the shim (with periodic scans): no deadlock, exit 0,
 *     exactly A allocations and F frees of 5000..5999 bytes in the trace,
 *     none live at the end, N + 1 thread starts (the workers that allocated
 *     and the main thread) and N thread exits; at least one scan; the trace
 *     consistent.
 *
 *   rel_load live N
 *     Allocates N blocks of 24..31 bytes, kept in one array (so every one is
 *     reachable), prints "rss_kb phase=live kb=K" (VmRSS with the set
 *     live), frees every other one, then allocates them again, and exits
 *     with the N blocks live: "live blocks=N allocs=A frees=F".
 *     Expected under the shim: exactly A allocations and F frees of 24..31
 *     bytes, N of them live at the end, and the exit scan sees every one of
 *     them (none a definite leak).
 *
 *   rel_load events N THREADS
 *     THREADS threads together make N events: N/2 malloc/free pairs of
 *     2000..2999 bytes, split evenly. Prints "events threads=T allocs=A
 *     frees=F", then "rss_kb phase=end kb=K" (VmHWM: the peak).
 *     Expected: exactly A allocations and F frees of 2000..2999 bytes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_ullong total_allocs, total_frees, active_threads;
static atomic_int stop;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            kb = atol(line + n + 1);
    if (f)
        fclose(f);
    return kb;
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *fail_alloc(void)
{
    fprintf(stderr, "rel_load: allocation failed\n");
    exit(1);
}

/* ---- churn ---- */

struct worker {
    pthread_t th;
    atomic_int done;
    int used;
    uint64_t seed;
};

__attribute__((noinline)) static void *churn_block(uint64_t *seed, int op)
{
    size_t n = 5000 + rng(seed) % 1000;
    void *p = NULL;
    switch (op % 3) {
    case 0: p = malloc(n); break;
    case 1: p = calloc(1, n); break;
    default:
        if (posix_memalign(&p, 64, n))
            p = NULL;
    }
    if (!p)
        fail_alloc();
    ((volatile char *)p)[0] = 1;
    return p;
}

static void *churn_worker(void *arg)
{
    struct worker *w = arg;
    void *ring[32] = {0};
    unsigned long ops = 300 + rng(&w->seed) % 3000, a = 0, f = 0;
    for (unsigned long i = 0; i < ops && !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
        void *p = churn_block(&w->seed, (int)i);
        a++;
        if (ring[i % 32]) {
            free(ring[i % 32]);
            f++;
        }
        ring[i % 32] = p;
    }
    for (int i = 0; i < 32; i++)
        if (ring[i]) {
            free(ring[i]);
            f++;
        }
    atomic_fetch_add(&total_allocs, a);
    atomic_fetch_add(&total_frees, f);
    if (a)
        atomic_fetch_add(&active_threads, 1);
    atomic_store(&w->done, 1);
    return NULL;
}

static int churn(int nthreads, long ms)
{
    struct worker *w = calloc((size_t)nthreads, sizeof *w);
    if (!w)
        fail_alloc();
    unsigned long started = 0;
    uint64_t t0 = now_ms();
    int quarter = 0;
    for (;;) {
        uint64_t el = now_ms() - t0;
        int running = 0, over = el >= (uint64_t)ms;
        if (!over && el * 4 >= (uint64_t)ms * (uint64_t)(quarter + 1)) {
            quarter++;
            if (quarter < 4)
                printf("rss_kb phase=q%d kb=%ld\n", quarter, status_kb("VmRSS"));
        }
        if (over)
            atomic_store(&stop, 1);
        for (int i = 0; i < nthreads; i++) {
            if (w[i].used && atomic_load(&w[i].done)) {
                pthread_join(w[i].th, NULL);
                w[i].used = 0;
            }
            if (!w[i].used && !over) {
                atomic_store(&w[i].done, 0);
                w[i].seed = 0x9E3779B97F4A7C15ull * (started + 1);
                if (pthread_create(&w[i].th, NULL, churn_worker, &w[i])) {
                    fprintf(stderr, "rel_load: pthread_create failed\n");
                    return 1;
                }
                w[i].used = 1;
                started++;
            }
            running += w[i].used;
        }
        if (over && !running)
            break;
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    free(w);
    printf("rss_kb phase=end kb=%ld\n", status_kb("VmRSS"));
    printf("rss_kb phase=peak kb=%ld\n", status_kb("VmHWM"));
    printf("churn threads=%lu active=%llu allocs=%llu frees=%llu\n", started,
           (unsigned long long)active_threads, (unsigned long long)total_allocs,
           (unsigned long long)total_frees);
    return 0;
}

/* ---- live ---- */

void **volatile live_keep;

static int live(long n)
{
    void **v = malloc((size_t)n * sizeof *v);
    if (!v)
        fail_alloc();
    unsigned long a = 0, f = 0;
    for (long i = 0; i < n; i++) {
        if (!(v[i] = malloc(24 + (size_t)(i % 8))))
            fail_alloc();
        a++;
    }
    printf("rss_kb phase=live kb=%ld\n", status_kb("VmRSS"));
    for (long i = 0; i < n; i += 2) {
        free(v[i]);
        f++;
    }
    for (long i = 0; i < n; i += 2) {
        if (!(v[i] = malloc(24 + (size_t)(i % 8))))
            fail_alloc();
        a++;
    }
    printf("rss_kb phase=end kb=%ld\n", status_kb("VmHWM"));
    printf("live blocks=%ld allocs=%lu frees=%lu\n", n, a, f);
    fflush(stdout);
    /* v stays reachable from this global for the exit scan */
    live_keep = v;
    return 0;
}

/* ---- events ---- */

struct ev_arg {
    unsigned long pairs;
    uint64_t seed;
};

__attribute__((noinline)) static void *ev_worker(void *arg)
{
    struct ev_arg *e = arg;
    for (unsigned long i = 0; i < e->pairs; i++) {
        char *p = malloc(2000 + rng(&e->seed) % 1000);
        if (!p)
            fail_alloc();
        ((volatile char *)p)[0] = 1;
        free(p);
    }
    atomic_fetch_add(&total_allocs, e->pairs);
    atomic_fetch_add(&total_frees, e->pairs);
    return NULL;
}

static int events(long n, int nthreads)
{
    unsigned long pairs = (unsigned long)n / 2;
    pthread_t th[256];
    struct ev_arg args[256];
    if (nthreads < 1 || nthreads > 256)
        return 1;
    for (int i = 0; i < nthreads; i++) {
        args[i].pairs = pairs / (unsigned long)nthreads + ((unsigned long)i < pairs % (unsigned long)nthreads);
        args[i].seed = 0x2545F4914F6CDD1Dull * (uint64_t)(i + 1);
        if (pthread_create(&th[i], NULL, ev_worker, &args[i]))
            return 1;
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    printf("events threads=%d allocs=%llu frees=%llu\n", nthreads,
           (unsigned long long)total_allocs, (unsigned long long)total_frees);
    printf("rss_kb phase=end kb=%ld\n", status_kb("VmHWM"));
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[1], "churn"))
        return churn(atoi(argv[2]), atol(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "live"))
        return live(atol(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "events"))
        return events(atol(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: rel_load churn THREADS MS | live N | events N THREADS\n");
    return 1;
}
