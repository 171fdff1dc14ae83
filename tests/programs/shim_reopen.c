/*
 * A program that closes its standard descriptors and opens three data files
 * in their place (a daemon's start, a test harness's redirection done by
 * hand): shim_reopen DIR closes 0, 1 and 2, opens DIR/data0, DIR/data1 and
 * DIR/data2 (which take descriptors 0, 1 and 2), writes "data N\n" to each
 * with write(2), keeps one 4242-byte block and exits 0.
 *
 * Expected (tests/integration/run_summary.sh): each data file holds exactly
 * its one line, with every GCSPY_SUMMARY and under gcspy run: the shim never
 * writes its exit summary to a descriptor 2 that is not the stderr the
 * process started with. The trace is complete.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep;

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    close(0);
    close(1);
    close(2);
    for (int k = 0; k < 3; k++) {
        char path[4096], line[16];
        snprintf(path, sizeof path, "%s/data%d", argv[1], k);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd != k)
            return 3;
        int n = snprintf(line, sizeof line, "data %d\n", k);
        if (write(fd, line, (size_t)n) != n)
            return 4;
    }
    keep = malloc(4242);
    return keep ? 0 : 5;
}
