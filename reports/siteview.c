/*
 * The site views of `gcspy report`: --format peak, what was live when the
 * process's total peaked, by site (heaptrack's and memray's peak view); and
 * --format temporary, the allocations freed soon after they were made, by
 * site (heaptrack -T; docs/exports.md and siteext.h define "soon").
 * Plain text, a section per process, the largest max_groups sites (20)
 * first, each named by its site frame and its innermost frames.
 */
#define _GNU_SOURCE /* qsort_r */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../analyzer/fmt.h"
#include "exports.h"

/* Largest value first; ties by stack id, so the order is stable. */
static int by_value(const void *a, const void *b, void *value)
{
    const struct gs_sitestat *x = *(const struct gs_sitestat *const *)a;
    const struct gs_sitestat *y = *(const struct gs_sitestat *const *)b;
    uint64_t vx = gs_sval_get(x, *(int *)value), vy = gs_sval_get(y, *(int *)value);
    if (vx != vy)
        return vx > vy ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

const struct gs_sitestat **gs_siteview_sorted(const struct gs_result *r, int value, size_t *n)
{
    const struct gs_sitestat **v = malloc((r->nsitestats ? r->nsitestats : 1) * sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0;
    for (uint32_t i = 0; i < r->nsitestats; i++)
        if (gs_sval_get(&r->sitestats[i], value))
            v[k++] = &r->sitestats[i];
    qsort_r(v, k, sizeof *v, by_value, &value);
    *n = k;
    return v;
}

uint64_t gs_siteview_rank(const struct gs_sitestat *s, int which)
{
    if (which != GS_SV_PEAK)
        return gs_sval_get(s, which);
    return s->at_peak_bytes ? s->at_peak_bytes + 1 : s->temp_allocs ? 1 : 0;
}

static void print_site(FILE *f, const struct gs_sitestat *s, uint32_t frames)
{
    char buf[1024];
    fprintf(f, "  at %s\n", s->site.function || s->site.file || s->site.ip
                                 ? gs_frame_label(&s->site, buf, sizeof buf, 0)
                                 : "(no symbols)");
    for (uint32_t k = 0; k < s->st.n && k < frames; k++)
        fprintf(f, "      %s\n", gs_frame_label(&s->st.f[k], buf, sizeof buf, 0));
}

static int section(struct gs_report_ctx *c, const struct gs_report_item *it, int value)
{
    const struct gs_result *r = it->r;
    FILE *f = c->out;
    char b1[32], b2[32], b3[32];
    fprintf(f, "== %s (pid %" PRIu64 ")\n", it->trace, r ? r->pid : 0);
    if (!r) {
        fprintf(f, "  not analysed: %s\n\n", it->error ? it->error : "unreadable");
        return 0;
    }
    if (r->sites_incomplete)
        fprintf(f, "  (out of memory while replaying: the figures below are partial)\n");
    if (value == GS_SV_PEAK && !r->peak_known) {
        fprintf(f, "  no peak view: the trace was read once\n\n");
        return 0;
    }
    if (value == GS_SV_PEAK)
        fprintf(f, "peak: %s live at %s after the start, by site:\n",
                gs_fmt_bytes(b1, r->peak_live), gs_fmt_ns(b2, r->peak_t));
    else
        fprintf(f, "temporary allocations (freed within %s of being made): %" PRIu64
                   " of %" PRIu64 " allocations, %s, by site:\n",
                gs_fmt_ns(b1, r->temp_threshold_ns), r->temp_allocs, r->allocs,
                gs_fmt_bytes(b2, r->temp_bytes));
    size_t n;
    const struct gs_sitestat **v = gs_siteview_sorted(r, value, &n);
    if (!v)
        return -1;
    uint32_t max = c->o->max_groups ? c->o->max_groups : GS_SITEVIEW_ROWS;
    uint32_t frames = c->o->max_frames ? c->o->max_frames : 4;
    for (size_t i = 0; i < n && i < max; i++) {
        const struct gs_sitestat *s = v[i];
        if (value == GS_SV_PEAK)
            fprintf(f, "%10s in %" PRIu64 " blocks (%s at the end)\n",
                    gs_fmt_bytes(b1, s->at_peak_bytes), s->at_peak_blocks,
                    gs_fmt_bytes(b3, s->live_bytes));
        else
            fprintf(f, "%10" PRIu64 " temporary of %" PRIu64 " allocations, %s\n",
                    s->temp_allocs, s->allocs, gs_fmt_bytes(b1, s->temp_bytes));
        print_site(f, s, frames);
    }
    if (n > max)
        fprintf(f, "  ... %zu more sites (--max-groups)\n", n - max);
    if (!n)
        fprintf(f, "  none\n");
    fputc('\n', f);
    free(v);
    return 0;
}

static int peak_process(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    return section(c, it, GS_SV_PEAK);
}

static int temp_process(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    return section(c, it, GS_SV_TEMP);
}

const struct gs_reporter gs_reporter_peak = {
    .name = "peak",
    .process = peak_process,
};

const struct gs_reporter gs_reporter_temporary = {
    .name = "temporary",
    .process = temp_process,
};
