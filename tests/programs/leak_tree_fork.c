/*
 * leak_tree_fork: the leak_tree case with GCSPY_SCAN_MODE=fork, scanned twice
 * (gcspy_scan() while the process runs, then at exit). Marking a
 * copy-on-write snapshot in a child must give exactly what stop-the-world
 * gives: 1 definite root + 6 indirect nodes, the same bytes, and every scan
 * is recorded as mode=1 in the parent's trace (the scanning child writes
 * none of its own).
 *
 * @env GCSPY_SCAN_MODE=fork
 * @mode 1
 * @traces 1
 * @scans api 1
 * @scan api definite=1/1001 indirect=6/5232 possible=0/0
 * @block api 1001=definite 2010x2=indirect 303x4=indirect
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=6/5232 possible=0/0
 * @block exit 1001=definite 2010x2=indirect 303x4=indirect
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

struct node {
    struct node *kid[2];
};

static __attribute__((noinline)) struct node *make(size_t n)
{
    struct node *p = malloc(n);
    memset(p, 0, n);
    return p;
}

static __attribute__((noinline)) void leak_tree(void)
{
    struct node *root = make(1001);
    for (int i = 0; i < 2; i++) {
        root->kid[i] = make(2010);
        for (int j = 0; j < 2; j++)
            root->kid[i]->kid[j] = make(303);
    }
    __asm__ volatile("" : : "r"(root) : "memory");
}

int main(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    leak_tree();
    clobber_stack();
    int rc = scan ? scan() : 0;
    clobber_stack();
    return rc == 0 ? 0 : 1;
}
