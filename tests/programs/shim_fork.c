/*
 * fork under the shim. The parent allocates A (11111 bytes), B (22222) and
 * C (33333), then forks:
 *   child:  frees B, allocates D (44444), exits 0 (with "nested": first forks
 *           a grandchild that allocates E (55555) and exits 0);
 *   parent: frees C, allocates F (66666), waits for the child, exits 0.
 * Each process prints "<role> pid=<pid>" on stdout (write(2): no stdio
 * buffer is ever allocated).
 *
 * Expected (tests/integration/shim_fork.sh): one complete trace per process.
 * The parent's holds A B C F, the free of C, nothing of the child's. A forked
 * child's trace starts with a process record with flags=0x1 (forked) and its
 * parent's pid as ppid, the parent's module map and stack tree again, a
 * thread_start for the forking thread, then one alloc_ex fn=inherited for
 * every block live in the parent at the fork (A B C here; thread 0, the
 * parent's stacks), then the child's own events (free of B, D); its
 * trace_end counts only its own allocations and frees, its live blocks
 * include the inherited ones. The grandchild's trace likewise inherits what
 * was live in the child (A C D). Exit status 0; a child that hangs in fork
 * is killed by alarm(10) and the parent exits 5.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *role)
{
    char b[64];
    int n = snprintf(b, sizeof b, "%s pid=%d\n", role, (int)getpid());
    if (write(1, b, (size_t)n) != n)
        _exit(9);
}

static int wait_ok(pid_t p, const char *who)
{
    int st;
    if (waitpid(p, &st, 0) != p)
        return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 1;
    dprintf(2, "%s: %s %d\n", who, WIFSIGNALED(st) ? "killed by signal" : "exit status",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    return 0;
}

static void *volatile keep[8];

int main(int argc, char **argv)
{
    int nested = argc > 1 && strcmp(argv[1], "nested") == 0;
    keep[0] = malloc(11111);
    keep[1] = malloc(22222);
    keep[2] = malloc(33333);
    say("parent");
    pid_t c = fork();
    if (c < 0)
        return 2;
    if (c == 0) {
        alarm(10);
        free(keep[1]);
        keep[3] = malloc(44444);
        say("child");
        if (nested) {
            pid_t g = fork();
            if (g < 0)
                _exit(2);
            if (g == 0) {
                keep[4] = malloc(55555);
                say("grandchild");
                exit(0);
            }
            if (!wait_ok(g, "grandchild"))
                exit(5);
        }
        exit(0);
    }
    free(keep[2]);
    keep[5] = malloc(66666);
    return wait_ok(c, "child") ? 0 : 5;
}
