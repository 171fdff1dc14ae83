/*
 * Python frames in allocation stacks (pyframes.c): the interpreter's frame
 * chain read at each allocation and merged into the native stack, each
 * frame a synthetic ip (GS_IP_PYFRAME | code id << 32 | line).
 */
#ifndef GCSPY_PYFRAMES_H
#define GCSPY_PYFRAMES_H

#include "pylayout.h"
#include "shim.h"

/* Python mode is on: the interpreter is CPython 3.10 to 3.14 with the GIL,
 * its layout is known (pylayout.c) and its functions were found. */
extern int gs_py_on;
static inline int gs_py_active(void) { return gs_py_on; }
/* Replaces the interpreter's native frames in ips[0..n) with Python frames
 * (appends them when the native walk stopped short); returns the new n. */
int gs_py_merge(uintptr_t *ips, int n, int max);
/* Where stack.c's native walk ends: the evaluator's code
 * (_PyEval_EvalFrameDefault), or the interpreter module's whole code where
 * the evaluator is a small tail-calling dispatcher (pyframes.c); [lo, hi),
 * 0 and 0 when unknown. */
void gs_py_stop_range(uintptr_t *lo, uintptr_t *hi);
/* A code id for a Python frame known only by its names (PyTorch's
 * recorded stacks): a PYCODE record is written; 0 when the table is full. */
uint32_t gs_py_code_new(const char *file, size_t flen, const char *fn, size_t fnlen);

/* Start-up (python.c's gs_py_init): the functions only frame reading needs
 * and the running interpreter's layout, then the code table, after which
 * gs_py_on is set. 0, or -1. */
int gs_pyframes_resolve(const struct gs_pylayout *layout);
int gs_pyframes_start(void);
/* In a fork's child, before its stacks are written again: every code id
 * interned so far as a PYCODE record, from the names copied when it was
 * (the code object may be gone). */
void gs_py_codes_reemit(void);

#endif /* GCSPY_PYFRAMES_H */
