/*
 * leak_tree: a leaked tree. A 1001-byte root points at two 2010-byte nodes,
 * each of which points at two 303-byte leaves; the only pointer to the root
 * is dropped. Like memcheck: the root is definitely lost, the six blocks
 * reached only from it are indirectly lost (2*2010 + 4*303 = 5232 bytes).
 *
 * @scans exit 1
 * @scan exit definite=1/1001 indirect=6/5232 possible=0/0
 * @block exit 1001=definite 2010x2=indirect 303x4=indirect
 */
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
    leak_tree();
    clobber_stack();
    return 0;
}
