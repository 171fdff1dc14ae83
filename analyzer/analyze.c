/*
 * From trace to result (analyze.h): drives the reader and the model, then
 * turns the model's end state into the result the reporters print.
 *
 * Leak classes come from the last complete scan, reconciled with the live
 * set at the end: a block the scan classified counts only if the same block
 * (same address, size and stack, allocated before the scan ended) is still
 * live at the end; a block freed after the scan was no leak; a live block
 * the scan did not classify (allocated after it, or there was no scan, or
 * the scan recorded only unreachable blocks) is "not freed".
 *
 * Blocks of PyTorch's caching allocator (the torch layer) lie inside CUDA
 * segments that are blocks of their own: they make leak groups (labelled
 * torch) only when the scan classified them, so a live tensor's bytes are
 * not counted a second time beside its segment's.
 *
 * Only stacks the result shows are symbolized: every group of the classes a
 * caller asks for (the CI gate's --fail-on, so suppressions can match them),
 * the largest max_groups of the others, and the growth suspects.
 */
#include "analyze.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idtab.h"
#include "validate.h"

void gs_analyze_defaults(struct gs_analyze_opts *o)
{
    memset(o, 0, sizeof *o);
    o->model.cuda_pause_ns = 1000000;       /* 1 ms */
    o->growth.min_points = 5;
    o->growth.min_r2 = 0.8;
    o->growth.min_bytes = 64 * 1024;
    o->max_groups = 200;
    o->all_classes_mask = (1u << GS_CLASS_DEFINITE) | (1u << GS_CLASS_INDIRECT) |
                          (1u << GS_CLASS_POSSIBLE);
    o->max_suspects = 100;
    o->max_frames = 256;
}

/* ---- stacks ---- */

struct stackc {               /* stack id -> symbolized stack, per result */
    uint32_t id;              /* 0: empty slot */
    struct gs_stackv st;
};

struct ctx {
    const struct gs_model *m;
    struct gs_result *r;
    struct gs_symbolizer *sym;
    const struct gs_analyze_opts *o;
    struct gs_frame *buf;
    size_t nbuf, capbuf;
    struct stackc *sc;
    size_t sccap, scn;
    struct gs_validate val;
};

static int buf_push(struct ctx *c, const struct gs_frame *f)
{
    if (GS_GROW(c->buf, c->capbuf, c->nbuf + 1))
        return -1;
    c->buf[c->nbuf++] = *f;
    return 0;
}

static int is_interpreter(const char *path)
{
    if (!path)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return strncmp(b, "libpython", 9) == 0 || strncmp(b, "python", 6) == 0;
}

static int symbolize_stack(struct ctx *c, uint32_t id, struct gs_stackv *out)
{
    memset(out, 0, sizeof *out);
    if (!c->sym)
        return 0; /* no symbolizer: the stack stays unresolved */
    out->resolved = 1;
    if (!id)
        return 0;
    /* per-result cache: groups of several classes share stacks */
    struct stackc *e = gs_idtab_slot((void **)&c->sc, &c->sccap, c->scn, sizeof *c->sc, id);
    if (!e)
        return -1;
    if (e->id) {
        *out = e->st;
        return 0;
    }

    const struct gs_model *m = c->m;
    c->nbuf = 0;
    int python = 0;
    uint32_t depth = 0;
    for (uint32_t n = id; n && depth < c->o->max_frames; depth++) {
        const struct gs_stacknode *nd = gs_model_node(m, n);
        if (!nd)
            break;
        uint64_t ip = nd->ip;
        if (ip & GS_IP_PYFRAME) {
            struct gs_frame f;
            memset(&f, 0, sizeof f);
            uint64_t code = (ip >> 32) & 0x7fffffffu;
            const struct gs_pycode *pc = gs_model_pycode(m, code);
            f.ip = ip;
            f.line = (uint32_t)ip;
            f.python = 1;
            if (pc) {
                f.function = gs_sym_intern(c->sym, pc->function);
                f.file = gs_sym_intern(c->sym, pc->file);
            } else {
                char tmp[48];
                snprintf(tmp, sizeof tmp, "<python code %" PRIu64 ">", code);
                f.function = gs_sym_intern(c->sym, tmp);
            }
            if (!f.function || buf_push(c, &f))
                return -1;
            python = 1;
        } else {
            const struct gs_module *md = nd->module ? &m->mods[nd->module - 1]
                                                    : gs_model_module_any(m, ip ? ip - 1 : 0);
            struct gs_frame *fr;
            uint32_t nf;
            if (gs_sym_resolve(c->sym, md, ip, &fr, &nf))
                return -1;
            for (uint32_t k = 0; k < nf; k++)
                if (buf_push(c, &fr[k]))
                    return -1;
        }
        n = nd->parent;
    }
    /* Python frames stand in for the interpreter's own frames */
    size_t k = 0;
    for (size_t i = 0; i < c->nbuf; i++) {
        if (python && !c->buf[i].python && is_interpreter(c->buf[i].module))
            continue;
        c->buf[k++] = c->buf[i];
    }
    c->nbuf = k;
    out->n = (uint32_t)c->nbuf;
    out->f = gs_arena_calloc(&c->r->arena, c->nbuf ? c->nbuf : 1, sizeof *out->f);
    if (!out->f)
        return -1;
    memcpy(out->f, c->buf, c->nbuf * sizeof *out->f);
    e->id = id;
    e->st = *out;
    c->scn++;
    return 0;
}

/* ---- leak groups ---- */

struct gslot {
    uint64_t key;   /* 0: empty */
    uint32_t idx;
};

struct groups {
    struct gs_leak *v;
    size_t n, cap;
    struct gslot *h;
    size_t hcap;
};

static int group_add(struct groups *g, uint32_t stack, int cls, int mc, int inh, int torch,
                     uint64_t size, int32_t first)
{
    uint64_t key = ((uint64_t)stack | (uint64_t)cls << 32 | (uint64_t)mc << 35 |
                    (uint64_t)inh << 37 | (uint64_t)torch << 38) + 1;
    if ((g->n + 1) * 2 > g->hcap) {
        size_t ncap = g->hcap ? g->hcap * 2 : 1024;
        struct gslot *h = calloc(ncap, sizeof *h);
        if (!h)
            return -1;
        for (size_t i = 0; i < g->hcap; i++) {
            if (!g->h[i].key)
                continue;
            size_t j = gs_hash_addr(g->h[i].key) & (ncap - 1);
            while (h[j].key)
                j = (j + 1) & (ncap - 1);
            h[j] = g->h[i];
        }
        free(g->h);
        g->h = h;
        g->hcap = ncap;
    }
    size_t j = gs_hash_addr(key) & (g->hcap - 1);
    while (g->h[j].key && g->h[j].key != key)
        j = (j + 1) & (g->hcap - 1);
    struct gs_leak *l;
    if (g->h[j].key) {
        l = &g->v[g->h[j].idx];
    } else {
        if (GS_GROW(g->v, g->cap, g->n + 1))
            return -1;
        l = &g->v[g->n];
        memset(l, 0, sizeof *l);
        l->cls = cls;
        l->mem = mc;
        l->inherited = inh;
        l->torch = torch;
        l->stack_id = stack;
        l->first_scan = -1;
        g->h[j].key = key;
        g->h[j].idx = (uint32_t)g->n++;
    }
    l->bytes += size;
    l->blocks++;
    if (size > l->largest)
        l->largest = size;
    if (first >= 0 && (l->first_scan < 0 || first < l->first_scan))
        l->first_scan = first;
    return 0;
}

static int leak_cmp(const void *a, const void *b)
{
    const struct gs_leak *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->blocks != y->blocks)
        return x->blocks > y->blocks ? -1 : 1;
    if (x->stack_id != y->stack_id)
        return x->stack_id < y->stack_id ? -1 : 1;
    if (x->mem != y->mem)
        return x->mem < y->mem ? -1 : 1;
    if (x->torch != y->torch)
        return x->torch - y->torch;
    return x->inherited - y->inherited;
}

static int build_leaks(struct ctx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    struct groups g;
    memset(&g, 0, sizeof g);
    const struct gs_scan *scan = m->nscans ? &m->scans[m->nscans - 1] : NULL;
    uint64_t t_limit = scan ? (scan->t_end ? scan->t_end : scan->t_marked) : 0;
    uint64_t matched = 0;
    int rc = -1;

    for (size_t i = 0; i < m->live.cap; i++) {
        const struct gs_live *e = &m->live.slot[i];
        if (!e->addr)
            continue;
        int mc = gs_memcat_of(e->kind);
        int inh = e->fn == GS_FN_INHERITED;
        int torch = e->dom == GS_DOM_TORCH;
        int cls = GS_RC_NOT_FREED;
        int32_t first = -1;
        if (scan) {
            const struct gs_sblock *b =
                gs_model_scan_find(m, e->addr, torch ? GS_SCAN_KEY_TORCH : mc);
            if (b && b->size == e->size && b->stack == e->stack && e->t <= t_limit) {
                cls = b->cls;
                matched++;
                if (cls < GS_CLASS_REACHABLE)
                    first = (int32_t)b->first_scan;
            }
        }
        if (torch && cls == GS_RC_NOT_FREED)
            continue; /* allocated inside a segment: the segment holds the bytes */
        r->summary[cls][mc].bytes += e->size;
        r->summary[cls][mc].blocks++;
        if (inh) {
            r->inherited[cls].bytes += e->size;
            r->inherited[cls].blocks++;
        }
        if (group_add(&g, e->stack, cls, mc, inh, torch, e->size, first))
            goto out;
    }
    r->freed_after_scan = m->last.n > matched ? m->last.n - matched : 0;
    if (g.n)
        qsort(g.v, g.n, sizeof *g.v, leak_cmp);
    r->leaks = gs_arena_calloc(&r->arena, g.n ? g.n : 1, sizeof *r->leaks);
    if (!r->leaks)
        goto out;
    if (g.n)
        memcpy(r->leaks, g.v, g.n * sizeof *g.v);
    r->nleaks = (uint32_t)g.n;

    uint32_t shown[GS_RC__N] = { 0 };
    for (uint32_t i = 0; i < r->nleaks; i++) {
        struct gs_leak *l = &r->leaks[i];
        if (!(c->o->all_classes_mask & (1u << l->cls)) && shown[l->cls] >= c->o->max_groups)
            continue;
        shown[l->cls]++;
        if (symbolize_stack(c, l->stack_id, &l->st))
            goto out;
    }
    rc = 0;
out:
    free(g.v);
    free(g.h);
    return rc;
}

/* ---- growth ---- */

static int suspect_cmp(const void *a, const void *b)
{
    const struct gs_suspect *x = a, *y = b;
    double rx = x->rate * (x->x1 - x->x0), ry = y->rate * (y->x1 - y->x0);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int build_growth(struct ctx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    int axis = m->cps[GS_AXIS_STEP].n >= c->o->growth.min_points ? GS_AXIS_STEP : GS_AXIS_TIME;
    r->growth_axis = axis;
    r->growth_checkpoints = m->cps[axis].n;
    r->steps = m->nsteps;
    size_t n = 0, cap = 0;
    struct gs_suspect *v = NULL;
    for (uint32_t i = 0; i < m->nsites; i++) {
        const struct gs_site *s = &m->sites[i];
        const struct gs_axis *ax = &m->site_ax[(size_t)i * GS_AXIS__N + axis];
        struct gs_line line;
        if (!gs_growth_judge(ax, &m->cps[axis], &c->o->growth, &line))
            continue;
        if (GS_GROW(v, cap, n + 1)) {
            free(v);
            return -1;
        }
        struct gs_suspect *g = &v[n++];
        memset(g, 0, sizeof *g);
        g->stack_id = s->stack;
        g->mem = s->memcat;
        g->axis = axis;
        g->rate = line.slope;
        g->confidence = line.r2;
        g->points = line.n;
        g->x0 = line.x0;
        g->x1 = line.x1;
        g->start_bytes = (uint64_t)ax->yfirst;
        g->peak_bytes = (uint64_t)ax->ymax;
        g->end_bytes = s->live_bytes > 0 ? (uint64_t)s->live_bytes : 0;
        g->live_blocks = s->live_blocks;
        g->allocs = s->allocs;
    }
    if (n)
        qsort(v, n, sizeof *v, suspect_cmp);
    if (n > c->o->max_suspects)
        n = c->o->max_suspects;
    r->suspects = gs_arena_calloc(&r->arena, n ? n : 1, sizeof *r->suspects);
    if (!r->suspects) {
        free(v);
        return -1;
    }
    if (n)
        memcpy(r->suspects, v, n * sizeof *v);
    r->nsuspects = (uint32_t)n;
    free(v);
    for (uint32_t i = 0; i < r->nsuspects; i++)
        if (symbolize_stack(c, r->suspects[i].stack_id, &r->suspects[i].st))
            return -1;
    return 0;
}

/* ---- pauses ---- */

static int build_pauses(struct ctx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    size_t k;
    unsigned derived;
    struct gs_pause *v = gs_pauses_gather(m, SIZE_MAX, &k, &derived);
    if (!v)
        return -1;
    int rc = gs_pauses_compute(v, k, r->duration_ns, &r->pauses);
    free(v);
    /* say which records the pauses came from */
    char src[160] = "";
    if (m->pauses.n)
        snprintf(src, sizeof src, "PAUSE records");
    if (derived & 1u << GS_PAUSE_SCAN)
        snprintf(src + strlen(src), sizeof src - strlen(src), "%sscan timings",
                 src[0] ? ", " : "");
    if (derived & 1u << GS_PAUSE_CUDA_SYNC)
        snprintf(src + strlen(src), sizeof src - strlen(src), "%sCUDA calls >= %.3g ms",
                 src[0] ? ", " : "", (double)m->opts.cuda_pause_ns / 1e6);
    r->pauses.sources = gs_arena_strdup(&r->arena, src[0] ? src : "none");
    return rc;
}

/* ---- timeline ---- */

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

static int build_timeline(struct ctx *c)
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

/* ---- process ---- */

static int build_process(struct ctx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    struct gs_arena *a = &r->arena;
    r->have_proc = m->have_proc;
    r->pid = m->pid;
    r->ppid = m->ppid;
    r->wall_ns = m->wall_ns;
    r->flags = m->pflags;
    r->rank = m->rank1 ? (int64_t)m->rank1 - 1 : -1;
    r->local_rank = m->local_rank1 ? (int64_t)m->local_rank1 - 1 : -1;
    r->world_size = m->world_size1 ? (int64_t)m->world_size1 - 1 : -1;
    r->exe = gs_arena_strdup(a, m->exe ? m->exe : "");
    r->host = gs_arena_strdup(a, m->host ? m->host : "");
    r->version = gs_arena_strdup(a, m->version ? m->version : "");
    size_t alen = m->argv_len;
    while (alen && m->argv[alen - 1] == 0)
        alen--;
    uint32_t argc = 0;
    for (size_t i = 0; i < alen; i++)
        argc += m->argv[i] == 0;
    if (alen)
        argc++;
    r->argv = gs_arena_calloc(a, argc ? argc : 1, sizeof *r->argv);
    if (!r->exe || !r->host || !r->version || !r->argv)
        return -1;
    size_t s0 = 0;
    for (uint32_t k = 0; k < argc; k++) {
        size_t e = s0;
        while (e < alen && m->argv[e])
            e++;
        r->argv[k] = gs_arena_strndup(a, m->argv + s0, e - s0, 0);
        if (!r->argv[k])
            return -1;
        s0 = e + 1;
    }
    r->argc = argc;
    r->command = alen ? gs_arena_strndup(a, m->argv, alen, 1) : r->exe;
    if (!r->command)
        return -1;
    r->have_stopped = m->have_stopped;
    r->stopped_dropped = m->stopped_dropped;
    r->t_stopped = m->t_stopped;
    r->stopped_reason = m->stopped_reason ? gs_arena_strdup(a, m->stopped_reason) : NULL;
    r->have_exit = m->have_exit;
    r->exit_status = m->exit_status;
    r->exit_how = m->exit_how;
    r->t_exit = m->t_exit;
    r->exec_path = m->exec_path ? gs_arena_strdup(a, m->exec_path) : NULL;
    r->duration_ns = m->t_max;

    r->records = m->records;
    r->allocs = m->allocs;
    r->frees = m->frees;
    r->reallocs = m->reallocs;
    r->bytes_allocated = m->bytes_allocated;
    r->unmatched_frees = m->unmatched_frees;
    r->replaced_allocs = m->replaced_allocs;
    r->bad_records = m->bad_records;
    r->threads = m->threads;
    r->incomplete_scans = m->incomplete_scans;
    memcpy(r->peak_bytes, m->peak_bytes, sizeof r->peak_bytes);
    memcpy(r->live_bytes_end, m->live_bytes, sizeof r->live_bytes_end);
    r->peak_total = m->peak_total;
    r->rss_peak = m->rss_peak;
    r->rss_last = m->rss_last;

    r->nscans = m->nscans;
    r->scans = gs_arena_calloc(a, m->nscans ? m->nscans : 1, sizeof *r->scans);
    if (!r->scans)
        return -1;
    if (m->nscans)
        memcpy(r->scans, m->scans, m->nscans * sizeof *r->scans);
    r->last_scan = m->nscans ? (int32_t)m->nscans - 1 : -1;

    r->have_host_samples = m->samples > 0;
    r->samples = m->samples;
    r->mi_arena = m->mi_arena;
    r->mi_inuse = m->mi_inuse;
    r->mi_free = m->mi_free;
    r->mi_toppad = m->mi_toppad;
    r->mi_hblkhd = m->mi_hblkhd;
    r->mi_peak_arena = m->mi_peak_arena;
    r->mi_peak_free = m->mi_peak_free;
    r->ndev = m->ndev;
    for (uint32_t d = 0; d < m->ndev; d++) {
        r->dev[d] = m->dev[d];
        memset(&r->dev[d].series, 0, sizeof r->dev[d].series);
    }
    r->torch_live_bytes = m->torch_live_bytes;
    r->torch_live_blocks = m->torch_live_blocks;
    r->torch_peak_bytes = m->torch_peak_bytes;
    r->pool_snapshots = m->pool_snapshots;
    r->pool_incomplete = m->pool_incomplete;
    r->npool = m->npool;
    memcpy(r->pool, m->pool, m->npool * sizeof *m->pool);
    return gs_frag_heap(m, &r->heap);
}

/* One record: checked, then (unless it cannot be applied) replayed. */
static int feed(struct gs_model *m, struct gs_validate *v, const struct gs_record *rec)
{
    int apply = gs_validate_pre(v, m, rec);
    if (apply < 0)
        return -1;
    if (!apply)
        return 0;
    if (gs_model_feed(m, rec))
        return -1;
    if (rec->type == GS_REC_FREE || rec->type == GS_REC_FREE_EX)
        gs_validate_post(v, m, rec);
    return 0;
}

static int analyze(struct gs_reader *rd, const char *name, const struct gs_analyze_opts *o,
                   struct gs_symbolizer *sym, struct gs_result **out, char *err,
                   size_t errlen)
{
    struct gs_analyze_opts defaults;
    if (!o) {
        gs_analyze_defaults(&defaults);
        o = &defaults;
    }
    struct gs_model *m = malloc(sizeof *m);
    struct gs_result *r = calloc(1, sizeof *r);
    struct ctx c;
    memset(&c, 0, sizeof c);
    gs_validate_init(&c.val);
    if (!m || !r || gs_model_init(m, &o->model)) {
        if (m)
            gs_model_free(m);
        free(m);
        free(r);
        gs_reader_close(rd);
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    /* Hot records are fed AHEAD records after they are read, with their
     * cache lines prefetched meanwhile (the live set and the sites are too
     * big for the cache; the records of one trace are not). Lengthed
     * records point into the reader's chunk, valid only until the next
     * read: the ring is drained and they are fed at once. Each record is
     * checked against the format's promises (validate.h) as it is fed. */
    enum { AHEAD = 32 };
    struct gs_record *ring = malloc(AHEAD * sizeof *ring);
    if (!ring)
        goto oom;
    unsigned head = 0, pending = 0;
    int st;
    for (;;) {
        struct gs_record *rec = &ring[(head + pending) % AHEAD];
        st = gs_reader_next(rd, rec);
        if (st != GS_READ_OK)
            break;
        if (rec->type < GS_REC_LENGTHED) {
            gs_model_prefetch(m, rec, 0);
            pending++;
            if (pending > AHEAD / 2)
                gs_model_prefetch(m, &ring[(head + pending - 1 - AHEAD / 2) % AHEAD], 1);
            if (pending < AHEAD)
                continue;
        }
        /* feed the oldest (and, for a lengthed record, everything) */
        unsigned n = rec->type < GS_REC_LENGTHED ? 1 : pending;
        for (unsigned k = 0; k < n; k++) {
            if (feed(m, &c.val, &ring[head])) {
                free(ring);
                goto oom;
            }
            head = (head + 1) % AHEAD;
            pending--;
        }
        if (rec->type >= GS_REC_LENGTHED && feed(m, &c.val, rec)) {
            free(ring);
            goto oom;
        }
    }
    while (pending) {
        if (feed(m, &c.val, &ring[head])) {
            free(ring);
            goto oom;
        }
        head = (head + 1) % AHEAD;
        pending--;
    }
    free(ring);
    r->chunks = gs_reader_chunks(rd);
    r->bytes_read = gs_reader_offset(rd);
    if (st == GS_READ_DAMAGED) {
        r->damage = gs_arena_strdup(&r->arena, gs_reader_error(rd));
        /* a file that ends inside a chunk was cut while being written (a
         * kill, a full disk): incomplete; any other damage is malformed */
        if (!gs_reader_cut(rd))
            gs_validate_problem(&c.val, NULL, "%s", gs_reader_error(rd));
    } else if (!m->have_end && m->have_stopped) {
        r->damage = gs_arena_printf(&r->arena,
                                    "offset %" PRIu64 ": the trace ends after %" PRIu64
                                    " chunks at STOPPED: tracing stopped on a failure (%s)",
                                    r->bytes_read, r->chunks,
                                    m->stopped_reason ? m->stopped_reason : "");
    } else if (!m->have_end) {
        r->damage = gs_arena_printf(&r->arena,
                                    "offset %" PRIu64 ": the trace ends after %" PRIu64
                                    " chunks without TRACE_END (the process was killed, "
                                    "or is still running)", r->bytes_read, r->chunks);
    }
    r->problems = c.val.problems;
    if (r->problems) {
        r->malformed = 1;
        r->problem = gs_arena_strdup(&r->arena, c.val.first);
        if (!r->problem)
            goto oom;
    }
    r->complete = r->damage == NULL;
    if (!r->complete && !r->damage)
        goto oom;
    if (gs_model_finish(m))
        goto oom;
    r->trace = gs_arena_strdup(&r->arena, name);
    c.m = m;
    c.r = r;
    c.sym = sym;
    c.o = o;
    if (!r->trace || build_process(&c) || build_leaks(&c) || build_growth(&c) ||
        build_pauses(&c) || build_timeline(&c) || r->arena.failed)
        goto oom;
    free(c.buf);
    free(c.sc);
    gs_validate_free(&c.val);
    gs_reader_close(rd);
    gs_model_free(m);
    free(m);
    *out = r;
    return 0;
oom:
    free(c.buf);
    free(c.sc);
    gs_validate_free(&c.val);
    gs_reader_close(rd);
    gs_model_free(m);
    free(m);
    gs_result_free(r);
    snprintf(err, errlen, "%s: out of memory", name);
    return -1;
}

int gs_analyze_file(const char *path, const struct gs_analyze_opts *o,
                    struct gs_symbolizer *sym, struct gs_result **out,
                    char *err, size_t errlen)
{
    struct gs_reader *rd = strcmp(path, "-") == 0
                               ? gs_reader_open_fd(0, "standard input", err, errlen)
                               : gs_reader_open(path, err, errlen);
    if (!rd)
        return -1;
    return analyze(rd, path, o, sym, out, err, errlen);
}

int gs_analyze_mem(const void *data, size_t len, const char *name,
                   const struct gs_analyze_opts *o, struct gs_symbolizer *sym,
                   struct gs_result **out, char *err, size_t errlen)
{
    struct gs_reader *rd = gs_reader_open_mem(data, len, err, errlen);
    if (!rd)
        return -1;
    return analyze(rd, name, o, sym, out, err, errlen);
}

void gs_result_free(struct gs_result *r)
{
    if (!r)
        return;
    gs_arena_free(&r->arena);
    free(r);
}
