/*
 * PyTorch's caching allocator (model_int.h): POOL_SNAPSHOT announces how
 * many POOL_SEGMENT, POOL_BLOCK and POOL_EVENT records follow; once the last
 * of them is read the snapshot is applied whole, the torch layer of the live
 * set becoming exactly its live blocks and m->pool its figures per device.
 *
 * A snapshot is applied whole once its last record is read (a trace cut in
 * the middle of one leaves the torch layer as the previous one left it), so
 * its live blocks wait here meanwhile: memory for one snapshot's active
 * blocks, about the torch layer's size, reused from one snapshot to the
 * next.
 */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

struct gs_poolblk {
    uint64_t addr, size;
    uint32_t stack, device;
};

struct gs_poolsnap {
    int open;
    uint64_t id, t, reason;
    uint64_t nseg, nblk, nev;               /* announced */
    uint64_t seen_seg, seen_blk, seen_ev;   /* read */
    int cur;                                /* fig of the last segment; -1 none */
    uint64_t seg_lo, seg_hi;
    struct gs_poolfig fig[GS_MAX_DEVICES];
    uint32_t nfig;
    struct gs_poolblk *blk;                 /* active and pending-free blocks */
    size_t n, cap;
    uint64_t *kill;                         /* torch-layer blocks the snapshot drops */
    size_t nkill, capkill;
};

static struct gs_poolfig *pool_fig(struct gs_model *m, struct gs_poolsnap *ps, uint64_t device)
{
    for (uint32_t i = 0; i < ps->nfig; i++)
        if (ps->fig[i].device == device)
            return &ps->fig[i];
    if (ps->nfig == GS_MAX_DEVICES) {
        m->bad_records++;
        return NULL;
    }
    struct gs_poolfig *f = &ps->fig[ps->nfig++];
    memset(f, 0, sizeof *f);
    f->device = device;
    f->snap_id = ps->id;
    f->t = ps->t;
    f->reason = ps->reason;
    return f;
}

static int poolblk_cmp(const void *a, const void *b)
{
    const struct gs_poolblk *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int poolfig_cmp(const void *a, const void *b)
{
    const struct gs_poolfig *x = a, *y = b;
    return x->device < y->device ? -1 : x->device > y->device;
}

static const struct gs_poolblk *pool_lookup(const struct gs_poolsnap *ps, uint64_t addr)
{
    size_t lo = 0, hi = ps->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ps->blk[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ps->n && ps->blk[lo].addr == addr ? &ps->blk[lo] : NULL;
}

static int torch_insert(struct gs_model *m, uint64_t t, const struct gs_poolblk *b)
{
    if ((m->live.n + 1) * 4 > m->live.cap * 3 && gs_live_rehash(&m->live))
        return -1;
    size_t i = gs_live_probe(&m->live, b->addr, GS_DOM_TORCH);
    struct gs_live *e = &m->live.slot[i];
    if (e->addr)
        return 0; /* the snapshot named the block twice */
    m->live.n++;
    e->addr = b->addr;
    e->size = b->size;
    e->t = t;
    e->stack = b->stack;
    e->kind = GS_MEM_DEVICE;
    e->fn = GS_FN_TORCH;
    e->device = (uint8_t)(b->device < 255 ? b->device : 255);
    e->dom = GS_DOM_TORCH;
    gs_torch_account(m, b->size, 1);
    struct gs_site *s = gs_site_get(m, b->stack, GS_MC_DEVICE, t);
    if (!s)
        return -1;
    gs_site_change(m, s, t, b->size, 1);
    return 0;
}

/* The torch layer becomes exactly the snapshot's active and pending-free
 * blocks: a block it already holds (same address and size, and the same
 * stack unless the snapshot recorded none) is kept with its time; the rest
 * of the layer is freed and the snapshot's new blocks allocated, at the
 * snapshot's time. */
static int pool_apply(struct gs_model *m, struct gs_poolsnap *ps)
{
    ps->open = 0;
    if (gs_advance_time(m, ps->t))
        return -1;
    if (ps->n > 1)
        qsort(ps->blk, ps->n, sizeof *ps->blk, poolblk_cmp);
    ps->nkill = 0;
    /* the walk over the whole live set is skipped when the layer is empty
     * (the first snapshot, or one after the allocator was emptied) */
    for (size_t i = 0; m->torch_live_blocks && i < m->live.cap; i++) {
        const struct gs_live *e = &m->live.slot[i];
        if (!e->addr || e->dom != GS_DOM_TORCH)
            continue;
        const struct gs_poolblk *b = pool_lookup(ps, e->addr);
        if (b && b->size == e->size && (b->stack == e->stack || !b->stack))
            continue;
        if (GS_GROW_RAW(ps->kill, ps->capkill, ps->nkill + 1))
            return -1;
        ps->kill[ps->nkill++] = e->addr;
    }
    /* deleting moves entries about, so the doomed are found again by key */
    for (size_t k = 0; k < ps->nkill; k++) {
        size_t i = gs_live_probe(&m->live, ps->kill[k], GS_DOM_TORCH);
        if (!m->live.slot[i].addr)
            continue;
        gs_unaccount(m, &m->live.slot[i], ps->t);
        gs_live_delete_at(&m->live, i);
    }
    for (size_t k = 0; k < ps->n; k++)
        if (torch_insert(m, ps->t, &ps->blk[k]))
            return -1;
    /* a snapshot carries only the history events newer than the last one's
     * (trace-format.md, 2.0 on): a device's figures add them up */
    for (uint32_t i = 0; m->pool_events_delta && i < ps->nfig; i++)
        for (size_t j = 0; j < m->npool; j++)
            if (m->pool[j].device == ps->fig[i].device) {
                ps->fig[i].events += m->pool[j].events;
                for (int a = 0; a < GS_PEV__N; a++)
                    ps->fig[i].events_by[a] += m->pool[j].events_by[a];
            }
    if (ps->nfig > 1)
        qsort(ps->fig, ps->nfig, sizeof *ps->fig, poolfig_cmp);
    memcpy(m->pool, ps->fig, ps->nfig * sizeof *ps->fig);
    m->npool = ps->nfig;
    m->pool_snapshots++;
    return 0;
}

static int pool_maybe_done(struct gs_model *m, struct gs_poolsnap *ps)
{
    if (ps->seen_seg < ps->nseg || ps->seen_blk < ps->nblk || ps->seen_ev < ps->nev)
        return 0;
    return pool_apply(m, ps);
}

int gs_on_pool_snapshot(struct gs_model *m, const struct gs_record *r)
{
    if (!m->psnap) {
        m->psnap = calloc(1, sizeof *m->psnap);
        if (!m->psnap)
            return -1;
    }
    struct gs_poolsnap *ps = m->psnap;
    if (ps->open)
        m->pool_incomplete++;
    ps->open = 1;
    ps->id = r->u.pool_snap.snap_id;
    ps->t = r->t;
    ps->reason = r->u.pool_snap.reason;
    ps->nseg = r->u.pool_snap.nsegments;
    ps->nblk = r->u.pool_snap.nblocks;
    ps->nev = r->u.pool_snap.nevents;
    ps->seen_seg = ps->seen_blk = ps->seen_ev = 0;
    ps->cur = -1;
    ps->seg_lo = ps->seg_hi = 0;
    ps->nfig = 0;
    ps->n = 0;
    return pool_maybe_done(m, ps);
}

/* The open snapshot a POOL_SEGMENT/BLOCK/EVENT belongs to, or NULL (counted
 * as malformed): no snapshot open, another snapshot's id, or more records of
 * the kind than it announced. */
static struct gs_poolsnap *pool_member(struct gs_model *m, uint64_t id, uint64_t seen,
                                       uint64_t announced)
{
    struct gs_poolsnap *ps = m->psnap;
    if (!ps || !ps->open || ps->id != id || seen >= announced) {
        m->bad_records++;
        return NULL;
    }
    return ps;
}

int gs_on_pool_segment(struct gs_model *m, const struct gs_record *r)
{
    const __typeof__(r->u.pool_seg) *x = &r->u.pool_seg;
    struct gs_poolsnap *ps = m->psnap;
    if (!pool_member(m, x->snap_id, ps ? ps->seen_seg : 0, ps ? ps->nseg : 0))
        return 0;
    ps->seen_seg++;
    struct gs_poolfig *f = pool_fig(m, ps, x->device);
    ps->cur = f ? (int)(f - ps->fig) : -1;
    ps->seg_lo = x->addr;
    ps->seg_hi = x->addr + x->size;
    if (f) {
        f->segments++;
        f->reserved += x->size;
    }
    return pool_maybe_done(m, ps);
}

int gs_on_pool_block(struct gs_model *m, const struct gs_record *r)
{
    const __typeof__(r->u.pool_blk) *x = &r->u.pool_blk;
    struct gs_poolsnap *ps = m->psnap;
    if (!pool_member(m, x->snap_id, ps ? ps->seen_blk : 0, ps ? ps->nblk : 0))
        return 0;
    ps->seen_blk++;
    /* a block lies inside the segment before it; one outside it, or of an
     * unknown state, is left out */
    if (ps->cur < 0 || !x->addr || x->addr < ps->seg_lo || x->addr >= ps->seg_hi ||
        x->size > ps->seg_hi - x->addr || x->state > GS_PBLK_INACTIVE) {
        m->bad_records++;
        return pool_maybe_done(m, ps);
    }
    struct gs_poolfig *f = &ps->fig[ps->cur];
    if (x->state == GS_PBLK_INACTIVE) {
        f->inactive_blocks++;
        f->inactive_bytes += x->size;
        if (x->size > f->largest_inactive)
            f->largest_inactive = x->size;
        return pool_maybe_done(m, ps);
    }
    if (x->state == GS_PBLK_ACTIVE) {
        f->active_blocks++;
        f->active_bytes += x->size;
        f->requested += x->requested;
    } else {
        f->pending_blocks++;
        f->pending_bytes += x->size;
    }
    if (GS_GROW_RAW(ps->blk, ps->cap, ps->n + 1))
        return -1;
    struct gs_poolblk *b = &ps->blk[ps->n++];
    b->addr = x->addr;
    b->size = x->size;
    /* stack ids are defined before use: a larger one is damage */
    if (x->stack > m->max_stack_id) {
        if (x->stack)
            m->bad_records++;
        b->stack = 0;
    } else {
        b->stack = (uint32_t)x->stack;
    }
    b->device = (uint32_t)(f->device < UINT32_MAX ? f->device : UINT32_MAX);
    return pool_maybe_done(m, ps);
}

int gs_on_pool_event(struct gs_model *m, const struct gs_record *r)
{
    const __typeof__(r->u.pool_ev) *x = &r->u.pool_ev;
    struct gs_poolsnap *ps = m->psnap;
    if (!pool_member(m, x->snap_id, ps ? ps->seen_ev : 0, ps ? ps->nev : 0))
        return 0;
    ps->seen_ev++;
    struct gs_poolfig *f = pool_fig(m, ps, x->device);
    if (f) {
        f->events++;
        f->events_by[x->action < GS_PEV__N ? x->action : GS_PEV_OTHER]++;
    }
    return pool_maybe_done(m, ps);
}

void gs_pool_finish(struct gs_model *m)
{
    if (m->psnap && m->psnap->open) {
        m->pool_incomplete++;
        m->psnap->open = 0;
    }
}

void gs_pool_free(struct gs_model *m)
{
    if (m->psnap) {
        free(m->psnap->blk);
        free(m->psnap->kill);
        free(m->psnap);
        m->psnap = NULL;
    }
}
