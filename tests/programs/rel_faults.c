/*
 * rel_faults: a program that allocates steadily and then ends in one of the
 * ways the shim must survive (tests/integration/rel_faults.sh and
 * rel_output.sh run it).
 *
 *   rel_faults work N
 *     N rounds; round i allocates 1 + i % 7 blocks of 40..4135 bytes, keeps
 *     up to 512 of them live in a ring (freeing the one it replaces) and
 *     every 10,000 rounds prints "round I sum S" (S: a checksum of the
 *     bytes written). At the end it frees the ring, prints
 *     "done rounds=N allocs=A sum=S" and exits with status 3.
 *     Expected, with and without the shim, whatever happens to the trace
 *     file (disk full, read-only directory): the same stdout and status 3.
 *
 *   rel_faults segv|abort|exit|sysexit|kill|return COUNTER MS
 *     For MS milliseconds, at a steady 100 allocations per millisecond,
 *     malloc(777) into a ring of 256 (freeing the block it replaces).
 *     COUNTER is a file the program maps shared and keeps current: u64
 *     allocs done, u64 ms elapsed at the end, then u64 per elapsed ms the
 *     allocs done by the end of that ms. Then it ends: segv writes through
 *     a null pointer (status 139), abort calls abort() (134), exit calls
 *     _exit(5) (no atexit handlers run; the shim hooks _exit itself),
 *     sysexit makes the exit_group system call directly (5: no libc, no
 *     shim), kill sends itself SIGKILL (137), return returns 4 from main.
 *     Expected under the shim: the same status. After return and _exit the
 *     trace is complete and holds every allocation. After the others it is
 *     readable up to its last complete chunk and marked incomplete; the
 *     777-byte allocations in it are a prefix of those the counter says
 *     were made: what is missing is what the last flush interval held.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RING 512

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

__attribute__((noinline)) static char *work_alloc(size_t n)
{
    char *p = malloc(n);
    if (!p) {
        fprintf(stderr, "rel_faults: malloc(%zu) failed\n", n);
        exit(1);
    }
    return p;
}

static int work(long rounds)
{
    static char *ring[RING];
    uint64_t sum = 0, allocs = 0;
    unsigned slot = 0;
    for (long i = 0; i < rounds; i++) {
        int k = 1 + (int)(i % 7);
        for (int j = 0; j < k; j++) {
            size_t n = 40 + (size_t)((i * 131 + j * 17) % 4096);
            char *p = work_alloc(n);
            memset(p, (int)(i + j), n);
            sum += (unsigned char)p[n / 2] + n;
            allocs++;
            free(ring[slot]);
            ring[slot] = p;
            slot = (slot + 1) % RING;
        }
        if ((i + 1) % 10000 == 0)
            printf("round %ld sum %llu\n", i + 1, (unsigned long long)sum);
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    printf("done rounds=%ld allocs=%llu sum=%llu\n", rounds, (unsigned long long)allocs,
           (unsigned long long)sum);
    return 3;
}

__attribute__((noinline)) static void crash_segv(void)
{
    volatile int *volatile nul = NULL;
    *nul = 1;
}

static int crash(const char *how, const char *counter, long ms)
{
    size_t len = (size_t)(2 + ms + 16) * sizeof(uint64_t);
    int fd = open(counter, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)len)) {
        perror(counter);
        return 1;
    }
    volatile uint64_t *c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (c == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    static void *ring[256];
    unsigned slot = 0;
    uint64_t t0 = now_ms(), allocs = 0, el = 0;
    while ((el = now_ms() - t0) < (uint64_t)ms) {
        /* catch up to 100 allocations per elapsed ms */
        while (allocs < (el + 1) * 100) {
            void *p = work_alloc(777);
            free(ring[slot]);
            ring[slot] = p;
            slot = (slot + 1) % 256;
            allocs++;
            c[0] = allocs;
        }
        c[2 + el] = allocs;
        struct timespec d = {0, 200000};
        nanosleep(&d, NULL);
    }
    for (uint64_t i = 0; i < el; i++)
        if (!c[2 + i])
            c[2 + i] = i ? c[1 + i] : 0;
    c[1] = el;
    msync((void *)c, len, MS_SYNC);
    if (!strcmp(how, "segv"))
        crash_segv();
    else if (!strcmp(how, "abort"))
        abort();
    else if (!strcmp(how, "exit"))
        _exit(5);
    else if (!strcmp(how, "sysexit"))
        syscall(SYS_exit_group, 5);
    else if (!strcmp(how, "kill"))
        kill(getpid(), SIGKILL);
    else if (!strcmp(how, "return"))
        return 4;
    fprintf(stderr, "rel_faults: unknown ending '%s'\n", how);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "work"))
        return work(atol(argv[2]));
    if (argc == 4)
        return crash(argv[1], argv[2], atol(argv[3]));
    fprintf(stderr, "usage: rel_faults work N | rel_faults segv|abort|exit|sysexit|kill|return COUNTER MS\n");
    return 1;
}
