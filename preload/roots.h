/*
 * The root set of a leak scan (roots.c), taken while the world is stopped.
 */
#ifndef GCSPY_ROOTS_H
#define GCSPY_ROOTS_H

#include "mem.h"
#include "stop.h"

struct gs_roots {
    struct gs_range *r;
    size_t n, cap;
    uintptr_t *regs;         /* saved registers of stopped threads */
    size_t nregs, regs_bytes;
    /* Mappings the program made unreadable (mprotect PROT_NONE: guard
     * pages, debug allocators) that overlap the tracked heap: marking
     * skips these bytes of a block instead of faulting. Sorted, merged. */
    struct gs_range *noread;
    size_t nnoread, noread_cap;
    /* Memory that holds no value although it lies in a root or a block: a
     * CPython list's unused capacity (pyarena.c). Marking reads it as
     * zeros. Sorted, merged. */
    struct gs_range *slack;
    size_t nslack, slack_cap;
    /* The dynamic loader's writable segment (0, 0 when unknown): its words
     * keep host blocks only (mark.c). */
    uintptr_t loader_lo, loader_hi;
};

/* Builds the root set while the world is stopped: writable private mappings
 * that hold no tracked block and are not gcspy's, each stopped thread's stack
 * from its saved stack pointer, the scanning thread's own stack (when it is
 * a program thread) and every saved register, self_regs among them (the
 * scanning thread's registers where the program left its stack: exit). Uses only raw syscalls and
 * gcspy's own memory. Also lists the unreadable mappings over the heap. */
int gs_roots_collect(struct gs_roots *roots, const struct gs_stopped *th, int nth,
                     uintptr_t self_sp, int self_is_program, const uintptr_t *self_regs,
                     size_t nself_regs, const struct gs_range *heap, size_t nheap);
void gs_roots_free(struct gs_roots *roots);
void gs_roots_init(void); /* at start-up: loader facts the stopped world cannot ask */
/* Range arrays, for the heap exclusions mark.c builds: push (growing the
 * array), and sort and merge in place (returns the new count). */
int gs_range_push(struct gs_range **v, size_t *n, size_t *cap, uintptr_t lo, uintptr_t hi);
size_t gs_range_merge(struct gs_range *a, size_t n);
/* In sorted, merged ranges v[]: the first that ends after lo (n if none),
 * the only one that may hold lo or begin the ranges above it. */
size_t gs_range_first_after(const struct gs_range *v, size_t n, uintptr_t lo);

#endif /* GCSPY_ROOTS_H */
