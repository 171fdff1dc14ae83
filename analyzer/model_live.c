/*
 * The live set and what hangs off it (model_int.h): blocks by (address,
 * domain), the per-kind totals and peaks, the sites with their growth fits,
 * and the hot records that change them (ALLOC, FREE, REALLOC, ALLOC_EX,
 * FREE_EX). Written for speed: one probe sequence per record, one array
 * index for the site, a few additions; everything a hot record needs is in
 * this file or inline in model_int.h, so it compiles as one piece.
 *
 * What stays true: a block is live in exactly one slot, keyed by (addr,
 * dom); its size is in live_bytes[its category] (or in the torch layer's
 * totals, never both) and in its site's live_bytes; a free of a block that
 * is not live changes nothing but unmatched_frees.
 */
#include "model_int.h"
#include "siteext.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static int domain_of(uint64_t kind, uint64_t fn)
{
    if (fn == GS_FN_TORCH)
        return GS_DOM_TORCH;
    if (fn >= GS_FN_CUDA_RUNTIME || kind != GS_MEM_HOST)
        return GS_DOM_CUDA;
    return GS_DOM_HOST;
}

/* ---- the live set ---- */

int gs_live_init(struct gs_livemap *h, size_t cap)
{
    h->slot = calloc(cap, sizeof *h->slot);
    h->cap = cap;
    h->n = 0;
    return h->slot ? 0 : -1;
}

int gs_live_rehash(struct gs_livemap *h)
{
    struct gs_livemap n;
    if (gs_live_init(&n, h->cap * 2))
        return -1;
    size_t mask = n.cap - 1;
    for (size_t i = 0; i < h->cap; i++) {
        struct gs_live *e = &h->slot[i];
        if (!e->addr)
            continue;
        size_t j = gs_hash_addr(e->addr) & mask;
        while (n.slot[j].addr)
            j = (j + 1) & mask;
        n.slot[j] = *e;
    }
    n.n = h->n;
    free(h->slot);
    *h = n;
    return 0;
}

void gs_live_delete_at(struct gs_livemap *h, size_t i)
{
    size_t mask = h->cap - 1;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        struct gs_live *e = &h->slot[j];
        if (!e->addr)
            break;
        size_t home = gs_hash_addr(e->addr) & mask;
        /* e may fill the hole when its probe path from home to j passes i */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            h->slot[i] = *e;
            i = j;
        }
    }
    h->slot[i].addr = 0;
    h->n--;
}

const struct gs_live *gs_model_live_find(const struct gs_model *m, uint64_t addr, int dom)
{
    if (!addr || !m->live.slot)
        return NULL;
    size_t i = gs_live_probe(&m->live, addr, dom);
    return m->live.slot[i].addr ? &m->live.slot[i] : NULL;
}

/* ---- sites ---- */

static int ensure_site_of(struct gs_model *m, uint64_t stack)
{
    if (stack < m->site_of_cap)
        return 0;
    /* An event's stack id is one the trace defined (STACK ids are dense):
     * a larger one is damage, and must not size an array. */
    if (stack > (uint64_t)m->max_stack_id + 1) {
        m->bad_records++;
        return -2;
    }
    return GS_GROW(m->site_of, m->site_of_cap, (size_t)stack + 1);
}

struct gs_site *gs_site_get(struct gs_model *m, uint32_t stack, int memcat, uint64_t t)
{
    if (stack >= m->site_of_cap) {
        int rc = ensure_site_of(m, stack);
        if (rc == -2) { /* an undefined stack: counted as an unknown site */
            stack = 0;
            if (!m->site_of_cap && ensure_site_of(m, 0))
                return NULL;
        } else if (rc) {
            return NULL;
        }
    }
    uint32_t s = m->site_of[stack];
    if (s)
        return &m->sites[s - 1];
    if (m->nsites == m->sites_cap) {
        /* the growth fits are a parallel array, GS_AXIS__N per site */
        uint32_t cap = m->sites_cap, axcap = m->sites_cap * GS_AXIS__N;
        if (GS_GROW_RAW(m->sites, cap, (size_t)m->nsites + 1) ||
            GS_GROW_RAW(m->site_ax, axcap, (size_t)cap * GS_AXIS__N))
            return NULL;
        m->sites_cap = cap;
    }
    uint32_t idx = m->nsites++;
    struct gs_site *st = &m->sites[idx];
    memset(st, 0, sizeof *st);
    memset(&m->site_ax[idx * GS_AXIS__N], 0, GS_AXIS__N * sizeof *m->site_ax);
    st->stack = stack;
    st->memcat = (uint8_t)memcat;
    /* the site starts at its first event: earlier checkpoints are not its */
    for (int a = 0; a < GS_AXIS__N; a++) {
        uint32_t k = gs_cps_upto(&m->cps[a], t);
        st->last_cp[a] = k;
        m->site_ax[idx * GS_AXIS__N + a].last_cp = k;
    }
    m->site_of[stack] = m->nsites;
    return st;
}

/* At the end: every site's fits take the checkpoints since its last event
 * at the value it ends with. */
void gs_sites_finish(struct gs_model *m)
{
    for (uint32_t i = 0; i < m->nsites; i++) {
        struct gs_site *s = &m->sites[i];
        for (int a = 0; a < GS_AXIS__N; a++) {
            if (m->sitelog && m->cps[a].n > s->last_cp[a])
                gs_sitelog_note(m->sitelog, a, i, s->last_cp[a], m->cps[a].n,
                                (double)s->live_bytes);
            gs_axis_flush(&m->site_ax[(size_t)i * GS_AXIS__N + a], &m->cps[a], m->cps[a].n,
                          (double)s->live_bytes);
            s->last_cp[a] = m->cps[a].n;
        }
    }
}

/* ---- blocks ---- */

static void account(struct gs_model *m, int mc, uint64_t t, uint64_t size, int sign)
{
    m->live_bytes[mc] += sign > 0 ? size : 0 - size;
    m->live_total += sign > 0 ? size : 0 - size;
    int64_t d = sign > 0 ? (int64_t)size : -(int64_t)size;
    gs_tbuckets_add(&m->peak_tb[mc], t, d);
    gs_tbuckets_add(&m->peak_tb[GS_MC__N], t, d);
    if (sign > 0) {
        m->live_blocks[mc]++;
        if (size > m->max_block[mc]) {
            m->max_block[mc] = size;
            m->max_block_t[mc] = t;
        }
    } else if (m->live_blocks[mc]) {
        m->live_blocks[mc]--;
    }
    /* the timeline's live channels are the buckets' sums (timeline.c), not
     * this running total: it is in file order, not time order */
}

/* The torch layer lies inside CUDA segments: its own totals only. */
void gs_torch_account(struct gs_model *m, uint64_t size, int sign)
{
    m->torch_live_bytes += sign > 0 ? size : 0 - size;
    if (sign > 0) {
        m->torch_live_blocks++;
        if (m->torch_live_bytes > m->torch_peak_bytes)
            m->torch_peak_bytes = m->torch_live_bytes;
    } else if (m->torch_live_blocks) {
        m->torch_live_blocks--;
    }
}

/* Block e's site index for the extras (siteext.h), UINT32_MAX: none. */
static uint32_t site_index(const struct gs_model *m, const struct gs_live *e)
{
    return e->stack < m->site_of_cap && m->site_of[e->stack] ? m->site_of[e->stack] - 1
                                                             : UINT32_MAX;
}

void gs_unaccount(struct gs_model *m, const struct gs_live *e, uint64_t t)
{
    int mc = gs_memcat_of(e->kind);
    if (e->dom == GS_DOM_TORCH)
        gs_torch_account(m, e->size, -1);
    else    /* in the block's own order: never before its allocation */
        account(m, mc, t < e->t ? e->t : t, e->size, -1);
    if (m->ext)
        gs_siteext_end(m->ext, site_index(m, e), e, t);
    if (e->stack < m->site_of_cap && m->site_of[e->stack])
        gs_site_change(m, &m->sites[m->site_of[e->stack] - 1], t, e->size, -1);
}

static int on_alloc(struct gs_model *m, uint64_t t, uint64_t addr, uint64_t size,
                    uint64_t stack, uint64_t kind, uint64_t fn, uint64_t device)
{
    if (!addr) {
        m->bad_records++;
        return 0;
    }
    if (stack >= GS_MAX_ID) {
        m->bad_records++;
        stack = 0;
    }
    if ((m->live.n + 1) * 4 > m->live.cap * 3 && gs_live_rehash(&m->live))
        return -1;
    int dom = domain_of(kind, fn);
    size_t i = gs_live_probe(&m->live, addr, dom);
    struct gs_live *e = &m->live.slot[i];
    if (e->addr) {
        /* an allocation over a live block: its free was lost */
        m->replaced_allocs++;
        gs_unaccount(m, e, t);
    } else {
        m->live.n++;
    }
    int mc = gs_memcat_of(kind);
    e->addr = addr;
    e->size = size;
    e->t = t;
    e->stack = (uint32_t)stack;
    e->kind = (uint8_t)(kind < GS_MEM__N ? kind : GS_MEM_HOST);
    e->fn = (uint8_t)(fn < 255 ? fn : 255);
    e->device = (uint8_t)(device < 255 ? device : 255);
    e->dom = (uint8_t)dom;
    if (fn != GS_FN_INHERITED) {
        /* inherited blocks were allocated by the parent: live here, but not
         * this process's allocations (TRACE_END counts them the same way) */
        m->allocs++;
        m->bytes_allocated += size;
    }
    if (dom == GS_DOM_TORCH)
        gs_torch_account(m, size, 1);
    else
        account(m, mc, t, size, 1);
    if (m->peak_only) { /* no sites: site_of stays empty, so no block has one */
        if (m->ext)
            gs_siteext_alloc(m->ext, UINT32_MAX, e);
        return 0;
    }
    struct gs_site *s = gs_site_get(m, (uint32_t)stack, mc, t);
    if (!s)
        return -1;
    gs_site_change(m, s, t, size, 1);
    if (m->ext)
        gs_siteext_alloc(m->ext, (uint32_t)(s - m->sites), e);
    return 0;
}

static void on_free(struct gs_model *m, uint64_t t, uint64_t addr, int dom)
{
    if (!m->live.n) {
        m->unmatched_frees++;
        return;
    }
    size_t i = gs_live_probe(&m->live, addr, dom);
    struct gs_live *e = &m->live.slot[i];
    if (!e->addr) {
        m->unmatched_frees++;
        return;
    }
    m->frees++;
    if (m->ext)
        gs_siteext_free_block(m->ext, site_index(m, e), e, t);
    gs_unaccount(m, e, t);
    gs_live_delete_at(&m->live, i);
}

static int on_realloc(struct gs_model *m, const struct gs_record *r)
{
    uint64_t addr = r->u.alloc.addr;
    size_t i = m->live.n ? gs_live_probe(&m->live, addr, GS_DOM_HOST) : 0;
    if (!m->live.n || !m->live.slot[i].addr)
        return on_alloc(m, r->t, addr, r->u.alloc.size, r->u.alloc.stack, GS_MEM_HOST,
                        GS_FN_REALLOC, 0);
    /* resized in place: the block now belongs to the realloc's stack */
    struct gs_live old = m->live.slot[i];
    gs_unaccount(m, &old, r->t);
    gs_live_delete_at(&m->live, i);
    m->reallocs++;
    m->allocs--; /* on_alloc counts it again; a realloc is one event */
    return on_alloc(m, r->t, addr, r->u.alloc.size, r->u.alloc.stack, GS_MEM_HOST,
                    GS_FN_REALLOC, 0);
}

static int cuda_call(struct gs_model *m, uint64_t t, uint64_t fn, uint64_t dur,
                     uint64_t a, uint64_t b)
{
    if (fn < GS_FN_CUDA_RUNTIME || fn == GS_FN_TORCH || !dur || dur < m->opts.cuda_pause_ns)
        return 0;
    if (GS_GROW_RAW(m->cuda_calls.v, m->cuda_calls.cap, m->cuda_calls.n + 1))
        return -1;
    struct gs_pause *p = &m->cuda_calls.v[m->cuda_calls.n++];
    memset(p, 0, sizeof *p);
    p->t0 = t;
    p->t1 = t + dur;
    p->kind = GS_PAUSE_CUDA_SYNC;
    p->a = a;
    p->b = b;
    return 0;
}

/* The hot records, from the dispatch (model.c), which has moved the clock. */

int gs_on_alloc(struct gs_model *m, const struct gs_record *r)
{
    return on_alloc(m, r->t, r->u.alloc.addr, r->u.alloc.size, r->u.alloc.stack, GS_MEM_HOST,
                    GS_FN_MALLOC, 0);
}

void gs_on_free(struct gs_model *m, const struct gs_record *r)
{
    on_free(m, r->t, r->u.free.addr, GS_DOM_HOST);
}

int gs_on_realloc(struct gs_model *m, const struct gs_record *r)
{
    return on_realloc(m, r);
}

int gs_on_alloc_ex(struct gs_model *m, const struct gs_record *r)
{
    if (cuda_call(m, r->t, r->u.alloc.fn, r->u.alloc.dur_ns, r->u.alloc.fn, r->u.alloc.size))
        return -1;
    return on_alloc(m, r->t, r->u.alloc.addr, r->u.alloc.size, r->u.alloc.stack,
                    r->u.alloc.kind, r->u.alloc.fn, r->u.alloc.device);
}

int gs_on_free_ex(struct gs_model *m, const struct gs_record *r)
{
    if (cuda_call(m, r->t, r->u.free.fn, r->u.free.dur_ns, r->u.free.fn, 0))
        return -1;
    on_free(m, r->t, r->u.free.addr, domain_of(r->u.free.kind, r->u.free.fn));
    return 0;
}
