/*
 * Built twice by tests/mk/stacks.mk (libstack_reload_a.so with PAD 200,
 * libstack_reload_b.so with PAD 4000) for tests/programs/stack_reload.c.
 * inner() keeps no frame pointer (-fomit-frame-pointer) and PAD bytes of
 * locals: its caller's frame lies PAD bytes further up in one build than in
 * the other, while its call to malloc returns to the same offset in both
 * (sub $imm32 either way). A walk that applied the first build's unwind
 * rule to the second's return address would read its caller's return
 * address from the wrong place.
 */
#include <stdlib.h>

__attribute__((noinline)) static void *inner(size_t n, int k)
{
    volatile char pad[PAD];
    pad[0] = (char)k;
    void *p = malloc(n);
    pad[PAD - 1] = (char)(pad[0] + 1);
    return p;
}

void *reload_make(size_t n)
{
    return inner(n, (int)n);
}
