/*
 * leak_cycle_into_cycle: leaked rings of 1040-byte nodes, in pairs: ring B
 * (b1 <-> b2) and ring A (a1 <-> a2), where a2 also points at b2. Nothing
 * lost reaches A from outside it, so A leads its pair: 1 definite, and the
 * other three (B's ring included) are indirect. Sixteen pairs, allocated in
 * both orders (B first in eight, A first in the others), so that whatever
 * the table's slot order, some pairs have B's nodes first: a classifier that
 * takes leaders in slot order and stops at blocks another clique claimed
 * keeps B's leader there as a second definite block. The classes must not
 * depend on that order: 16 definite/16640, 48 indirect/49920.
 *
 * memcheck takes blocks in address order and has this weakness: for the
 * eight pairs whose B ring lies below A it says 2 definite blocks.
 *
 * @scans exit 1
 * @scan exit definite=16/16640 indirect=48/49920 possible=0/0
 * @valgrind expect definite=24960 indirect=41600 possible=0: memcheck counts B's leader as definite where B lies below A in memory
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

struct node {
    struct node *next, *other;
};

static __attribute__((noinline)) struct node *make(void)
{
    struct node *p = malloc(1040);
    memset(p, 0, 1040);
    return p;
}

static __attribute__((noinline)) void leak_pair(int b_first)
{
    struct node *b1, *b2, *a1, *a2;
    if (b_first) {
        b1 = make(), b2 = make(), a1 = make(), a2 = make();
    } else {
        a1 = make(), a2 = make(), b1 = make(), b2 = make();
    }
    b1->next = b2;
    b2->next = b1;
    a1->next = a2;
    a2->next = a1;
    a2->other = b2;
    __asm__ volatile("" : : "r"(a1), "r"(b1) : "memory");
}

int main(void)
{
    for (int i = 0; i < 16; i++)
        leak_pair(i < 8);
    clobber_stack();
    return 0;
}
