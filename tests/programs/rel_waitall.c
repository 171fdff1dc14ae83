/*
 * rel_waitall: a program with no children that polls
 * waitpid(-1, &st, __WALL | WNOHANG) while it allocates, under fork-mode
 * scans (tests/integration/rel_waitall.sh runs it with
 * GCSPY_SCAN_MODE=fork and periodic scans every 2 ms).
 *
 * For about 1.5 s it loops: allocate and free 64 blocks of 4000 bytes,
 * keep one of 300 bytes in 50 (a pointer array), then poll. Without
 * children every poll must fail with ECHILD; a poll that returns 0 (some
 * child exists) or a pid (a child was reaped) is counted. Prints
 * "polls=P children_seen=C reaped=R" and exits 1 if C or R is not 0, else 0.
 *
 * Expected under the shim: "children_seen=0 reaped=0", exit 0: gcspy's
 * scanning process is never the program's child, and the trace holds
 * completed fork-mode scans (so the polls met scans).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

static void *volatile keep[4096];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
    long polls = 0, seen = 0, reaped = 0;
    int nkeep = 0;
    double end = now() + 1.5;
    while (now() < end) {
        void *b[64];
        for (int i = 0; i < 64; i++)
            b[i] = malloc(4000);
        for (int i = 0; i < 64; i++)
            free(b[i]);
        if (polls % 50 == 0 && nkeep < 4096)
            keep[nkeep++] = malloc(300);
        for (int i = 0; i < 20; i++) {
            int st;
            pid_t r = waitpid(-1, &st, __WALL | WNOHANG);
            polls++;
            if (r == 0)
                seen++;
            else if (r > 0)
                reaped++;
            else if (errno != ECHILD)
                seen++;
        }
    }
    printf("polls=%ld children_seen=%ld reaped=%ld\n", polls, seen, reaped);
    return seen || reaped;
}
