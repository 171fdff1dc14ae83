/*
 * libunwind, loaded only where it is installed (libunwind_dl.c). libgcspy.so has
 * no dependency beyond glibc: a program must start under LD_PRELOAD on a
 * machine without libunwind.so.8 (a minimal root, a slim container image).
 */
#ifndef GCSPY_LIBUNWIND_DL_H
#define GCSPY_LIBUNWIND_DL_H

#include "shim.h"

/* dlopen()s libunwind.so.8 once, when GCSPY_UNWIND=libunwind asks for it or
 * `always` is set (the CUPTI bridge's stacks). Called only where the loader
 * may be re-entered: our constructor (gs_core_start) and the writer thread.
 * When it is missing and GCSPY_UNWIND=libunwind: one line on stderr, and
 * the stacks are walked with frame pointers. 0 when loaded, -1 when not. */
int gs_unwind_load(int always);
/* libunwind's unw_backtrace() into buf (at most size entries): the number of
 * frames, or -1 while libunwind is not loaded (then walk frame pointers). */
int gs_unw_backtrace(void **buf, int size);

#endif /* GCSPY_LIBUNWIND_DL_H */
