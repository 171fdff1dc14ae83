/*
 * Snapshots of the live set on a widening grid (snapshots.h).
 *
 * What stays true: s->t[0 .. ns) increase, and every kept snapshot but the
 * last (the end's) sits on the current grid, at slot s->slot[k] of spacing
 * 2^shift; slots below s->next are passed (taken, skipped or represented by
 * one taken for a later slot of the same state); s->kept_cost is the cost
 * of the snapshots kept.
 */
#include "snapshots.h"

#include <stdlib.h>
#include <string.h>

#include "frag.h"
#include "gcspy/chunk.h"
#include "grow.h"

/* ---- layers ---- */

static int layer_find(struct gs_snaps *s, int kind, int device)
{
    for (int i = 0; i < s->nl; i++)
        if (s->L[i]->kind == kind && s->L[i]->device == device)
            return i;
    if (s->nl == GS_SNAP_MAX_LAYERS)
        return -1;
    struct gs_snapdev *d = NULL;
    if (kind != GS_LAYER_HOST) {
        for (int i = 0; i < s->ndev; i++)
            if (s->dev[i].device == device)
                d = &s->dev[i];
        if (!d) {
            if (s->ndev == GS_MAX_DEVICES)
                return -1;
            d = &s->dev[s->ndev++];
            memset(d, 0, sizeof *d);
            d->device = device;
            d->cuda = d->torch = -1;
        }
    }
    struct gs_layer *l = calloc(1, sizeof *l);
    if (!l)
        return -2;
    l->kind = kind;
    l->device = device;
    s->L[s->nl] = l;
    if (d)
        *(kind == GS_LAYER_CUDA ? &d->cuda : &d->torch) = s->nl;
    return s->nl++;
}

/* The layer of (kind, device), made when first seen: its index, -1 when
 * there is no room for it, -2 when out of memory. */
static int layer_of(struct gs_snaps *s, int kind, int device)
{
    int16_t *c = &s->lmap[kind][device & 255];
    if (!*c) {
        int i = layer_find(s, kind, device);
        if (i < 0)
            return i;
        *c = (int16_t)(i + 1);
    }
    return *c - 1;
}

/* Which layer a live block belongs to, or -1 (pinned and managed memory,
 * chunks glibc served by mmap: mappings of their own, not heap); -2 when
 * out of memory. */
static int classify(struct gs_snaps *s, const struct gs_live *e)
{
    if (e->dom == GS_DOM_HOST) {
        if (e->kind != GS_MEM_HOST || gs_chunk_mmapped(e->addr, e->size))
            return -1;
        return layer_of(s, GS_LAYER_HOST, -1);
    }
    if (e->dom == GS_DOM_TORCH)
        return layer_of(s, GS_LAYER_TORCH, e->device);
    if (e->kind == GS_MEM_DEVICE || e->kind == GS_MEM_VMM)
        return layer_of(s, GS_LAYER_CUDA, e->device);
    return -1;
}

static void snapl_free(struct gs_snapl *sl)
{
    free(sl->u);
    free(sl->rg);
    memset(sl, 0, sizeof *sl);
}

/* Where block b ends; a damaged trace's block that would run past the top
 * of the address space ends there. */
static uint64_t blk_end(const struct gs_blk *b)
{
    return b->addr + b->size < b->addr ? UINT64_MAX : b->addr + b->size;
}

/* The regions of sorted blocks v[0, n): runs less than GS_REGION_GAP apart.
 * Returns the span they cover in all, or UINT64_MAX when out of memory. */
static uint64_t regions(struct gs_snapl *sl, const struct gs_blk *v, size_t n)
{
    uint32_t nrg = 0, cap = 0;
    uint64_t span = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t end = blk_end(&v[i]);
        if (i == 0 || v[i].addr >= gs_region_end(hi)) {
            if (i)
                span += hi - sl->rg[nrg - 1][0];
            if (GS_GROW(sl->rg, cap, nrg + 1))
                return UINT64_MAX;
            sl->rg[nrg][0] = v[i].addr;
            nrg++;
            hi = end;
        } else if (end > hi) {
            hi = end;
        }
        sl->rg[nrg - 1][1] = hi;
        sl->bytes += v[i].size;
    }
    span += hi - sl->rg[nrg - 1][0];
    sl->nrg = nrg;
    return span;
}

/* The cell of address c, after the last one made (blocks come by address,
 * so their cells do too; a block over another, a free the trace lost, goes
 * back a few at most); made when new. NULL when out of memory. */
static struct gs_unit *unit_at(struct gs_snapl *sl, size_t *cap, uint64_t c)
{
    for (uint32_t j = sl->nu; j > 0 && sl->nu - j < 8; j--) {
        if (sl->u[j - 1].addr == c)
            return &sl->u[j - 1];
        if (sl->u[j - 1].addr < c)
            break;
    }
    if (GS_GROW_RAW(sl->u, *cap, (size_t)sl->nu + 1))
        return NULL;
    struct gs_unit *u = &sl->u[sl->nu++];
    memset(u, 0, sizeof *u);
    u->addr = c;
    return u;
}

/* The layer's blocks (sorted) as regions and cells: snapshot k. */
static int layer_snap(struct gs_layer *l, uint32_t k, uint64_t now)
{
    struct gs_snapl *sl = &l->s[k];
    const struct gs_blk *v = l->tmp.v;
    size_t n = l->tmp.n;
    snapl_free(sl);
    if (!n)
        return 0;
    uint64_t span = regions(sl, v, n);
    if (span == UINT64_MAX)
        return -1;
    uint64_t q = 16;
    while (span / q > GS_SNAP_UNITS)
        q *= 2;
    sl->q = q;
    size_t cap = 0;
    if (GS_GROW_RAW(sl->u, cap, GS_SNAP_UNITS + sl->nrg + 16))
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = v[i].addr, z = blk_end(&v[i]);
        float age = now > v[i].t ? (float)((double)(now - v[i].t) / 1e9) : 0;
        /* the last cell may reach the top of the address space: stop there */
        for (uint64_t c = a / q * q; c < z; c = c + q > c ? c + q : z) {
            uint64_t cq = c + q > c ? c + q : UINT64_MAX;
            uint64_t lo = a > c ? a : c, top = z < cq ? z : cq;
            float part = (float)(top - lo);
            struct gs_unit *u = unit_at(sl, &cap, c);
            if (!u)
                return -1;
            u->bytes += part;
            u->agesum += part * age;
            if (part > u->sitebytes) {
                u->sitebytes = part;
                u->site = v[i].stack;
            }
        }
    }
    return 0;
}

/* ---- device states ---- */

static void devsnap_free(struct gs_devsnap *d)
{
    free(d->segs);
    free(d->blks);
    memset(d, 0, sizeof *d);
}

/* Copies the largest max of v[0, n) into *out by address; *omitted the rest. */
static int keep_largest(struct gs_blk **out, uint32_t *nout, uint32_t *omitted,
                        const struct gs_blkv *v, size_t max)
{
    size_t n = v ? v->n : 0;
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out)
        return -1;
    if (n)
        memcpy(*out, v->v, n * sizeof **out);
    if (n > max) {
        /* too many to draw */
        qsort(*out, n, sizeof **out, gs_blk_size_desc);
        *omitted = (uint32_t)(n - max);
        n = max;
        qsort(*out, n, sizeof **out, gs_blk_addr_cmp);
    }
    *nout = (uint32_t)n;
    return 0;
}

static int devsnap_take(struct gs_devsnap *d, uint64_t t, uint64_t bytes,
                        const struct gs_blkv *segs, const struct gs_blkv *blks)
{
    devsnap_free(d);
    d->have = 1;
    d->t = t;
    d->bytes = bytes;
    return keep_largest(&d->segs, &d->nsegs, &d->segs_omitted, segs, GS_SNAP_MAX_SEGS) ||
                   keep_largest(&d->blks, &d->nblks, &d->blks_omitted, blks, GS_SNAP_MAX_BLOCKS)
               ? -1
               : 0;
}

/* Device d's bytes at snapshot k: its segments', or failing those (a trace
 * of the caching allocator alone) its torch layer's. */
static uint64_t dev_bytes(const struct gs_snaps *s, const struct gs_snapdev *d, uint32_t k,
                          const struct gs_blkv **segs, const struct gs_blkv **blks)
{
    const struct gs_layer *c = d->cuda >= 0 ? s->L[d->cuda] : NULL;
    const struct gs_layer *t = d->torch >= 0 ? s->L[d->torch] : NULL;
    *segs = c ? &c->tmp : NULL;
    *blks = t ? &t->tmp : NULL;
    return c && c->s[k].bytes ? c->s[k].bytes : t ? t->s[k].bytes : 0;
}

/* ---- taking a snapshot ---- */

static uint64_t snap_cost(const struct gs_model *m)
{
    return m->live.n + m->live.cap / 8;
}

/* The live blocks allocated by time now, into their layers, by address. */
static int gather(struct gs_snaps *s, const struct gs_model *m, uint64_t now)
{
    for (int i = 0; i < s->nl; i++)
        s->L[i]->tmp.n = 0;
    for (size_t i = 0; i < m->live.cap; i++) {
        const struct gs_live *e = &m->live.slot[i];
        /* allocated after the snapshot's time (another thread's events
         * written ahead of this one's): not live yet */
        if (!e->addr || e->t > now)
            continue;
        int li = classify(s, e);
        if (li == -2)
            return -1;
        if (li < 0)
            continue;
        struct gs_blk b = { e->addr, e->size, e->t, e->stack, 0 };
        if (gs_blkv_push(&s->L[li]->tmp, &b))
            return -1;
    }
    for (int i = 0; i < s->nl; i++)
        if (gs_blk_sort(&s->L[i]->tmp, &s->scratch, s->count))
            return -1;
    return 0;
}

/* Snapshot k at time now, of slot (0: the end), the live set's cost. */
static int take(struct gs_snaps *s, const struct gs_model *m, uint64_t now, uint32_t slot,
                uint64_t cost)
{
    uint32_t k = s->ns;
    if (gather(s, m, now))
        return -1;
    memset(&s->hf[k], 0, sizeof s->hf[k]);
    for (int i = 0; i < s->nl; i++) {
        struct gs_layer *l = s->L[i];
        if (layer_snap(l, k, now))
            return -1;
        if (l->kind == GS_LAYER_HOST)
            gs_frag_measure(l->tmp.v, l->tmp.n, &s->hf[k]);
    }
    for (int i = 0; i < s->ndev; i++) {
        struct gs_snapdev *d = &s->dev[i];
        const struct gs_blkv *segs, *blks;
        uint64_t bytes = dev_bytes(s, d, k, &segs, &blks);
        if (bytes > d->peak.bytes && devsnap_take(&d->peak, now, bytes, segs, blks))
            return -1;
    }
    s->t[k] = now;
    s->slot[k] = slot;
    s->cost[k] = cost;
    s->kept_cost += cost;
    s->spent += cost;
    s->ns++;
    return 0;
}

/* ---- the grid ---- */

/* Moves snapshot k's data to index i. */
static void move(struct gs_snaps *s, uint32_t i, uint32_t k)
{
    s->t[i] = s->t[k];
    s->slot[i] = s->slot[k];
    s->cost[i] = s->cost[k];
    s->hf[i] = s->hf[k];
    for (int li = 0; li < s->nl; li++) {
        struct gs_snapl *a = &s->L[li]->s[i], *b = &s->L[li]->s[k];
        *a = *b;
        memset(b, 0, sizeof *b);
    }
}

/* The spacing doubles: the snapshots of even slots stay, renumbered. */
static void widen(struct gs_snaps *s)
{
    uint32_t n = 0;
    s->kept_cost = 0;
    for (uint32_t k = 0; k < s->ns; k++) {
        if (s->slot[k] % 2) {
            for (int li = 0; li < s->nl; li++)
                snapl_free(&s->L[li]->s[k]);
            continue;
        }
        if (n != k)
            move(s, n, k);
        s->slot[n] /= 2;
        s->kept_cost += s->cost[n];
        n++;
    }
    s->ns = n;
    s->shift++;
    s->next = (s->next + 1) / 2;
}

/* Of the slots [lo, hi], which share one state, the one the most widenings
 * keep: the one with the most trailing zero bits. */
static uint32_t most_even(uint32_t lo, uint32_t hi)
{
    for (int b = 7; b > 0; b--) {
        uint32_t c = hi & ~((1u << b) - 1);
        if (c >= lo && c)
            return c;
    }
    return hi;
}

int gs_snaps_clock(struct gs_snaps *s, const struct gs_model *m, uint64_t t)
{
    while ((t >> s->shift) >= GS_SNAPS)
        widen(s);
    uint32_t j = (uint32_t)(t >> s->shift);
    if (j >= s->next) {
        /* slots next .. j passed without an event: they share one state */
        uint32_t slot = most_even(s->next, j);
        uint64_t cost = snap_cost(m);
        if (s->kept_cost + cost <= (double)GS_SNAP_BUDGET * j / (GS_SNAPS - 1) &&
            s->spent + cost <= 4 * GS_SNAP_BUDGET &&
            take(s, m, (uint64_t)slot << s->shift, slot, cost))
            return -1;
        s->next = j + 1;
    }
    s->due = s->next < GS_SNAPS ? (uint64_t)s->next << s->shift : (uint64_t)GS_SNAPS << s->shift;
    return 0;
}

int gs_snaps_end(struct gs_snaps *s, const struct gs_model *m, uint64_t t_end)
{
    /* the grid holds at most GS_SNAPS - 1: the end always has its column */
    if (take(s, m, t_end, 0, snap_cost(m)))
        return -1;
    for (int i = 0; i < s->ndev; i++) {
        struct gs_snapdev *d = &s->dev[i];
        const struct gs_blkv *segs, *blks;
        uint64_t bytes = dev_bytes(s, d, s->ns - 1, &segs, &blks);
        if (devsnap_take(&d->end, t_end, bytes, segs, blks))
            return -1;
    }
    return 0;
}

struct gs_snaps *gs_snaps_new(void)
{
    struct gs_snaps *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->count = malloc(65536 * sizeof *s->count);
    if (!s->count) {
        free(s);
        return NULL;
    }
    s->shift = GS_SNAP_SHIFT0;
    s->next = 1;
    s->due = (uint64_t)1 << s->shift;
    return s;
}

void gs_snaps_free(struct gs_snaps *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nl; i++) {
        struct gs_layer *l = s->L[i];
        for (uint32_t k = 0; k < GS_SNAPS; k++)
            snapl_free(&l->s[k]);
        gs_blkv_free(&l->tmp);
        free(l);
    }
    for (int i = 0; i < s->ndev; i++) {
        devsnap_free(&s->dev[i].peak);
        devsnap_free(&s->dev[i].end);
    }
    gs_blkv_free(&s->scratch);
    free(s->count);
    free(s);
}
