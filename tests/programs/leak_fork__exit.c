/*
 * leak_fork__exit: a forked worker that leaks and leaves through _exit(), as
 * multiprocessing children, DataLoader workers and os._exit do. _exit runs
 * no exit handlers, and the worker had no scan: its 5 MiB leak passed
 * `gcspy check`. gcspy scans in its _exit hook: the child's trace has an
 * exit scan with its 5 MiB + 1 block and its 2010-byte block definitely
 * lost, the 1001-byte block it inherited (kept by a global) reachable. The
 * parent leaks nothing and exits normally.
 *
 * @traces 2
 * @scans parent:exit 1
 * @scan parent:exit definite=0/0 indirect=0/0 possible=0/0
 * @scans child:exit 1
 * @scan child:exit definite=2/5244891 indirect=0/0 possible=0/0
 * @block child:exit 5242881=definite 2010=definite 1001=reachable
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "leak_case.h"

void *volatile kept;

static __attribute__((noinline)) void leak(void)
{
    char *p = malloc(2010);
    memset(p, 12, 2010);
    __asm__ volatile("" : : "r"(p) : "memory");
    __asm__ volatile("" : : "r"(malloc(5242881)) : "memory");
}

int main(void)
{
    kept = malloc(1001);
    memset(kept, 1, 1001);
    pid_t pid = fork();
    if (pid == 0) {
        leak();
        clobber_stack();
        _exit(0);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        return 1;
    free(kept);
    return 0;
}
