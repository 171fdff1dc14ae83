/*
 * The leak scanner's internal interface (stop.c, roots.c, scan.c).
 *
 * A scan: stop the world (stop.c), collect root ranges (roots.c), mark from
 * them through the live-block table, classify what was not reached like
 * memcheck (definite, indirect, possible), restart the world, and only then
 * write the results to the trace (scan.c).
 */
#ifndef GCSPY_SCAN_H
#define GCSPY_SCAN_H

#include "shim.h"

#define GS_MAX_STOPPED 4096
#define GS_NREGS 23 /* x86-64 gregs in a ucontext */

struct gs_stopped {
    int tid;
    atomic_int state;        /* 0 signalled, 1 stopped, 2 gone */
    uintptr_t sp;
    uintptr_t regs[GS_NREGS];
};

int gs_stop_init(void);
/* Stops every thread but the caller and gcspy's own; 0 or -1 with a reason. */
int gs_stop_world(struct gs_stopped **threads, int *n, char *why, size_t whylen);
void gs_start_world(void);
void gs_stop_register_own(int tid);
void gs_stop_atfork_child(void);

/* A half-open address range to scan word by word. */
struct gs_range {
    uintptr_t lo, hi;
};

struct gs_roots {
    struct gs_range *r;
    size_t n, cap;
    uintptr_t *regs;         /* saved registers of stopped threads */
    size_t nregs, regs_bytes;
};

/* Builds the root set while the world is stopped: writable private mappings
 * that hold no tracked block and are not gcspy's, each stopped thread's stack
 * from its saved stack pointer, the scanning thread's own stack (when it is
 * a program thread) and every saved register. Uses only raw syscalls and
 * gcspy's own memory. */
int gs_roots_collect(struct gs_roots *roots, const struct gs_stopped *th, int nth,
                     uintptr_t self_sp, int self_is_program, const struct gs_range *heap,
                     size_t nheap);
int gs_range_push(struct gs_range **v, size_t *n, size_t *cap, uintptr_t lo, uintptr_t hi);
size_t gs_range_merge(struct gs_range *a, size_t n);
extern uintptr_t gs_own_stack_hint[8];
void gs_roots_free(struct gs_roots *roots);
void gs_roots_init(void); /* at start-up: loader facts the stopped world cannot ask */

/* gcspy's own mappings (mem.c keeps the registry): never roots. */
int gs_pages_ranges(struct gs_range *out, size_t max);
void gs_pages_atfork_child(void);

#endif /* GCSPY_SCAN_H */
