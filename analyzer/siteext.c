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
    if (peak_at == UINT64_MAX)
        return gs_tbuckets_init(&x->tb);
    return 0;
}

void gs_siteext_free(struct gs_siteext *x)
{
    free(x->v);
    gs_tbuckets_free(&x->tb);
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

void gs_siteext_alloc(struct gs_siteext *x, uint32_t i, const struct gs_live *e)
{
    struct gs_sitex *s = entry(x, i);
    if (s)
        s->alloc_bytes += e->size;
    if (e->dom == GS_DOM_TORCH)
        return;
    gs_tbuckets_add(&x->tb, e->t, (int64_t)e->size);
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
    gs_tbuckets_add(&x->tb, t < e->t ? e->t : t, -(int64_t)e->size);
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
    *total = gs_tbuckets_peak(&x->tb, t);
}
