/*
 * Per-site figures the exports and the peak and temporary views need, kept
 * during the replay only when a caller asks (gs_model.ext; NULL: none, and
 * the hot path pays one predicted branch):
 *
 *   alloc_bytes   bytes allocated at the site over the run
 *   at_peak       the site's live bytes and blocks at the peak time peak_at
 *                 (heaptrack's and memray's peak view), when the caller knows
 *                 it (a first replay found it: see below)
 *   temporary     allocations freed less than threshold_ns after they were
 *                 made by the events' clock (docs/exports.md)
 *
 * Why two replays for the peak: records of different addresses reach the
 * file out of time order (only per-address order is promised, and the hot
 * records' clock is coarse), so the live total in file order is not the
 * live total in time. Sums by time are order-free, though: the first replay
 * adds each block's size to a bucket of its allocation time and takes it
 * from the bucket of its end; the running sum over the buckets is the live
 * total at each bucket's end, and the largest names the peak time. The
 * second replay, told that time, sums per site the blocks allocated by then
 * and not ended by then, again order-free.
 *
 * Temporary allocations go by time, not by "no allocation between" as
 * heaptrack's -T: the file order is not event order across the shim's
 * buffers (a block's ALLOC and FREE may sit side by side in a buffer of
 * their own with other allocations made between them), while the gap
 * between a block's own two records is exact to the clock's tick. The
 * events' clock is CLOCK_MONOTONIC_COARSE (a jiffy, 1-10 ms): with the
 * default 1 ms, temporary means freed within the tick it was made in.
 */
#ifndef GCSPY_SITEEXT_H
#define GCSPY_SITEEXT_H

#include <stdint.h>

#include "tbuckets.h"

struct gs_model;
struct gs_live;

/* One site's figures, parallel to m->sites. */
struct gs_sitex {
    uint64_t alloc_bytes;
    uint64_t at_peak_bytes, at_peak_blocks;
    uint64_t temp_allocs, temp_bytes;
};

struct gs_siteext {
    struct gs_sitex *v;
    uint32_t cap;
    int failed;                 /* out of memory: the figures are incomplete */
    /* peak time: live-total deltas by time (tbuckets.h); tb.b NULL on the
     * second read */
    struct gs_tbuckets tb;
    uint64_t peak_at;           /* sum blocks live at this time; UINT64_MAX: unknown */
    /* temporary allocations */
    uint64_t threshold_ns;
    uint64_t temp_allocs, temp_bytes;
};

/* peak_at: the peak time a first replay found (gs_siteext_peak), or
 * UINT64_MAX for that first replay; threshold_ns: freed sooner is
 * temporary. 0, or -1 when out of memory. */
int gs_siteext_init(struct gs_siteext *x, uint64_t peak_at, uint64_t threshold_ns);
void gs_siteext_free(struct gs_siteext *x);

/* Block e was allocated at site i (its totals and site applied). */
void gs_siteext_alloc(struct gs_siteext *x, uint32_t i, const struct gs_live *e);
/* Block e (site i, or UINT32_MAX when it has none) ends at time t: freed,
 * reallocated, or replaced. */
void gs_siteext_end(struct gs_siteext *x, uint32_t i, const struct gs_live *e, uint64_t t);
/* Block e (site i, or UINT32_MAX) is freed by a FREE record at time t. */
void gs_siteext_free_block(struct gs_siteext *x, uint32_t i, const struct gs_live *e,
                           uint64_t t);

/* After a first replay: the time the live total peaked (the end of the
 * bucket where it was highest) and that total. */
void gs_siteext_peak(const struct gs_siteext *x, uint64_t *t, uint64_t *total);

#endif /* GCSPY_SITEEXT_H */
