/*
 * analyzer_exports N: known figures per site for tests/integration/exports.sh
 * (the pprof and collapsed exports, the peak and temporary views, gcspy
 * diff), run under libgcspy.so with its exit scan. Writes nothing, so stdio
 * allocates nothing.
 *
 * Expected, by the function that allocates:
 *   leak_fixed   definite 500 bytes, 1 block, 1 allocation
 *   leak_n       definite N*1000 bytes, 1 block (N from argv[1], 1..9)
 *   peak_buf     10 blocks of 100000 bytes, held 30 ms (longer than the hot
 *                records' coarse clock tick), all live at the run's peak with
 *                the two leaks, all freed before the end; none temporary (an
 *                allocation comes between the last one and its free)
 *   temp_one     200 allocations of 64 bytes, each freed at once: temporary
 *   held_one     6 allocations of 4096 bytes (1 live at the peak), freed
 *                30 ms later: none temporary
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *volatile sink;

__attribute__((noinline)) static void leak_fixed(void)
{
    char *volatile p = malloc(500);
    memset(p, 1, 500);
    p = NULL;
}

__attribute__((noinline)) static void leak_n(int n)
{
    char *volatile p = malloc((size_t)n * 1000);
    memset(p, 2, (size_t)n * 1000);
    p = NULL;
}

__attribute__((noinline)) static void *peak_buf(void)
{
    return malloc(100000);
}

__attribute__((noinline)) static void *temp_one(void)
{
    return malloc(64);
}

__attribute__((noinline)) static void *held_one(void)
{
    return malloc(4096);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1;
    if (n < 1 || n > 9)
        return 2;
    leak_fixed();
    leak_n(n);
    void *big[10];
    for (int i = 0; i < 10; i++) {
        big[i] = peak_buf();
        memset(big[i], 3, 100000);
    }
    void *between = held_one();
    struct timespec ts = { 0, 30 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    for (int i = 0; i < 10; i++)
        free(big[i]);
    free(between);
    for (int i = 0; i < 200; i++) {
        sink = temp_one();
        free(sink);
    }
    void *held[5];
    for (int i = 0; i < 5; i++)
        held[i] = held_one();
    nanosleep(&ts, NULL);
    for (int i = 0; i < 5; i++)
        free(held[i]);
    sink = NULL;
    return 0;
}
