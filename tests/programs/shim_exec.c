/*
 * exec under the shim. First image: allocates 12121 bytes (kept) and 13131
 * bytes (freed), then
 *   shim_exec self  : execv's itself as "shim_exec second", which allocates
 *                     14141 bytes, prints "second pid=<pid>" and exits 0;
 *   shim_exec other : execv's /bin/echo "other pid=<pid>".
 * The first image prints "first pid=<pid>" before exec (write(2), so no
 * stdio buffer is allocated or lost).
 *
 * Expected (tests/integration/shim_exec.sh): two traces with the same pid,
 * since LD_PRELOAD and GCSPY_OUTPUT are inherited across exec: the first
 * image's (complete=no: it never exits) holds its two allocations and the
 * free and ends with an exec record naming the new program; the second
 * image's is complete. With GCSPY_OUTPUT=%e-%p.trace, "self" gives the
 * second trace the same name plus ".1" (never overwritten); "other" gives it
 * echo's name. Exit status 0.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep;

static void say(const char *role)
{
    char b[64];
    int n = snprintf(b, sizeof b, "%s pid=%d\n", role, (int)getpid());
    if (write(1, b, (size_t)n) != n)
        _exit(9);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "second") == 0) {
        keep = malloc(14141);
        say("second");
        return 0;
    }
    if (argc < 2 || (strcmp(argv[1], "self") && strcmp(argv[1], "other"))) {
        fprintf(stderr, "usage: shim_exec self|other\n");
        return 2;
    }
    keep = malloc(12121);
    void *volatile t = malloc(13131);
    free(t);
    say("first");
    if (strcmp(argv[1], "self") == 0) {
        char *const args[] = {"shim_exec", "second", NULL};
        execv("/proc/self/exe", args);
    } else {
        char msg[64];
        snprintf(msg, sizeof msg, "other pid=%d", (int)getpid());
        char *const args[] = {"echo", msg, NULL};
        execv("/bin/echo", args);
    }
    perror("execv");
    return 3;
}
