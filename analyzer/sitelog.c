/*
 * Sites' values at the checkpoints (sitelog.h). An entry (k, y) holds from
 * checkpoint k to the next entry's (or the end); thinning to a doubled
 * stride keeps an entry when a multiple of the new stride falls in its
 * range, moved to the first such multiple, and drops the entries that then
 * repeat the value before them.
 */
#include "sitelog.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

void gs_sitelog_init(struct gs_sitelog *l, const struct gs_cps *steps, uint32_t min_points)
{
    memset(l, 0, sizeof *l);
    for (int a = 0; a < GS_AXIS__N; a++)
        l->ax[a].stride = 1;
    l->steps = steps;
    l->min_points = min_points;
}

static void axis_free(struct gs_sitelog_axis *x)
{
    for (uint32_t i = 0; i < x->nsite; i++)
        free(x->site[i].v);
    free(x->site);
    x->site = NULL;
    x->nsite = 0;
    x->entries = 0;
}

void gs_sitelog_free(struct gs_sitelog *l)
{
    for (int a = 0; a < GS_AXIS__N; a++)
        axis_free(&l->ax[a]);
}

static void thin(struct gs_sitelog_axis *x)
{
    uint32_t s = x->stride * 2;
    x->entries = 0;
    for (uint32_t i = 0; i < x->nsite; i++) {
        struct gs_sitelog_site *st = &x->site[i];
        uint32_t n = 0;
        for (uint32_t j = 0; j < st->n; j++) {
            uint32_t k = (st->v[j].k + s - 1) / s * s;
            if (j + 1 < st->n && k >= st->v[j + 1].k)
                continue; /* no checkpoint of the new stride in its range */
            if (n && st->v[n - 1].y == st->v[j].y)
                continue;
            st->v[n].k = k;
            st->v[n].y = st->v[j].y;
            n++;
        }
        st->n = n;
        x->entries += n;
    }
    x->stride = s;
    /* Thinning keeps at least one entry per site: with more sites than
     * half the budget it cannot make room, and every later entry would
     * thin again (a full pass each: quadratic) and double the stride until
     * it wrapped to 0 (a division by zero here, an endless loop in
     * gs_sitelog_values). The axis is dropped instead: the page then draws
     * no values on it. */
    if (x->entries > GS_SITELOG_BUDGET / 2 || s >= 1u << 31) {
        axis_free(x);
        x->off = 1;
    }
}

void gs_sitelog_note(struct gs_sitelog *l, int a, uint32_t si, uint32_t k0, uint32_t k1,
                     double y)
{
    struct gs_sitelog_axis *x = &l->ax[a];
    if (x->off || l->failed)
        return;
    if (a == GS_AXIS_TIME && l->steps->n >= l->min_points) {
        axis_free(x);
        x->off = 1;
        return;
    }
    uint32_t s = x->stride, k = (k0 + s - 1) / s * s;
    if (k >= k1)
        return;
    if (si >= x->nsite && GS_GROW(x->site, x->nsite, (size_t)si + 1)) {
        l->failed = 1;
        return;
    }
    struct gs_sitelog_site *st = &x->site[si];
    if (st->n && st->v[st->n - 1].y == y)
        return;
    if (GS_GROW(st->v, st->cap, (size_t)st->n + 1)) {
        l->failed = 1;
        return;
    }
    st->v[st->n].k = k;
    st->v[st->n].y = y;
    st->n++;
    if (++x->entries > GS_SITELOG_BUDGET)
        thin(x);
}

void gs_sitelog_values(const struct gs_sitelog *l, int a, uint32_t si, uint32_t n, double *out)
{
    const struct gs_sitelog_axis *x = &l->ax[a];
    const struct gs_sitelog_site *st = si < x->nsite ? &x->site[si] : NULL;
    uint32_t j = 0, i = 0;
    double y = 0;
    for (uint32_t k = 0; k < n; k += x->stride, i++) {
        while (st && j < st->n && st->v[j].k <= k)
            y = st->v[j++].y;
        out[i] = y;
    }
}
