/*
 * Samples, markers and pauses (model_int.h): SAMPLE (RSS and glibc's arena
 * figures) and DEVICE_SAMPLE records go into the time series and the peaks;
 * MARKER records into the step and user marker logs (thinned by a doubling
 * stride, so a run of any length keeps at most GS_MARKERS_KEPT of each) and
 * the step checkpoints of the growth fit; pause intervals into their lists.
 */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static void label_copy(char *dst, const struct gs_bytes *b)
{
    size_t n = b->n < GS_LABEL_MAX - 1 ? b->n : GS_LABEL_MAX - 1;
    if (n)
        memcpy(dst, b->p, n);
    dst[n] = 0;
}

void gs_on_sample(struct gs_model *m, const struct gs_record *r)
{
    uint64_t t = r->t;
    m->samples++;
    m->rss_last = r->u.sample.rss;
    if (r->u.sample.rss > m->rss_peak)
        m->rss_peak = r->u.sample.rss;
    m->mi_arena = r->u.sample.arena;
    m->mi_inuse = r->u.sample.uordblks;
    m->mi_free = r->u.sample.fordblks;
    m->mi_toppad = r->u.sample.keepcost;
    m->mi_hblkhd = r->u.sample.hblkhd;
    if (m->mi_arena > m->mi_peak_arena)
        m->mi_peak_arena = m->mi_arena;
    if (m->mi_free > m->mi_peak_free)
        m->mi_peak_free = m->mi_free;
    gs_series_put(&m->series, GS_CH_RSS, t, r->u.sample.rss);
    gs_series_put(&m->series, GS_CH_ARENA, t, r->u.sample.arena);
    gs_series_put(&m->series, GS_CH_INUSE, t, r->u.sample.uordblks);
    gs_series_put(&m->series, GS_CH_FREE, t, r->u.sample.fordblks);
    gs_series_put(&m->series, GS_CH_TOPPAD, t, r->u.sample.keepcost);
}

int gs_on_dsample(struct gs_model *m, const struct gs_record *r)
{
    struct gs_devstate *d = NULL;
    for (uint32_t i = 0; i < m->ndev; i++) {
        if (m->dev[i].device == r->u.dsample.device && m->dev[i].kind == r->u.dsample.kind) {
            d = &m->dev[i];
            break;
        }
    }
    if (!d) {
        if (m->ndev == GS_MAX_DEVICES) {
            m->bad_records++;
            return 0;
        }
        d = &m->dev[m->ndev];
        memset(d, 0, sizeof *d);
        d->device = r->u.dsample.device;
        d->kind = r->u.dsample.kind;
        if (gs_series_init(&d->series, GS_DCH__N))
            return -1;
        m->ndev++;
    }
    d->samples++;
    d->reserved = r->u.dsample.reserved;
    d->in_use = r->u.dsample.in_use;
    d->segments = r->u.dsample.segments;
    d->largest_free = r->u.dsample.largest_free;
    if (d->reserved > d->peak_reserved)
        d->peak_reserved = d->reserved;
    if (d->in_use > d->peak_in_use)
        d->peak_in_use = d->in_use;
    if (d->segments > d->max_segments)
        d->max_segments = d->segments;
    uint64_t free_b = d->reserved > d->in_use ? d->reserved - d->in_use : 0;
    if (free_b) {
        uint64_t lf = d->largest_free < free_b ? d->largest_free : free_b;
        double ratio = 1.0 - (double)lf / (double)free_b;
        if (ratio > d->worst_ratio || d->worst_t == 0) {
            d->worst_ratio = ratio;
            d->worst_t = r->t ? r->t : 1;
            d->worst_free = free_b;
            d->worst_largest = lf;
        }
    }
    gs_series_put(&d->series, GS_DCH_RESERVED, r->t, d->reserved);
    gs_series_put(&d->series, GS_DCH_INUSE, r->t, d->in_use);
    gs_series_put(&d->series, GS_DCH_SEGMENTS, r->t, d->segments);
    gs_series_put(&d->series, GS_DCH_LARGEST, r->t, d->largest_free);
    return 0;
}

static int log_marker(struct gs_markerlog *l, const struct gs_record *r, uint64_t ordinal)
{
    if (!l->v) {
        l->v = calloc(GS_MARKERS_KEPT, sizeof *l->v);
        if (!l->v)
            return -1;
        l->stride = 1;
    }
    l->seen++;
    if ((ordinal - 1) % l->stride)
        return 0;
    if (l->n == GS_MARKERS_KEPT) {
        /* thin: keep every other kept marker, double the stride */
        size_t k = 0;
        for (size_t i = 0; i < l->n; i++) {
            if (((l->v[i].ordinal - 1) / l->stride) % 2 == 0)
                l->v[k++] = l->v[i];
        }
        l->n = k;
        l->stride *= 2;
        if ((ordinal - 1) % l->stride)
            return 0;
    }
    struct gs_marker *mk = &l->v[l->n++];
    mk->t = r->t;
    mk->ordinal = ordinal;
    mk->kind = (uint32_t)r->u.marker.kind;
    label_copy(mk->label, &r->u.marker.label);
    return 0;
}

int gs_on_marker(struct gs_model *m, const struct gs_record *r)
{
    label_copy(m->last_label, &r->u.marker.label);
    if (r->u.marker.kind == GS_MARK_STEP) {
        m->nsteps++;
        if (m->nsteps >= m->next_step_cp) {
            if (gs_cps_add(&m->cps[GS_AXIS_STEP], r->t, (double)m->nsteps))
                return -1;
            uint64_t gap = m->nsteps / 1000;
            m->next_step_cp = m->nsteps + (gap ? gap : 1);
        }
        return log_marker(&m->steps, r, m->nsteps);
    }
    m->nusers++;
    if (!m->int_users++)
        label_copy(m->int_first, &r->u.marker.label);
    label_copy(m->int_last, &r->u.marker.label);
    return log_marker(&m->users, r, m->nusers);
}

int gs_pause_add(struct gs_pauses *ps, uint64_t t0, uint64_t t1, uint32_t kind,
                     uint64_t a, uint64_t b)
{
    if (GS_GROW_RAW(ps->v, ps->cap, ps->n + 1))
        return -1;
    struct gs_pause *p = &ps->v[ps->n++];
    memset(p, 0, sizeof *p);
    p->t0 = t0;
    p->t1 = t1 > t0 ? t1 : t0;
    p->kind = kind;
    p->a = a;
    p->b = b;
    return 0;
}
