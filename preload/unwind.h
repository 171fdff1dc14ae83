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

/* The loader's counters as last seen (modules.c's sync and the rule lookups
 * both see them, under the loader's lock): gs_unw_map_gen, 1 + adds + subs,
 * moves when a module is loaded or unloaded; gs_unw_unmap_gen, subs, only
 * when one is unloaded. A load leaves every cached rule true (a module's
 * code does not move while it stays loaded) except a NONE, which the new
 * module may now cover: NONE rules carry the map generation they were read
 * under (in cfa_off) and are read again under a newer one. An unload may
 * put new code where a rule's module was: every thread's cache is emptied
 * at its next walk. Stored by gs_unw_map_seen: unmap_gen first, map_gen
 * with release, so a thread that sees the new map_gen sees its unmap_gen. */
extern atomic_ullong gs_unw_map_gen;
extern atomic_ullong gs_unw_unmap_gen;
void gs_unw_map_seen(uint64_t adds, uint64_t subs);
/* Sees the loader's counters now (one dl_iterate_phdr callback). */
void gs_unw_resync(void);

/* A NONE rule read under the current module map (see gs_unw_map_gen). */
static inline int gs_unw_none_fresh(const struct gs_unw_rule *r)
{
    return r->cfa_off ==
           (int32_t)(uint32_t)atomic_load_explicit(&gs_unw_map_gen, memory_order_relaxed);
}

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

/* Once per walk: 1 when the module map changed since the thread's last
 * walk, after forgetting the thread's rules if a module was unloaded
 * meanwhile (a load keeps them: import torch's 300 loads emptied the cache
 * 300 times, and its refills were most of the 900,000 rule lookups the
 * import took). */
static inline int gs_unw_check(struct gs_thread *th)
{
    uint64_t g = atomic_load_explicit(&gs_unw_map_gen, memory_order_acquire);
    if (GS_LIKELY(!th || th->unw_gen == g))
        return 0;
    uint64_t s = atomic_load_explicit(&gs_unw_unmap_gen, memory_order_relaxed);
    if (th->unw_subs != s) {
        for (unsigned i = 0; i < (1u << GS_UNW_BITS); i++)
            th->unw[i] = (struct gs_unw_rule){0, 0, 0, 0, 0};
        th->unw_subs = s;
    }
    th->unw_gen = g;
    return 1;
}

#endif /* GCSPY_UNWIND_H */
