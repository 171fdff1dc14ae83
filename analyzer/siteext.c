/*
 * The replay-time per-site extras (siteext.h): bytes allocated, live at the
 * peak time, temporary allocations. Called from the model's hot path only
 * when gs_model.ext is set; an allocation failure here marks the figures
 * incomplete (x->failed) and never fails the replay. PyTorch's layer lies
 * inside device segments and is left out of the peak, as of the totals.
 */
#include "siteext.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model.h"

int gs_siteext_init(struct gs_siteext *x, uint64_t peak_at, uint64_t threshold_ns)
{
    memset(x, 0, sizeof *x);
    x->peak_at = peak_at;
    x->threshold_ns = threshold_ns;
    x->width = 1u << 16;        /* 65.5 us, doubled as needed */
    if (peak_at == UINT64_MAX) {
        x->bucket = calloc(GS_PEAK_BUCKETS, sizeof *x->bucket);
        if (!x->bucket)
            return -1;
    }
    return 0;
}

void gs_siteext_free(struct gs_siteext *x)
{
    free(x->v);
    free(x->bucket);
    memset(x, 0, sizeof *x);
}

/* The entry of site i, grown (zeroed) as needed; NULL when out of memory. */
static struct gs_sitex *entry(struct gs_siteext *x, uint32_t i)
{
    if (i == UINT32_MAX)
        return NULL;
    if (i >= x->cap && GS_GROW(x->v, x->cap, (size_t)i + 1)) {
        x->failed = 1;
        return NULL;
    }
    return &x->v[i];
}

/* The live total changes by d at time t. */
static void bucket_add(struct gs_siteext *x, uint64_t t, int64_t d)
{
    if (!x->bucket)
        return;
    while (t / x->width >= GS_PEAK_BUCKETS && x->width < (UINT64_MAX >> 1)) {
        /* twice as wide: pairs merge, the sums at the new ends unchanged */
        for (uint32_t k = 0; k < GS_PEAK_BUCKETS / 2; k++)
            x->bucket[k] = x->bucket[2 * k] + x->bucket[2 * k + 1];
        memset(x->bucket + GS_PEAK_BUCKETS / 2, 0, GS_PEAK_BUCKETS / 2 * sizeof *x->bucket);
        x->width *= 2;
    }
    uint64_t k = t / x->width;
    x->bucket[k < GS_PEAK_BUCKETS ? k : GS_PEAK_BUCKETS - 1] += d;
}

void gs_siteext_alloc(struct gs_siteext *x, uint32_t i, const struct gs_live *e)
{
    struct gs_sitex *s = entry(x, i);
    if (s)
        s->alloc_bytes += e->size;
    if (e->dom == GS_DOM_TORCH)
        return;
    bucket_add(x, e->t, (int64_t)e->size);
    if (s && e->t <= x->peak_at) {
        s->at_peak_bytes += e->size;
        s->at_peak_blocks++;
    }
}

void gs_siteext_end(struct gs_siteext *x, uint32_t i, const struct gs_live *e, uint64_t t)
{
    if (e->dom == GS_DOM_TORCH)
        return;
    /* per-address order: t >= e->t but for damage, kept in one bucket */
    bucket_add(x, t < e->t ? e->t : t, -(int64_t)e->size);
    struct gs_sitex *s = entry(x, i);
    if (s && e->t <= x->peak_at && t <= x->peak_at && s->at_peak_blocks) {
        s->at_peak_bytes -= e->size;
        s->at_peak_blocks--;
    }
}

void gs_siteext_free_block(struct gs_siteext *x, uint32_t i, const struct gs_live *e,
                           uint64_t t)
{
    if (t < e->t || t - e->t >= x->threshold_ns)
        return;
    struct gs_sitex *s = entry(x, i);
    if (s) {
        s->temp_allocs++;
        s->temp_bytes += e->size;
    }
    x->temp_allocs++;
    x->temp_bytes += e->size;
}

void gs_siteext_peak(const struct gs_siteext *x, uint64_t *t, uint64_t *total)
{
    int64_t sum = 0, best = 0;
    uint64_t at = 0;
    for (uint32_t k = 0; x->bucket && k < GS_PEAK_BUCKETS; k++) {
        sum += x->bucket[k];
        if (sum > best) {
            best = sum;
            at = (uint64_t)(k + 1) * x->width - 1;
        }
    }
    *t = at;
    *total = (uint64_t)best;
}
