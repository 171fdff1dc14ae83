/*
 * The HTML page's extra data (html_extra.h): a second pass over a trace with
 * the analyzer's own replay model, so a live block here is exactly a live
 * block of the report, stopping at SNAPS moments spread over the run to walk
 * the live set. What it writes, per process:
 *
 *   snapshots_ns  the moments (the first record at or after each of SNAPS
 *                 evenly spaced times, and the end)
 *   maps          address-space maps: "host heap" (malloc blocks, chunks that
 *                 glibc served by mmap left out as in frag.c), and per device
 *                 the blocks cudaMalloc and the driver handed out beside the
 *                 PyTorch caching allocator's blocks inside them. Rows are
 *                 address space: regions (blocks less than 64 MiB apart, the
 *                 rule of frag.c) each cut into rows in proportion to its
 *                 span; columns are snapshots. Per layer and cell, base64 of
 *                 one byte each: occ (how full, 0..255), age (the mean age of
 *                 its bytes over the run's length), site (index into sites,
 *                 254 another site, 255 empty)
 *   device_state  per device, its segments and the blocks inside them at the
 *                 snapshot with the most device memory and at the end (what
 *                 PyTorch's memory_viz calls the allocator state)
 *   host_frag     the host heap's free space between live blocks at each
 *                 snapshot, measured as frag.c measures it at the end
 *   growth        each growth suspect's live bytes per step (or over time)
 *   pauses        every pause, the longest MAX_PAUSES when there are more,
 *                 and a histogram of all of them
 *   sites         the sites the maps colour, named by their first frame
 *
 * Memory: besides the model, per snapshot and layer at most about UNITS
 * cells of address space (their width doubles until the layer's span fits),
 * so SNAPS x UNITS x layers small records; never the trace.
 */
#include "html_extra.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analyzer/analyze.h"
#include "../analyzer/idtab.h"
#include "../analyzer/trace_reader.h"

#define SNAPS 128
#define UNITS 2048
#define ROWS 256
#define MIN_ROWS 3
#define REGION_GAP (64ull << 20)
#define MAX_REGIONS 24
#define TOP_SITES 24
#define SITE_OTHER 254
#define SITE_NONE 255
#define MAX_SEGS 512
#define MAX_BLOCKS 8192
#define MAX_PAUSES 4000
#define GROWTH_POINTS 1000
#define GROWTH_SITES 20
#define MMAP_MIN (128ull << 10)
#define MAX_LAYERS (1 + 2 * GS_MAX_DEVICES)
/* What the snapshots may cost in all, in live blocks sorted and binned
 * (a few hundred instructions each; an empty slot of the live set walked
 * costs an eighth of that): about a second. */
#define VISIT_BUDGET (12ull << 20)

enum { L_HOST = 0, L_CUDA = 1, L_TORCH = 2 };

struct blk {
    uint64_t addr, size, t;
    uint32_t stack, pad;
};

struct blkv {
    struct blk *v;
    size_t n, cap;
};

/* A cell of address space at one snapshot: [addr, addr + q) of its layer. */
struct unit {
    uint64_t addr;
    float bytes, agesum;    /* agesum: bytes x age in seconds */
    float sitebytes;        /* the largest share one block has in it */
    uint32_t site;          /* that block's stack */
};

struct snapl {
    uint64_t q, bytes;
    struct unit *u;
    uint32_t nu, nrg;
    uint64_t (*rg)[2];      /* regions [lo, hi) */
};

struct layer {
    int kind, device;       /* L_*; device -1 for the host */
    struct blkv tmp;        /* this snapshot's blocks */
    struct snapl s[SNAPS];
};

struct devstate {
    uint64_t t, bytes;
    int have;
    struct blk *segs, *blks;
    uint32_t nsegs, nblks, segs_omitted, blks_omitted;
};

struct dev {
    int device;
    int cuda, torch;        /* layer indexes, -1 none */
    struct devstate peak, end;
};

struct gs_html_extra_ctx {
    struct gs_symbolizer *sym;
};

struct pass {
    const struct gs_result *r;
    struct gs_model *m;
    struct layer *L[MAX_LAYERS];
    int nl;
    struct dev dev[GS_MAX_DEVICES];
    int ndev;
    uint64_t t[SNAPS];
    uint32_t ns;
    uint64_t visited;       /* snap_cost of the snapshots taken */
    int16_t lmap[3][256];   /* layer of (kind, device): 0 unknown, else 1 + index */
    struct blkv scratch;    /* blk_sort's */
    uint32_t *count;        /* blk_sort's, 65536 */
    struct gs_heapfrag hf[SNAPS];
    /* growth */
    uint32_t gsites;
    uint32_t gstack[GROWTH_SITES];
    double *gx, *gy;        /* gx[k], gy[k * gsites + j] */
    uint32_t gn, gcap;
    uint64_t steps, stride, next_tick;
    int err;
};

/* ---- helpers ---- */

static int blk_push(struct blkv *b, const struct blk *x)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        struct blk *v = realloc(b->v, cap * sizeof *v);
        if (!v)
            return -1;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = *x;
    return 0;
}

static int blk_cmp(const void *a, const void *b)
{
    const struct blk *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sorts b by address: LSD radix sort, 16 bits a pass, skipping the passes
 * whose digit every address shares (a heap's high bits). The live set comes
 * in hash order and is sorted at every snapshot: qsort's merge sort of
 * these 32-byte records cost the pass most of its time. */
static int blk_sort(struct blkv *b, struct blkv *tmp, uint32_t *count)
{
    size_t n = b->n;
    if (n < 2)
        return 0;
    if (tmp->cap < n) {
        struct blk *v = realloc(tmp->v, n * sizeof *v);
        if (!v)
            return -1;
        tmp->v = v;
        tmp->cap = n;
    }
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, 65536 * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[(b->v[i].addr >> shift) & 0xffff]++;
        if (count[(b->v[0].addr >> shift) & 0xffff] == n)
            continue;
        uint32_t sum = 0;
        for (size_t d = 0; d < 65536; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp->v[count[(b->v[i].addr >> shift) & 0xffff]++] = b->v[i];
        struct blk *v = b->v;
        size_t cap = b->cap;
        b->v = tmp->v;
        b->cap = tmp->cap;
        tmp->v = v;
        tmp->cap = cap;
    }
    return 0;
}

/* Free space between the sorted live host blocks, as frag.c measures it at
 * the end of the trace (the same chunk spans and region rule; the mmapped
 * chunks frag.c leaves out are not in the host layer): the last snapshot's
 * figures equal the report's, which the tests check. */
static void heap_frag(const struct blk *v, size_t n, struct gs_heapfrag *out)
{
    memset(out, 0, sizeof *out);
    out->blocks = n;
    for (size_t i = 0; i < n; i++) {
        out->bytes += v[i].size;
        if (i == 0) {
            out->regions = 1;
            continue;
        }
        uint64_t c = (v[i - 1].size + 8 + 15) & ~15ull;
        uint64_t end = v[i - 1].addr + (c < 32 ? 32 : c);
        if (v[i].addr < end)
            continue;
        uint64_t gap = v[i].addr - end;
        if (gap >= REGION_GAP) {
            out->regions++;
            continue;
        }
        if (gap) {
            out->gaps++;
            out->free_bytes += gap;
            if (gap > out->largest_free)
                out->largest_free = gap;
        }
    }
    out->ratio = out->free_bytes ? 1.0 - (double)out->largest_free / (double)out->free_bytes : 0;
}

static int blk_size_desc(const void *a, const void *b)
{
    const struct blk *x = a, *y = b;
    return x->size > y->size ? -1 : x->size < y->size;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64 of v[0, n) as a JSON string value */
static int put_b64(struct gs_jw *w, const char *key, const uint8_t *v, size_t n)
{
    char *s = malloc((n + 2) / 3 * 4 + 1);
    if (!s)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t x = (uint32_t)v[i] << 16 | (i + 1 < n ? (uint32_t)v[i + 1] << 8 : 0) |
                     (i + 2 < n ? v[i + 2] : 0);
        s[k++] = b64[x >> 18 & 63];
        s[k++] = b64[x >> 12 & 63];
        s[k++] = i + 1 < n ? b64[x >> 6 & 63] : '=';
        s[k++] = i + 2 < n ? b64[x & 63] : '=';
    }
    s[k] = 0;
    gs_jw_str(w, key, s);
    free(s);
    return 0;
}

/* ---- layers ---- */

static int layer_find(struct pass *p, int kind, int device);

static int layer_of(struct pass *p, int kind, int device)
{
    int16_t *c = &p->lmap[kind][device & 255];
    if (!*c) {
        int i = layer_find(p, kind, device);
        if (i < 0)
            return -1;
        *c = (int16_t)(i + 1);
    }
    return *c - 1;
}

static int layer_find(struct pass *p, int kind, int device)
{
    for (int i = 0; i < p->nl; i++)
        if (p->L[i]->kind == kind && p->L[i]->device == device)
            return i;
    if (p->nl == MAX_LAYERS)
        return -1;
    struct dev *d = NULL;
    if (kind != L_HOST) {
        for (int i = 0; i < p->ndev; i++)
            if (p->dev[i].device == device)
                d = &p->dev[i];
        if (!d) {
            if (p->ndev == GS_MAX_DEVICES)
                return -1;
            d = &p->dev[p->ndev++];
            memset(d, 0, sizeof *d);
            d->device = device;
            d->cuda = d->torch = -1;
        }
    }
    struct layer *l = calloc(1, sizeof *l);
    if (!l) {
        p->err = 1;
        return -1;
    }
    l->kind = kind;
    l->device = device;
    p->L[p->nl] = l;
    if (d)
        *(kind == L_CUDA ? &d->cuda : &d->torch) = p->nl;
    return p->nl++;
}

/* Which layer a live block belongs to, or -1 (pinned and managed memory,
 * chunks glibc served by mmap: mappings of their own, not heap). */
static int classify(struct pass *p, const struct gs_live *e)
{
    if (e->dom == GS_DOM_HOST) {
        if (e->kind != GS_MEM_HOST || (e->size >= MMAP_MIN && (e->addr & 0xfff) == 16))
            return -1;
        return layer_of(p, L_HOST, -1);
    }
    if (e->dom == GS_DOM_TORCH)
        return layer_of(p, L_TORCH, e->device);
    if (e->kind == GS_MEM_DEVICE || e->kind == GS_MEM_VMM)
        return layer_of(p, L_CUDA, e->device);
    return -1;
}

/* The layer's blocks (sorted) as regions and cells at snapshot k. */
static int layer_snap(struct layer *l, uint32_t k, uint64_t now)
{
    struct snapl *s = &l->s[k];
    struct blk *v = l->tmp.v;
    size_t n = l->tmp.n;
    free(s->u);
    free(s->rg);
    memset(s, 0, sizeof *s);
    if (!n)
        return 0;
    uint32_t nrg = 0;
    uint64_t span = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t end = v[i].addr + v[i].size;
        if (i == 0 || v[i].addr >= hi + REGION_GAP) {
            if (i)
                span += hi - s->rg[nrg - 1][0];
            void *g = realloc(s->rg, (nrg + 1) * sizeof *s->rg);
            if (!g)
                return -1;
            s->rg = g;
            s->rg[nrg][0] = v[i].addr;
            nrg++;
            hi = end;
        } else if (end > hi) {
            hi = end;
        }
        s->rg[nrg - 1][1] = hi;
        s->bytes += v[i].size;
    }
    span += hi - s->rg[nrg - 1][0];
    s->nrg = nrg;
    uint64_t q = 16;
    while (span / q > UNITS)
        q *= 2;
    s->q = q;
    size_t cap = UNITS + nrg + 16;
    s->u = malloc(cap * sizeof *s->u);
    if (!s->u)
        return -1;
    uint32_t nu = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = v[i].addr, z = a + v[i].size;
        float age = now > v[i].t ? (float)((double)(now - v[i].t) / 1e9) : 0;
        for (uint64_t c = a / q * q; c < z; c += q) {
            uint64_t lo = a > c ? a : c, top = z < c + q ? z : c + q;
            float part = (float)(top - lo);
            struct unit *u = NULL;
            /* blocks come by address, so their cells do too; a block over
             * another (a free the trace lost) goes back a few at most */
            for (uint32_t j = nu; j > 0 && nu - j < 8; j--) {
                if (s->u[j - 1].addr == c) {
                    u = &s->u[j - 1];
                    break;
                }
                if (s->u[j - 1].addr < c)
                    break;
            }
            if (!u) {
                if (nu == cap) {
                    cap *= 2;
                    struct unit *g = realloc(s->u, cap * sizeof *g);
                    if (!g)
                        return -1;
                    s->u = g;
                }
                u = &s->u[nu++];
                memset(u, 0, sizeof *u);
                u->addr = c;
            }
            u->bytes += part;
            u->agesum += part * age;
            if (part > u->sitebytes) {
                u->sitebytes = part;
                u->site = v[i].stack;
            }
        }
    }
    s->nu = nu;
    return 0;
}

/* ---- device state (segments and the blocks inside them) ---- */

static void devstate_free(struct devstate *d)
{
    free(d->segs);
    free(d->blks);
    memset(d, 0, sizeof *d);
}

static int devstate_take(struct devstate *d, uint64_t t, uint64_t bytes, const struct blkv *segs,
                         const struct blkv *blks)
{
    devstate_free(d);
    d->have = 1;
    d->t = t;
    d->bytes = bytes;
    size_t ns = segs ? segs->n : 0, nb = blks ? blks->n : 0;
    d->segs = malloc((ns ? ns : 1) * sizeof *d->segs);
    d->blks = malloc((nb ? nb : 1) * sizeof *d->blks);
    if (!d->segs || !d->blks)
        return -1;
    if (ns)
        memcpy(d->segs, segs->v, ns * sizeof *d->segs);
    if (nb)
        memcpy(d->blks, blks->v, nb * sizeof *d->blks);
    /* too many to draw: keep the largest, shown by address */
    if (ns > MAX_SEGS) {
        qsort(d->segs, ns, sizeof *d->segs, blk_size_desc);
        d->segs_omitted = (uint32_t)(ns - MAX_SEGS);
        ns = MAX_SEGS;
        qsort(d->segs, ns, sizeof *d->segs, blk_cmp);
    }
    if (nb > MAX_BLOCKS) {
        qsort(d->blks, nb, sizeof *d->blks, blk_size_desc);
        d->blks_omitted = (uint32_t)(nb - MAX_BLOCKS);
        nb = MAX_BLOCKS;
        qsort(d->blks, nb, sizeof *d->blks, blk_cmp);
    }
    d->nsegs = (uint32_t)ns;
    d->nblks = (uint32_t)nb;
    return 0;
}

/* ---- snapshots ---- */

static uint64_t snap_cost(const struct gs_model *m)
{
    return m->live.n + m->live.cap / 8;
}

static int snapshot(struct pass *p, uint64_t now)
{
    if (p->ns == SNAPS)
        return 0;
    const struct gs_model *m = p->m;
    for (int i = 0; i < p->nl; i++)
        p->L[i]->tmp.n = 0;
    p->visited += snap_cost(m);
    for (size_t i = 0; i < m->live.cap; i++) {
        const struct gs_live *e = &m->live.slot[i];
        /* allocated after the snapshot's time (another thread's events
         * written ahead of this one's): not live yet */
        if (!e->addr || e->t > now)
            continue;
        int li = classify(p, e);
        if (li < 0) {
            if (p->err)
                return -1;
            continue;
        }
        struct blk b = { e->addr, e->size, e->t, e->stack, 0 };
        if (blk_push(&p->L[li]->tmp, &b))
            return -1;
    }
    uint32_t k = p->ns;
    memset(&p->hf[k], 0, sizeof p->hf[k]);
    for (int i = 0; i < p->nl; i++) {
        struct layer *l = p->L[i];
        if (blk_sort(&l->tmp, &p->scratch, p->count) || layer_snap(l, k, now))
            return -1;
        if (l->kind == L_HOST)
            heap_frag(l->tmp.v, l->tmp.n, &p->hf[k]);
    }
    for (int i = 0; i < p->ndev; i++) {
        struct dev *d = &p->dev[i];
        const struct layer *c = d->cuda >= 0 ? p->L[d->cuda] : NULL;
        const struct layer *t = d->torch >= 0 ? p->L[d->torch] : NULL;
        uint64_t bytes = c && c->s[k].bytes ? c->s[k].bytes : t ? t->s[k].bytes : 0;
        if (bytes > d->peak.bytes &&
            devstate_take(&d->peak, now, bytes, c ? &c->tmp : NULL, t ? &t->tmp : NULL))
            return -1;
    }
    p->t[k] = now;
    p->ns++;
    return 0;
}

/* ---- growth ---- */

static int growth_sample(struct pass *p, double x)
{
    if (!p->gsites)
        return 0;
    if (p->gn == p->gcap) {
        uint32_t cap = p->gcap ? p->gcap * 2 : 256;
        double *gx = realloc(p->gx, cap * sizeof *gx);
        if (gx)
            p->gx = gx;
        double *gy = realloc(p->gy, (size_t)cap * p->gsites * sizeof *gy);
        if (gy)
            p->gy = gy;
        if (!gx || !gy)
            return -1;
        p->gcap = cap;
    }
    const struct gs_model *m = p->m;
    p->gx[p->gn] = x;
    for (uint32_t j = 0; j < p->gsites; j++) {
        uint32_t st = p->gstack[j], si = st < m->site_of_cap ? m->site_of[st] : 0;
        int64_t v = si ? m->sites[si - 1].live_bytes : 0;
        p->gy[(size_t)p->gn * p->gsites + j] = v > 0 ? (double)v : 0;
    }
    p->gn++;
    return 0;
}

/* ---- the pass ---- */

/* When snapshot k (of SNAPS - 1 before the end) is due. */
static uint64_t snap_time(uint64_t dur, uint32_t k)
{
    return (uint64_t)((double)dur * (k + 1) / SNAPS);
}

/* Steps whose growth sample waits for the allocation events of their time
 * (a MARKER may be written before or after them by up to a flush interval). */
struct stepq {
    struct { uint64_t t, ordinal; } *v;
    size_t head, n, cap;
};

static int stepq_push(struct stepq *q, uint64_t t, uint64_t ordinal)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        void *v = realloc(q->v, cap * sizeof *q->v);
        if (!v)
            return -1;
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n].t = t;
    q->v[q->n].ordinal = ordinal;
    q->n++;
    return 0;
}

/* What stays true: snapshots and time samples are taken just before the
 * first allocation or free event at or after their time. Only those events
 * count as the clock: they are written in time order per thread, while
 * SAMPLE, MARKER and scan records may be written a flush interval before
 * or after the events of their time. */
static int run_pass(struct pass *p, struct gs_reader *rd)
{
    const struct gs_result *r = p->r;
    uint64_t dur = r->duration_ns ? r->duration_ns : 1;
    uint32_t next = 0; /* index of the next snapshot time */
    p->stride = r->steps > GROWTH_POINTS ? (r->steps + GROWTH_POINTS - 1) / GROWTH_POINTS : 1;
    uint64_t tick = dur / GROWTH_POINTS ? dur / GROWTH_POINTS : 1, last_hot = 0;
    struct stepq q = { NULL, 0, 0, 0 };
    struct gs_record rec;
    int rc = -1;
    p->next_tick = 0;
    while (gs_reader_next(rd, &rec) == GS_READ_OK) {
        if (rec.type < GS_REC_LENGTHED && rec.t) {
            if (next < SNAPS - 1 && rec.t >= snap_time(dur, next)) {
                /* thresholds passed without an event share one state */
                while (next + 1 < SNAPS - 1 && rec.t >= snap_time(dur, next + 1))
                    next++;
                /* within budget, spread over the run: a big live set
                 * gets fewer columns */
                uint64_t cost = p->visited + snap_cost(p->m);
                if (cost <= (double)VISIT_BUDGET * (next + 1) / (SNAPS - 1) &&
                    snapshot(p, snap_time(dur, next)))
                    goto out;
                next++;
            }
            for (; q.head < q.n && rec.t >= q.v[q.head].t; q.head++)
                if (growth_sample(p, (double)q.v[q.head].ordinal))
                    goto out;
            if (r->growth_axis == GS_AXIS_TIME && rec.t >= p->next_tick) {
                if (growth_sample(p, (double)rec.t / 1e9))
                    goto out;
                while (p->next_tick <= rec.t)
                    p->next_tick += tick;
            }
            if (rec.t > last_hot)
                last_hot = rec.t;
        }
        if (gs_model_feed(p->m, &rec))
            goto out;
        if (rec.type == GS_REC_MARKER && rec.u.marker.kind == GS_MARK_STEP) {
            p->steps++;
            if (r->growth_axis == GS_AXIS_STEP && (p->steps - 1) % p->stride == 0) {
                /* the events of its time came already, or are still to come */
                if (last_hot >= rec.t && q.head == q.n) {
                    if (growth_sample(p, (double)p->steps))
                        goto out;
                } else if (stepq_push(&q, rec.t, p->steps)) {
                    goto out;
                }
            }
        }
    }
    if (gs_model_finish(p->m))
        goto out;
    for (; q.head < q.n; q.head++)
        if (growth_sample(p, (double)q.v[q.head].ordinal))
            goto out;
    uint64_t end = r->duration_ns;
    if (p->ns == SNAPS)
        p->ns--; /* the end always has its column */
    if (snapshot(p, end))
        goto out;
    for (int i = 0; i < p->ndev; i++) {
        struct dev *d = &p->dev[i];
        const struct layer *c = d->cuda >= 0 ? p->L[d->cuda] : NULL;
        const struct layer *t = d->torch >= 0 ? p->L[d->torch] : NULL;
        uint32_t k = p->ns - 1;
        uint64_t bytes = c && c->s[k].bytes ? c->s[k].bytes : t ? t->s[k].bytes : 0;
        if (devstate_take(&d->end, end, bytes, c ? &c->tmp : NULL, t ? &t->tmp : NULL))
            goto out;
    }
    rc = 0;
out:
    free(q.v);
    return rc;
}

/* ---- sites: which stacks the maps colour, and their names ---- */

struct sitew {
    uint32_t stack;
    double w;
};

struct sitetab {
    struct sitew *v;    /* open addressing on stack; stack 0 never stored */
    size_t cap, n;
    uint32_t top[TOP_SITES];
    double topw[TOP_SITES];
    uint32_t ntop;
};

static int site_add(struct sitetab *t, uint32_t stack, double w)
{
    if (!stack)
        return 0;
    struct sitew *e = gs_idtab_slot((void **)&t->v, &t->cap, t->n, sizeof *t->v, stack);
    if (!e)
        return -1;
    if (!e->stack) {
        e->stack = stack;
        t->n++;
    }
    e->w += w;
    return 0;
}

static int site_idx(const struct sitetab *t, uint32_t stack)
{
    for (uint32_t i = 0; i < t->ntop; i++)
        if (t->top[i] == stack)
            return (int)i;
    return SITE_OTHER;
}

static int is_interpreter(const char *path)
{
    if (!path)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return strncmp(b, "libpython", 9) == 0 || strncmp(b, "python", 6) == 0;
}

/* The first frame of the stack worth naming: a Python frame when the stack
 * has any (the interpreter's own frames say nothing), else the first
 * resolved one, else the first. */
static int site_frame(struct gs_symbolizer *sym, const struct gs_model *m, uint32_t id,
                      struct gs_frame *out)
{
    struct gs_frame native;
    memset(&native, 0, sizeof native);
    int have = 0;
    for (uint32_t n = id, depth = 0; n && depth < 256; depth++) {
        const struct gs_stacknode *nd = gs_model_node(m, n);
        if (!nd)
            break;
        uint64_t ip = nd->ip;
        if (ip & GS_IP_PYFRAME) {
            const struct gs_pycode *pc = gs_model_pycode(m, (ip >> 32) & 0x7fffffffu);
            memset(out, 0, sizeof *out);
            out->python = 1;
            out->line = (uint32_t)ip;
            out->function = pc ? gs_sym_intern(sym, pc->function) : NULL;
            out->file = pc ? gs_sym_intern(sym, pc->file) : NULL;
            return 0;
        }
        if (!have) {
            const struct gs_module *md = nd->module ? &m->mods[nd->module - 1]
                                                    : gs_model_module_any(m, ip ? ip - 1 : 0);
            struct gs_frame *fr;
            uint32_t nf;
            if (gs_sym_resolve(sym, md, ip, &fr, &nf))
                return -1;
            for (uint32_t k = 0; k < nf && !have; k++)
                if (fr[k].function && !is_interpreter(fr[k].module)) {
                    native = fr[k];
                    have = 1;
                }
            if (!have && depth == 0 && nf)
                native = fr[0];
        }
        n = nd->parent;
    }
    *out = native;
    return 0;
}

/* ---- maps: snapshots' cells onto common rows ---- */

struct region {
    uint64_t lo, hi;
    double w;
    uint32_t row, rows;
};

static int u64pair_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int region_w_desc(const void *a, const void *b)
{
    const struct region *x = a, *y = b;
    return x->w > y->w ? -1 : x->w < y->w ? 1 : (x->lo > y->lo) - (x->lo < y->lo);
}

static int region_lo(const void *a, const void *b)
{
    const struct region *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

static int find_region(const struct region *g, uint32_t ng, uint64_t a)
{
    uint32_t lo = 0, hi = ng;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (g[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ng && g[lo].lo <= a ? (int)lo : -1;
}

struct map {
    int layers[2], nl;
    struct region *g;
    uint32_t ng, ng_all, rows;
    uint64_t omitted_bytes;
};

/* The regions of every snapshot of the map's layers, merged, the largest
 * MAX_REGIONS kept, rows handed out in proportion to their spans. */
static int map_regions(struct pass *p, struct map *mp)
{
    size_t n = 0;
    for (int li = 0; li < mp->nl; li++)
        for (uint32_t k = 0; k < p->ns; k++)
            n += p->L[mp->layers[li]]->s[k].nrg;
    if (!n)
        return 0;
    uint64_t (*all)[2] = malloc(n * sizeof *all);
    if (!all)
        return -1;
    n = 0;
    for (int li = 0; li < mp->nl; li++)
        for (uint32_t k = 0; k < p->ns; k++) {
            const struct snapl *s = &p->L[mp->layers[li]]->s[k];
            if (s->nrg)
                memcpy(all + n, s->rg, s->nrg * sizeof *all);
            n += s->nrg;
        }
    qsort(all, n, sizeof *all, u64pair_cmp);
    mp->g = malloc(n * sizeof *mp->g);
    if (!mp->g) {
        free(all);
        return -1;
    }
    uint32_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (ng && all[i][0] < mp->g[ng - 1].hi + REGION_GAP) {
            if (all[i][1] > mp->g[ng - 1].hi)
                mp->g[ng - 1].hi = all[i][1];
            continue;
        }
        memset(&mp->g[ng], 0, sizeof mp->g[ng]);
        mp->g[ng].lo = all[i][0];
        mp->g[ng].hi = all[i][1];
        ng++;
    }
    free(all);
    /* weight: bytes over every snapshot */
    for (int li = 0; li < mp->nl; li++)
        for (uint32_t k = 0; k < p->ns; k++) {
            const struct snapl *s = &p->L[mp->layers[li]]->s[k];
            for (uint32_t j = 0; j < s->nu; j++) {
                int ri = find_region(mp->g, ng, s->u[j].addr);
                if (ri >= 0)
                    mp->g[ri].w += s->u[j].bytes;
            }
        }
    mp->ng_all = ng;
    if (ng > MAX_REGIONS) {
        qsort(mp->g, ng, sizeof *mp->g, region_w_desc);
        for (uint32_t i = MAX_REGIONS; i < ng; i++)
            mp->omitted_bytes += (uint64_t)(mp->g[i].w / p->ns);
        ng = MAX_REGIONS;
        qsort(mp->g, ng, sizeof *mp->g, region_lo);
    }
    mp->ng = ng;
    double span = 0;
    for (uint32_t i = 0; i < ng; i++)
        span += (double)(mp->g[i].hi - mp->g[i].lo);
    uint32_t row = 0;
    for (uint32_t i = 0; i < ng; i++) {
        double share = span > 0 ? (double)(mp->g[i].hi - mp->g[i].lo) / span : 1.0 / ng;
        uint32_t rows = (uint32_t)lround(share * ROWS);
        mp->g[i].row = row;
        mp->g[i].rows = rows < MIN_ROWS ? MIN_ROWS : rows;
        row += mp->g[i].rows;
    }
    mp->rows = row;
    return 0;
}

struct cell {
    double bytes, agesum, sitebytes;
    uint32_t site;
};

static int map_layer_cells(struct pass *p, const struct map *mp, const struct layer *l,
                           struct cell *c)
{
    for (uint32_t k = 0; k < p->ns; k++) {
        const struct snapl *s = &l->s[k];
        struct cell *col = c + (size_t)k * mp->rows;
        for (uint32_t j = 0; j < s->nu; j++) {
            const struct unit *u = &s->u[j];
            int ri = find_region(mp->g, mp->ng, u->addr);
            if (ri < 0 || u->bytes <= 0)
                continue;
            const struct region *g = &mp->g[ri];
            double rs = (double)(g->hi - g->lo) / g->rows;
            if (rs <= 0)
                rs = 1;
            double a = (double)(u->addr - g->lo), z = a + (double)s->q;
            double lim = (double)(g->hi - g->lo);
            if (z > lim)
                z = lim;
            if (z <= a)
                z = a + 1;
            uint32_t r0 = (uint32_t)(a / rs), r1 = (uint32_t)((z - 1e-9) / rs);
            if (r1 >= g->rows)
                r1 = g->rows - 1;
            if (r0 > r1)
                r0 = r1;
            for (uint32_t rr = r0; rr <= r1; rr++) {
                double lo = rr * rs > a ? rr * rs : a, hi = (rr + 1) * rs < z ? (rr + 1) * rs : z;
                double f = (hi - lo) / (z - a);
                if (f <= 0)
                    continue;
                struct cell *x = &col[g->row + rr];
                x->bytes += u->bytes * f;
                x->agesum += u->agesum * f;
                if (u->sitebytes * f > x->sitebytes) {
                    x->sitebytes = u->sitebytes * f;
                    x->site = u->site;
                }
            }
        }
    }
    return 0;
}

static const char *layer_name(int kind)
{
    return kind == L_HOST ? "malloc" : kind == L_CUDA ? "cudaMalloc and driver"
                                                      : "PyTorch caching allocator";
}

static int write_map(struct pass *p, struct gs_jw *w, struct map *mp, const struct sitetab *st,
                     const char *name, int device)
{
    uint64_t dur = p->r->duration_ns ? p->r->duration_ns : 1;
    size_t nc = (size_t)p->ns * mp->rows;
    struct cell *c = calloc(nc ? nc : 1, sizeof *c);
    uint8_t *occ = malloc(nc ? nc : 1), *age = malloc(nc ? nc : 1), *site = malloc(nc ? nc : 1);
    int rc = -1;
    if (!c || !occ || !age || !site)
        goto out;
    gs_jw_obj(w, NULL);
    gs_jw_str(w, "name", name);
    if (device >= 0)
        gs_jw_u64(w, "device", (uint64_t)device);
    else
        gs_jw_null(w, "device");
    gs_jw_u64(w, "rows", mp->rows);
    gs_jw_u64(w, "regions_total", mp->ng_all);
    gs_jw_u64(w, "omitted_bytes", mp->omitted_bytes);
    gs_jw_arr(w, "regions", 0);
    for (uint32_t i = 0; i < mp->ng; i++) {
        gs_jw_obj_compact(w, NULL);
        gs_jw_hex(w, "lo", mp->g[i].lo);
        gs_jw_hex(w, "hi", mp->g[i].hi);
        gs_jw_u64(w, "bytes", mp->g[i].hi - mp->g[i].lo);
        gs_jw_u64(w, "row", mp->g[i].row);
        gs_jw_u64(w, "rows", mp->g[i].rows);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_arr(w, "layers", 0);
    for (int li = 0; li < mp->nl; li++) {
        const struct layer *l = p->L[mp->layers[li]];
        memset(c, 0, nc * sizeof *c);
        map_layer_cells(p, mp, l, c);
        for (uint32_t k = 0; k < p->ns; k++)
            for (uint32_t ri = 0; ri < mp->ng; ri++) {
                const struct region *g = &mp->g[ri];
                double rs = (double)(g->hi - g->lo) / g->rows;
                for (uint32_t rr = 0; rr < g->rows; rr++) {
                    size_t i = (size_t)k * mp->rows + g->row + rr;
                    const struct cell *x = &c[i];
                    if (x->bytes <= 0) {
                        occ[i] = 0;
                        age[i] = 0;
                        site[i] = SITE_NONE;
                        continue;
                    }
                    double f = rs > 0 ? x->bytes / rs : 1;
                    long o = lround(f * 255);
                    occ[i] = (uint8_t)(o < 1 ? 1 : o > 255 ? 255 : o);
                    double a = x->agesum / x->bytes * 1e9 / (double)dur;
                    long ag = lround(a * 255);
                    age[i] = (uint8_t)(ag < 0 ? 0 : ag > 255 ? 255 : ag);
                    site[i] = (uint8_t)site_idx(st, x->site);
                }
            }
        gs_jw_obj(w, NULL);
        gs_jw_str(w, "name", layer_name(l->kind));
        gs_jw_arr(w, "live_bytes", 1);
        for (uint32_t k = 0; k < p->ns; k++)
            gs_jw_u64(w, NULL, l->s[k].bytes);
        gs_jw_end_arr(w);
        if (put_b64(w, "occ", occ, nc) || put_b64(w, "age", age, nc) ||
            put_b64(w, "site", site, nc))
            goto out;
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
    rc = 0;
out:
    free(c);
    free(occ);
    free(age);
    free(site);
    return rc;
}

static void write_state(struct gs_jw *w, const char *when, const struct devstate *d,
                        const struct sitetab *st)
{
    gs_jw_obj(w, NULL);
    gs_jw_str(w, "when", when);
    gs_jw_u64(w, "t_ns", d->t);
    gs_jw_u64(w, "bytes", d->bytes);
    gs_jw_u64(w, "segments_omitted", d->segs_omitted);
    gs_jw_u64(w, "blocks_omitted", d->blks_omitted);
    /* [address, size, site] and [segment index or -1, offset, size, site] */
    gs_jw_arr(w, "segments", 0);
    for (uint32_t i = 0; i < d->nsegs; i++) {
        gs_jw_arr(w, NULL, 1);
        gs_jw_hex(w, NULL, d->segs[i].addr);
        gs_jw_u64(w, NULL, d->segs[i].size);
        gs_jw_u64(w, NULL, (uint64_t)site_idx(st, d->segs[i].stack));
        gs_jw_end_arr(w);
    }
    gs_jw_end_arr(w);
    gs_jw_arr(w, "blocks", 0);
    for (uint32_t i = 0; i < d->nblks; i++) {
        const struct blk *b = &d->blks[i];
        int64_t seg = -1;
        uint32_t lo = 0, hi = d->nsegs;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (d->segs[mid].addr + d->segs[mid].size <= b->addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < d->nsegs && d->segs[lo].addr <= b->addr)
            seg = lo;
        gs_jw_arr(w, NULL, 1);
        gs_jw_i64(w, NULL, seg);
        if (seg >= 0)
            gs_jw_u64(w, NULL, b->addr - d->segs[seg].addr);
        else
            gs_jw_hex(w, NULL, b->addr);
        gs_jw_u64(w, NULL, b->size);
        gs_jw_u64(w, NULL, (uint64_t)site_idx(st, b->stack));
        gs_jw_end_arr(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

/* ---- pauses ---- */

static int pause_t(const void *a, const void *b)
{
    const struct gs_pause *x = a, *y = b;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}


/* The pauses of the report: PAUSE records win over what SCAN_END timings
 * and CUDA call durations imply, as analyze.c counts them. The reporter does
 * not see --cuda-pause-ms: the pass keeps every synchronous CUDA call, and
 * the report's count of them says how many of the longest are pauses. */
static int write_pauses(struct gs_jw *w, const struct gs_model *m, const struct gs_result *r)
{
    size_t k;
    unsigned derived;
    struct gs_pause *v = gs_pauses_gather(m, r->pauses.by_kind[GS_PAUSE_CUDA_SYNC].count, &k,
                                          &derived);
    if (!v)
        return -1;
    /* histogram over all of them: bins [2^i, 2^(i+1)) us, i = 0 .. 39; the
     * first also holds everything shorter than 1 us */
    uint64_t hist[40] = { 0 };
    for (size_t i = 0; i < k; i++) {
        uint64_t us = (v[i].t1 > v[i].t0 ? v[i].t1 - v[i].t0 : 0) / 1000;
        int b = 0;
        while (us > 1 && b < 39) {
            us >>= 1;
            b++;
        }
        hist[b]++;
    }
    size_t shown = k;
    if (shown > MAX_PAUSES) {
        qsort(v, k, sizeof *v, gs_pause_len_desc);
        shown = MAX_PAUSES;
    }
    qsort(v, shown, sizeof *v, pause_t);
    gs_jw_obj(w, "pauses");
    gs_jw_u64(w, "count", k);
    gs_jw_u64(w, "shown", shown);
    gs_jw_arr(w, "kind_names", 1);
    for (uint32_t i = 0; i < 3; i++)
        gs_jw_str(w, NULL, gs_pause_kind_name(i));
    gs_jw_end_arr(w);
    gs_jw_arr(w, "t_ns", 1);
    for (size_t i = 0; i < shown; i++)
        gs_jw_u64(w, NULL, v[i].t0);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "duration_ns", 1);
    for (size_t i = 0; i < shown; i++)
        gs_jw_u64(w, NULL, v[i].t1 > v[i].t0 ? v[i].t1 - v[i].t0 : 0);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "kind", 1);
    for (size_t i = 0; i < shown; i++)
        gs_jw_u64(w, NULL, v[i].kind);
    gs_jw_end_arr(w);
    int top = 0;
    for (int i = 0; i < 40; i++)
        if (hist[i])
            top = i + 1;
    gs_jw_arr(w, "hist_lo_us", 1);
    for (int i = 0; i < top; i++)
        gs_jw_u64(w, NULL, i ? 1ull << i : 0);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "hist_count", 1);
    for (int i = 0; i < top; i++)
        gs_jw_u64(w, NULL, hist[i]);
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
    free(v);
    return 0;
}

/* ---- output ---- */

static int write_all(struct gs_html_extra_ctx *x, struct pass *p, struct gs_jw *w)
{
    const struct gs_result *r = p->r;
    int rc = -1;
    struct map maps[1 + GS_MAX_DEVICES];
    int nmaps = 0;
    memset(maps, 0, sizeof maps);
    struct sitetab st;
    memset(&st, 0, sizeof st);

    for (int i = 0; i < p->nl; i++)
        if (p->L[i]->kind == L_HOST) {
            maps[nmaps].layers[maps[nmaps].nl++] = i;
            nmaps++;
        }
    for (int i = 0; i < p->ndev; i++) {
        struct map *mp = &maps[nmaps++];
        if (p->dev[i].cuda >= 0)
            mp->layers[mp->nl++] = p->dev[i].cuda;
        if (p->dev[i].torch >= 0)
            mp->layers[mp->nl++] = p->dev[i].torch;
    }
    for (int i = 0; i < nmaps; i++)
        if (map_regions(p, &maps[i]))
            goto out;

    /* the sites holding the most of the maps, over every snapshot */
    for (int i = 0; i < p->nl; i++)
        for (uint32_t k = 0; k < p->ns; k++) {
            const struct snapl *s = &p->L[i]->s[k];
            for (uint32_t j = 0; j < s->nu; j++)
                if (site_add(&st, s->u[j].site, s->u[j].sitebytes))
                    goto out;
        }
    for (size_t i = 0; i < st.cap; i++) {
        const struct sitew *e = &st.v[i];
        if (!e->stack)
            continue;
        uint32_t j = st.ntop < TOP_SITES ? st.ntop++ : TOP_SITES;
        if (j == TOP_SITES) {
            if (e->w <= st.topw[TOP_SITES - 1])
                continue;
            j = TOP_SITES - 1;
        }
        while (j > 0 && st.topw[j - 1] < e->w) {
            st.top[j] = st.top[j - 1];
            st.topw[j] = st.topw[j - 1];
            j--;
        }
        st.top[j] = e->stack;
        st.topw[j] = e->w;
    }

    gs_jw_arr(w, "snapshots_ns", 1);
    for (uint32_t k = 0; k < p->ns; k++)
        gs_jw_u64(w, NULL, p->t[k]);
    gs_jw_end_arr(w);

    gs_jw_arr(w, "sites", 0);
    for (uint32_t i = 0; i < st.ntop; i++) {
        struct gs_frame f;
        if (site_frame(x->sym, p->m, st.top[i], &f))
            goto out;
        gs_jw_obj_compact(w, NULL);
        gs_jw_u64(w, "stack_id", st.top[i]);
        gs_jw_str(w, "function", f.function);
        gs_jw_str(w, "file", f.file);
        if (f.line)
            gs_jw_u64(w, "line", f.line);
        else
            gs_jw_null(w, "line");
        gs_jw_str(w, "module", f.module);
        if (!f.python && f.module)
            gs_jw_hex(w, "offset", f.offset);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);

    gs_jw_arr(w, "maps", 0);
    for (int i = 0; i < nmaps; i++) {
        char name[64];
        int device = -1;
        if (p->L[maps[i].layers[0]]->kind == L_HOST) {
            snprintf(name, sizeof name, "host heap");
        } else {
            device = p->L[maps[i].layers[0]]->device;
            if (device == 255)
                snprintf(name, sizeof name, "device (unknown)");
            else
                snprintf(name, sizeof name, "device %d", device);
        }
        if (!maps[i].ng)
            continue;
        if (write_map(p, w, &maps[i], &st, name, device))
            goto out;
    }
    gs_jw_end_arr(w);

    gs_jw_arr(w, "device_state", 0);
    for (int i = 0; i < p->ndev; i++) {
        const struct dev *d = &p->dev[i];
        gs_jw_obj(w, NULL);
        gs_jw_u64(w, "device", (uint64_t)d->device);
        gs_jw_bool(w, "cuda_layer", d->cuda >= 0);
        gs_jw_bool(w, "torch_layer", d->torch >= 0);
        gs_jw_arr(w, "states", 0);
        if (d->peak.have)
            write_state(w, "peak", &d->peak, &st);
        if (d->end.have)
            write_state(w, "end", &d->end, &st);
        gs_jw_end_arr(w);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);

    gs_jw_obj(w, "host_frag");
    gs_jw_arr(w, "ratio", 1);
    for (uint32_t k = 0; k < p->ns; k++)
        gs_jw_dbl(w, NULL, p->hf[k].ratio);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "largest_free", 1);
    for (uint32_t k = 0; k < p->ns; k++)
        gs_jw_u64(w, NULL, p->hf[k].largest_free);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "free_bytes", 1);
    for (uint32_t k = 0; k < p->ns; k++)
        gs_jw_u64(w, NULL, p->hf[k].free_bytes);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "live_bytes", 1);
    for (uint32_t k = 0; k < p->ns; k++)
        gs_jw_u64(w, NULL, p->hf[k].bytes);
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);

    gs_jw_obj(w, "growth");
    gs_jw_str(w, "axis", r->growth_axis == GS_AXIS_STEP ? "step" : "time");
    gs_jw_u64(w, "stride", r->growth_axis == GS_AXIS_STEP ? p->stride : 0);
    gs_jw_arr(w, "x", 1);
    for (uint32_t k = 0; k < p->gn; k++)
        gs_jw_dbl(w, NULL, p->gx[k]);
    gs_jw_end_arr(w);
    gs_jw_arr(w, "sites", 0);
    for (uint32_t j = 0; j < p->gsites; j++) {
        gs_jw_obj(w, NULL);
        gs_jw_u64(w, "stack_id", p->gstack[j]);
        gs_jw_arr(w, "live_bytes", 1);
        for (uint32_t k = 0; k < p->gn; k++)
            gs_jw_u64(w, NULL, (uint64_t)p->gy[(size_t)k * p->gsites + j]);
        gs_jw_end_arr(w);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);

    if (write_pauses(w, p->m, r))
        goto out;
    rc = 0;
out:
    for (int i = 0; i < nmaps; i++)
        free(maps[i].g);
    free(st.v);
    return rc;
}

struct gs_html_extra_ctx *gs_html_extra_new(void)
{
    struct gs_html_extra_ctx *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->sym = gs_sym_new(1);
    if (!x->sym) {
        free(x);
        return NULL;
    }
    return x;
}

void gs_html_extra_free(struct gs_html_extra_ctx *x)
{
    if (!x)
        return;
    gs_sym_free(x->sym);
    free(x);
}

static void pass_free(struct pass *p)
{
    for (int i = 0; i < p->nl; i++) {
        struct layer *l = p->L[i];
        for (uint32_t k = 0; k < SNAPS; k++) {
            free(l->s[k].u);
            free(l->s[k].rg);
        }
        free(l->tmp.v);
        free(l);
    }
    for (int i = 0; i < p->ndev; i++) {
        devstate_free(&p->dev[i].peak);
        devstate_free(&p->dev[i].end);
    }
    free(p->gx);
    free(p->gy);
    free(p->scratch.v);
    free(p->count);
    if (p->m) {
        gs_model_free(p->m);
        free(p->m);
    }
    free(p);
}

int gs_html_extra_write(struct gs_html_extra_ctx *x, struct gs_jw *w, const char *trace,
                        const struct gs_result *r, char *err, size_t errlen)
{
    if (strcmp(trace, "-") == 0) {
        snprintf(err, errlen, "read from standard input: it cannot be read a second time for "
                              "the address-space maps, growth per step and pause list");
        return -1;
    }
    char rerr[512];
    struct gs_reader *rd = gs_reader_open(trace, rerr, sizeof rerr);
    if (!rd) {
        snprintf(err, errlen, "%s", rerr);
        return -1;
    }
    struct pass *p = calloc(1, sizeof *p);
    struct gs_analyze_opts ao;
    gs_analyze_defaults(&ao);
    ao.model.cuda_pause_ns = 0; /* every synchronous CUDA call: write_pauses */
    if (p) {
        p->r = r;
        p->count = malloc(65536 * sizeof *p->count);
        p->m = p->count ? malloc(sizeof *p->m) : NULL;
        if (p->m && gs_model_init(p->m, &ao.model)) {
            free(p->m);
            p->m = NULL;
        }
    }
    if (!p || !p->m) {
        gs_reader_close(rd);
        if (p)
            pass_free(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (uint32_t j = 0; j < r->nsuspects && p->gsites < GROWTH_SITES; j++)
        p->gstack[p->gsites++] = r->suspects[j].stack_id;
    int rc = run_pass(p, rd);
    gs_reader_close(rd);
    if (rc || write_all(x, p, w)) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    pass_free(p);
    return rc;
}
