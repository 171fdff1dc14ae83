/*
 * analyzer_grow MODE N: a loop of N iterations, 5 ms apart, for the growth
 * detector (tests/integration/analyzer_real.sh), run under libgcspy.so.
 *
 *   leak    each iteration keeps a 4096-byte block (keep_block()): expected,
 *           one growth suspect at keep_block, rate kept_bytes/loop_seconds
 *           (printed at the end) within 10%
 *   steady  each iteration allocates 4096 bytes and frees the previous
 *           iteration's block: expected, no growth suspect
 *
 * Prints "loop_ns=T kept_bytes=B" so the script can compute the true rate.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void **kept;

__attribute__((noinline)) static void *keep_block(void)
{
    void *p = malloc(4096);
    memset(p, 3, 4096);
    return p;
}

__attribute__((noinline)) static void *temp_block(void)
{
    void *p = malloc(4096);
    memset(p, 4, 4096);
    return p;
}

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: analyzer_grow leak|steady N\n");
        return 2;
    }
    int leak = strcmp(argv[1], "leak") == 0;
    int n = atoi(argv[2]);
    kept = calloc((size_t)n, sizeof *kept);
    void *prev = NULL;
    uint64_t t0 = now();
    for (int i = 0; i < n; i++) {
        if (leak) {
            kept[i] = keep_block();
        } else {
            void *p = temp_block();
            free(prev);
            prev = p;
        }
        struct timespec d = { 0, 5000000 };
        nanosleep(&d, NULL);
    }
    uint64_t t1 = now();
    printf("loop_ns=%llu kept_bytes=%llu\n", (unsigned long long)(t1 - t0),
           (unsigned long long)(leak ? (uint64_t)n * 4096 : 0));
    free(prev);
    for (int i = 0; i < n; i++)
        free(kept[i]);
    free(kept);
    return 0;
}
