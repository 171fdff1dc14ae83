/* Leaks 3 blocks of 4096 bytes from gcspy_sysroot_leaker (called by main):
 * tests/integration/sym_elsewhere.sh builds it into a directory, traces it
 * there, then moves the directory away, so the trace names a module path
 * that no longer exists where it is reported. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *gcspy_sysroot_leaker(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 1, n);
    return p;
}

int main(void)
{
    for (int i = 0; i < 3; i++) {
        void *volatile p = gcspy_sysroot_leaker(4096);
        p = NULL; /* lost: a definite leak */
        (void)p;
    }
    return 0;
}
