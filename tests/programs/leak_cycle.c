/*
 * leak_cycle: three 1024-byte nodes in a ring (a -> b -> c -> a), leaked.
 * Each is pointed at, so none is unreferenced; like memcheck, one of the
 * ring leads the lost clique and is definite, the other two are indirect.
 * Which one leads depends on the walk order, so the nodes are the same size
 * and the totals do not: 1 definite/1024 + 2 indirect/2048.
 *
 * @scans exit 1
 * @scan exit definite=1/1024 indirect=2/2048 possible=0/0
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

struct node {
    struct node *next;
};

static __attribute__((noinline)) struct node *make(void)
{
    struct node *p = malloc(1024);
    memset(p, 0, 1024);
    return p;
}

static __attribute__((noinline)) void leak_ring(void)
{
    struct node *a = make(), *b = make(), *c = make();
    a->next = b;
    b->next = c;
    c->next = a;
    __asm__ volatile("" : : "r"(a) : "memory");
}

int main(void)
{
    leak_ring();
    clobber_stack();
    return 0;
}
