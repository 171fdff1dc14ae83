/*
 * The replay's insides, shared by its files and by nothing else (model.h is
 * the interface):
 *
 *   model.c         the dispatch: one record to its handler; init, finish,
 *                   free, prefetch
 *   model_live.c    the live set, the per-kind totals, the sites, and the
 *                   hot records (ALLOC, FREE, REALLOC, ALLOC_EX, FREE_EX)
 *   model_defs.c    definitions: stacks, modules, Python code objects, the
 *                   process
 *   model_events.c  samples, device samples, markers, pauses
 *   model_scan.c    the scans and their block maps
 *   model_pool.c    PyTorch's caching-allocator snapshots (POOL_*)
 *
 * Calls go one way: the dispatch calls the handlers; the scan, pool and
 * event handlers call the live set's and the sites' functions (a snapshot
 * frees and allocates torch-layer blocks); nothing calls the dispatch. The
 * helpers the hot records use from more than one file are inline here so
 * that each file's hot path is compiled whole.
 */
#ifndef GCSPY_MODEL_INT_H
#define GCSPY_MODEL_INT_H

#include "model.h"
#include "sitelog.h"

#define GS_MAX_ID (1u << 30)          /* stack and PYCODE ids we index directly */
#define GS_TICK_MIN_NS 10000000ull    /* first time-checkpoint spacing: 10 ms */

/* ---- the live set: linear probing, backward-shift deletion (model_live.c) ---- */

int gs_live_init(struct gs_livemap *h, size_t cap);
int gs_live_rehash(struct gs_livemap *h);
void gs_live_delete_at(struct gs_livemap *h, size_t i);

/* The slot of (addr, dom), or the empty slot where it would go. */
static inline size_t gs_live_probe(const struct gs_livemap *h, uint64_t addr, int dom)
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

/* ---- totals and sites (model_live.c) ---- */

/* Block sizes change totals as (size, sign): sign +1 for a block that
 * appears, -1 for one that goes. A damaged trace's size may be 2^63 or
 * more, which no int64_t delta can carry (negating it is undefined): the
 * byte sums wrap as unsigned, the block counts follow the sign. */
void gs_torch_account(struct gs_model *m, uint64_t size, int sign);
/* Takes block e out of the totals and its site's live bytes, at time t. */
void gs_unaccount(struct gs_model *m, const struct gs_live *e, uint64_t t);
/* The site of stack (made at time t, of memory category memcat, if new);
 * NULL when out of memory. */
struct gs_site *gs_site_get(struct gs_model *m, uint32_t stack, int memcat, uint64_t t);
void gs_sites_finish(struct gs_model *m);

/* A site's live bytes change by size (sign as gs_torch_account's) at time
 * t: the checkpoints that passed since its last event first see the value
 * it had (growth.h). */
static inline void gs_site_change(struct gs_model *m, struct gs_site *s, uint64_t t,
                                  uint64_t size, int sign)
{
    for (int a = 0; a < GS_AXIS__N; a++) {
        const struct gs_cps *c = &m->cps[a];
        /* the common case, no checkpoint since the site's last event, reads
         * only the hot part */
        if (c->n > s->last_cp[a]) {
            uint32_t k1 = gs_cps_upto(c, t);
            if (k1 > s->last_cp[a]) {
                struct gs_axis *ax = &m->site_ax[(size_t)(s - m->sites) * GS_AXIS__N + a];
                if (m->sitelog)
                    gs_sitelog_note(m->sitelog, a, (uint32_t)(s - m->sites), s->last_cp[a], k1,
                                    (double)s->live_bytes);
                gs_axis_flush(ax, c, k1, (double)s->live_bytes);
                s->last_cp[a] = k1;
            }
        }
    }
    /* Wrapping (not undefined) arithmetic: a damaged trace may hold sizes
     * whose sum leaves int64_t's range. */
    s->live_bytes = (int64_t)(sign > 0 ? (uint64_t)s->live_bytes + size
                                       : (uint64_t)s->live_bytes - size);
    if (sign > 0) {
        s->live_blocks++;
        s->allocs++;
        if ((uint64_t)s->live_bytes > s->peak_bytes)
            s->peak_bytes = (uint64_t)s->live_bytes;
    } else if (s->live_blocks) {
        s->live_blocks--;
    }
}

/* Time checkpoints fall on a schedule: 10 ms apart at first, then a
 * thousandth of the elapsed time, so a run of any length has a few
 * thousand (about 29,000 up to 2^64 ns). Each is placed when the trace's
 * clock first passes it. A trace's times may come within a step of 2^64
 * (a damaged or crafted one): the schedule then ends at UINT64_MAX, which
 * is never placed, so the next step can never wrap to a small time and the
 * loop always ends. */
static inline int gs_advance_time(struct gs_model *m, uint64_t t)
{
    if (t <= m->t_max)
        return 0;
    m->t_max = t;
    while (t >= m->next_tick && m->next_tick != UINT64_MAX) {
        uint64_t at = m->next_tick;
        if (gs_cps_add(&m->cps[GS_AXIS_TIME], at, (double)at / 1e9))
            return -1;
        uint64_t gap = at / 1000;
        if (gap < GS_TICK_MIN_NS)
            gap = GS_TICK_MIN_NS;
        m->next_tick = at > UINT64_MAX - gap ? UINT64_MAX : at + gap;
    }
    return 0;
}

/* ---- the handlers, one per record type ---- */

int gs_on_alloc(struct gs_model *m, const struct gs_record *r);      /* model_live.c */
void gs_on_free(struct gs_model *m, const struct gs_record *r);
int gs_on_realloc(struct gs_model *m, const struct gs_record *r);
int gs_on_alloc_ex(struct gs_model *m, const struct gs_record *r);
int gs_on_free_ex(struct gs_model *m, const struct gs_record *r);

char *gs_dupb(const struct gs_bytes *b);                             /* model_defs.c */
int gs_on_stack(struct gs_model *m, const struct gs_record *r);
int gs_on_module(struct gs_model *m, const struct gs_record *r);
void gs_on_unload(struct gs_model *m, const struct gs_record *r);
int gs_on_pycode(struct gs_model *m, const struct gs_record *r);
int gs_on_proc(struct gs_model *m, const struct gs_record *r);

void gs_on_sample(struct gs_model *m, const struct gs_record *r);    /* model_events.c */
int gs_on_dsample(struct gs_model *m, const struct gs_record *r);
int gs_on_marker(struct gs_model *m, const struct gs_record *r);
int gs_pause_add(struct gs_pauses *ps, uint64_t t0, uint64_t t1, uint32_t kind,
                 uint64_t a, uint64_t b);

int gs_on_scan_begin(struct gs_model *m, const struct gs_record *r); /* model_scan.c */
int gs_on_scan_block(struct gs_model *m, const struct gs_record *r);
int gs_on_scan_end(struct gs_model *m, const struct gs_record *r);

int gs_on_pool_snapshot(struct gs_model *m, const struct gs_record *r); /* model_pool.c */
int gs_on_pool_segment(struct gs_model *m, const struct gs_record *r);
int gs_on_pool_block(struct gs_model *m, const struct gs_record *r);
int gs_on_pool_event(struct gs_model *m, const struct gs_record *r);
void gs_pool_finish(struct gs_model *m);   /* an open snapshot at the end: incomplete */
void gs_pool_free(struct gs_model *m);

#endif /* GCSPY_MODEL_INT_H */
