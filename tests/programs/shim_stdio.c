/*
 * A program whose only observable behaviour is its output and exit status,
 * for comparing runs with and without the shim: it writes lines to stdout
 * through stdio (buffered, so stdio allocates its buffer), a line to stderr,
 * a long line (64 KiB) to stdout, allocates and frees a little (and argv[2]
 * more malloc/free pairs of varying sizes: a bigger trace), echoes its
 * arguments and exits with the status given as argv[1] (default 0).
 *
 * Expected (tests/integration/shim_transparency.sh): byte-identical stdout
 * and stderr and the same exit status with and without LD_PRELOAD of the
 * shim (GCSPY_QUIET=1); without GCSPY_QUIET, stderr gains only lines that
 * start with "gcspy: ".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int status = argc > 1 ? atoi(argv[1]) : 0;
    printf("hello from shim_stdio\n");
    for (int i = 1; i < argc; i++)
        printf("arg %d: %s\n", i, argv[i]);
    fprintf(stderr, "a line on stderr\n");
    char *big = malloc(65536 + 1);
    if (!big)
        return 99;
    memset(big, 'x', 65536);
    big[65536] = 0;
    puts(big);
    free(big);
    errno = 0;
    void *p = malloc(100);
    printf("errno after malloc: %d\n", errno);
    free(p);
    long extra = argc > 2 ? atol(argv[2]) : 0;
    for (long i = 0; i < extra; i++) {
        char *volatile q = malloc(16 + (size_t)(i * 7919 % 5000));
        if (!q)
            return 99;
        q[0] = 1;
        free(q);
    }
    printf("bye\n");
    return status;
}
