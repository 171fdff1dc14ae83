/*
 * Address-space maps (addrmap.h). A cell of a snapshot's layer is spread
 * over the rows its address range covers, each row taking the share of the
 * cell that falls in it; a row's site is the one with the largest single
 * share, its age the byte-weighted mean.
 */
#include "addrmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frag.h"
#include "idtab.h"

/* ---- sites ---- */

struct sitew {
    uint32_t stack;     /* 0: an empty slot */
    double w;
};

int gs_addrmap_top_sites(const struct gs_snaps *s, uint32_t *top, uint32_t *ntop)
{
    struct sitew *v = NULL;
    size_t cap = 0, n = 0;
    double topw[GS_MAP_TOP_SITES];
    *ntop = 0;
    for (int i = 0; i < s->nl; i++)
        for (uint32_t k = 0; k < s->ns; k++) {
            const struct gs_snapl *sl = &s->L[i]->s[k];
            for (uint32_t j = 0; j < sl->nu; j++) {
                uint32_t stack = sl->u[j].site;
                if (!stack)
                    continue;
                struct sitew *e = gs_idtab_slot((void **)&v, &cap, n, sizeof *v, stack);
                if (!e) {
                    free(v);
                    return -1;
                }
                if (!e->stack) {
                    e->stack = stack;
                    n++;
                }
                e->w += sl->u[j].sitebytes;
            }
        }
    for (size_t i = 0; i < cap; i++) {
        const struct sitew *e = &v[i];
        if (!e->stack)
            continue;
        uint32_t j = *ntop < GS_MAP_TOP_SITES ? (*ntop)++ : GS_MAP_TOP_SITES;
        if (j == GS_MAP_TOP_SITES) {
            if (e->w <= topw[GS_MAP_TOP_SITES - 1])
                continue;
            j = GS_MAP_TOP_SITES - 1;
        }
        while (j > 0 && topw[j - 1] < e->w) {
            top[j] = top[j - 1];
            topw[j] = topw[j - 1];
            j--;
        }
        top[j] = e->stack;
        topw[j] = e->w;
    }
    free(v);
    return 0;
}

uint32_t gs_addrmap_site_idx(const uint32_t *top, uint32_t ntop, uint32_t stack)
{
    for (uint32_t i = 0; i < ntop; i++)
        if (top[i] == stack)
            return i;
    return GS_HSITE_OTHER;
}

/* ---- regions and rows ---- */

struct region {
    uint64_t lo, hi;
    double w;
    uint32_t row, rows;
};

struct map {
    int layers[2], nl;
    struct region *g;
    uint32_t ng, ng_all, rows;
    uint64_t omitted_bytes;
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

/* Every snapshot's regions of the map's layers, sorted, merged where less
 * than GS_REGION_GAP apart, into mp->g. */
static int merge_regions(const struct gs_snaps *s, struct map *mp)
{
    size_t n = 0;
    for (int li = 0; li < mp->nl; li++)
        for (uint32_t k = 0; k < s->ns; k++)
            n += s->L[mp->layers[li]]->s[k].nrg;
    if (!n)
        return 0;
    uint64_t (*all)[2] = malloc(n * sizeof *all);
    mp->g = malloc(n * sizeof *mp->g);
    if (!all || !mp->g) {
        free(all);
        return -1;
    }
    n = 0;
    for (int li = 0; li < mp->nl; li++)
        for (uint32_t k = 0; k < s->ns; k++) {
            const struct gs_snapl *sl = &s->L[mp->layers[li]]->s[k];
            if (sl->nrg)
                memcpy(all + n, sl->rg, sl->nrg * sizeof *all);
            n += sl->nrg;
        }
    qsort(all, n, sizeof *all, u64pair_cmp);
    uint32_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (ng && all[i][0] < gs_region_end(mp->g[ng - 1].hi)) {
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
    mp->ng = ng;
    return 0;
}

/* The largest GS_MAP_MAX_REGIONS (by bytes over every snapshot) kept, rows
 * handed out in proportion to their spans. */
static void choose_regions(const struct gs_snaps *s, struct map *mp)
{
    uint32_t ng = mp->ng;
    for (int li = 0; li < mp->nl; li++)
        for (uint32_t k = 0; k < s->ns; k++) {
            const struct gs_snapl *sl = &s->L[mp->layers[li]]->s[k];
            for (uint32_t j = 0; j < sl->nu; j++) {
                int ri = find_region(mp->g, ng, sl->u[j].addr);
                if (ri >= 0)
                    mp->g[ri].w += sl->u[j].bytes;
            }
        }
    mp->ng_all = ng;
    if (ng > GS_MAP_MAX_REGIONS) {
        qsort(mp->g, ng, sizeof *mp->g, region_w_desc);
        for (uint32_t i = GS_MAP_MAX_REGIONS; i < ng; i++)
            mp->omitted_bytes += (uint64_t)(mp->g[i].w / s->ns);
        ng = GS_MAP_MAX_REGIONS;
        qsort(mp->g, ng, sizeof *mp->g, region_lo);
    }
    mp->ng = ng;
    double span = 0;
    for (uint32_t i = 0; i < ng; i++)
        span += (double)(mp->g[i].hi - mp->g[i].lo);
    uint32_t row = 0;
    for (uint32_t i = 0; i < ng; i++) {
        double share = span > 0 ? (double)(mp->g[i].hi - mp->g[i].lo) / span : 1.0 / ng;
        uint32_t rows = (uint32_t)lround(share * GS_MAP_ROWS);
        mp->g[i].row = row;
        mp->g[i].rows = rows < GS_MAP_MIN_ROWS ? GS_MAP_MIN_ROWS : rows;
        row += mp->g[i].rows;
    }
    mp->rows = row;
}

/* ---- cells ---- */

struct cell {
    double bytes, agesum, sitebytes;
    uint32_t site;
};

/* Cell u of width q spread over region g's rows of column col. */
static void spread(struct cell *col, const struct region *g, const struct gs_unit *u, uint64_t q)
{
    double rs = (double)(g->hi - g->lo) / g->rows;
    if (rs <= 0)
        rs = 1;
    double a = (double)(u->addr - g->lo), z = a + (double)q;
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

static void layer_cells(const struct gs_snaps *s, const struct map *mp, const struct gs_layer *l,
                        struct cell *c)
{
    for (uint32_t k = 0; k < s->ns; k++) {
        const struct gs_snapl *sl = &l->s[k];
        struct cell *col = c + (size_t)k * mp->rows;
        for (uint32_t j = 0; j < sl->nu; j++) {
            const struct gs_unit *u = &sl->u[j];
            int ri = find_region(mp->g, mp->ng, u->addr);
            if (ri >= 0 && u->bytes > 0)
                spread(col, &mp->g[ri], u, sl->q);
        }
    }
}

/* The cells as bytes: occupancy, age over the run's duration, site. */
static void cell_bytes(const struct map *mp, uint32_t ns, const struct cell *c, uint64_t dur,
                       const uint32_t *top, uint32_t ntop, struct gs_hlayer *out)
{
    for (uint32_t k = 0; k < ns; k++)
        for (uint32_t ri = 0; ri < mp->ng; ri++) {
            const struct region *g = &mp->g[ri];
            double rs = (double)(g->hi - g->lo) / g->rows;
            for (uint32_t rr = 0; rr < g->rows; rr++) {
                size_t i = (size_t)k * mp->rows + g->row + rr;
                const struct cell *x = &c[i];
                if (x->bytes <= 0) {
                    out->occ[i] = 0;
                    out->age[i] = 0;
                    out->site[i] = GS_HSITE_NONE;
                    continue;
                }
                long o = lround((rs > 0 ? x->bytes / rs : 1) * 255);
                out->occ[i] = (uint8_t)(o < 1 ? 1 : o > 255 ? 255 : o);
                long ag = lround(x->agesum / x->bytes * 1e9 / (double)dur * 255);
                out->age[i] = (uint8_t)(ag < 0 ? 0 : ag > 255 ? 255 : ag);
                out->site[i] = (uint8_t)gs_addrmap_site_idx(top, ntop, x->site);
            }
        }
}

/* ---- maps ---- */

static const char *layer_name(int kind)
{
    return kind == GS_LAYER_HOST ? "malloc"
           : kind == GS_LAYER_CUDA ? "cudaMalloc and driver" : "PyTorch caching allocator";
}

static int map_out(const struct gs_snaps *s, const struct map *mp, const uint32_t *top,
                   uint32_t ntop, uint64_t dur, struct gs_arena *a, struct gs_hmap *out)
{
    const struct gs_layer *l0 = s->L[mp->layers[0]];
    out->device = l0->kind == GS_LAYER_HOST ? -1 : l0->device;
    out->name = out->device < 0 ? "host heap"
                : out->device == 255 ? "device (unknown)"
                                     : gs_arena_printf(a, "device %d", out->device);
    out->rows = mp->rows;
    out->regions_total = mp->ng_all;
    out->omitted_bytes = mp->omitted_bytes;
    out->nregions = mp->ng;
    out->regions = gs_arena_calloc(a, mp->ng, sizeof *out->regions);
    size_t nc = (size_t)s->ns * mp->rows;
    struct cell *c = calloc(nc ? nc : 1, sizeof *c);
    if (!out->name || !out->regions || !c) {
        free(c);
        return -1;
    }
    for (uint32_t i = 0; i < mp->ng; i++) {
        out->regions[i].lo = mp->g[i].lo;
        out->regions[i].hi = mp->g[i].hi;
        out->regions[i].row = mp->g[i].row;
        out->regions[i].rows = mp->g[i].rows;
    }
    for (int li = 0; li < mp->nl; li++) {
        const struct gs_layer *l = s->L[mp->layers[li]];
        struct gs_hlayer *hl = &out->layers[out->nlayers++];
        hl->name = layer_name(l->kind);
        hl->live_bytes = gs_arena_calloc(a, s->ns ? s->ns : 1, sizeof *hl->live_bytes);
        hl->occ = gs_arena_alloc(a, nc ? nc : 1);
        hl->age = gs_arena_alloc(a, nc ? nc : 1);
        hl->site = gs_arena_alloc(a, nc ? nc : 1);
        if (!hl->live_bytes || !hl->occ || !hl->age || !hl->site) {
            free(c);
            return -1;
        }
        for (uint32_t k = 0; k < s->ns; k++)
            hl->live_bytes[k] = l->s[k].bytes;
        memset(c, 0, nc * sizeof *c);
        layer_cells(s, mp, l, c);
        cell_bytes(mp, s->ns, c, dur, top, ntop, hl);
    }
    free(c);
    return 0;
}

int gs_addrmap_build(const struct gs_snaps *s, const uint32_t *top, uint32_t ntop,
                     uint64_t duration, struct gs_arena *a, struct gs_history *h)
{
    struct map maps[1 + GS_MAX_DEVICES];
    int nmaps = 0, rc = -1;
    memset(maps, 0, sizeof maps);
    for (int i = 0; i < s->nl; i++)
        if (s->L[i]->kind == GS_LAYER_HOST) {
            maps[nmaps].layers[maps[nmaps].nl++] = i;
            nmaps++;
        }
    for (int i = 0; i < s->ndev; i++) {
        struct map *mp = &maps[nmaps++];
        if (s->dev[i].cuda >= 0)
            mp->layers[mp->nl++] = s->dev[i].cuda;
        if (s->dev[i].torch >= 0)
            mp->layers[mp->nl++] = s->dev[i].torch;
    }
    h->maps = gs_arena_calloc(a, nmaps ? (size_t)nmaps : 1, sizeof *h->maps);
    if (!h->maps)
        goto out;
    uint64_t dur = duration ? duration : 1;
    for (int i = 0; i < nmaps; i++) {
        if (merge_regions(s, &maps[i]))
            goto out;
        if (!maps[i].ng)
            continue; /* nothing was ever live in it */
        choose_regions(s, &maps[i]);
        if (map_out(s, &maps[i], top, ntop, dur, a, &h->maps[h->nmaps++]))
            goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < nmaps; i++)
        free(maps[i].g);
    return rc;
}
