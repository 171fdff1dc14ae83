/*
 * The timeline (analyze_int.h): the process's series (series.h) as plain
 * arrays, one value per bucket (its peak, or the last value carried forward
 * through empty buckets); each device's series put on the process's bucket
 * grid; the kept step and user markers in time order.
 *
 * The live-bytes channels (per memory class and the total) come from the
 * model's time buckets (tbuckets.h), not from a running total: the trace is
 * in time order per address only, so a total summed in file order is not
 * the total at any moment (two threads' blocks held at once could read as
 * one). Summed by time, each bucket's value is the largest total at a tick
 * inside it, and the chart's highest point is the report's peak
 * (gs_model_peak), which a test checks.
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

/* Raises bucket t's value (of a bucket width 2^shift) to at least v. */
static void at_least(uint64_t *out, uint32_t nb, unsigned shift, uint64_t t, uint64_t v)
{
    uint64_t i = t >> shift;
    if (i < nb && (out[i] == UINT64_MAX || out[i] < v))
        out[i] = v;
}

/* Live bytes of memory class mc (GS_MC__N: every class) per bucket of 2^shift
 * ns: the largest of the totals at the ends of the fine time buckets inside
 * it (UINT64_MAX before the first change, as the series say "no value
 * yet"); and never less than a class's largest block in the bucket where it
 * was made, as gs_model_peak counts it. */
static uint64_t *live_channel(struct gs_arena *a, const struct gs_model *m, int mc,
                              unsigned shift, uint32_t nb)
{
    const struct gs_tbuckets *tb = &m->peak_tb[mc];
    uint64_t *v = gs_arena_calloc(a, nb ? nb : 1, sizeof *v);
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < nb; i++)
        v[i] = UINT64_MAX;
    int64_t sum = 0;
    int started = 0;
    for (uint32_t k = 0; tb->b && k < GS_TB_N; k++) {
        sum += tb->b[k];
        started |= tb->b[k] != 0;
        if (!started)
            continue;
        /* the fine bucket's span in buckets of this grid (one, unless the
         * fine buckets are the wider) */
        uint64_t i0 = ((uint64_t)k << tb->shift) >> shift;
        uint64_t i1 = ((((uint64_t)k + 1) << tb->shift) - 1) >> shift;
        if (i0 >= nb)
            break;
        uint64_t x = sum > 0 ? (uint64_t)sum : 0;
        for (uint64_t i = i0; i <= i1 && i < nb; i++)
            if (v[i] == UINT64_MAX || v[i] < x)
                v[i] = x;
    }
    for (int c = 0; c < GS_MC__N; c++)
        if ((c == mc || mc == GS_MC__N) && m->max_block[c])
            at_least(v, nb, shift, m->max_block_t[c], m->max_block[c]);
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
        /* the live channels are the memory classes' and then the total's */
        _Static_assert((int)GS_CH_TOTAL == (int)GS_MC__N && (int)GS_CH_HOST == (int)GS_MC_HOST, "channels");
        tl->ch[ch] = ch <= GS_CH_TOTAL
                         ? live_channel(&r->arena, m, (int)ch, m->series.shift, tl->nb)
                         : copy_channel(&r->arena, &m->series, ch, tl->nb);
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
