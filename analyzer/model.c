/*
 * The replay (model.h): applies records one at a time to the live set, the
 * stack tree, the module map, the scan maps, the sites and the series. This
 * file is the dispatch, one record to its handler (model_int.h lists the
 * files and what each holds), and the model's life: init, finish, free and
 * the prefetch hint. The hot records (ALLOC, FREE) go straight to the live
 * set's file, which is written for speed.
 *
 * Oddities in the input (a free of an address that is not live, a scan block
 * outside a scan, an id too large to index) are counted, not fatal: the trace
 * reader has already validated the bytes, and a report of the rest is worth
 * more than a refusal.
 */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

int gs_model_init(struct gs_model *m, const struct gs_model_opts *o)
{
    memset(m, 0, sizeof *m);
    if (o)
        m->opts = *o;
    else
        m->opts.cuda_pause_ns = 1000000;
    m->next_step_cp = 1;
    m->pool_events_delta = 1;
    m->next_tick = GS_TICK_MIN_NS;
    if (gs_live_init(&m->live, 1u << 12) || gs_series_init(&m->series, GS_CH__N))
        return -1;
    for (int i = 0; i <= GS_MC__N; i++)
        if (gs_tbuckets_init(&m->peak_tb[i]))
            return -1;
    return 0;
}

uint64_t gs_model_peak(const struct gs_model *m, int mc)
{
    uint64_t p = gs_tbuckets_peak(&m->peak_tb[mc], NULL);
    for (int c = 0; c < GS_MC__N; c++)
        if ((c == mc || mc == GS_MC__N) && m->max_block[c] > p)
            p = m->max_block[c];
    return p;
}

/* Records of process events: their time moves the clock, and what they
 * say is kept for the report. */
static int on_process_event(struct gs_model *m, const struct gs_record *r)
{
    switch (r->type) {
    case GS_REC_PROCESS_EXIT:
        m->have_exit = 1;
        m->exit_status = r->u.exit.status;
        m->exit_how = r->u.exit.how;
        m->t_exit = r->t;
        break;
    case GS_REC_THREAD_START:
        m->threads++;
        break;
    case GS_REC_EXEC:
        free(m->exec_path);
        m->exec_path = gs_dupb(&r->u.exec.path);
        if (!m->exec_path)
            return -1;
        m->t_exec = r->t;
        break;
    case GS_REC_STOPPED:
        m->have_stopped = 1;
        m->stopped_dropped = r->u.stopped.dropped;
        m->t_stopped = r->t;
        free(m->stopped_reason);
        m->stopped_reason = gs_dupb(&r->u.stopped.reason);
        if (!m->stopped_reason)
            return -1;
        break;
    case GS_REC_TRACE_END:
        m->have_end = 1;
        m->end_t = r->t;
        m->end_allocs = r->u.end.allocs;
        m->end_frees = r->u.end.frees;
        m->end_bytes_allocated = r->u.end.bytes_allocated;
        m->end_live_blocks = r->u.end.live_blocks;
        m->end_live_bytes = r->u.end.live_bytes;
        break;
    default: /* TIMEBASE, THREAD_EXIT: the time alone */
        break;
    }
    return gs_advance_time(m, r->t);
}

int gs_model_feed(struct gs_model *m, const struct gs_record *r)
{
    m->records++;
    switch (r->type) {
    /* the hot records: one call into the live set's file each */
    case GS_REC_ALLOC:
        return gs_advance_time(m, r->t) ? -1 : gs_on_alloc(m, r);
    case GS_REC_FREE:
        if (gs_advance_time(m, r->t))
            return -1;
        gs_on_free(m, r);
        return 0;
    case GS_REC_REALLOC:
        return gs_advance_time(m, r->t) ? -1 : gs_on_realloc(m, r);
    case GS_REC_ALLOC_EX:
        return gs_advance_time(m, r->t) ? -1 : gs_on_alloc_ex(m, r);
    case GS_REC_FREE_EX:
        return gs_advance_time(m, r->t) ? -1 : gs_on_free_ex(m, r);
    case GS_REC_TIMEBASE: case GS_REC_PROCESS_EXIT: case GS_REC_THREAD_START:
    case GS_REC_THREAD_EXIT: case GS_REC_EXEC: case GS_REC_STOPPED: case GS_REC_TRACE_END:
        return on_process_event(m, r);
    /* definitions */
    case GS_REC_STACK:
        return gs_on_stack(m, r);
    case GS_REC_PYCODE:
        return gs_on_pycode(m, r);
    case GS_REC_PROCESS_START:
        return gs_on_proc(m, r);
    case GS_REC_MODULE:
        return gs_on_module(m, r) ? -1 : gs_advance_time(m, r->t);
    case GS_REC_MODULE_UNLOAD:
        gs_on_unload(m, r);
        return gs_advance_time(m, r->t);
    /* samples, markers, pauses */
    case GS_REC_SAMPLE:
        if (gs_advance_time(m, r->t))
            return -1;
        gs_on_sample(m, r);
        return 0;
    case GS_REC_DEVICE_SAMPLE:
        return gs_advance_time(m, r->t) ? -1 : gs_on_dsample(m, r);
    case GS_REC_MARKER:
        return gs_advance_time(m, r->t) ? -1 : gs_on_marker(m, r);
    case GS_REC_PAUSE:
        if (gs_advance_time(m, r->u.pause.t_end > r->t ? r->u.pause.t_end : r->t))
            return -1;
        return gs_pause_add(&m->pauses, r->t, r->u.pause.t_end, (uint32_t)r->u.pause.kind,
                            r->u.pause.a, r->u.pause.b);
    /* scans */
    case GS_REC_SCAN_BEGIN:
        return gs_advance_time(m, r->t) ? -1 : gs_on_scan_begin(m, r);
    case GS_REC_SCAN_BLOCK:
        return gs_on_scan_block(m, r);
    case GS_REC_SCAN_END:
        return gs_advance_time(m, r->u.scan_end.t_end) ? -1 : gs_on_scan_end(m, r);
    /* the caching allocator: a snapshot's time is applied with it; history
     * times are the past */
    case GS_REC_POOL_SNAPSHOT:
        return gs_on_pool_snapshot(m, r);
    case GS_REC_POOL_SEGMENT:
        return gs_on_pool_segment(m, r);
    case GS_REC_POOL_BLOCK:
        return gs_on_pool_block(m, r);
    case GS_REC_POOL_EVENT:
        return gs_on_pool_event(m, r);
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
    gs_pool_finish(m);
    gs_sites_finish(m);
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
    for (int i = 0; i <= GS_MC__N; i++)
        gs_tbuckets_free(&m->peak_tb[i]);
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
    for (size_t i = 0; i < m->pycap; i++) {
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
    gs_pool_free(m);
    memset(m, 0, sizeof *m);
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
    /* a site's axes span several lines, and gs_site_change reads each
     * axis's last_cp near its end whenever a checkpoint has passed */
    const char *ax = (const char *)&m->site_ax[(size_t)(s - 1) * GS_AXIS__N];
    for (size_t o = 0; o < GS_AXIS__N * sizeof *m->site_ax; o += 64)
        __builtin_prefetch(ax + o);
    __builtin_prefetch(ax + GS_AXIS__N * sizeof *m->site_ax - 1); /* unaligned: one more line */
}
