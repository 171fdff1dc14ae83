/*
 * Time series of unknown length in bounded memory, for the report's
 * memory-over-time view: at most GS_SERIES_BUCKETS buckets of 2^shift ns
 * each; when an event lands beyond the last bucket, adjacent buckets are
 * merged pairwise and the width doubles, so a trace of any length ends with
 * between GS_SERIES_BUCKETS/2 and GS_SERIES_BUCKETS buckets.
 *
 * Each bucket keeps, per channel, the largest value seen in it (memory peaks
 * are what a plot must not hide) and the last one (what the next, empty,
 * buckets carry forward). Events may arrive out of time order by up to a
 * flush interval: a late event updates the bucket its time falls into.
 */
#ifndef GCSPY_SERIES_H
#define GCSPY_SERIES_H

#include <stdint.h>

#define GS_SERIES_BUCKETS 2048u
#define GS_SERIES_SHIFT0 20u /* first bucket width: ~1 ms */

struct gs_sval {
    uint64_t max, last;
    uint32_t set;  /* a value landed in this bucket */
    uint32_t pad;
};

struct gs_series {
    unsigned nch;
    unsigned shift;
    uint32_t nb;          /* buckets in use: highest index + 1 */
    struct gs_sval *v;    /* GS_SERIES_BUCKETS * nch */
};

int gs_series_init(struct gs_series *s, unsigned nch);
void gs_series_free(struct gs_series *s);
/* The out-of-line part of gs_series_put: t beyond the last bucket. */
void gs_series_put_slow(struct gs_series *s, unsigned ch, uint64_t t, uint64_t v);

static inline void gs_series_put(struct gs_series *s, unsigned ch, uint64_t t, uint64_t v)
{
    uint64_t i = t >> s->shift;
    if (i >= GS_SERIES_BUCKETS || ch >= s->nch || !s->v) {
        gs_series_put_slow(s, ch, t, v);
        return;
    }
    if (i >= s->nb)
        s->nb = (uint32_t)i + 1;
    struct gs_sval *b = &s->v[i * s->nch + ch];
    if (!b->set || v > b->max)
        b->max = v;
    b->last = v;
    b->set = 1;
}
/* Makes sure the buckets reach time t (the end of the trace), so every
 * series of a process spans the same axis. */
void gs_series_extend(struct gs_series *s, uint64_t t);
static inline uint64_t gs_series_width(const struct gs_series *s)
{
    return (uint64_t)1 << s->shift;
}

#endif /* GCSPY_SERIES_H */
