/*
 * leak_cycle_leader: which block of a leaked cycle is the definite one must
 * not depend on addresses. Eight leaked rings of two nodes allocated through
 * the same call (one allocation stack): a 2010-byte node first (the lower
 * address, as a rule), then a 1001-byte one. Leaders are taken by
 * allocation stack, then size, kind and fn, never by address or table slot:
 * the 1001-byte nodes are the definite ones, 8/8008, and the 2010-byte ones
 * indirect, 8/16080, whatever the addresses. (Taken in table order, the
 * definite node varied from ring to ring and from run to run: definite
 * bytes 12044, 13053 and 11035 in three runs.)
 *
 * memcheck goes by address: it names the 2010-byte nodes.
 *
 * @scans exit 1
 * @scan exit definite=8/8008 indirect=8/16080 possible=0/0
 * @block exit 1001x8=definite 2010x8=indirect
 * @valgrind expect definite=16080 indirect=8008 possible=0: memcheck takes a ring's leader by address
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

struct node {
    struct node *next;
};

/* loop bounds gcc cannot unroll: one call site each, one stack */
volatile int two = 2, eight = 8;

static __attribute__((noinline)) struct node *make(size_t n)
{
    struct node *p = malloc(n);
    memset(p, 0, n);
    return p;
}

static __attribute__((noinline)) void ring(void)
{
    struct node *v[2];
    for (int k = 0; k < two; k++)
        v[k] = make(k ? 1001 : 2010);
    v[0]->next = v[1];
    v[1]->next = v[0];
    __asm__ volatile("" : : "r"(v[0]) : "memory");
}

int main(void)
{
    for (int i = 0; i < eight; i++)
        ring();
    clobber_stack();
    return 0;
}
