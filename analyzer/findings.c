/*
 * Sites and findings (findings.h). Sites merge the leak groups that differ
 * only by class: the scanner splits one allocation site's blocks between
 * definite, indirect and possible by what happened to point at each (a
 * stale number in an uninitialised buffer makes a block "possible"), so a
 * site is the unit a user fixes, and its worst class is what it is.
 * Findings then merge sites, and growth suspects, by the user's frame: one
 * line of the user's code is one cause, however many library stacks lie
 * between it and the allocator.
 */
#include "findings.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "fmt.h"
#include "names.h"

const char *gs_finding_kind_name(int kind)
{
    static const char *const names[GS_FIND__N] = { "leak", "growth", "noise", "fragmentation" };
    return kind >= 0 && kind < GS_FIND__N ? names[kind] : "?";
}

int gs_frag_significant(uint64_t free_bytes, uint64_t span)
{
    return free_bytes >= GS_FRAG_MIN_FREE && span && free_bytes >= span / 8;
}

struct gs_cell gs_site_lost(const struct gs_leaksite *s)
{
    struct gs_cell c = { 0, 0 };
    for (int k = 0; k < GS_CLASS_REACHABLE; k++) {
        c.bytes += s->cls[k].bytes;
        c.blocks += s->cls[k].blocks;
    }
    return c;
}

static const struct gs_result *sort_r; /* qsort has no context argument */

static int group_cmp(const void *a, const void *b)
{
    const struct gs_leak *x = &sort_r->leaks[*(const uint32_t *)a];
    const struct gs_leak *y = &sort_r->leaks[*(const uint32_t *)b];
    if (x->stack_id != y->stack_id)
        return x->stack_id < y->stack_id ? -1 : 1;
    if (x->mem != y->mem)
        return x->mem - y->mem;
    if (x->inherited != y->inherited)
        return x->inherited - y->inherited;
    return x->torch - y->torch;
}

static int site_cmp(const void *a, const void *b)
{
    const struct gs_leaksite *x = a, *y = b;
    struct gs_cell lx = gs_site_lost(x), ly = gs_site_lost(y);
    if (lx.bytes != ly.bytes)
        return lx.bytes > ly.bytes ? -1 : 1;
    uint64_t tx = 0, ty = 0;
    for (int k = 0; k < GS_RC__N; k++) {
        tx += x->cls[k].bytes;
        ty += y->cls[k].bytes;
    }
    if (tx != ty)
        return tx > ty ? -1 : 1;
    if (x->stack_id != y->stack_id)
        return x->stack_id < y->stack_id ? -1 : 1;
    return x->mem - y->mem;
}

static int build_sites(struct gs_result *r, const struct gs_userframe_opts *uf)
{
    r->sites = NULL;
    r->nsites = 0;
    if (!r->nleaks)
        return 0;
    uint32_t *idx = malloc(r->nleaks * sizeof *idx);
    struct gs_leaksite *v = gs_arena_calloc(&r->arena, r->nleaks, sizeof *v);
    if (!idx || !v) {
        free(idx);
        return -1;
    }
    for (uint32_t i = 0; i < r->nleaks; i++)
        idx[i] = i;
    sort_r = r;
    qsort(idx, r->nleaks, sizeof *idx, group_cmp);
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nleaks; i++) {
        const struct gs_leak *g = &r->leaks[idx[i]];
        if (!i || group_cmp(&idx[i - 1], &idx[i])) {
            struct gs_leaksite *s = &v[n++];
            s->stack_id = g->stack_id;
            s->mem = g->mem;
            s->inherited = g->inherited;
            s->torch = g->torch;
            s->worst = g->cls;
            s->first_scan = -1;
        }
        struct gs_leaksite *s = &v[n - 1];
        s->cls[g->cls].bytes += g->bytes;
        s->cls[g->cls].blocks += g->blocks;
        if (g->largest > s->largest)
            s->largest = g->largest;
        if (g->cls < s->worst)
            s->worst = g->cls;
        if (!s->st.resolved && g->st.resolved)
            s->st = g->st;
        if (g->suppressed)
            s->suppressed = g->suppressed;
        if (g->first_scan >= 0 && (s->first_scan < 0 || g->first_scan < s->first_scan))
            s->first_scan = g->first_scan;
    }
    free(idx);
    for (uint32_t i = 0; i < n; i++) {
        v[i].finding = -1;
        v[i].user = gs_userframe_find(uf, &v[i].st);
        v[i].noise = gs_userframe_noise(uf, &v[i].st);
    }
    qsort(v, n, sizeof *v, site_cmp);
    r->sites = v;
    r->nsites = n;
    return 0;
}

/* What findings are merged by: the user's frame (its function, file, line,
 * module and offset), or, without one, the stack itself. */
struct item {
    char key[384];
    uint32_t idx;
};

static void frame_key(char *buf, size_t n, int kind, int mem, const struct gs_frame *f,
                      uint32_t stack)
{
    if (!f)
        snprintf(buf, n, "%d|%d|#%" PRIu32, kind, mem, stack);
    else
        snprintf(buf, n, "%d|%d|%s|%s|%" PRIu32 "|%s|%" PRIx64, kind, mem,
                 f->function ? f->function : "", f->file ? f->file : "", f->line,
                 f->module ? f->module : "", f->python ? 0 : f->offset);
}

static int item_cmp(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static const struct gs_frame *user_of(const struct gs_stackv *st, int32_t u)
{
    return u >= 0 && (uint32_t)u < st->n ? &st->f[u] : NULL;
}

static const struct gs_frame *where_of(const struct gs_stackv *st)
{
    for (uint32_t i = 0; i < st->n; i++)
        if (st->f[i].function)
            return &st->f[i];
    return st->n ? &st->f[0] : NULL;
}

/* Leak and noise findings: the lost bytes of unsuppressed sites that are
 * not inherited, whose worst class is definite or indirect, merged by user
 * frame (noise, any lost class: by origin). */
static size_t leak_findings(struct gs_result *r, struct item *it, struct gs_finding *out)
{
    size_t ni = 0, nf = 0;
    for (uint32_t i = 0; i < r->nsites; i++) {
        const struct gs_leaksite *s = &r->sites[i];
        if (s->suppressed || s->inherited || !gs_site_lost(s).blocks)
            continue;
        /* a site no start pointer reached yet nothing wholly lost either
         * (worst class possible) is no headline: check's default gate
         * (definite, indirect) passes it, as LeakSanitizer reports nothing
         * for it; the site list and the totals keep it */
        if (!s->noise && s->worst >= GS_CLASS_POSSIBLE)
            continue;
        if (s->noise)
            snprintf(it[ni].key, sizeof it[ni].key, "noise|%d|%d", s->noise, s->mem);
        else
            frame_key(it[ni].key, sizeof it[ni].key, GS_FIND_LEAK, s->mem,
                      user_of(&s->st, s->user), s->stack_id);
        it[ni++].idx = i;
    }
    qsort(it, ni, sizeof *it, item_cmp);
    for (size_t i = 0; i < ni; i++) {
        const struct gs_leaksite *s = &r->sites[it[i].idx];
        struct gs_finding *f;
        if (!i || strcmp(it[i - 1].key, it[i].key)) {
            f = &out[nf++];
            memset(f, 0, sizeof *f);
            f->kind = s->noise ? GS_FIND_NOISE : GS_FIND_LEAK;
            f->noise = s->noise;
            f->cls = s->worst;
            f->mem = s->mem;
            f->first = it[i].idx;
            f->user = s->noise ? NULL : user_of(&s->st, s->user);
            f->where = where_of(&s->st);
            f->ratio = -1;
        }
        f = &out[nf - 1];
        r->sites[it[i].idx].finding = (int32_t)(nf - 1);
        struct gs_cell lost = gs_site_lost(s);
        f->bytes += lost.bytes;
        f->blocks += lost.blocks;
        for (int k = 0; k < GS_CLASS_REACHABLE; k++) {
            f->cls_cells[k].bytes += s->cls[k].bytes;
            f->cls_cells[k].blocks += s->cls[k].blocks;
        }
        if (s->worst < f->cls)
            f->cls = s->worst;
        f->nsites++;
    }
    return nf;
}

/* Growth findings: unsuppressed suspects merged by user frame. */
static size_t growth_findings(struct gs_result *r, const struct gs_userframe_opts *uf,
                              struct item *it, struct gs_finding *out, size_t base)
{
    size_t ni = 0, nf = 0;
    int32_t *user = malloc((r->nsuspects ? r->nsuspects : 1) * sizeof *user);
    if (!user)
        return (size_t)-1;
    for (uint32_t i = 0; i < r->nsuspects; i++) {
        const struct gs_suspect *g = &r->suspects[i];
        r->suspects[i].finding = -1;
        user[i] = gs_userframe_find(uf, &g->st);
        if (g->suppressed)
            continue;
        frame_key(it[ni].key, sizeof it[ni].key, GS_FIND_GROWTH, g->mem * 2 + g->axis,
                  user_of(&g->st, user[i]), g->stack_id);
        it[ni++].idx = i;
    }
    qsort(it, ni, sizeof *it, item_cmp);
    for (size_t i = 0; i < ni; i++) {
        const struct gs_suspect *g = &r->suspects[it[i].idx];
        struct gs_finding *f;
        if (!i || strcmp(it[i - 1].key, it[i].key)) {
            f = &out[nf++];
            memset(f, 0, sizeof *f);
            f->kind = GS_FIND_GROWTH;
            f->cls = -1;
            f->mem = g->mem;
            f->axis = g->axis;
            f->first = it[i].idx;
            f->user = user_of(&g->st, user[it[i].idx]);
            f->where = where_of(&g->st);
            f->freed_at_exit = 1;
            f->ratio = -1;
        } else if (g->peak_bytes - g->start_bytes >
                   r->suspects[out[nf - 1].first].peak_bytes -
                       r->suspects[out[nf - 1].first].start_bytes) {
            out[nf - 1].first = it[i].idx; /* the largest contributor leads */
            out[nf - 1].where = where_of(&g->st);
        }
        f = &out[nf - 1];
        r->suspects[it[i].idx].finding = (int32_t)(base + nf - 1);
        f->rate += g->rate;
        f->bytes += g->peak_bytes > g->start_bytes ? g->peak_bytes - g->start_bytes : 0;
        f->blocks += g->live_blocks;
        f->live_end += g->end_bytes;
        if (g->live_blocks)
            f->freed_at_exit = 0;
        f->nsites++;
    }
    free(user);
    return nf;
}

/* A fragmentation finding of free bytes fr with the largest free piece
 * largest, in a span, when significant (findings.h). */
static size_t frag_one(struct gs_finding *f, int mem, uint64_t fr, uint64_t largest,
                       uint64_t span, uint64_t pieces, uint32_t first)
{
    uint64_t wasted = fr - (largest < fr ? largest : fr);
    if (!gs_frag_significant(wasted, span))
        return 0;
    memset(f, 0, sizeof *f);
    f->kind = GS_FIND_FRAG;
    f->cls = -1;
    f->mem = mem;
    f->bytes = wasted;
    f->free_bytes = fr;
    f->blocks = pieces;
    f->total = span;
    f->first = first;
    f->ratio = (double)wasted / (double)fr;
    return 1;
}

/* Fragmentation findings: host memory between live blocks, and each
 * device's reserved but unused memory. */
static size_t frag_findings(const struct gs_result *r, struct gs_finding *out)
{
    size_t nf = 0;
    const struct gs_heapfrag *h = &r->heap;
    if (h->blocks)
        nf += frag_one(&out[nf], GS_MC_HOST, h->free_bytes, h->largest_free,
                       h->bytes + h->free_bytes, h->gaps, 0);
    for (uint32_t d = 0; d < r->ndev; d++) {
        const struct gs_devstate *s = &r->dev[d];
        uint64_t fr = s->reserved > s->in_use ? s->reserved - s->in_use : 0;
        nf += frag_one(&out[nf], GS_MC_DEVICE, fr, s->largest_free, s->reserved, s->segments, d);
    }
    return nf;
}

/* Leaks and growth first, largest first; then fragmentation, which
 * follows from what was allocated and freed (a growth freed at exit leaves
 * its pages free between the blocks that stayed); the noise last. */
static int rank(int kind)
{
    return kind == GS_FIND_NOISE ? 2 : kind == GS_FIND_FRAG ? 1 : 0;
}

static int finding_cmp(const void *a, const void *b)
{
    const struct gs_finding *x = a, *y = b;
    if (rank(x->kind) != rank(y->kind))
        return rank(x->kind) - rank(y->kind);
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return x->first < y->first ? -1 : x->first > y->first;
}

int gs_findings_build(struct gs_result *r, const struct gs_userframe_opts *uf)
{
    if (build_sites(r, uf))
        return -1;
    size_t cap = (size_t)r->nsites + r->nsuspects + GS_MAX_DEVICES + 1;
    struct item *it = malloc(cap * sizeof *it);
    struct gs_finding *f = gs_arena_calloc(&r->arena, cap, sizeof *f);
    if (!it || !f) {
        free(it);
        return -1;
    }
    size_t n = leak_findings(r, it, f);
    size_t g = growth_findings(r, uf, it, f + n, n);
    free(it);
    if (g == (size_t)-1)
        return -1;
    n += g;
    n += frag_findings(r, f + n);
    for (size_t i = 0; i < n; i++)
        f[i].id = (uint32_t)i;
    qsort(f, n, sizeof *f, finding_cmp);
    /* the sites and suspects name their finding by its rank */
    uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
    if (!pos)
        return -1;
    for (size_t i = 0; i < n; i++)
        pos[f[i].id] = (uint32_t)i;
    for (uint32_t i = 0; i < r->nsites; i++)
        if (r->sites[i].finding >= 0)
            r->sites[i].finding = (int32_t)pos[r->sites[i].finding];
    for (uint32_t i = 0; i < r->nsuspects; i++)
        if (r->suspects[i].finding >= 0)
            r->suspects[i].finding = (int32_t)pos[r->suspects[i].finding];
    free(pos);
    r->findings = f;
    r->nfindings = (uint32_t)n;
    return 0;
}

char *gs_fmt_frame(char *buf, size_t n, const struct gs_frame *f)
{
    if (!f) {
        snprintf(buf, n, "?");
        return buf;
    }
    const char *mod = f->module ? strrchr(f->module, '/') : NULL;
    mod = mod ? mod + 1 : f->module;
    char where[320];
    if (f->file && f->line)
        snprintf(where, sizeof where, "%s:%" PRIu32, f->file, f->line);
    else if (f->file)
        snprintf(where, sizeof where, "%s", f->file);
    else
        snprintf(where, sizeof where, "%s", mod ? mod : "");
    if (f->function)
        snprintf(buf, n, where[0] ? "%s (%s)" : "%s%s", f->function, where);
    else if (mod)
        snprintf(buf, n, "%s+0x%" PRIx64, mod, f->offset);
    else
        snprintf(buf, n, "0x%" PRIx64, f->ip);
    return buf;
}

/* The frame a finding names: the user's, else the allocation's. */
static const char *finding_frame(char *buf, size_t n, const struct gs_finding *f)
{
    if (!f->user && !f->where)
        return "a stack not symbolized";
    return gs_fmt_frame(buf, n, f->user ? f->user : f->where);
}

void gs_finding_line(char *buf, size_t n, const struct gs_result *r, const struct gs_finding *f)
{
    char b1[32], b2[32], fr[512];
    switch (f->kind) {
    case GS_FIND_LEAK:
    case GS_FIND_NOISE: {
        int len = snprintf(buf, n, "%s %s in %" PRIu64 " block%s, %s",
                           f->kind == GS_FIND_LEAK ? "leak" : "noise",
                           gs_fmt_bytes(b1, f->bytes), f->blocks, f->blocks == 1 ? "" : "s",
                           gs_class_name(f->cls));
        /* the other classes of the same sites, when the blocks split */
        for (int k = 0; k < GS_CLASS_REACHABLE && len > 0 && (size_t)len < n; k++)
            if (f->cls_cells[k].blocks && f->cls_cells[k].blocks != f->blocks)
                len += snprintf(buf + len, n - (size_t)len, "%s%s %" PRIu64,
                                k == f->cls ? " (" : ", ", gs_class_name(k),
                                f->cls_cells[k].blocks);
        if (len > 0 && (size_t)len < n && f->cls_cells[f->cls].blocks != f->blocks)
            len += snprintf(buf + len, n - (size_t)len, ")");
        if (len > 0 && (size_t)len < n) {
            if (f->kind == GS_FIND_NOISE)
                snprintf(buf + len, n - (size_t)len, ", %s, from %" PRIu32 " site%s of the %s "
                         "(folded, counted in the totals)", gs_memcat_name(f->mem), f->nsites,
                         f->nsites == 1 ? "" : "s", gs_noise_name(f->noise));
            else
                len += snprintf(buf + len, n - (size_t)len, ", %s, at %s%s",
                                gs_memcat_name(f->mem),
                                finding_frame(fr, sizeof fr, f),
                                f->user || !f->where ? "" : " (no frame of the user's code)");
            if (f->kind == GS_FIND_LEAK && f->nsites > 1 && len > 0 && (size_t)len < n)
                snprintf(buf + len, n - (size_t)len, " (%" PRIu32 " sites)", f->nsites);
        }
        break;
    }
    case GS_FIND_GROWTH: {
        const struct gs_suspect *g = &r->suspects[f->first];
        int len = snprintf(buf, n, "growth +%s per %s, %s, from %s",
                           gs_fmt_bytes(b1, (uint64_t)f->rate),
                           f->axis == GS_AXIS_STEP ? "step" : "second", gs_memcat_name(f->mem),
                           finding_frame(fr, sizeof fr, f));
        if (len > 0 && (size_t)len < n && f->axis == GS_AXIS_STEP)
            len += snprintf(buf + len, n - (size_t)len, " (%s over steps %.0f..%.0f",
                            gs_fmt_bytes(b2, f->bytes), g->x0, g->x1);
        else if (len > 0 && (size_t)len < n)
            len += snprintf(buf + len, n - (size_t)len, " (%s over %.2f..%.2f s",
                            gs_fmt_bytes(b2, f->bytes), g->x0, g->x1);
        if (len > 0 && (size_t)len < n)
            len += snprintf(buf + len, n - (size_t)len, ", %" PRIu32 " site%s)", f->nsites,
                            f->nsites == 1 ? "" : "s");
        if (len > 0 && (size_t)len < n) {
            if (f->freed_at_exit)
                snprintf(buf + len, n - (size_t)len,
                         ": retained per %s while the job ran, freed at exit",
                         f->axis == GS_AXIS_STEP ? "step" : "second");
            else
                snprintf(buf + len, n - (size_t)len, ": %s in %" PRIu64 " block%s still live "
                         "at the end", gs_fmt_bytes(b1, f->live_end), f->blocks,
                         f->blocks == 1 ? "" : "s");
        }
        break;
    }
    case GS_FIND_FRAG:
        if (f->mem == GS_MC_DEVICE)
            snprintf(buf, n, "fragmentation %s wasted on device %" PRIu64 ": reserved, unused "
                     "and outside the largest free piece (%.0f%% of %s free, %s reserved)",
                     gs_fmt_bytes(b1, f->bytes), r->dev[f->first].device, f->ratio * 100,
                     gs_fmt_bytes(b2, f->free_bytes), gs_fmt_bytes(fr, f->total));
        else
            snprintf(buf, n, "fragmentation %s wasted between live host blocks: free, "
                     "outside the largest gap (%.0f%% of %s free, in a heap of %s)",
                     gs_fmt_bytes(b1, f->bytes), f->ratio * 100,
                     gs_fmt_bytes(b2, f->free_bytes), gs_fmt_bytes(fr, f->total));
        break;
    default:
        snprintf(buf, n, "?");
    }
}
