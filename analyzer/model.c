/*
 * The replay (model.h): applies records one at a time to the live set, the
 * stack tree, the module map, the scan maps, the sites and the series. This
 * file holds the per-record work, so it is written for speed on the hot
 * records (ALLOC, FREE): one hash probe sequence, one array index for the
 * site, a few additions.
 *
 * Oddities in the input (a free of an address that is not live, a scan block
 * outside a scan, an id too large to index) are counted, not fatal: the trace
 * reader has already validated the bytes, and a report of the rest is worth
 * more than a refusal.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ID (1u << 30)      /* stack and PYCODE ids we index directly */
#define TICK_MIN_NS 10000000ull /* first time-checkpoint spacing: 10 ms */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * elem);
    if (!n)
        return -1;
    memset((char *)n + *cap * elem, 0, (c - *cap) * elem);
    *p = n;
    *cap = c;
    return 0;
}

static int grow32(void **p, uint32_t *cap, size_t need, size_t elem)
{
    size_t c = *cap;
    if (grow(p, &c, need, elem))
        return -1;
    *cap = (uint32_t)c;
    return 0;
}

static char *dupb(const struct gs_bytes *b)
{
    char *s = malloc(b->n + 1);
    if (!s)
        return NULL;
    if (b->n)
        memcpy(s, b->p, b->n);
    s[b->n] = 0;
    return s;
}

static void label_copy(char *dst, const struct gs_bytes *b)
{
    size_t n = b->n < GS_LABEL_MAX - 1 ? b->n : GS_LABEL_MAX - 1;
    if (n)
        memcpy(dst, b->p, n);
    dst[n] = 0;
}

static int domain_of(uint64_t kind, uint64_t fn)
{
    if (fn == GS_FN_TORCH)
        return GS_DOM_TORCH;
    if (fn >= GS_FN_CUDA_RUNTIME || kind != GS_MEM_HOST)
        return GS_DOM_CUDA;
    return GS_DOM_HOST;
}

/* ---- live set: linear probing, backward-shift deletion ---- */

static int live_init(struct gs_livemap *h, size_t cap)
{
    h->slot = calloc(cap, sizeof *h->slot);
    h->cap = cap;
    h->n = 0;
    return h->slot ? 0 : -1;
}

static int live_rehash(struct gs_livemap *h)
{
    struct gs_livemap n;
    if (live_init(&n, h->cap * 2))
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

static inline size_t live_probe(const struct gs_livemap *h, uint64_t addr, int dom)
{
    size_t mask = h->cap - 1;
    size_t i = gs_hash_addr(addr) & mask;
    for (;;) {
        const struct gs_live *e = &h->slot[i];
        if (!e->addr || (e->addr == addr && e->dom == dom))
            return i;
        i = (i + 1) & mask;
    }
}

static void live_delete_at(struct gs_livemap *h, size_t i)
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
    size_t i = live_probe(&m->live, addr, dom);
    return m->live.slot[i].addr ? &m->live.slot[i] : NULL;
}

/* ---- scan maps: same scheme, keyed by (addr, memory category) ---- */

static inline int smap_key(const struct gs_sblock *b)
{
    return b->torch ? GS_SCAN_KEY_TORCH : gs_memcat_of(b->kind);
}

static int smap_init(struct gs_smap *h, size_t cap)
{
    h->slot = calloc(cap, sizeof *h->slot);
    h->cap = cap;
    h->n = 0;
    return h->slot ? 0 : -1;
}

static size_t smap_probe(const struct gs_smap *h, uint64_t addr, int mc)
{
    size_t mask = h->cap - 1;
    size_t i = gs_hash_addr(addr) & mask;
    for (;;) {
        const struct gs_sblock *e = &h->slot[i];
        if (!e->used || (e->addr == addr && smap_key(e) == mc))
            return i;
        i = (i + 1) & mask;
    }
}

static int smap_put(struct gs_smap *h, const struct gs_sblock *b)
{
    if ((h->n + 1) * 4 > h->cap * 3) {
        struct gs_smap n;
        if (smap_init(&n, h->cap * 2))
            return -1;
        for (size_t i = 0; i < h->cap; i++) {
            if (h->slot[i].used) {
                size_t j = smap_probe(&n, h->slot[i].addr, smap_key(&h->slot[i]));
                n.slot[j] = h->slot[i];
            }
        }
        n.n = h->n;
        free(h->slot);
        *h = n;
    }
    size_t i = smap_probe(h, b->addr, smap_key(b));
    if (!h->slot[i].used)
        h->n++;
    h->slot[i] = *b;
    h->slot[i].used = 1;
    return 0;
}

static const struct gs_sblock *smap_get(const struct gs_smap *h, uint64_t addr, int mc)
{
    if (!h->slot)
        return NULL;
    size_t i = smap_probe(h, addr, mc);
    return h->slot[i].used ? &h->slot[i] : NULL;
}

/* ---- stacks, sites ---- */

const struct gs_stacknode *gs_model_node(const struct gs_model *m, uint32_t id)
{
    return id && id < m->nnodes ? &m->nodes[id] : NULL;
}

const struct gs_pycode *gs_model_pycode(const struct gs_model *m, uint64_t id)
{
    if (id >= m->npycodes || !m->pycodes[id].function)
        return NULL;
    return &m->pycodes[id];
}

static int seg_cmp(const void *a, const void *b)
{
    const struct gs_segref *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int segs_rebuild(struct gs_model *m)
{
    m->nsegs = 0;
    for (uint32_t i = 0; i < m->nmods; i++) {
        const struct gs_module *md = &m->mods[i];
        if (md->unloaded)
            continue;
        for (uint32_t s = 0; s < md->nseg; s++) {
            if (grow32((void **)&m->segs, &m->segs_cap, m->nsegs + 1, sizeof *m->segs))
                return -1;
            struct gs_segref *r = &m->segs[m->nsegs++];
            r->lo = md->base + md->seg[s].vaddr;
            r->hi = r->lo + md->seg[s].memsz;
            r->mod = i + 1;
        }
    }
    if (m->nsegs)
        qsort(m->segs, m->nsegs, sizeof *m->segs, seg_cmp);
    m->segs_dirty = 0;
    return 0;
}

/* The module holding code address a now (1-based), 0 when none. */
static uint32_t module_at(struct gs_model *m, uint64_t a)
{
    if (m->segs_dirty && segs_rebuild(m))
        return 0;
    uint32_t lo = 0, hi = m->nsegs;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (m->segs[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* segments of different modules never overlap; check the last two that
     * start at or below a in case of zero-sized oddities */
    for (uint32_t k = lo; k > 0 && k + 2 > lo; k--) {
        const struct gs_segref *r = &m->segs[k - 1];
        if (a >= r->lo && a < r->hi)
            return r->mod;
    }
    return 0;
}

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
    return grow32((void **)&m->site_of, &m->site_of_cap, (size_t)stack + 1, sizeof *m->site_of);
}

static struct gs_site *site_get(struct gs_model *m, uint32_t stack, int memcat, uint64_t t)
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
        uint32_t cap = m->sites_cap ? m->sites_cap * 2 : 1024;
        struct gs_site *ns = realloc(m->sites, (size_t)cap * sizeof *ns);
        if (!ns)
            return NULL;
        m->sites = ns;
        struct gs_axis *na = realloc(m->site_ax, (size_t)cap * GS_AXIS__N * sizeof *na);
        if (!na)
            return NULL;
        m->site_ax = na;
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

static inline void site_change(struct gs_model *m, struct gs_site *s, uint64_t t, int64_t delta)
{
    for (int a = 0; a < GS_AXIS__N; a++) {
        const struct gs_cps *c = &m->cps[a];
        /* the common case, no checkpoint since the site's last event, reads
         * only the hot part */
        if (c->n > s->last_cp[a]) {
            uint32_t k1 = gs_cps_upto(c, t);
            if (k1 > s->last_cp[a]) {
                struct gs_axis *ax = &m->site_ax[(size_t)(s - m->sites) * GS_AXIS__N + a];
                gs_axis_flush(ax, c, k1, (double)s->live_bytes);
                s->last_cp[a] = k1;
            }
        }
    }
    /* Wrapping (not undefined) arithmetic: a damaged trace may hold sizes
     * whose sum leaves int64_t's range. */
    s->live_bytes = (int64_t)((uint64_t)s->live_bytes + (uint64_t)delta);
    if (delta > 0) {
        s->live_blocks++;
        s->allocs++;
        if ((uint64_t)s->live_bytes > s->peak_bytes)
            s->peak_bytes = (uint64_t)s->live_bytes;
    } else if (s->live_blocks) {
        s->live_blocks--;
    }
}

/* ---- checkpoints ---- */

/* Time checkpoints fall on a schedule: 10 ms apart at first, then a
 * thousandth of the elapsed time, so a run of any length has a few
 * thousand. Each is placed when the trace's clock first passes it. */
static inline int advance_time(struct gs_model *m, uint64_t t)
{
    if (t <= m->t_max)
        return 0;
    m->t_max = t;
    while (t >= m->next_tick) {
        uint64_t at = m->next_tick;
        if (gs_cps_add(&m->cps[GS_AXIS_TIME], at, (double)at / 1e9))
            return -1;
        uint64_t gap = at / 1000;
        m->next_tick = at + (gap > TICK_MIN_NS ? gap : TICK_MIN_NS);
    }
    return 0;
}

/* ---- blocks ---- */

static void account(struct gs_model *m, int mc, uint64_t t, int64_t delta)
{
    m->live_bytes[mc] += (uint64_t)delta;
    m->live_total += (uint64_t)delta;
    if (delta > 0) {
        m->live_blocks[mc]++;
        if (m->live_bytes[mc] > m->peak_bytes[mc])
            m->peak_bytes[mc] = m->live_bytes[mc];
        if (m->live_total > m->peak_total)
            m->peak_total = m->live_total;
    } else if (m->live_blocks[mc]) {
        m->live_blocks[mc]--;
    }
    gs_series_put(&m->series, (unsigned)mc, t, m->live_bytes[mc]);
    gs_series_put(&m->series, GS_CH_TOTAL, t, m->live_total);
}

/* The torch layer lies inside CUDA segments: its own totals only. */
static void torch_account(struct gs_model *m, int64_t delta)
{
    m->torch_live_bytes += (uint64_t)delta;
    if (delta > 0) {
        m->torch_live_blocks++;
        if (m->torch_live_bytes > m->torch_peak_bytes)
            m->torch_peak_bytes = m->torch_live_bytes;
    } else if (m->torch_live_blocks) {
        m->torch_live_blocks--;
    }
}

static void unaccount(struct gs_model *m, const struct gs_live *e, uint64_t t)
{
    int mc = gs_memcat_of(e->kind);
    if (e->dom == GS_DOM_TORCH)
        torch_account(m, -(int64_t)e->size);
    else
        account(m, mc, t, -(int64_t)e->size);
    if (e->stack < m->site_of_cap && m->site_of[e->stack])
        site_change(m, &m->sites[m->site_of[e->stack] - 1], t, -(int64_t)e->size);
}

static int on_alloc(struct gs_model *m, uint64_t t, uint64_t addr, uint64_t size,
                    uint64_t stack, uint64_t kind, uint64_t fn, uint64_t device)
{
    if (!addr) {
        m->bad_records++;
        return 0;
    }
    if (stack >= MAX_ID) {
        m->bad_records++;
        stack = 0;
    }
    if ((m->live.n + 1) * 4 > m->live.cap * 3 && live_rehash(&m->live))
        return -1;
    int dom = domain_of(kind, fn);
    size_t i = live_probe(&m->live, addr, dom);
    struct gs_live *e = &m->live.slot[i];
    if (e->addr) {
        /* an allocation over a live block: its free was lost */
        m->replaced_allocs++;
        unaccount(m, e, t);
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
        torch_account(m, (int64_t)size);
    else
        account(m, mc, t, (int64_t)size);
    struct gs_site *s = site_get(m, (uint32_t)stack, mc, t);
    if (!s)
        return -1;
    site_change(m, s, t, (int64_t)size);
    return 0;
}

static void on_free(struct gs_model *m, uint64_t t, uint64_t addr, int dom)
{
    if (!m->live.n) {
        m->unmatched_frees++;
        return;
    }
    size_t i = live_probe(&m->live, addr, dom);
    struct gs_live *e = &m->live.slot[i];
    if (!e->addr) {
        m->unmatched_frees++;
        return;
    }
    m->frees++;
    unaccount(m, e, t);
    live_delete_at(&m->live, i);
}

static int on_realloc(struct gs_model *m, const struct gs_record *r)
{
    uint64_t addr = r->u.alloc.addr;
    size_t i = m->live.n ? live_probe(&m->live, addr, GS_DOM_HOST) : 0;
    if (!m->live.n || !m->live.slot[i].addr)
        return on_alloc(m, r->t, addr, r->u.alloc.size, r->u.alloc.stack, GS_MEM_HOST,
                        GS_FN_REALLOC, 0);
    /* resized in place: the block now belongs to the realloc's stack */
    struct gs_live old = m->live.slot[i];
    unaccount(m, &old, r->t);
    live_delete_at(&m->live, i);
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
    if (grow((void **)&m->cuda_calls.v, &m->cuda_calls.cap, m->cuda_calls.n + 1,
             sizeof *m->cuda_calls.v))
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

static int add_pause(struct gs_pauses *ps, uint64_t t0, uint64_t t1, uint32_t kind,
                     uint64_t a, uint64_t b)
{
    if (grow((void **)&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v))
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

/* ---- definitions ---- */

static int on_stack(struct gs_model *m, const struct gs_record *r)
{
    uint64_t id = r->u.stack.id, parent = r->u.stack.parent, ip = r->u.stack.ip;
    /* The shim hands ids out densely, in order (a forked child re-emits the
     * tree from 1): an id past the next one is damage, and must not make the
     * node array grow to it. */
    if (!id || id >= MAX_ID || id > (uint64_t)m->max_stack_id + 1) {
        m->bad_records++;
        return 0;
    }
    if (id > m->max_stack_id)
        m->max_stack_id = (uint32_t)id;
    if (id >= m->nnodes) {
        size_t cap = m->nnodes;
        /* nodes are indexed directly: ids are dense, handed out in order */
        size_t want = cap ? cap : 1024;
        while (want <= id)
            want *= 2;
        struct gs_stacknode *n = realloc(m->nodes, want * sizeof *n);
        if (!n)
            return -1;
        memset(n + cap, 0, (want - cap) * sizeof *n);
        m->nodes = n;
        m->nnodes = (uint32_t)want;
    }
    struct gs_stacknode *nd = &m->nodes[id];
    nd->ip = ip;
    nd->parent = parent < MAX_ID && parent != id ? (uint32_t)parent : 0;
    nd->module = (ip & GS_IP_PYFRAME) || !ip ? 0 : module_at(m, ip - 1);
    return 0;
}

static int on_module(struct gs_model *m, const struct gs_record *r)
{
    if (grow32((void **)&m->mods, &m->mods_cap, (size_t)m->nmods + 1, sizeof *m->mods))
        return -1;
    struct gs_module *md = &m->mods[m->nmods];
    memset(md, 0, sizeof *md);
    md->id = r->u.module.id;
    md->base = r->u.module.base;
    md->t_load = r->t;
    md->path = dupb(&r->u.module.path);
    if (!md->path)
        return -1;
    if (r->u.module.build_id.n) {
        md->build_id = malloc(r->u.module.build_id.n);
        if (!md->build_id) {
            free(md->path);
            return -1;
        }
        memcpy(md->build_id, r->u.module.build_id.p, r->u.module.build_id.n);
        md->build_id_len = r->u.module.build_id.n;
    }
    md->nseg = (uint32_t)(r->u.module.nseg < GS_MAX_SEGS ? r->u.module.nseg : GS_MAX_SEGS);
    for (uint32_t i = 0; i < md->nseg; i++) {
        md->seg[i].vaddr = r->u.module.seg[i].vaddr;
        md->seg[i].memsz = r->u.module.seg[i].memsz;
        md->seg[i].flags = r->u.module.seg[i].flags;
    }
    /* a module id reported again replaces the older record's mapping */
    for (uint32_t i = 0; i < m->nmods; i++) {
        if (m->mods[i].id == md->id && !m->mods[i].unloaded) {
            m->mods[i].unloaded = 1;
            m->mods[i].t_unload = r->t;
        }
    }
    m->nmods++;
    m->segs_dirty = 1;
    return 0;
}

static void on_unload(struct gs_model *m, const struct gs_record *r)
{
    for (uint32_t i = 0; i < m->nmods; i++) {
        if (m->mods[i].id == r->u.unload.id && !m->mods[i].unloaded) {
            m->mods[i].unloaded = 1;
            m->mods[i].t_unload = r->t;
            m->segs_dirty = 1;
            return;
        }
    }
    m->bad_records++;
}

static int on_pycode(struct gs_model *m, const struct gs_record *r)
{
    uint64_t id = r->u.pycode.id;
    if (id >= MAX_ID) {
        m->bad_records++;
        return 0;
    }
    if (id >= m->npycodes) {
        size_t cap = m->npycodes;
        size_t want = cap ? cap : 256;
        while (want <= id)
            want *= 2;
        struct gs_pycode *n = realloc(m->pycodes, want * sizeof *n);
        if (!n)
            return -1;
        memset(n + cap, 0, (want - cap) * sizeof *n);
        m->pycodes = n;
        m->npycodes = (uint32_t)want;
    }
    struct gs_pycode *pc = &m->pycodes[id];
    free(pc->file);
    free(pc->function);
    pc->file = dupb(&r->u.pycode.file);
    pc->function = dupb(&r->u.pycode.function);
    pc->firstline = r->u.pycode.firstline;
    return pc->file && pc->function ? 0 : -1;
}

static int on_proc(struct gs_model *m, const struct gs_record *r)
{
    if (m->have_proc) {
        m->bad_records++;
        return 0;
    }
    m->have_proc = 1;
    m->pid = r->u.proc.pid;
    m->ppid = r->u.proc.ppid;
    m->wall_ns = r->u.proc.wall_ns;
    m->rank1 = r->u.proc.rank1;
    m->local_rank1 = r->u.proc.local_rank1;
    m->world_size1 = r->u.proc.world_size1;
    m->pflags = r->u.proc.flags;
    m->unwinder = r->u.proc.unwinder;
    m->depth = r->u.proc.depth;
    m->page_size = r->u.proc.page_size;
    m->exe = dupb(&r->u.proc.exe);
    m->argv = dupb(&r->u.proc.argv);
    m->argv_len = r->u.proc.argv.n;
    m->host = dupb(&r->u.proc.host);
    m->version = dupb(&r->u.proc.version);
    return m->exe && m->argv && m->host && m->version ? 0 : -1;
}

/* ---- samples, markers ---- */

static void on_sample(struct gs_model *m, const struct gs_record *r)
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

static int on_dsample(struct gs_model *m, const struct gs_record *r)
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

static int on_marker(struct gs_model *m, const struct gs_record *r)
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

/* ---- scans ---- */

static void scan_reset_cur(struct gs_model *m)
{
    if (m->cur.slot) {
        memset(m->cur.slot, 0, m->cur.cap * sizeof *m->cur.slot);
        m->cur.n = 0;
    }
}

static int on_scan_begin(struct gs_model *m, const struct gs_record *r)
{
    if (m->in_scan)
        m->incomplete_scans++;
    if (!m->cur.slot && smap_init(&m->cur, 1024))
        return -1;
    scan_reset_cur(m);
    memset(&m->cur_scan, 0, sizeof m->cur_scan);
    m->cur_scan.id = r->u.scan_begin.scan_id;
    m->cur_scan.trigger = r->u.scan_begin.trigger;
    m->cur_scan.mode = r->u.scan_begin.mode;
    m->cur_scan.t_begin = r->t;
    memcpy(m->cur_scan.marker_before, m->last_label, GS_LABEL_MAX);
    m->in_scan = 1;
    return 0;
}

static int on_scan_block(struct gs_model *m, const struct gs_record *r)
{
    if (!m->in_scan || r->u.scan_block.scan_id != m->cur_scan.id ||
        r->u.scan_block.cls >= GS_CLASS__N || !r->u.scan_block.addr) {
        m->bad_records++;
        return 0;
    }
    struct gs_sblock b;
    memset(&b, 0, sizeof b);
    b.addr = r->u.scan_block.addr;
    b.size = r->u.scan_block.size;
    b.stack = r->u.scan_block.stack < MAX_ID ? (uint32_t)r->u.scan_block.stack : 0;
    b.kind = (uint8_t)(r->u.scan_block.kind < GS_MEM__N ? r->u.scan_block.kind : GS_MEM_HOST);
    b.cls = (uint8_t)r->u.scan_block.cls;
    b.torch = r->u.scan_block.fn == GS_FN_TORCH;
    return smap_put(&m->cur, &b);
}

static int on_scan_end(struct gs_model *m, const struct gs_record *r)
{
    if (!m->in_scan || r->u.scan_end.scan_id != m->cur_scan.id) {
        m->bad_records++;
        return 0;
    }
    struct gs_scan *s = &m->cur_scan;
    s->t_start = r->u.scan_end.t_start;
    s->t_stopped = r->u.scan_end.t_stopped;
    s->t_marked = r->u.scan_end.t_marked;
    s->t_end = r->u.scan_end.t_end;
    s->threads = r->u.scan_end.threads;
    s->bytes_scanned = r->u.scan_end.bytes_scanned;
    s->blocks_visited = r->u.scan_end.blocks_visited;
    s->live_blocks = r->u.scan_end.live_blocks;
    s->live_bytes = r->u.scan_end.live_bytes;
    memcpy(s->cls_blocks, r->u.scan_end.cls_blocks, sizeof s->cls_blocks);
    memcpy(s->cls_bytes, r->u.scan_end.cls_bytes, sizeof s->cls_bytes);
    s->steps_before = m->steps_at_last_scan;
    s->steps_at = m->nsteps;
    s->user_markers = m->int_users;
    memcpy(s->first_marker, m->int_first, GS_LABEL_MAX);
    memcpy(s->last_marker, m->int_last, GS_LABEL_MAX);

    uint32_t idx = m->nscans;
    /* a block unreachable in the previous scan too (same size and stack)
     * keeps the interval where it first became unreachable */
    for (size_t i = 0; i < m->cur.cap; i++) {
        struct gs_sblock *b = &m->cur.slot[i];
        if (!b->used || b->cls >= GS_CLASS_REACHABLE)
            continue;
        const struct gs_sblock *o = smap_get(&m->last, b->addr, smap_key(b));
        if (o && o->cls < GS_CLASS_REACHABLE && o->size == b->size && o->stack == b->stack) {
            b->first_scan = o->first_scan;
        } else {
            b->first_scan = idx;
            s->new_blocks++;
            s->new_bytes += b->size;
        }
    }
    if (grow32((void **)&m->scans, &m->scans_cap, (size_t)m->nscans + 1, sizeof *m->scans))
        return -1;
    m->scans[m->nscans++] = *s;

    /* the program is stopped from t_start (stopping begins) to t_end (the
     * world restarted); in fork mode the marking after t_end runs in a child
     * and is no pause */
    uint64_t t0 = s->t_start, t1 = s->t_end;
    if (add_pause(&m->scan_pauses, t0, t1, GS_PAUSE_SCAN, s->id, s->threads))
        return -1;

    struct gs_smap tmp = m->last;
    m->last = m->cur;
    m->cur = tmp;
    scan_reset_cur(m);
    m->in_scan = 0;
    m->int_users = 0;
    m->int_first[0] = m->int_last[0] = 0;
    m->steps_at_last_scan = m->nsteps;
    return 0;
}

/* ---- PyTorch's caching allocator (POOL_* records) ---- */

/* A snapshot is applied whole once its last record is read (a trace cut in
 * the middle of one leaves the torch layer as the previous one left it), so
 * its live blocks wait here meanwhile: memory for one snapshot's active
 * blocks, about the torch layer's size, reused from one snapshot to the
 * next. */
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
    if ((m->live.n + 1) * 4 > m->live.cap * 3 && live_rehash(&m->live))
        return -1;
    size_t i = live_probe(&m->live, b->addr, GS_DOM_TORCH);
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
    torch_account(m, (int64_t)b->size);
    struct gs_site *s = site_get(m, b->stack, GS_MC_DEVICE, t);
    if (!s)
        return -1;
    site_change(m, s, t, (int64_t)b->size);
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
    if (advance_time(m, ps->t))
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
        if (grow((void **)&ps->kill, &ps->capkill, ps->nkill + 1, sizeof *ps->kill))
            return -1;
        ps->kill[ps->nkill++] = e->addr;
    }
    /* deleting moves entries about, so the doomed are found again by key */
    for (size_t k = 0; k < ps->nkill; k++) {
        size_t i = live_probe(&m->live, ps->kill[k], GS_DOM_TORCH);
        if (!m->live.slot[i].addr)
            continue;
        unaccount(m, &m->live.slot[i], ps->t);
        live_delete_at(&m->live, i);
    }
    for (size_t k = 0; k < ps->n; k++)
        if (torch_insert(m, ps->t, &ps->blk[k]))
            return -1;
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

static int on_pool_snapshot(struct gs_model *m, const struct gs_record *r)
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

static int on_pool_segment(struct gs_model *m, const struct gs_record *r)
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

static int on_pool_block(struct gs_model *m, const struct gs_record *r)
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
    if (grow((void **)&ps->blk, &ps->cap, ps->n + 1, sizeof *ps->blk))
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

static int on_pool_event(struct gs_model *m, const struct gs_record *r)
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

/* ---- the entry points ---- */

int gs_model_init(struct gs_model *m, const struct gs_model_opts *o)
{
    memset(m, 0, sizeof *m);
    if (o)
        m->opts = *o;
    else
        m->opts.cuda_pause_ns = 1000000;
    m->next_step_cp = 1;
    m->next_tick = TICK_MIN_NS;
    if (live_init(&m->live, 1u << 12) || gs_series_init(&m->series, GS_CH__N))
        return -1;
    return 0;
}

int gs_model_feed(struct gs_model *m, const struct gs_record *r)
{
    m->records++;
    switch (r->type) {
    case GS_REC_ALLOC:
        if (advance_time(m, r->t))
            return -1;
        return on_alloc(m, r->t, r->u.alloc.addr, r->u.alloc.size, r->u.alloc.stack,
                        GS_MEM_HOST, GS_FN_MALLOC, 0);
    case GS_REC_FREE:
        if (advance_time(m, r->t))
            return -1;
        on_free(m, r->t, r->u.free.addr, GS_DOM_HOST);
        return 0;
    case GS_REC_REALLOC:
        if (advance_time(m, r->t))
            return -1;
        return on_realloc(m, r);
    case GS_REC_ALLOC_EX:
        if (advance_time(m, r->t))
            return -1;
        if (cuda_call(m, r->t, r->u.alloc.fn, r->u.alloc.dur_ns, r->u.alloc.fn, r->u.alloc.size))
            return -1;
        return on_alloc(m, r->t, r->u.alloc.addr, r->u.alloc.size, r->u.alloc.stack,
                        r->u.alloc.kind, r->u.alloc.fn, r->u.alloc.device);
    case GS_REC_FREE_EX:
        if (advance_time(m, r->t))
            return -1;
        if (cuda_call(m, r->t, r->u.free.fn, r->u.free.dur_ns, r->u.free.fn, 0))
            return -1;
        on_free(m, r->t, r->u.free.addr, domain_of(r->u.free.kind, r->u.free.fn));
        return 0;
    case GS_REC_STACK:
        return on_stack(m, r);
    case GS_REC_TIMEBASE:
        return advance_time(m, r->t);
    case GS_REC_PROCESS_START:
        return on_proc(m, r);
    case GS_REC_PROCESS_EXIT:
        m->have_exit = 1;
        m->exit_status = r->u.exit.status;
        m->exit_how = r->u.exit.how;
        m->t_exit = r->t;
        return advance_time(m, r->t);
    case GS_REC_MODULE:
        if (on_module(m, r))
            return -1;
        return advance_time(m, r->t);
    case GS_REC_MODULE_UNLOAD:
        on_unload(m, r);
        return advance_time(m, r->t);
    case GS_REC_THREAD_START:
        m->threads++;
        return advance_time(m, r->t);
    case GS_REC_THREAD_EXIT:
        return advance_time(m, r->t);
    case GS_REC_SAMPLE:
        if (advance_time(m, r->t))
            return -1;
        on_sample(m, r);
        return 0;
    case GS_REC_MARKER:
        if (advance_time(m, r->t))
            return -1;
        return on_marker(m, r);
    case GS_REC_PAUSE:
        if (advance_time(m, r->u.pause.t_end > r->t ? r->u.pause.t_end : r->t))
            return -1;
        return add_pause(&m->pauses, r->t, r->u.pause.t_end, (uint32_t)r->u.pause.kind,
                         r->u.pause.a, r->u.pause.b);
    case GS_REC_EXEC:
        free(m->exec_path);
        m->exec_path = dupb(&r->u.exec.path);
        if (!m->exec_path)
            return -1;
        return advance_time(m, r->t);
    case GS_REC_STOPPED:
        m->have_stopped = 1;
        m->stopped_dropped = r->u.stopped.dropped;
        m->t_stopped = r->t;
        free(m->stopped_reason);
        m->stopped_reason = dupb(&r->u.stopped.reason);
        if (!m->stopped_reason)
            return -1;
        return advance_time(m, r->t);
    case GS_REC_SCAN_BEGIN:
        if (advance_time(m, r->t))
            return -1;
        return on_scan_begin(m, r);
    case GS_REC_SCAN_BLOCK:
        return on_scan_block(m, r);
    case GS_REC_SCAN_END:
        if (advance_time(m, r->u.scan_end.t_end))
            return -1;
        return on_scan_end(m, r);
    case GS_REC_PYCODE:
        return on_pycode(m, r);
    case GS_REC_TRACE_END:
        m->have_end = 1;
        m->end_t = r->t;
        m->end_allocs = r->u.end.allocs;
        m->end_frees = r->u.end.frees;
        m->end_bytes_allocated = r->u.end.bytes_allocated;
        m->end_live_blocks = r->u.end.live_blocks;
        m->end_live_bytes = r->u.end.live_bytes;
        return advance_time(m, r->t);
    case GS_REC_DEVICE_SAMPLE:
        if (advance_time(m, r->t))
            return -1;
        return on_dsample(m, r);
    /* the snapshot's time is applied with it; history times are the past */
    case GS_REC_POOL_SNAPSHOT:
        return on_pool_snapshot(m, r);
    case GS_REC_POOL_SEGMENT:
        return on_pool_segment(m, r);
    case GS_REC_POOL_BLOCK:
        return on_pool_block(m, r);
    case GS_REC_POOL_EVENT:
        return on_pool_event(m, r);
    default:
        return 0; /* a newer minor version's record: the reader passed it on */
    }
}

int gs_model_finish(struct gs_model *m)
{
    if (m->in_scan) {
        m->incomplete_scans++;
        m->in_scan = 0;
    }
    if (m->psnap && m->psnap->open) {
        m->pool_incomplete++;
        m->psnap->open = 0;
    }
    for (uint32_t i = 0; i < m->nsites; i++) {
        struct gs_site *s = &m->sites[i];
        for (int a = 0; a < GS_AXIS__N; a++) {
            gs_axis_flush(&m->site_ax[(size_t)i * GS_AXIS__N + a], &m->cps[a], m->cps[a].n,
                          (double)s->live_bytes);
            s->last_cp[a] = m->cps[a].n;
        }
    }
    gs_series_extend(&m->series, m->t_max);
    for (uint32_t i = 0; i < m->ndev; i++)
        gs_series_extend(&m->dev[i].series, m->t_max);
    return 0;
}

void gs_model_free(struct gs_model *m)
{
    free(m->exe);
    free(m->argv);
    free(m->host);
    free(m->version);
    free(m->exec_path);
    free(m->stopped_reason);
    free(m->live.slot);
    free(m->nodes);
    free(m->site_of);
    free(m->sites);
    free(m->site_ax);
    for (uint32_t i = 0; i < m->nmods; i++) {
        free(m->mods[i].path);
        free(m->mods[i].build_id);
    }
    free(m->mods);
    free(m->segs);
    for (uint32_t i = 0; i < m->npycodes; i++) {
        free(m->pycodes[i].file);
        free(m->pycodes[i].function);
    }
    free(m->pycodes);
    free(m->scans);
    free(m->cur.slot);
    free(m->last.slot);
    free(m->steps.v);
    free(m->users.v);
    for (int a = 0; a < GS_AXIS__N; a++)
        gs_cps_free(&m->cps[a]);
    gs_series_free(&m->series);
    for (uint32_t i = 0; i < m->ndev; i++)
        gs_series_free(&m->dev[i].series);
    free(m->pauses.v);
    free(m->cuda_calls.v);
    free(m->scan_pauses.v);
    if (m->psnap) {
        free(m->psnap->blk);
        free(m->psnap->kill);
        free(m->psnap);
    }
    memset(m, 0, sizeof *m);
}

const struct gs_sblock *gs_model_scan_find(const struct gs_model *m, uint64_t addr, int mc)
{
    return smap_get(&m->last, addr, mc);
}

const struct gs_module *gs_model_module_any(const struct gs_model *m, uint64_t a)
{
    for (uint32_t i = m->nmods; i-- > 0;) {
        const struct gs_module *md = &m->mods[i];
        for (uint32_t s = 0; s < md->nseg; s++) {
            uint64_t lo = md->base + md->seg[s].vaddr;
            if (a >= lo && a < lo + md->seg[s].memsz)
                return md;
        }
    }
    return NULL;
}

void gs_model_prefetch(const struct gs_model *m, const struct gs_record *r, int stage)
{
    int alloc;
    uint64_t addr;
    switch (r->type) {
    case GS_REC_ALLOC: case GS_REC_ALLOC_EX: case GS_REC_REALLOC:
        alloc = 1;
        addr = r->u.alloc.addr;
        break;
    case GS_REC_FREE: case GS_REC_FREE_EX:
        alloc = 0;
        addr = r->u.free.addr;
        break;
    default:
        return;
    }
    const struct gs_live *home = &m->live.slot[gs_hash_addr(addr) & (m->live.cap - 1)];
    if (stage == 0) {
        __builtin_prefetch(home);
        if (alloc && r->u.alloc.stack < m->site_of_cap)
            __builtin_prefetch(&m->site_of[r->u.alloc.stack]);
        return;
    }
    /* stage 1: what stage 0 fetched is (likely) in cache now */
    uint64_t stack = alloc ? r->u.alloc.stack : (home->addr == addr ? home->stack : UINT64_MAX);
    if (stack >= m->site_of_cap)
        return;
    uint32_t s = m->site_of[stack];
    if (!s)
        return;
    __builtin_prefetch(&m->sites[s - 1]);
    __builtin_prefetch(&m->site_ax[(size_t)(s - 1) * GS_AXIS__N]);
}
