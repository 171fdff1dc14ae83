/*
 * The timeline (analyze_int.h): the process's series (series.h) as plain
 * arrays, one value per bucket (its peak, or the last value carried forward
 * through empty buckets); each device's series put on the process's bucket
 * grid; the kept step and user markers in time order.
 */
#include "analyze_int.h"

#include <stdlib.h>
#include <string.h>

static uint64_t *copy_channel(struct gs_arena *a, const struct gs_series *s, unsigned ch,
                              uint32_t nb)
{
    uint64_t *v = gs_arena_calloc(a, nb ? nb : 1, sizeof *v);
    if (!v)
        return NULL;
    uint64_t carry = UINT64_MAX;
    for (uint32_t i = 0; i < nb; i++) {
        const struct gs_sval *b = &s->v[(size_t)i * s->nch + ch];
        if (b->set) {
            v[i] = b->max;
            carry = b->last;
        } else {
            v[i] = carry;
        }
    }
    return v;
}

static int marker_cmp(const void *a, const void *b)
{
    const struct gs_marker *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

int gs_build_timeline(struct gs_actx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    struct gs_timeline *tl = &r->tl;
    tl->bucket_ns = gs_series_width(&m->series);
    tl->nb = m->series.nb;
    for (unsigned ch = 0; ch < GS_CH__N; ch++) {
        tl->ch[ch] = copy_channel(&r->arena, &m->series, ch, tl->nb);
        if (!tl->ch[ch])
            return -1;
    }
    for (uint32_t d = 0; d < m->ndev; d++) {
        /* device series are put on the process's bucket grid */
        const struct gs_series *s = &m->dev[d].series;
        tl->dev[d].device = m->dev[d].device;
        tl->dev[d].kind = m->dev[d].kind;
        for (unsigned ch = 0; ch < GS_DCH__N; ch++) {
            uint64_t *v = gs_arena_calloc(&r->arena, tl->nb ? tl->nb : 1, sizeof *v);
            if (!v)
                return -1;
            uint64_t carry = UINT64_MAX;
            uint64_t w = gs_series_width(s);
            for (uint32_t i = 0; i < tl->nb; i++) {
                uint64_t t0 = (uint64_t)i * tl->bucket_ns, t1 = t0 + tl->bucket_ns;
                uint64_t best = UINT64_MAX;
                for (uint64_t b = t0 / w; b < s->nb && b * w < t1; b++) {
                    const struct gs_sval *x = &s->v[b * s->nch + ch];
                    if (x->set) {
                        if (best == UINT64_MAX || x->max > best)
                            best = x->max;
                        carry = x->last;
                    }
                }
                v[i] = best != UINT64_MAX ? best : carry;
            }
            tl->dev[d].ch[ch] = v;
        }
    }
    tl->ndev = m->ndev;
    size_t nm = m->steps.n + m->users.n;
    tl->markers = gs_arena_calloc(&r->arena, nm ? nm : 1, sizeof *tl->markers);
    if (!tl->markers)
        return -1;
    if (m->steps.n)
        memcpy(tl->markers, m->steps.v, m->steps.n * sizeof *tl->markers);
    if (m->users.n)
        memcpy(tl->markers + m->steps.n, m->users.v, m->users.n * sizeof *tl->markers);
    qsort(tl->markers, nm, sizeof *tl->markers, marker_cmp);
    tl->nmarkers = (uint32_t)nm;
    tl->step_stride = m->steps.stride;
    tl->user_stride = m->users.stride;
    return 0;
}
