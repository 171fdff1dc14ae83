/*
 * rel_static: a statically linked program (built with -static). The dynamic
 * loader never runs for it, so LD_PRELOAD cannot put libgcspy.so in it.
 * It allocates and frees one block, prints "static ok" and exits with 3.
 *
 * Expected (tests/integration/rel_loader.sh): under LD_PRELOAD it runs
 * exactly as without it and leaves no trace; `gcspy run` says, in one line
 * on stderr, that the program is statically linked and LD_PRELOAD cannot
 * reach it, runs it anyway, and returns its exit status, 3.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    char *volatile p = malloc(4321);
    if (!p)
        return 1;
    p[0] = 1;
    free(p);
    printf("static ok\n");
    return 3;
}
