/*
 * rel_setuid: a program the test installs set-user-ID to another user, so
 * the kernel starts it in secure-execution mode (AT_SECURE). It prints
 * "secure=S euid=E uid=U" and allocates and frees one 6543-byte block, then
 * exits with 4. Built twice (tests/mk/reliability.mk):
 *
 *   rel_setuid         a plain program: the loader ignores LD_PRELOAD for
 *                      it (a path with a slash, in secure mode), so no trace
 *                      is written; `gcspy run` says so in one line on stderr
 *                      and still runs it (exit status 4).
 *   rel_setuid_linked  linked against libgcspy.so (DT_NEEDED, absolute
 *                      RUNPATH), so the shim is in the process even in secure
 *                      mode: it must ignore every GCSPY_* variable (the
 *                      environment belongs to the less privileged caller) and
 *                      write its trace under the default name, mode 0600.
 *
 * Expected (tests/integration/rel_loader.sh): as above; exit status 4.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(void)
{
    char *volatile p = malloc(6543);
    if (!p)
        return 1;
    p[0] = 1;
    free(p);
    printf("secure=%lu euid=%d uid=%d\n", getauxval(AT_SECURE), (int)geteuid(), (int)getuid());
    return 4;
}
