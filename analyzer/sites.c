/*
 * Every allocation site's figures (analyze_int.h, result.h's sitestats): what
 * the model kept per site (allocations, live bytes, own highest), the
 * replay-time extras (siteext.h: bytes allocated, live at the peak time,
 * temporary allocations) and the site's leaked bytes, summed from the leak
 * groups already built, so the exports and the views show the leak report's
 * own figures. Only when gs_analyze_opts.sites asks, and only the sites its
 * rank keeps are symbolized (analyze.h): the other reports need none.
 */
#include "analyze_int.h"

#include <stdlib.h>
#include <string.h>

#include "siteext.h"

/* Sites with their rank (the caller's, or bytes allocated), for ordering. */
struct ranked {
    uint64_t rank;
    struct gs_sitestat s;
};

static int by_rank(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank > y->rank ? -1 : 1;
    return x->s.stack_id < y->s.stack_id ? -1 : x->s.stack_id > y->s.stack_id;
}

/* Orders r's sites by rank, leaving out those ranked 0 when the caller
 * ranks; 0, or -1 when out of memory. */
static int order(struct gs_result *r, const struct gs_analyze_opts *o)
{
    size_t n = r->nsitestats, k = 0;
    struct ranked *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t rank = o->sites_rank ? o->sites_rank(&r->sitestats[i], o->sites_rank_which)
                                      : r->sitestats[i].alloc_bytes;
        if (rank || !o->sites_rank)
            v[k++] = (struct ranked){ rank, r->sitestats[i] };
    }
    if (k)
        qsort(v, k, sizeof *v, by_rank);
    for (size_t i = 0; i < k; i++)
        r->sitestats[i] = v[i].s;
    r->nsitestats = (uint32_t)k;
    free(v);
    return 0;
}

static int by_stack(const void *a, const void *b)
{
    const struct gs_sitestat *x = a, *y = b;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Leak groups into their sites (v sorted by stack id): definite and
 * indirect, suppressed ones left out, as the CI gate's default counts. */
static void add_leaks(const struct gs_result *r, struct gs_sitestat *v, size_t n)
{
    for (uint32_t j = 0; j < r->nleaks; j++) {
        const struct gs_leak *l = &r->leaks[j];
        if (l->suppressed || (l->cls != GS_CLASS_DEFINITE && l->cls != GS_CLASS_INDIRECT))
            continue;
        struct gs_sitestat key = { .stack_id = l->stack_id };
        struct gs_sitestat *s = bsearch(&key, v, n, sizeof *v, by_stack);
        if (s) {
            s->leaked_bytes += l->bytes;
            s->leaked_blocks += l->blocks;
        }
    }
}

/* Largest value first, ties by stack id: the views' own order. */
struct also {
    uint64_t v;
    uint32_t stack_id, i;
};

static int by_also(const void *a, const void *b)
{
    const struct also *x = a, *y = b;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Gives site o its frames unless it has them. */
static int symbolize(struct gs_actx *c, struct gs_sitestat *o)
{
    if (o->st.f)
        return 0;
    return gs_stacks_get(&c->stacks, o->stack_id, &o->st) ||
                   gs_stacks_site_frame(&c->stacks, o->stack_id, &o->site)
               ? -1
               : 0;
}

/* With gs_analyze_opts.sites_also: the first sites_max sites by that value,
 * beyond those of the rank, are symbolized too. */
static int symbolize_also(struct gs_actx *c, struct gs_result *r)
{
    const struct gs_analyze_opts *o = c->o;
    size_t n = r->nsitestats, k = 0;
    struct also *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = o->sites_rank(&r->sitestats[i], o->sites_also - 1);
        if (x)
            v[k++] = (struct also){ x, r->sitestats[i].stack_id, (uint32_t)i };
    }
    qsort(v, k, sizeof *v, by_also);
    int rc = 0;
    for (size_t i = 0; i < k && i < o->sites_max && !rc; i++)
        rc = symbolize(c, &r->sitestats[v[i].i]);
    free(v);
    return rc;
}

int gs_build_sites(struct gs_actx *c, const struct gs_siteext *x)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    if (x->tb.b) {
        gs_siteext_peak(x, &r->peak_t, &r->peak_live);
    } else {
        r->peak_known = 1;
        r->peak_t = x->peak_at;
    }
    r->temp_threshold_ns = x->threshold_ns;
    r->temp_allocs = x->temp_allocs;
    r->temp_bytes = x->temp_bytes;
    r->sites_incomplete = x->failed;
    r->sitestats = gs_arena_calloc(&r->arena, m->nsites ? m->nsites : 1, sizeof *r->sitestats);
    if (!r->sitestats)
        return -1;
    size_t n = 0;
    for (uint32_t i = 0; i < m->nsites; i++) {
        const struct gs_site *s = &m->sites[i];
        const struct gs_sitex *e = i < x->cap ? &x->v[i] : NULL;
        if (!s->allocs && !s->live_blocks)
            continue;
        struct gs_sitestat *o = &r->sitestats[n++];
        o->stack_id = s->stack;
        o->mem = s->memcat;
        o->allocs = s->allocs;
        o->max_bytes = s->peak_bytes;
        o->live_bytes = s->live_bytes > 0 ? (uint64_t)s->live_bytes : 0;
        o->live_blocks = s->live_blocks;
        if (e) {
            o->alloc_bytes = e->alloc_bytes;
            /* a first read (x->tb.b) sums every block: not the peak's */
            o->at_peak_bytes = x->tb.b ? 0 : e->at_peak_bytes;
            o->at_peak_blocks = x->tb.b ? 0 : e->at_peak_blocks;
            o->temp_allocs = e->temp_allocs;
            o->temp_bytes = e->temp_bytes;
        }
    }
    r->nsitestats = (uint32_t)n;
    qsort(r->sitestats, n, sizeof *r->sitestats, by_stack);
    add_leaks(r, r->sitestats, n);
    if (order(r, c->o))
        return -1;
    n = r->nsitestats;
    if (c->o->sites_max && n > c->o->sites_max)
        n = c->o->sites_max;    /* the rest stay unsymbolized */
    for (size_t i = 0; i < n; i++)
        if (symbolize(c, &r->sitestats[i]))
            return -1;
    if (c->o->sites_also && c->o->sites_rank && c->o->sites_max)
        return symbolize_also(c, r);
    return 0;
}
