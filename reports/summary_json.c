/*
 * A per-process summary (analyzer/summary.h) as JSON: the document
 * analyzer/summary.c reads back, key for key (docs/jobs.md).
 */
#include "summary_json.h"

#include "jsonw.h"

static void opt_rank(struct gs_jw *w, const char *key, int64_t v)
{
    if (v < 0)
        gs_jw_null(w, key);
    else
        gs_jw_i64(w, key, v);
}

void gs_psum_write(FILE *f, const struct gs_psum *p)
{
    struct gs_jw w;
    gs_jw_init(&w, f);
    gs_psum_json(&w, p);
    fputc('\n', f);
}

void gs_psum_json(struct gs_jw *w, const struct gs_psum *p)
{
    gs_jw_obj(w, NULL);
    gs_jw_str(w, "format", "gcspy-summary");
    gs_jw_u64(w, "version", GS_SUMMARY_VERSION);
    gs_jw_str(w, "trace", p->trace);
    gs_jw_u64(w, "pid", p->pid);
    gs_jw_str(w, "host", p->host);
    gs_jw_str(w, "exe", p->exe);
    opt_rank(w, "rank", p->rank);
    opt_rank(w, "local_rank", p->local_rank);
    opt_rank(w, "world_size", p->world_size);
    gs_jw_bool(w, "launcher", p->launcher);
    gs_jw_bool(w, "complete", p->complete);
    gs_jw_u64(w, "duration_ns", p->duration_ns);
    gs_jw_u64(w, "peak_bytes", p->peak_bytes);
    gs_jw_u64(w, "rss_peak", p->rss_peak);
    gs_jw_obj(w, "leaked");
    for (int c = 0; c < 3; c++) {
        gs_jw_obj_compact(w, gs_psum_classes[c]);
        gs_jw_u64(w, "bytes", p->leaked_bytes[c]);
        gs_jw_u64(w, "blocks", p->leaked_blocks[c]);
        gs_jw_end_obj(w);
    }
    gs_jw_end_obj(w);
    gs_jw_arr(w, "sites", 0);
    for (uint32_t i = 0; i < p->nsites; i++) {
        gs_jw_obj_compact(w, NULL);
        gs_jw_str(w, "class", p->sites[i].cls);
        gs_jw_u64(w, "bytes", p->sites[i].bytes);
        gs_jw_u64(w, "blocks", p->sites[i].blocks);
        gs_jw_str(w, "where", p->sites[i].where);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_arr(w, "growth", 0);
    for (uint32_t i = 0; i < p->ngrowth; i++) {
        gs_jw_obj_compact(w, NULL);
        gs_jw_str(w, "axis", p->growth[i].axis);
        gs_jw_dbl(w, "rate", p->growth[i].rate);
        gs_jw_dbl(w, "confidence", p->growth[i].confidence);
        gs_jw_u64(w, "peak_bytes", p->growth[i].peak_bytes);
        gs_jw_str(w, "where", p->growth[i].where);
        gs_jw_end_obj(w);
    }
    gs_jw_end_arr(w);
    gs_jw_obj_compact(w, "pauses");
    gs_jw_u64(w, "count", p->pause_count);
    gs_jw_u64(w, "total_ns", p->pause_total_ns);
    gs_jw_u64(w, "max_ns", p->pause_max_ns);
    gs_jw_end_obj(w);
    gs_jw_obj_compact(w, "fragmentation");
    gs_jw_u64(w, "free_bytes", p->heap_free_bytes);
    gs_jw_u64(w, "largest_free", p->heap_largest_free);
    gs_jw_dbl(w, "ratio", p->heap_ratio);
    gs_jw_end_obj(w);
    gs_jw_end_obj(w);
}

