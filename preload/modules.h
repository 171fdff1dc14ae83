/*
 * The module map (modules.c): every loaded object written as a MODULE
 * record before the first stack that points into it; and what the map
 * tells the rest of the shim: its own code and data ranges, and whether
 * the CUDA driver is loaded.
 */
#ifndef GCSPY_MODULES_H
#define GCSPY_MODULES_H

#include "shim.h"

void gs_modules_sync(void);  /* emits MODULE / MODULE_UNLOAD for changes */
void gs_modules_reemit(void); /* a forked child's new trace: the whole map */
/* Address range of libgcspy.so's own code, for skipping its frames, and of
 * its data and bss, which are never roots. */
extern uintptr_t gs_self_lo, gs_self_hi, gs_self_data_lo, gs_self_data_hi;
/* libcuda.so is in the map (cupti_load.c attaches CUPTI then). */
extern atomic_int gs_cuda_loaded;

#endif /* GCSPY_MODULES_H */
