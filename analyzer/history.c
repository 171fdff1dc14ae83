/*
 * The history (history.h), built after the replay from what was gathered
 * during it: the snapshots (snapshots.h) become the maps (addrmap.h), the
 * host heap's figures and the device states; the site log (sitelog.h) the
 * suspects' growth; the model's pause lists the pause list.
 *
 * The sites are named quietly (symbols.h): a module only the page's site
 * names need does not add to the problems the report lists.
 */
#include "history.h"

#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "analyze_int.h"
#include "sitelog.h"
#include "snapshots.h"

#define GROWTH_SITES 20

static int sites_out(struct gs_actx *c, struct gs_history *h, const uint32_t *top, uint32_t ntop)
{
    h->sites = gs_arena_calloc(&c->r->arena, ntop ? ntop : 1, sizeof *h->sites);
    if (!h->sites)
        return -1;
    struct gs_symbolizer *sym = c->stacks.sym;
    if (sym)
        gs_sym_quiet(sym, 1);
    int rc = 0;
    for (uint32_t i = 0; i < ntop && !rc; i++) {
        h->sites[i].stack_id = top[i];
        rc = gs_stacks_site_frame(&c->stacks, top[i], &h->sites[i].f);
    }
    if (sym)
        gs_sym_quiet(sym, 0);
    h->nsites = ntop;
    return rc;
}

/* A device state: segments and blocks, each block placed in its segment. */
static int state_out(struct gs_arena *a, const char *when, const struct gs_devsnap *d,
                     const uint32_t *top, uint32_t ntop, struct gs_hstate *out)
{
    out->when = when;
    out->t = d->t;
    out->bytes = d->bytes;
    out->segs_omitted = d->segs_omitted;
    out->blks_omitted = d->blks_omitted;
    out->nsegs = d->nsegs;
    out->nblks = d->nblks;
    out->segs = gs_arena_calloc(a, d->nsegs ? d->nsegs : 1, sizeof *out->segs);
    out->blks = gs_arena_calloc(a, d->nblks ? d->nblks : 1, sizeof *out->blks);
    if (!out->segs || !out->blks)
        return -1;
    for (uint32_t i = 0; i < d->nsegs; i++) {
        out->segs[i].addr = d->segs[i].addr;
        out->segs[i].size = d->segs[i].size;
        out->segs[i].site = gs_addrmap_site_idx(top, ntop, d->segs[i].stack);
    }
    for (uint32_t i = 0; i < d->nblks; i++) {
        const struct gs_blk *b = &d->blks[i];
        uint32_t lo = 0, hi = d->nsegs;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (d->segs[mid].addr + d->segs[mid].size <= b->addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        struct gs_hblk *o = &out->blks[i];
        o->seg = lo < d->nsegs && d->segs[lo].addr <= b->addr ? (int64_t)lo : -1;
        o->addr = b->addr;
        o->size = b->size;
        o->site = gs_addrmap_site_idx(top, ntop, b->stack);
    }
    return 0;
}

static int devs_out(struct gs_arena *a, const struct gs_snaps *s, const uint32_t *top,
                    uint32_t ntop, struct gs_history *h)
{
    h->devs = gs_arena_calloc(a, s->ndev ? (size_t)s->ndev : 1, sizeof *h->devs);
    if (!h->devs)
        return -1;
    for (int i = 0; i < s->ndev; i++) {
        const struct gs_snapdev *d = &s->dev[i];
        struct gs_hdev *o = &h->devs[h->ndevs++];
        o->device = (uint64_t)d->device;
        o->cuda_layer = d->cuda >= 0;
        o->torch_layer = d->torch >= 0;
        if (d->peak.have && state_out(a, "peak", &d->peak, top, ntop, &o->states[o->nstates++]))
            return -1;
        if (d->end.have && state_out(a, "end", &d->end, top, ntop, &o->states[o->nstates++]))
            return -1;
    }
    return 0;
}

/* The first GROWTH_SITES suspects' values at the sampled checkpoints of the
 * report's axis. */
static int growth_out(struct gs_actx *c, const struct gs_sitelog *log, struct gs_history *h)
{
    const struct gs_model *m = c->m;
    const struct gs_result *r = c->r;
    struct gs_arena *a = &c->r->arena;
    int axis = r->growth_axis;
    const struct gs_cps *cps = &m->cps[axis];
    uint32_t stride = log->ax[axis].stride;
    h->growth.axis = axis;
    h->growth.stride = stride;
    if (cps->n >= 2)
        h->growth.stride *= (uint64_t)(cps->x[cps->n - 1] - cps->x[cps->n - 2]);
    h->growth.nsites = r->nsuspects < GROWTH_SITES ? r->nsuspects : GROWTH_SITES;
    h->growth.n = h->growth.nsites ? (cps->n + stride - 1) / stride : 0;
    uint32_t n = h->growth.n, ns = h->growth.nsites;
    h->growth.x = gs_arena_calloc(a, n ? n : 1, sizeof *h->growth.x);
    h->growth.stack_id = gs_arena_calloc(a, ns ? ns : 1, sizeof *h->growth.stack_id);
    h->growth.live_bytes = gs_arena_calloc(a, ns ? ns : 1, sizeof *h->growth.live_bytes);
    double *y = malloc((n ? n : 1) * sizeof *y);
    if (!h->growth.x || !h->growth.stack_id || !h->growth.live_bytes || !y) {
        free(y);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        h->growth.x[i] = cps->x[(size_t)i * stride];
    for (uint32_t j = 0; j < ns; j++) {
        uint32_t st = r->suspects[j].stack_id, si = st < m->site_of_cap ? m->site_of[st] : 0;
        uint64_t *v = gs_arena_calloc(a, n ? n : 1, sizeof *v);
        if (!v) {
            free(y);
            return -1;
        }
        memset(y, 0, (n ? n : 1) * sizeof *y);
        if (si)
            gs_sitelog_values(log, axis, si - 1, cps->n, y);
        for (uint32_t i = 0; i < n; i++)
            v[i] = y[i] > 0 ? (uint64_t)y[i] : 0;
        h->growth.stack_id[j] = st;
        h->growth.live_bytes[j] = v;
    }
    free(y);
    return 0;
}

static int pause_t(const void *a, const void *b)
{
    const struct gs_pause *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1)
        return x->t1 < y->t1 ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

/* The pauses of the report (pauses.c: PAUSE records win over what SCAN_END
 * timings and CUDA call durations imply): a histogram of all of them, and
 * the longest GS_HPAUSE_MAX by start time. */
static int pauses_out(struct gs_actx *c, struct gs_history *h)
{
    struct gs_arena *a = &c->r->arena;
    size_t k;
    unsigned derived;
    struct gs_pause *v = gs_pauses_gather(c->m, SIZE_MAX, &k, &derived);
    if (!v)
        return -1;
    for (size_t i = 0; i < k; i++) {
        uint64_t us = (v[i].t1 > v[i].t0 ? v[i].t1 - v[i].t0 : 0) / 1000;
        int b = 0;
        while (us > 1 && b < GS_HPAUSE_BINS - 1) {
            us >>= 1;
            b++;
        }
        h->pauses.hist[b]++;
    }
    for (int i = 0; i < GS_HPAUSE_BINS; i++)
        if (h->pauses.hist[i])
            h->pauses.nbins = (uint32_t)i + 1;
    size_t shown = k;
    if (shown > GS_HPAUSE_MAX) {
        qsort(v, k, sizeof *v, gs_pause_len_desc);
        shown = GS_HPAUSE_MAX;
    }
    qsort(v, shown, sizeof *v, pause_t);
    h->pauses.count = k;
    h->pauses.shown = (uint32_t)shown;
    h->pauses.t = gs_arena_calloc(a, shown ? shown : 1, sizeof *h->pauses.t);
    h->pauses.duration = gs_arena_calloc(a, shown ? shown : 1, sizeof *h->pauses.duration);
    h->pauses.kind = gs_arena_calloc(a, shown ? shown : 1, sizeof *h->pauses.kind);
    if (!h->pauses.t || !h->pauses.duration || !h->pauses.kind) {
        free(v);
        return -1;
    }
    for (size_t i = 0; i < shown; i++) {
        h->pauses.t[i] = v[i].t0;
        h->pauses.duration[i] = v[i].t1 > v[i].t0 ? v[i].t1 - v[i].t0 : 0;
        h->pauses.kind[i] = v[i].kind;
    }
    free(v);
    return 0;
}

int gs_build_history(struct gs_actx *c, const struct gs_snaps *s, const struct gs_sitelog *log)
{
    struct gs_arena *a = &c->r->arena;
    struct gs_history *h = gs_arena_calloc(a, 1, sizeof *h);
    if (!h)
        return -1;
    h->nsnaps = s->ns;
    h->snap_t = gs_arena_calloc(a, s->ns ? s->ns : 1, sizeof *h->snap_t);
    h->host_frag = gs_arena_calloc(a, s->ns ? s->ns : 1, sizeof *h->host_frag);
    if (!h->snap_t || !h->host_frag)
        return -1;
    memcpy(h->snap_t, s->t, s->ns * sizeof *h->snap_t);
    memcpy(h->host_frag, s->hf, s->ns * sizeof *h->host_frag);
    uint32_t top[GS_MAP_TOP_SITES], ntop;
    if (gs_addrmap_top_sites(s, top, &ntop) || sites_out(c, h, top, ntop) ||
        gs_addrmap_build(s, top, ntop, c->r->duration_ns, a, h) ||
        devs_out(a, s, top, ntop, h) || growth_out(c, log, h) || pauses_out(c, h))
        return -1;
    c->r->history = h;
    return 0;
}
