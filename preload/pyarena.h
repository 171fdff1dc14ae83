/*
 * CPython's pymalloc arenas scanned precisely (pyarena.c): of each pool
 * found in a mapping only the allocated blocks are roots.
 */
#ifndef GCSPY_PYARENA_H
#define GCSPY_PYARENA_H

#include <stdint.h>

/* True when pools may be scanned precisely: Python mode is on and the
 * interpreter runs (initialised, not finalizing). Only while the world is
 * stopped (it reads two of the interpreter's flags). */
int gs_pyarena_precise(void);

typedef int (*gs_pyarena_add_fn)(void *ctx, uintptr_t lo, uintptr_t hi);

/* Calls add(ctx, lo, hi), in address order, for the parts of [lo, hi) that
 * are roots: all of it but, in each consistent pymalloc pool there, the
 * header, the freed blocks and the space not handed out; and slack(ctx, lo,
 * hi), in no order, for the unused capacity of each live list found there
 * (memory anywhere, pools or malloc'd blocks, that holds no value). Returns
 * -1 as soon as either does. Only while the world is stopped. */
int gs_pyarena_split(uintptr_t lo, uintptr_t hi, gs_pyarena_add_fn add, gs_pyarena_add_fn slack,
                     void *ctx);

#endif /* GCSPY_PYARENA_H */
