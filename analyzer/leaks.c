/*
 * Leak groups (analyze_int.h): the live blocks at the end, grouped by
 * allocation stack, class, memory category, inheritance and layer.
 *
 * Leak classes come from the last complete scan, reconciled with the live
 * set at the end: a block the scan classified counts only if the same block
 * (same address, size and stack, allocated before the scan ended) is still
 * live at the end; a block freed after the scan was no leak; a live block
 * the scan did not classify (allocated after it, or there was no scan, or
 * the scan recorded only unreachable blocks) is "not freed". In a trace
 * that ended by exec such a block is no group at all: the exec released it
 * (result.h's released_by_exec counts it).
 *
 * Blocks of PyTorch's caching allocator (the torch layer) lie inside CUDA
 * segments that are blocks of their own: they make leak groups (labelled
 * torch) only when the scan classified them, so a live tensor's bytes are
 * not counted a second time beside its segment's.
 *
 * Only the stacks the result shows are symbolized: every group of the
 * classes a caller asks for (the CI gate's --fail-on, so suppressions can
 * match them) and the largest max_groups of the others.
 */
#include "analyze_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

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
        if (GS_GROW_RAW(g->v, g->cap, g->n + 1))
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

int gs_build_leaks(struct gs_actx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    struct groups g;
    memset(&g, 0, sizeof g);
    const struct gs_scan *scan = m->nscans ? &m->scans[m->nscans - 1] : NULL;
    uint64_t t_limit = scan ? (scan->t_end ? scan->t_end : scan->t_marked) : 0;
    uint64_t matched = 0;
    int rc = -1;

    /* every live stack seen once, so that a site's id is the smallest of
     * its stacks' (gs_stacks_canon), whatever the table's order */
    for (size_t i = 0; i < m->live.cap; i++)
        if (m->live.slot[i].addr)
            gs_stacks_canon(&c->stacks, m->live.slot[i].stack);
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
        if (r->ended_by_exec && cls == GS_RC_NOT_FREED) {
            /* the exec discarded the address space: released, not leaked */
            r->released_by_exec.bytes += e->size;
            r->released_by_exec.blocks++;
            continue;
        }
        r->summary[cls][mc].bytes += e->size;
        r->summary[cls][mc].blocks++;
        if (inh) {
            r->inherited[cls].bytes += e->size;
            r->inherited[cls].blocks++;
        }
        if (group_add(&g, gs_stacks_canon(&c->stacks, e->stack), cls, mc, inh, torch, e->size,
                      first))
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
        if (gs_stacks_get(&c->stacks, l->stack_id, &l->st))
            goto out;
    }
    rc = 0;
out:
    free(g.v);
    free(g.h);
    return rc;
}
