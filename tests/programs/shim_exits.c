/*
 * The ways a process ends, one per mode (argv[1]); each mode first
 * allocates 7 blocks of 4242 bytes and keeps them.
 *   return N   returns N from main
 *   exit N     exit(N)
 *   _exit N    _exit(N) (as dash does, and Python's os._exit in every
 *              multiprocessing child, e.g. a DataLoader worker)
 *   _Exit N    _Exit(N)
 *   kill       sleeps 300 ms (several flush intervals), then SIGKILLs itself
 *
 * Expected (tests/integration/shim_exit_paths.sh): the exit status is the
 * program's; for return, exit, _exit and _Exit a complete trace whose exit
 * record has status N and whose live set holds the 7 blocks; for kill, a
 * readable (undamaged) but incomplete trace that already holds the 7
 * allocations, written by the periodic flush.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *volatile keep[7];

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    for (int i = 0; i < 7; i++)
        keep[i] = malloc(4242);
    int n = argc > 2 ? atoi(argv[2]) : 0;
    if (!strcmp(argv[1], "return"))
        return n;
    if (!strcmp(argv[1], "exit"))
        exit(n);
    if (!strcmp(argv[1], "_exit"))
        _exit(n);
    if (!strcmp(argv[1], "_Exit"))
        _Exit(n);
    if (!strcmp(argv[1], "kill")) {
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        raise(SIGKILL);
    }
    return 2;
}
