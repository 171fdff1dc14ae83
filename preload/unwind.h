/*
 * Unwind rules (unwind.c): for a return address, how to find its caller's
 * frame, read once from the module's .eh_frame and kept in a per-thread
 * cache, so that stack.c's walk goes through code built without frame
 * pointers and never takes a value that is not a return address into
 * executable code of a loaded module as a frame.
 */
#ifndef GCSPY_UNWIND_H
#define GCSPY_UNWIND_H

#include "shim.h"

/* The rule of a return address whose entry is not cached yet (or whose
 * cache was emptied), computed into *r (keyed by ip). Returns r. */
const struct gs_unw_rule *gs_unw_fill(struct gs_unw_rule *r, uintptr_t ip);

/* Bumped whenever a module is loaded or unloaded (modules.c's sync and the
 * rule lookups both see the loader's counters): a thread whose cache was
 * filled under another value starts afresh. */
extern atomic_ullong gs_unw_map_gen;

/* ip's slot in a thread's rules (struct gs_thread's unw), before the mask. */
static inline uint64_t gs_unw_slot(uintptr_t ip)
{
    return (ip * 0x9E3779B97F4A7C15ull) >> (64 - GS_UNW_BITS);
}

/* ip's rule when its slot i holds another: the rules are two-way (slots i
 * and i ^ 1), the one used last in slot i, so that two return addresses of
 * one stack that share a slot cost a swap per walk, not a lookup. */
static inline struct gs_unw_rule *gs_unw_miss(struct gs_unw_rule *rules, uint64_t i,
                                              uint64_t mask, uintptr_t ip)
{
    struct gs_unw_rule *o = &rules[(i ^ 1) & mask], last = rules[i];
    if (o->ip == ip) {
        rules[i] = *o;
        *o = last;
        return &rules[i];
    }
    *o = last;
    gs_unw_fill(&rules[i], ip);
    return &rules[i];
}

/* Once per walk: forget the thread's rules when the module map changed;
 * 1 when it did. */
static inline int gs_unw_check(struct gs_thread *th)
{
    uint64_t g = atomic_load_explicit(&gs_unw_map_gen, memory_order_relaxed);
    if (GS_LIKELY(!th || th->unw_gen == g))
        return 0;
    for (unsigned i = 0; i < (1u << GS_UNW_BITS); i++)
        th->unw[i] = (struct gs_unw_rule){0, 0, 0, 0, 0};
    th->unw_gen = g;
    return 1;
}

#endif /* GCSPY_UNWIND_H */
