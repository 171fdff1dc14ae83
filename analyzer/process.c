/*
 * The process (analyze_int.h): what the model knows of the process and its
 * run, copied into the result: identity and command line, how it ended
 * (an exec included), whether a scan stands behind its leak figures,
 * event counts and peaks, the scans, glibc's and the devices' figures, the
 * caching allocator's, and the host heap's fragmentation at the end.
 */
#include "analyze_int.h"

#include <string.h>

#include "frag.h"

/* argv as the trace holds it (NUL-separated, maybe NUL-terminated): the
 * words, and the command line they make. */
static int command_line(const struct gs_model *m, struct gs_result *r)
{
    struct gs_arena *a = &r->arena;
    size_t alen = m->argv_len;
    while (alen && m->argv[alen - 1] == 0)
        alen--;
    uint32_t argc = 0;
    for (size_t i = 0; i < alen; i++)
        argc += m->argv[i] == 0;
    if (alen)
        argc++;
    r->argv = gs_arena_calloc(a, argc ? argc : 1, sizeof *r->argv);
    if (!r->argv)
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
    return r->command ? 0 : -1;
}

/* Who the process was, and how its run ended. */
static int identity(const struct gs_model *m, struct gs_result *r)
{
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
    if (!r->exe || !r->host || !r->version || command_line(m, r))
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
    if (r->ended_by_exec) { /* analyze.c found it: the exec is the end */
        r->have_exit = 1;
        r->exit_status = 0;
        r->exit_how = GS_EXIT_EXEC;
        r->t_exit = m->t_exec;
    }
    r->duration_ns = m->t_max;
    return 0;
}

static void counts(const struct gs_model *m, struct gs_result *r)
{
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
    memcpy(r->live_bytes_end, m->live_bytes, sizeof r->live_bytes_end);
    r->peak_total = gs_model_peak(m, GS_MC__N);
    for (int mc = 0; mc < GS_MC__N; mc++)
        r->peak_bytes[mc] = gs_model_peak(m, mc);
    r->rss_peak = m->rss_peak;
    r->rss_last = m->rss_last;
}

/* glibc's, the devices' and the caching allocator's figures, and the host
 * heap's fragmentation at the end. */
static int memory(const struct gs_model *m, struct gs_result *r)
{
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

int gs_build_process(struct gs_actx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    if (identity(m, r))
        return -1;
    counts(m, r);
    r->nscans = m->nscans;
    r->scans = gs_arena_calloc(&r->arena, m->nscans ? m->nscans : 1, sizeof *r->scans);
    if (!r->scans)
        return -1;
    if (m->nscans)
        memcpy(r->scans, m->scans, m->nscans * sizeof *r->scans);
    r->last_scan = m->nscans ? (int32_t)m->nscans - 1 : -1;
    r->leak_status = m->nscans ? GS_LS_SCANNED : r->ended_by_exec ? GS_LS_EXEC : GS_LS_NO_SCAN;
    return memory(m, r);
}
