/*
 * Host heap fragmentation: the free space between live malloc blocks,
 * reconstructed from the live set alone, the way glibc lays chunks out
 * (gcspy/chunk.h). Measured at the end of the trace for the report
 * (gs_frag_heap) and at every snapshot of the run for the HTML page
 * (snapshots.c), by the same loop (gs_frag_measure), so the last snapshot's
 * figures are the report's.
 */
#ifndef GCSPY_FRAG_H
#define GCSPY_FRAG_H

#include <stddef.h>

#include "blocks.h"
#include "model.h"
#include "result.h"

/* Blocks this far apart or more lie in different regions (glibc's largest
 * non-main heap): the space between them is not free heap. */
#define GS_REGION_GAP (64ull << 20)

/* Where a region whose blocks end at hi ends: the next block at or past it
 * starts another one (the top of the address space for a damaged trace's
 * block that reaches it). */
static inline uint64_t gs_region_end(uint64_t hi)
{
    return hi > UINT64_MAX - GS_REGION_GAP ? UINT64_MAX : hi + GS_REGION_GAP;
}

/* The end of the trace: every live host malloc block of m. 0, or -1 when
 * out of memory. */
int gs_frag_heap(const struct gs_model *m, struct gs_heapfrag *out);
/* Blocks v[0, n), sorted by address, none served by mmap: out's regions,
 * blocks, bytes, gaps, free_bytes, largest_free and ratio (the rest 0). */
void gs_frag_measure(const struct gs_blk *v, size_t n, struct gs_heapfrag *out);

#endif /* GCSPY_FRAG_H */
