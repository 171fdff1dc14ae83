/*
 * A quantity's changes summed by time bucket, so that its largest value over
 * time can be found without the events in time order.
 *
 * Why: the trace promises time order only per address (the shim writes each
 * address's records through one of several buffers, and the hot records'
 * clock is coarse), so a running total taken in file order is not the total
 * at any moment: a single-threaded program holding ten 100 KB blocks at once
 * read as a 101 KiB peak that way. Sums by time are order-free: each change
 * goes to the bucket of its time; the prefix sums are the exact totals at
 * the buckets' ends. Within one bucket (one tick of the events' clock, at
 * most) the order is unknown, so a block made and freed inside one bucket
 * adds nothing there. 65,536 buckets, 65.5 us wide at first; the width
 * doubles (pairs merge, the sums at the new ends unchanged) as the run goes
 * past the last one: 512 KiB per quantity, whatever the run's length.
 */
#ifndef GCSPY_TBUCKETS_H
#define GCSPY_TBUCKETS_H

#include <stdint.h>

#define GS_TB_N 65536u

struct gs_tbuckets {
    int64_t *b;                 /* GS_TB_N deltas; NULL: not kept */
    unsigned shift;             /* 2^shift ns per bucket (a shift, not a
                                   division, on the replay's hot path) */
};

/* 0, or -1 when out of memory (tb then keeps nothing). */
int gs_tbuckets_init(struct gs_tbuckets *tb);
void gs_tbuckets_free(struct gs_tbuckets *tb);
/* Doubles the buckets' width until t falls in one (tbuckets.c). */
void gs_tbuckets_widen(struct gs_tbuckets *tb, uint64_t t);
/* The quantity changes by d at time t (ns). Inline: the replay calls it
 * three times a hot record, and the call cost more than the addition. */
static inline void gs_tbuckets_add(struct gs_tbuckets *tb, uint64_t t, int64_t d)
{
    if (!tb->b)
        return;
    if (__builtin_expect((t >> tb->shift) >= GS_TB_N, 0))
        gs_tbuckets_widen(tb, t);
    uint64_t k = t >> tb->shift;
    tb->b[k < GS_TB_N ? k : GS_TB_N - 1] += d;
}
/* Its largest value at a bucket's end (0 when never positive); *at, when
 * not NULL: the last ns of that bucket. */
uint64_t gs_tbuckets_peak(const struct gs_tbuckets *tb, uint64_t *at);

#endif
