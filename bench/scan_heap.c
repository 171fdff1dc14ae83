/*
 * scan_heap: the leak scanner's marking benchmark. Builds a heap of N
 * 64-byte objects (1 GiB of them by default) linked into one list, either in
 * allocation order or in a random order, keeps only the head in a global,
 * then times:
 *   - a plain sequential read of the same objects (the physical floor),
 *   - one leak scan: gcspy_scan() when libgcspy.so is preloaded, or
 *     __lsan_do_recoverable_leak_check() when LeakSanitizer is (gcc's liblsan
 *     preloaded, or a -fsanitize=leak build).
 * Prints one line: "scan_heap order=alloc objects=N read_s=X read_cpu_s=X'
 * scan_s=Y scan_cpu_s=Y' tool=T" (wall and CPU seconds).
 * The list is reachable, so a correct scan reports no leak; the checksum
 * keeps the work from being optimised away.
 *
 * Usage: scan_heap [--mib M] [--order alloc|random]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct obj {
    struct obj *next;
    uint64_t payload[7]; /* small integers: not pointers, as in real data */
};

struct obj *volatile g_head;

/* CPU seconds of this process and of its waited-for children: LSan scans
 * in a tracer it clones and waits for, gcspy's stop-the-world scan in the
 * calling thread. On a loaded machine this is the steadier measure. */
static double cpu_now(void)
{
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) +
           (a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec) / 1e6;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    size_t mib = 1024;
    int random_order = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--order") && i + 1 < argc)
            random_order = !strcmp(argv[++i], "random");
        else {
            fprintf(stderr, "usage: scan_heap [--mib M] [--order alloc|random]\n");
            return 2;
        }
    }
    size_t n = (mib << 20) / sizeof(struct obj);
    struct obj **v = calloc(n, sizeof *v);
    if (!v)
        return 1;
    for (size_t i = 0; i < n; i++) {
        v[i] = malloc(sizeof(struct obj));
        if (!v[i])
            return 1;
        for (int k = 0; k < 7; k++)
            v[i]->payload[k] = i + (uint64_t)k;
    }
    if (random_order) {
        uint64_t s = 88172645463325252ull;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = rnd(&s) % (i + 1);
            struct obj *t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    }
    for (size_t i = 0; i + 1 < n; i++)
        v[i]->next = v[i + 1];
    v[n - 1]->next = NULL;
    g_head = v[0];
    /* The index must not keep the objects reachable: clear and free it. */
    memset(v, 0, n * sizeof *v);
    free(v);

    double t0 = now(), c0 = cpu_now();
    uint64_t sum = 0;
    for (struct obj *o = g_head; o; o = o->next)
        sum += o->payload[0];
    double t_read = now() - t0, c_read = cpu_now() - c0;

    int (*gs)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    int (*lsan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "__lsan_do_recoverable_leak_check");
    const char *tool = gs ? "gcspy" : lsan ? "lsan" : "none";
    /* SCAN_HEAP_REPEAT=N: N scans, the least wall and CPU time of them (on a
     * loaded machine the least is the one least disturbed). */
    const char *rep = getenv("SCAN_HEAP_REPEAT");
    int reps = rep ? atoi(rep) : 1;
    double t_scan = 0, c_scan = 0;
    for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
        double t1 = now(), c1 = cpu_now();
        if (gs)
            gs();
        else if (lsan)
            lsan();
        double t = now() - t1, c = cpu_now() - c1;
        if (r == 0 || t < t_scan)
            t_scan = t;
        if (r == 0 || c < c_scan)
            c_scan = c;
    }
    printf("scan_heap order=%s objects=%zu read_s=%.3f read_cpu_s=%.3f scan_s=%.3f scan_cpu_s=%.3f "
           "tool=%s checksum=%llu\n",
           random_order ? "random" : "alloc", n, t_read, c_read, t_scan, c_scan, tool,
           (unsigned long long)sum);
    return 0;
}
