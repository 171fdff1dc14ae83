/*
 * The JSON reporter: the versioned document described in
 * docs/report-json.md, which the CI gate, the HTML page and other tools
 * read. Keys are stable within a version: adding keys is allowed, renaming
 * or removing one is a version bump (GS_REPORT_JSON_VERSION).
 *
 * Sizes are integers (bytes, ns); addresses are hex strings because they do
 * not fit JSON's safe integer range; unknown values are null, never 0.
 */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../analyzer/findings.h"
#include "../analyzer/names.h"
#include "exports.h"
#include "jsonw.h"

static struct gs_jw jw;

static void frames(struct gs_jw *w, const char *key, const struct gs_stackv *st)
{
    if (!st->resolved) {
        gs_jw_null(w, key);
        return;
    }
    gs_jw_arr(w, key, 0);
    for (uint32_t i = 0; i < st->n; i++) {
        const struct gs_frame *f = &st->f[i];
        gs_jw_obj_compact(w, NULL);
        gs_jw_frame_where(w, f);
        if (f->python) {
            gs_jw_null(w, "offset");
            gs_jw_null(w, "address");
        } else {
            gs_jw_hex(w, "offset", f->offset);
            gs_jw_hex(w, "address", f->ip);
        }
        gs_jw_bool(w, "inlined", f->inlined);
        gs_jw_bool(w, "python", f->python);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
}

static void cell(struct gs_jw *w, const char *key, const struct gs_cell *c)
{
    gs_jw_obj_compact(w, key);
    gs_jw_u64(w, "bytes", c->bytes);
    gs_jw_u64(w, "blocks", c->blocks);
    gs_jw_end_obj(w);
}

/* One frame as an object with its one-line label; NULL: null. */
static void frame_obj(struct gs_jw *w, const char *key, const struct gs_frame *f)
{
    char label[512];
    if (!f) {
        gs_jw_null(w, key);
        return;
    }
    gs_jw_obj_compact(w, key);
    gs_jw_str(w, "label", gs_fmt_frame(label, sizeof label, f));
    gs_jw_frame_where(w, f);
    gs_jw_bool(w, "python", f->python);
    gs_jw_end_obj(w);
}

/* When the blocks became unreachable (first: index into scans; -1 none). */
static void first_unreachable(struct gs_jw *w, const struct gs_result *r, int32_t first)
{
    if (first >= 0 && (uint32_t)first < r->nscans) {
        const struct gs_scan *s = &r->scans[first];
        gs_jw_obj(w, "first_unreachable");
        gs_jw_u64(w, "scan", s->id);
        if (first > 0)
            gs_jw_u64(w, "after_scan", r->scans[first - 1].id);
        else
            gs_jw_null(w, "after_scan");
        gs_jw_u64(w, "t_ns", s->t_start);
        gs_jw_arr(w, "steps", 1);
        gs_jw_u64(w, NULL, s->steps_before);
        gs_jw_u64(w, NULL, s->steps_at);
        gs_jw_end_arr(w);
        gs_jw_str(w, "first_marker", s->user_markers ? s->first_marker : NULL);
        gs_jw_str(w, "last_marker", s->user_markers ? s->last_marker : NULL);
        gs_jw_str(w, "marker_before", s->marker_before[0] ? s->marker_before : NULL);
        gs_jw_end_obj(w);
    } else {
        gs_jw_null(w, "first_unreachable");
    }
}

/* One row per allocation site (docs/report-json.md, SITE), the classes
 * side by side: every site with lost bytes, and of the others (reachable
 * and not-freed blocks only) the first max in the sites' order; the rest
 * are summed in "sites_folded", so that the rows and it still add up to
 * the summary. A forked DataLoader worker inherits its parent's heap: 209
 * thousand reachable sites made its JSON 105 MB and the demo's page 324 MB.
 * The stack only for the sites a LEAK of the same stack would show (the
 * others say null, as a LEAK's would). */
static void sites(struct gs_report_ctx *c, const struct gs_result *r)
{
    struct gs_jw *w = &jw;
    uint32_t max = c->o->max_groups ? c->o->max_groups : gs_reporter_json.max_groups;
    uint32_t kept = 0, folded = 0;
    struct gs_cell fold[GS_RC__N] = {{0}};
    gs_jw_arr(w, "sites", 0);
    for (uint32_t i = 0; i < r->nsites; i++) {
        const struct gs_leaksite *s = &r->sites[i];
        struct gs_cell lost = gs_site_lost(s);
        if (!lost.blocks && kept++ >= max) {
            folded++;
            for (int k = 0; k < GS_RC__N; k++) {
                fold[k].bytes += s->cls[k].bytes;
                fold[k].blocks += s->cls[k].blocks;
            }
            continue;
        }
        gs_jw_obj(w, NULL);
        gs_jw_str(w, "memory", gs_memcat_name(s->mem));
        gs_jw_str(w, "worst_class", gs_class_name(s->worst));
        cell(w, "lost", &lost);
        gs_jw_obj(w, "classes");
        for (int k = 0; k < GS_RC__N; k++)
            if (k != GS_CLASS_RUNTIME || s->cls[k].blocks) /* held by the CUDA runtime: where some are */
                cell(w, gs_class_name(k), &s->cls[k]);
        gs_jw_end_obj(w);
        gs_jw_u64(w, "largest_block", s->largest);
        gs_jw_bool(w, "inherited", s->inherited);
        gs_jw_str(w, "allocator", s->torch ? "torch" : NULL);
        gs_jw_u64(w, "stack_id", s->stack_id);
        gs_jw_str(w, "suppressed", s->suppressed);
        gs_jw_str(w, "noise", gs_noise_name(s->noise));
        first_unreachable(w, r, s->first_scan);
        frame_obj(w, "user_frame", s->user >= 0 ? &s->st.f[s->user] : NULL);
        if (i < max || (lost.blocks && !s->noise))
            frames(w, "stack", &s->st);
        else
            gs_jw_null(w, "stack");
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_obj(w, "sites_folded");
    gs_jw_u64(w, "sites", folded);
    gs_jw_obj(w, "classes");
    for (int k = 0; k < GS_RC__N; k++)
        if (k != GS_CLASS_RUNTIME || fold[k].blocks)
            cell(w, gs_class_name(k), &fold[k]);
    gs_jw_end_obj(w);
    gs_jw_end_obj(w);
}

/* The headline findings (docs/report-json.md, FINDING), as ranked. */
static void findings(const struct gs_result *r)
{
    struct gs_jw *w = &jw;
    char line[2048];
    gs_jw_arr(w, "findings", 0);
    for (uint32_t i = 0; i < r->nfindings; i++) {
        const struct gs_finding *f = &r->findings[i];
        gs_jw_obj(w, NULL);
        gs_jw_str(w, "kind", gs_finding_kind_name(f->kind));
        gs_finding_line(line, sizeof line, r, f);
        gs_jw_str(w, "line", line);
        gs_jw_str(w, "memory", gs_memcat_name(f->mem));
        gs_jw_u64(w, "bytes", f->bytes);
        gs_jw_u64(w, "blocks", f->blocks);
        if (f->kind == GS_FIND_LEAK || f->kind == GS_FIND_NOISE) {
            gs_jw_str(w, "class", gs_class_name(f->cls));
            gs_jw_obj(w, "classes");
            for (int k = 0; k < GS_CLASS_REACHABLE; k++)
                cell(w, gs_class_name(k), &f->cls_cells[k]);
            gs_jw_end_obj(w);
        } else {
            gs_jw_null(w, "class");
        }
        if (f->kind == GS_FIND_GROWTH) {
            gs_jw_dbl(w, "rate", f->rate);
            gs_jw_str(w, "rate_unit", f->axis == GS_AXIS_STEP ? "bytes/step" : "bytes/s");
            gs_jw_bool(w, "freed_at_exit", f->freed_at_exit);
            gs_jw_u64(w, "live_bytes_end", f->live_end);
        } else {
            gs_jw_null(w, "rate");
        }
        if (f->kind == GS_FIND_FRAG) {
            gs_jw_u64(w, "span_bytes", f->total);
            gs_jw_dbl(w, "ratio", f->ratio);
        }
        gs_jw_str(w, "noise", gs_noise_name(f->noise));
        gs_jw_u64(w, "sites", f->nsites);
        frame_obj(w, "user_frame", f->user);
        frame_obj(w, "site_frame", f->where);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
}

static void summary(struct gs_jw *w, const char *key, const struct gs_cell s[GS_RC__N][GS_MC__N])
{
    gs_jw_obj(w, key);
    for (int k = 0; k < GS_RC__N; k++) {
        uint64_t nk = 0;
        for (int m = 0; m < GS_MC__N; m++)
            nk += s[k][m].blocks;
        if (k == GS_CLASS_RUNTIME && !nk)
            continue; /* held by the CUDA runtime: only where some are */
        gs_jw_obj(w, gs_class_name(k));
        struct gs_cell tot = { 0, 0 };
        for (int m = 0; m < GS_MC__N; m++) {
            cell(w, gs_memcat_name(m), &s[k][m]);
            tot.bytes += s[k][m].bytes;
            tot.blocks += s[k][m].blocks;
        }
        cell(w, "total", &tot);
        gs_jw_end_obj(w);
    }
    gs_jw_end_obj(w);
}

static void per_class(struct gs_jw *w, const char *key, const struct gs_cell c[GS_RC__N])
{
    gs_jw_obj(w, key);
    for (int k = 0; k < GS_RC__N; k++)
        if (k != GS_CLASS_RUNTIME || c[k].blocks)
            cell(w, gs_class_name(k), &c[k]);
    gs_jw_end_obj(w);
}

static int j_begin(struct gs_report_ctx *c, size_t n)
{
    (void)n;
    gs_jw_init(&jw, c->out);
    gs_jw_obj(&jw, NULL);
    gs_jw_str(&jw, "format", "gcspy-report");
    gs_jw_u64(&jw, "version", GS_REPORT_JSON_VERSION);
    gs_jw_u64(&jw, "version_minor", GS_REPORT_JSON_MINOR);
#ifdef GCSPY_VERSION
    gs_jw_str(&jw, "generator", "gcspy " GCSPY_VERSION);
#else
    gs_jw_str(&jw, "generator", "gcspy");
#endif
    gs_jw_arr(&jw, "processes", 0);
    return 0;
}

static void scan_obj(struct gs_jw *w, const char *key, const struct gs_scan *s)
{
    gs_jw_obj(w, key);
    gs_jw_u64(w, "id", s->id);
    gs_jw_str(w, "trigger", gs_trigger_name(s->trigger));
    gs_jw_str(w, "mode", s->mode == 1 ? "fork" : "stw");
    gs_jw_u64(w, "t_start_ns", s->t_start);
    gs_jw_u64(w, "t_stopped_ns", s->t_stopped);
    gs_jw_u64(w, "t_marked_ns", s->t_marked);
    gs_jw_u64(w, "t_end_ns", s->t_end);
    gs_jw_u64(w, "threads", s->threads);
    gs_jw_u64(w, "bytes_scanned", s->bytes_scanned);
    gs_jw_u64(w, "blocks_visited", s->blocks_visited);
    gs_jw_u64(w, "live_blocks", s->live_blocks);
    gs_jw_u64(w, "live_bytes", s->live_bytes);
    if (s->unreadable_bytes) /* only where a block could not be read */
        gs_jw_u64(w, "unreadable_bytes", s->unreadable_bytes);
    gs_jw_obj(w, "classes");
    for (int k = 0; k < GS_CLASS__N; k++) {
        if (k == GS_CLASS_RUNTIME && !s->cls_blocks[k])
            continue; /* held by the CUDA runtime: only where some are */
        gs_jw_obj_compact(w, gs_class_name(k));
        gs_jw_u64(w, "bytes", s->cls_bytes[k]);
        gs_jw_u64(w, "blocks", s->cls_blocks[k]);
        gs_jw_end_obj(w);
    }
    gs_jw_end_obj(w);
    gs_jw_obj_compact(w, "new_unreachable");
    gs_jw_u64(w, "bytes", s->new_bytes);
    gs_jw_u64(w, "blocks", s->new_blocks);
    gs_jw_end_obj(w);
    gs_jw_arr(w, "steps", 1);
    gs_jw_u64(w, NULL, s->steps_before);
    gs_jw_u64(w, NULL, s->steps_at);
    gs_jw_end_arr(w);
    gs_jw_u64(w, "user_markers", s->user_markers);
    gs_jw_str(w, "first_marker", s->user_markers ? s->first_marker : NULL);
    gs_jw_str(w, "last_marker", s->user_markers ? s->last_marker : NULL);
    gs_jw_str(w, "marker_before", s->marker_before[0] ? s->marker_before : NULL);
    gs_jw_end_obj(w);
}

/* null for -1 (unset) */
static void opt_i64(struct gs_jw *w, const char *key, int64_t v)
{
    if (v >= 0)
        gs_jw_i64(w, key, v);
    else
        gs_jw_null(w, key);
}

/* Who the process was. */
static void identity(struct gs_jw *w, const struct gs_result *r)
{
    if (r->have_proc) {
        gs_jw_u64(w, "pid", r->pid);
        gs_jw_u64(w, "ppid", r->ppid);
    } else {
        /* the trace was cut before its PROCESS_START */
        gs_jw_null(w, "pid");
        gs_jw_null(w, "ppid");
    }
    gs_jw_str(w, "command", r->command);
    gs_jw_str(w, "exe", r->exe);
    gs_jw_arr(w, "argv", 1);
    for (uint32_t i = 0; i < r->argc; i++)
        gs_jw_str(w, NULL, r->argv[i]);
    gs_jw_end_arr(w);
    gs_jw_str(w, "host", r->host);
    opt_i64(w, "rank", r->rank);
    opt_i64(w, "local_rank", r->local_rank);
    opt_i64(w, "world_size", r->world_size);
    if (r->flags & GS_PROC_F_LAUNCHER) /* only then: documents of ranks read as before */
        gs_jw_bool(w, "launcher", 1);
    gs_jw_bool(w, "forked", (r->flags & GS_PROC_F_FORKED) != 0);
    gs_jw_u64(w, "start_unix_ns", r->wall_ns);
    gs_jw_str(w, "gcspy_version", r->version);
}

/* Whether the trace is whole and well formed, and how the run ended. */
static void completeness(struct gs_jw *w, const struct gs_result *r)
{
    gs_jw_bool(w, "complete", r->complete);
    gs_jw_str(w, "damage", r->damage);
    gs_jw_bool(w, "malformed", r->malformed);
    gs_jw_u64(w, "problems", r->problems);
    gs_jw_str(w, "problem", r->problem);
    if (r->have_stopped) {
        gs_jw_obj(w, "stopped");
        gs_jw_u64(w, "t_ns", r->t_stopped);
        gs_jw_u64(w, "dropped_events", r->stopped_dropped);
        gs_jw_str(w, "reason", r->stopped_reason);
        gs_jw_end_obj(w);
    } else {
        gs_jw_null(w, "stopped");
    }
    if (r->have_exit) {
        gs_jw_obj(w, "exit");
        gs_jw_u64(w, "t_ns", r->t_exit);
        gs_jw_str(w, "how", gs_exit_name(r->exit_how));
        gs_jw_i64(w, "status", r->exit_status);
        gs_jw_str(w, "exec_path", r->exec_path);
        gs_jw_end_obj(w);
    } else {
        gs_jw_null(w, "exit");
    }
    gs_jw_u64(w, "duration_ns", r->duration_ns);
}

/* A site of the peak or temporary view: its figures, the frame that
 * names it and its stack. */
static void view_site(struct gs_jw *w, const struct gs_sitestat *s, int value)
{
    gs_jw_obj(w, NULL);
    gs_jw_u64(w, "stack_id", s->stack_id);
    gs_jw_str(w, "memory", gs_memcat_name(s->mem));
    if (value == GS_SV_PEAK) {
        gs_jw_u64(w, "bytes", s->at_peak_bytes);
        gs_jw_u64(w, "blocks", s->at_peak_blocks);
        gs_jw_u64(w, "end_bytes", s->live_bytes);
    } else {
        gs_jw_u64(w, "allocs", s->temp_allocs);
        gs_jw_u64(w, "bytes", s->temp_bytes);
        gs_jw_u64(w, "of_allocs", s->allocs);
    }
    frame_obj(w, "site", s->st.f ? &s->site : NULL);
    if (s->st.f)
        frames(w, "stack", &s->st);
    else
        gs_jw_null(w, "stack");
    gs_jw_end_obj(w);
}

/* A view's "sites" (the largest max, as the text views list them) and
 * "sites_more"; -1 when out of memory. */
static int view_sites(struct gs_report_ctx *c, const struct gs_result *r, int value)
{
    struct gs_jw *w = &jw;
    size_t n;
    const struct gs_sitestat **v = gs_siteview_sorted(r, value, &n);
    if (!v)
        return -1;
    uint32_t max = c->o->max_groups ? c->o->max_groups : GS_SITEVIEW_ROWS;
    gs_jw_arr(w, "sites", 0);
    for (size_t i = 0; i < n && i < max; i++)
        view_site(w, v[i], value);
    gs_jw_end_arr(w);
    gs_jw_u64(w, "sites_more", n > max ? n - max : 0);
    free(v);
    return 0;
}

/* What was live at the peak, by site (inside "peak"), and the temporary
 * allocations by site: null where the analysis had no site figures (gcspy
 * check) or, for the peak, no peak time. */
static int views(struct gs_report_ctx *c, const struct gs_result *r)
{
    struct gs_jw *w = &jw;
    int rc = 0;
    if (r->sitestats && r->peak_known) {
        gs_jw_u64(w, "t_ns", r->peak_t);
        gs_jw_u64(w, "live_bytes", r->peak_live);
        rc |= view_sites(c, r, GS_SV_PEAK);
    } else {
        gs_jw_null(w, "t_ns");
        gs_jw_null(w, "live_bytes");
        gs_jw_null(w, "sites");
        gs_jw_null(w, "sites_more");
    }
    gs_jw_end_obj(w); /* peak */
    if (!r->sitestats) {
        gs_jw_null(w, "temporary");
        return rc;
    }
    gs_jw_obj(w, "temporary");
    gs_jw_u64(w, "threshold_ns", r->temp_threshold_ns);
    gs_jw_u64(w, "allocs", r->temp_allocs);
    gs_jw_u64(w, "bytes", r->temp_bytes);
    gs_jw_u64(w, "of_allocs", r->allocs);
    rc |= view_sites(c, r, GS_SV_TEMP);
    gs_jw_end_obj(w);
    return rc;
}

static void counts(struct gs_jw *w, const struct gs_result *r)
{
    gs_jw_obj(w, "events");
    gs_jw_u64(w, "records", r->records);
    gs_jw_u64(w, "allocs", r->allocs);
    gs_jw_u64(w, "frees", r->frees);
    gs_jw_u64(w, "reallocs", r->reallocs);
    gs_jw_u64(w, "bytes_allocated", r->bytes_allocated);
    gs_jw_u64(w, "threads", r->threads);
    gs_jw_u64(w, "unmatched_frees", r->unmatched_frees);
    gs_jw_u64(w, "replaced_allocs", r->replaced_allocs);
    gs_jw_u64(w, "malformed_records", r->bad_records);
    gs_jw_u64(w, "chunks", r->chunks);
    gs_jw_end_obj(w);
    gs_jw_obj(w, "peak");
    for (int m = 0; m < GS_MC__N; m++)
        gs_jw_u64(w, gs_memcat_name(m), r->peak_bytes[m]);
    gs_jw_u64(w, "total", r->peak_total);
    if (r->rss_peak)
        gs_jw_u64(w, "rss", r->rss_peak);
    else
        gs_jw_null(w, "rss");
    /* the object stays open for the peak view (views()) */
}

/* A process's object up to its leak groups, whose array it leaves open. */
static int j_process(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    struct gs_jw *w = &jw;
    const struct gs_result *r = it->r;
    gs_jw_obj(w, NULL);
    gs_jw_str(w, "trace", it->trace);
    if (!r) {
        gs_jw_bool(w, "readable", 0);
        gs_jw_str(w, "error", it->error);
        return 0;
    }
    gs_jw_bool(w, "readable", 1);
    identity(w, r);
    completeness(w, r);
    counts(w, r);
    if (views(c, r))
        return -1;
    if (r->last_scan >= 0)
        scan_obj(w, "last_scan", &r->scans[r->last_scan]);
    else
        gs_jw_null(w, "last_scan");
    gs_jw_u64(w, "scans_incomplete", r->incomplete_scans);
    gs_jw_str(w, "leak_status", gs_leak_status_name(r->leak_status));
    if (r->ended_by_exec) {
        cell(w, "released_by_exec", &r->released_by_exec);
    } else {
        gs_jw_null(w, "released_by_exec");
    }
    gs_jw_u64(w, "freed_after_last_scan", r->freed_after_scan);
    findings(r);
    summary(w, "summary", r->summary);
    per_class(w, "suppressed", r->suppressed);
    per_class(w, "inherited", r->inherited);
    gs_jw_arr(w, "leaks", 0);
    return 0;
}

static int j_leak(struct gs_report_ctx *c, const struct gs_report_item *it,
                  const struct gs_leak *l)
{
    (void)c;
    struct gs_jw *w = &jw;
    const struct gs_result *r = it->r;
    gs_jw_obj(w, NULL);
    gs_jw_str(w, "class", gs_class_name(l->cls));
    gs_jw_str(w, "memory", gs_memcat_name(l->mem));
    gs_jw_u64(w, "bytes", l->bytes);
    gs_jw_u64(w, "blocks", l->blocks);
    gs_jw_u64(w, "largest_block", l->largest);
    gs_jw_bool(w, "inherited", l->inherited);
    gs_jw_str(w, "allocator", l->torch ? "torch" : NULL);
    gs_jw_u64(w, "stack_id", l->stack_id);
    gs_jw_str(w, "suppressed", l->suppressed);
    first_unreachable(w, r, l->first_scan);
    frames(w, "stack", &l->st);
    gs_jw_end_obj(w);
    return 0;
}

static void u64_series(struct gs_jw *w, const char *key, const uint64_t *v, uint32_t n)
{
    gs_jw_arr(w, key, 1);
    for (uint32_t i = 0; i < n; i++) {
        if (v[i] == UINT64_MAX)
            gs_jw_null(w, NULL);
        else
            gs_jw_u64(w, NULL, v[i]);
    }
    gs_jw_end_arr(w);
}

static void timeline(struct gs_report_ctx *c, const struct gs_result *r)
{
    struct gs_jw *w = &jw;
    const struct gs_timeline *tl = &r->tl;
    if (!c->o->show_timeline) {
        gs_jw_null(w, "timeline");
        return;
    }
    gs_jw_obj(w, "timeline");
    gs_jw_u64(w, "bucket_ns", tl->bucket_ns);
    gs_jw_u64(w, "buckets", tl->nb);
    gs_jw_obj(w, "live_bytes");
    static const char *const names[GS_CH__N] = {
        "host", "pinned", "managed", "device", "total",
        "rss", "arena", "in_use", "free", "top_pad",
    };
    for (int ch = GS_CH_HOST; ch <= GS_CH_TOTAL; ch++)
        u64_series(w, names[ch], tl->ch[ch], tl->nb);
    gs_jw_end_obj(w);
    u64_series(w, "rss", tl->ch[GS_CH_RSS], tl->nb);
    gs_jw_obj(w, "malloc");
    for (int ch = GS_CH_ARENA; ch < GS_CH__N; ch++)
        u64_series(w, names[ch], tl->ch[ch], tl->nb);
    gs_jw_end_obj(w);
    gs_jw_arr(w, "devices", 0);
    for (uint32_t d = 0; d < tl->ndev; d++) {
        gs_jw_obj(w, NULL);
        gs_jw_u64(w, "device", tl->dev[d].device);
        gs_jw_u64(w, "allocator", tl->dev[d].kind);
        u64_series(w, "reserved", tl->dev[d].ch[GS_DCH_RESERVED], tl->nb);
        u64_series(w, "in_use", tl->dev[d].ch[GS_DCH_INUSE], tl->nb);
        u64_series(w, "segments", tl->dev[d].ch[GS_DCH_SEGMENTS], tl->nb);
        u64_series(w, "largest_free", tl->dev[d].ch[GS_DCH_LARGEST], tl->nb);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_u64(w, "step_stride", tl->step_stride ? tl->step_stride : 1);
    gs_jw_u64(w, "marker_stride", tl->user_stride ? tl->user_stride : 1);
    gs_jw_arr(w, "markers", 0);
    for (uint32_t i = 0; i < tl->nmarkers; i++) {
        const struct gs_marker *m = &tl->markers[i];
        gs_jw_obj_compact(w, NULL);
        gs_jw_u64(w, "t_ns", m->t);
        gs_jw_str(w, "kind", gs_marker_kind_name(m->kind));
        gs_jw_u64(w, "ordinal", m->ordinal);
        gs_jw_str(w, "label", m->label);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    /* scans on the time axis, thinned to at most ~2000 */
    uint32_t stride = 1;
    while (r->nscans / stride > 2000)
        stride *= 2;
    gs_jw_arr(w, "scans", 0);
    for (uint32_t i = 0; i < r->nscans; i++) {
        if (i % stride && i + 1 != r->nscans)
            continue;
        const struct gs_scan *s = &r->scans[i];
        gs_jw_obj_compact(w, NULL);
        gs_jw_u64(w, "id", s->id);
        gs_jw_u64(w, "t_ns", s->t_start);
        gs_jw_u64(w, "duration_ns", s->t_end > s->t_start ? s->t_end - s->t_start : 0);
        gs_jw_str(w, "trigger", gs_trigger_name(s->trigger));
        gs_jw_u64(w, "unreachable_bytes", s->cls_bytes[0] + s->cls_bytes[1] + s->cls_bytes[2]);
        gs_jw_u64(w, "new_unreachable_bytes", s->new_bytes);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

/* fragmentation.caching_allocator: PyTorch's caching allocator, null when
 * the trace has neither snapshots nor torch blocks */
static void caching_allocator(struct gs_jw *w, const struct gs_result *r)
{
    if (!r->pool_snapshots && !r->pool_incomplete && !r->torch_peak_bytes) {
        gs_jw_null(w, "caching_allocator");
        return;
    }
    gs_jw_obj(w, "caching_allocator");
    gs_jw_u64(w, "snapshots", r->pool_snapshots);
    gs_jw_u64(w, "incomplete_snapshots", r->pool_incomplete);
    gs_jw_u64(w, "live_blocks", r->torch_live_blocks);
    gs_jw_u64(w, "live_bytes", r->torch_live_bytes);
    gs_jw_u64(w, "peak_bytes", r->torch_peak_bytes);
    gs_jw_arr(w, "devices", 0);
    for (uint32_t d = 0; d < r->npool; d++) {
        const struct gs_poolfig *p = &r->pool[d];
        gs_jw_obj(w, NULL);
        gs_jw_u64(w, "device", p->device);
        gs_jw_u64(w, "snapshot_id", p->snap_id);
        gs_jw_u64(w, "t_ns", p->t);
        gs_jw_str(w, "reason", gs_pool_reason_name(p->reason));
        gs_jw_u64(w, "segments", p->segments);
        gs_jw_u64(w, "reserved_bytes", p->reserved);
        gs_jw_u64(w, "allocated_blocks", p->active_blocks);
        gs_jw_u64(w, "allocated_bytes", p->active_bytes);
        gs_jw_u64(w, "requested_bytes", p->requested);
        gs_jw_u64(w, "pending_free_blocks", p->pending_blocks);
        gs_jw_u64(w, "pending_free_bytes", p->pending_bytes);
        gs_jw_u64(w, "cached_free_blocks", p->inactive_blocks);
        gs_jw_u64(w, "cached_free_bytes", p->inactive_bytes);
        gs_jw_u64(w, "largest_cached_free", p->largest_inactive);
        gs_jw_u64(w, "events", p->events);
        gs_jw_obj_compact(w, "events_by_action");
        for (int a = 0; a < GS_PEV__N; a++)
            gs_jw_u64(w, gs_pool_action_word(a), p->events_by[a]);
        gs_jw_end_obj(w);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

/* Per class, the groups the options leave out of "leaks": how many, and
 * their bytes and blocks. */
static void leaks_omitted(struct gs_report_ctx *c, const struct gs_result *r)
{
    struct gs_jw *w = &jw;
    uint32_t shown[GS_RC__N] = { 0 };
    struct { uint64_t groups, bytes, blocks; } om[GS_RC__N];
    memset(om, 0, sizeof om);
    for (uint32_t i = 0; i < r->nleaks; i++) {
        const struct gs_leak *l = &r->leaks[i];
        if (gs_report_shows(c->o, &gs_reporter_json, l, shown[l->cls])) {
            shown[l->cls]++;
            continue;
        }
        om[l->cls].groups++;
        om[l->cls].bytes += l->bytes;
        om[l->cls].blocks += l->blocks;
    }
    gs_jw_arr(w, "leaks_omitted", 0);
    for (int k = 0; k < GS_RC__N; k++) {
        if (!om[k].groups)
            continue;
        gs_jw_obj_compact(w, NULL);
        gs_jw_str(w, "class", gs_class_name(k));
        gs_jw_u64(w, "groups", om[k].groups);
        gs_jw_u64(w, "bytes", om[k].bytes);
        gs_jw_u64(w, "blocks", om[k].blocks);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
}

/* Every scan, or every stride-th of many (and the last) */
static void scans(struct gs_jw *w, const struct gs_result *r)
{
    gs_jw_arr(w, "scans", 0);
    uint32_t stride = 1;
    while (r->nscans / stride > 500)
        stride *= 2;
    for (uint32_t i = 0; i < r->nscans; i++)
        if (i % stride == 0 || i + 1 == r->nscans)
            scan_obj(w, NULL, &r->scans[i]);
    gs_jw_end_arr(w);
}

static void growth(struct gs_jw *w, const struct gs_result *r)
{
    gs_jw_obj(w, "growth");
    gs_jw_str(w, "axis", gs_axis_name(r->growth_axis));
    gs_jw_str(w, "unit", r->growth_axis == GS_AXIS_STEP ? "bytes/step" : "bytes/s");
    gs_jw_u64(w, "checkpoints", r->growth_checkpoints);
    gs_jw_u64(w, "steps", r->steps);
    gs_jw_arr(w, "suspects", 0);
    for (uint32_t i = 0; i < r->nsuspects; i++) {
        const struct gs_suspect *g = &r->suspects[i];
        gs_jw_obj(w, NULL);
        gs_jw_str(w, "memory", gs_memcat_name(g->mem));
        gs_jw_dbl(w, "rate", g->rate);
        gs_jw_str(w, "unit", g->axis == GS_AXIS_STEP ? "bytes/step" : "bytes/s");
        gs_jw_dbl(w, "confidence", g->confidence);
        gs_jw_dbl(w, "points", g->points);
        gs_jw_dbl(w, "x_from", g->x0);
        gs_jw_dbl(w, "x_to", g->x1);
        gs_jw_u64(w, "start_bytes", g->start_bytes);
        gs_jw_u64(w, "peak_bytes", g->peak_bytes);
        gs_jw_u64(w, "end_bytes", g->end_bytes);
        gs_jw_u64(w, "live_blocks", g->live_blocks);
        gs_jw_u64(w, "allocs", g->allocs);
        gs_jw_u64(w, "stack_id", g->stack_id);
        gs_jw_str(w, "suppressed", g->suppressed);
        frames(w, "stack", &g->st);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

/* glibc's figures (the SAMPLE records' last), or null without samples */
static void malloc_figures(struct gs_jw *w, const struct gs_result *r)
{
    if (!r->have_host_samples) {
        gs_jw_null(w, "malloc");
        return;
    }
    gs_jw_obj(w, "malloc");
    gs_jw_u64(w, "samples", r->samples);
    gs_jw_u64(w, "arena", r->mi_arena);
    gs_jw_u64(w, "in_use", r->mi_inuse);
    gs_jw_u64(w, "free", r->mi_free);
    gs_jw_u64(w, "top_pad", r->mi_toppad);
    gs_jw_u64(w, "mmapped", r->mi_hblkhd);
    gs_jw_u64(w, "peak_arena", r->mi_peak_arena);
    gs_jw_u64(w, "peak_free", r->mi_peak_free);
    gs_jw_end_obj(w);
}

static void heap_figures(struct gs_jw *w, const struct gs_heapfrag *h)
{
    gs_jw_obj(w, "heap");
    gs_jw_u64(w, "live_blocks", h->blocks);
    gs_jw_u64(w, "live_bytes", h->bytes);
    gs_jw_u64(w, "regions", h->regions);
    gs_jw_u64(w, "gaps", h->gaps);
    gs_jw_u64(w, "free_bytes", h->free_bytes);
    gs_jw_u64(w, "largest_free", h->largest_free);
    gs_jw_dbl(w, "ratio", h->ratio);
    gs_jw_u64(w, "mmapped_blocks", h->mmapped_blocks);
    gs_jw_u64(w, "mmapped_bytes", h->mmapped_bytes);
    gs_jw_end_obj(w);
}

/* Each device allocator's last DEVICE_SAMPLE and its extremes */
static void device_figures(struct gs_jw *w, const struct gs_result *r)
{
    gs_jw_arr(w, "devices", 0);
    for (uint32_t d = 0; d < r->ndev; d++) {
        const struct gs_devstate *s = &r->dev[d];
        uint64_t fr = s->reserved > s->in_use ? s->reserved - s->in_use : 0;
        uint64_t lf = s->largest_free < fr ? s->largest_free : fr;
        gs_jw_obj(w, NULL);
        gs_jw_u64(w, "device", s->device);
        gs_jw_u64(w, "allocator", s->kind);
        gs_jw_u64(w, "samples", s->samples);
        gs_jw_u64(w, "reserved", s->reserved);
        gs_jw_u64(w, "in_use", s->in_use);
        gs_jw_u64(w, "free", fr);
        gs_jw_u64(w, "segments", s->segments);
        gs_jw_u64(w, "largest_free", s->largest_free);
        gs_jw_dbl(w, "ratio", fr ? 1.0 - (double)lf / (double)fr : 0);
        gs_jw_u64(w, "peak_reserved", s->peak_reserved);
        gs_jw_u64(w, "peak_in_use", s->peak_in_use);
        gs_jw_u64(w, "max_segments", s->max_segments);
        gs_jw_dbl(w, "worst_ratio", s->worst_ratio);
        if (s->worst_t)
            gs_jw_u64(w, "worst_t_ns", s->worst_t);
        else
            gs_jw_null(w, "worst_t_ns");
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
}

static void fragmentation(struct gs_jw *w, const struct gs_result *r)
{
    gs_jw_obj(w, "fragmentation");
    malloc_figures(w, r);
    heap_figures(w, &r->heap);
    device_figures(w, r);
    caching_allocator(w, r);
    gs_jw_end_obj(w);
}

static void pauses(struct gs_jw *w, const struct gs_pause_stats *p)
{
    gs_jw_obj(w, "pauses");
    gs_jw_str(w, "sources", p->sources);
    gs_jw_u64(w, "count", p->count);
    gs_jw_u64(w, "total_ns", p->total_ns);
    gs_jw_u64(w, "paused_ns", p->union_ns);
    gs_jw_u64(w, "wall_ns", p->wall_ns);
    gs_jw_dbl(w, "share", p->share);
    gs_jw_obj(w, "percentiles_ns");
    static const char *const pn[GS_NPCT] = { "p50", "p90", "p99", "max" };
    for (int k = 0; k < GS_NPCT; k++) {
        if (p->count)
            gs_jw_u64(w, pn[k], p->pct_ns[k]);
        else
            gs_jw_null(w, pn[k]);
    }
    gs_jw_end_obj(w);
    gs_jw_obj(w, "by_kind");
    for (uint32_t k = 0; k < GS_PAUSE_KINDS; k++) {
        gs_jw_obj_compact(w, gs_pause_name(k));
        gs_jw_u64(w, "count", p->by_kind[k].count);
        gs_jw_u64(w, "total_ns", p->by_kind[k].total_ns);
        gs_jw_u64(w, "max_ns", p->by_kind[k].max_ns);
        gs_jw_end_obj(w);
    }
    gs_jw_end_obj(w);
    gs_jw_arr(w, "longest", 0);
    for (uint32_t i = 0; i < p->nlongest; i++) {
        gs_jw_obj_compact(w, NULL);
        gs_jw_u64(w, "t_ns", p->longest[i].t0);
        gs_jw_u64(w, "duration_ns", p->longest[i].t1 - p->longest[i].t0);
        gs_jw_str(w, "kind", gs_pause_name(p->longest[i].kind));
        gs_jw_u64(w, "a", p->longest[i].a);
        gs_jw_u64(w, "b", p->longest[i].b);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_arr(w, "mmu", 0);
    for (int k = 0; k < GS_NMMU; k++) {
        gs_jw_obj_compact(w, NULL);
        gs_jw_u64(w, "window_ns", p->mmu[k].window_ns);
        if (p->mmu[k].valid)
            gs_jw_dbl(w, "utilization", p->mmu[k].mmu);
        else
            gs_jw_null(w, "utilization");
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_end_obj(w);
}

/* What follows the process's leak groups: the rest of its object. */
static int j_process_end(struct gs_report_ctx *c, const struct gs_report_item *it)
{
    struct gs_jw *w = &jw;
    const struct gs_result *r = it->r;
    if (!r) {
        gs_jw_end_obj(w);
        return 0;
    }
    gs_jw_end_arr(w); /* leaks */
    leaks_omitted(c, r);
    sites(c, r);
    scans(w, r);
    growth(w, r);
    fragmentation(w, r);
    pauses(w, &r->pauses);
    timeline(c, r);
    if (it->verdict) {
        gs_jw_obj(w, "verdict");
        gs_jw_str(w, "status", it->verdict->status == 0 ? "pass"
                               : it->verdict->status == 1 ? "fail" : "error");
        gs_jw_str(w, "line", it->verdict->line);
        gs_jw_bool(w, "no_scan", it->verdict->no_scan);
        gs_jw_end_obj(w);
    }
    gs_jw_end_obj(w);
    return 0;
}

static int j_summary(struct gs_report_ctx *c, const struct gs_report_item *items, size_t n)
{
    (void)c;
    struct gs_jw *w = &jw;
    gs_jw_end_arr(w); /* processes */
    struct gs_totals t;
    gs_report_totals(items, n, &t);
    gs_jw_obj(w, "totals");
    gs_jw_u64(w, "processes", t.processes);
    gs_jw_u64(w, "complete", t.complete);
    gs_jw_u64(w, "unreadable", t.unreadable);
    gs_jw_u64(w, "malformed", t.malformed);
    gs_jw_u64(w, "no_scan", t.no_scan);
    gs_jw_u64(w, "ended_by_exec", t.exec);
    summary(w, "summary", t.cls);
    per_class(w, "suppressed", t.suppressed);
    gs_jw_u64(w, "growth_suspects", t.suspects);
    gs_jw_u64(w, "pauses", t.pauses);
    gs_jw_u64(w, "pause_ns", t.pause_ns);
    gs_jw_u64(w, "allocs", t.allocs);
    gs_jw_u64(w, "bytes_allocated", t.bytes_allocated);
    gs_jw_end_obj(w);
    gs_jw_arr(w, "symbol_problems", 0);
    for (size_t i = 0; c->o->problems && c->o->problems[i]; i++)
        gs_jw_str(w, NULL, c->o->problems[i]);
    gs_jw_end_arr(w);
    return 0;
}

static int j_end(struct gs_report_ctx *c)
{
    (void)c;
    gs_jw_end_obj(&jw);
    return 0;
}

const struct gs_reporter gs_reporter_json = {
    .name = "json",
    .begin = j_begin,
    .process = j_process,
    .leak = j_leak,
    .process_end = j_process_end,
    .summary = j_summary,
    .end = j_end,
    .max_groups = 200,
    .show_reachable = 1,
};
