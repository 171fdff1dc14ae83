/*
 * Bucketed time series (series.h). The rescale merges bucket 2i and 2i+1
 * into i: the max of both maxima, the later bucket's last value when it has
 * one. Merging keeps the invariant that a bucket's max is the largest value
 * any event in its time range produced.
 */
#include "series.h"

#include <stdlib.h>
#include <string.h>

int gs_series_init(struct gs_series *s, unsigned nch)
{
    memset(s, 0, sizeof *s);
    s->nch = nch;
    s->shift = GS_SERIES_SHIFT0;
    s->v = calloc((size_t)GS_SERIES_BUCKETS * nch, sizeof *s->v);
    return s->v ? 0 : -1;
}

void gs_series_free(struct gs_series *s)
{
    free(s->v);
    s->v = NULL;
}

static void merge(struct gs_sval *d, const struct gs_sval *a, const struct gs_sval *b)
{
    struct gs_sval r = *a;
    if (b->set) {
        if (!r.set || b->max > r.max)
            r.max = b->max;
        r.last = b->last;
        r.set = 1;
    }
    *d = r;
}

static void rescale(struct gs_series *s)
{
    unsigned nch = s->nch;
    for (uint32_t i = 0; i < GS_SERIES_BUCKETS / 2; i++) {
        for (unsigned c = 0; c < nch; c++)
            merge(&s->v[i * nch + c], &s->v[2 * i * nch + c], &s->v[(2 * i + 1) * nch + c]);
    }
    memset(s->v + (size_t)(GS_SERIES_BUCKETS / 2) * nch, 0,
           (size_t)(GS_SERIES_BUCKETS / 2) * nch * sizeof *s->v);
    s->shift++;
    s->nb = (s->nb + 1) / 2;
}

static uint64_t bucket_of(struct gs_series *s, uint64_t t)
{
    uint64_t i = t >> s->shift;
    while (i >= GS_SERIES_BUCKETS && s->shift < 63) {
        rescale(s);
        i = t >> s->shift;
    }
    if (i >= GS_SERIES_BUCKETS)
        i = GS_SERIES_BUCKETS - 1;
    if (i + 1 > s->nb)
        s->nb = (uint32_t)i + 1;
    return i;
}

void gs_series_put_slow(struct gs_series *s, unsigned ch, uint64_t t, uint64_t v)
{
    if (!s->v || ch >= s->nch)
        return;
    struct gs_sval *b = &s->v[bucket_of(s, t) * s->nch + ch];
    if (!b->set || v > b->max)
        b->max = v;
    b->last = v;
    b->set = 1;
}

void gs_series_extend(struct gs_series *s, uint64_t t)
{
    if (s->v)
        bucket_of(s, t);
}
