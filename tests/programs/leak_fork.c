/*
 * leak_fork: a forked child that leaks. Each process writes its own trace
 * (GCSPY_OUTPUT with %p). The child leaks a 2010-byte block and its trace's
 * exit scan reports it, with the 1001-byte block it inherited from the parent
 * (kept by a global) reachable; the parent's trace knows nothing of the
 * child's block, and reports only its own leak, 3003 bytes made after the
 * child ended.
 *
 * @traces 2
 * @scans parent:exit 1
 * @scan parent:exit definite=1/3003 indirect=0/0 possible=0/0
 * @block parent:exit 3003=definite 1001=reachable 2010=absent
 * @scans child:exit 1
 * @scan child:exit definite=1/2010 indirect=0/0 possible=0/0
 * @block child:exit 2010=definite 1001=reachable 3003=absent
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "leak_case.h"

void *volatile kept;

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 12, n);
    return p;
}

static __attribute__((noinline)) void leak(size_t n)
{
    void *p = make(n);
    __asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
    kept = make(1001);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        leak(2010);
        clobber_stack();
        exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    leak(3003);
    clobber_stack();
    return 0;
}
