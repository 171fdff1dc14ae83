/*
 * Attaching the CUPTI subscriber (cupti_load.c): libgcspy_cupti.so, loaded
 * from beside libgcspy.so once the CUDA driver is in the module map.
 */
#ifndef GCSPY_CUPTI_LOAD_H
#define GCSPY_CUPTI_LOAD_H

#include "shim.h"

/* The writer thread's tick: loads and attaches the subscriber, once, when
 * modules.c has seen libcuda (gs_cuda_loaded) and GCSPY_CUPTI allows. */
void gs_cupti_maybe_load(void);
/* Before a scan (never while the world is stopped): deliver what CUPTI has
 * buffered, so allocations only it saw are in the table. */
void gs_cupti_flush(void);

#endif /* GCSPY_CUPTI_LOAD_H */
