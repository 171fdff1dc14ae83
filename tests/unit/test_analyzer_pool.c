/*
 * Unit tests of PyTorch-aware mode in the analyzer: caching-allocator
 * snapshots (POOL_* records) replayed into the torch layer of the model
 * (blocks appear, are kept, are freed by a later snapshot; a snapshot cut
 * short changes nothing; device totals count the segments, never the
 * tensors inside them), the latest snapshot's figures per device, malformed
 * snapshot records, and unreachable tensors (SCAN_BLOCK fn torch) reported
 * as labelled device leaks with their Python stack, through the text and
 * JSON reporters and the CI gate. Traces are built in memory with the trace
 * builder; the caching-allocator records, which it has no call for, are
 * encoded here with the codec's varints.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "check.h"
#include "gcspy/codec.h"
#include "model.h"
#include "trace_builder.h"
#include "../reports/report.h"

#define MS 1000000ull
#define MIB (1ull << 20)
#define S0 0x7f5000000000ull
#define S1 0x7f6000000000ull

/* A lengthed record whose body is the varints given. */
static void rec_u(struct gs_tb *tb, uint8_t type, size_t n, const uint64_t *v)
{
    uint8_t body[16 * GS_VARINT_MAX], *p = body;
    cr_assert(n <= 16);
    for (size_t i = 0; i < n; i++)
        p = gs_put_u(p, v[i]);
    cr_assert_eq(gs_tb_lengthed(tb, type, body, (size_t)(p - body)), 0);
}

#define REC(tb, type, ...)                                                              \
    rec_u(tb, type, sizeof (const uint64_t[]){ __VA_ARGS__ } / sizeof(uint64_t),        \
          (const uint64_t[]){ __VA_ARGS__ })
#define SNAP(tb, id, t, why, nseg, nblk, nev) \
    REC(tb, GS_REC_POOL_SNAPSHOT, id, t, why, nseg, nblk, nev)
#define SEG(tb, id, dev, addr, size, pool) \
    REC(tb, GS_REC_POOL_SEGMENT, id, dev, addr, size, 0, pool)
#define BLK(tb, id, addr, size, req, state, stack) \
    REC(tb, GS_REC_POOL_BLOCK, id, addr, size, req, state, stack)
#define EV(tb, id, t, dev, action, addr, size, stack) \
    REC(tb, GS_REC_POOL_EVENT, id, t, dev, action, addr, size, 0, stack)

/* Feeds every record of a builder-made trace to m (then finishes it), as
 * the analysis does; frees the builder. */
static void feed_tb(struct gs_model *m, struct gs_tb *tb)
{
    struct gs_analyze_opts o;
    gs_analyze_defaults(&o);
    cr_assert_eq(gs_model_init(m, &o.model), 0);
    size_t len;
    uint8_t *d = gs_tb_data(tb, &len);
    cr_assert_not_null(d);
    char err[256];
    struct gs_reader *r = gs_reader_open_mem(d, len, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct gs_record rec;
    int rc;
    while ((rc = gs_reader_next(r, &rec)) == GS_READ_OK)
        cr_assert_eq(gs_model_feed(m, &rec), 0);
    cr_assert_eq(rc, GS_READ_EOF, "%s", gs_reader_error(r));
    cr_assert_eq(gs_model_finish(m), 0);
    gs_reader_close(r);
    gs_tb_free(tb);
}

static void proc_start(struct gs_tb *tb)
{
    static const char argv[] = "python3\0train.py";
    gs_tb_process_start(tb, &(struct gs_tb_proc){ .pid = 77, .ppid = 1, .exe = "/usr/bin/python3",
                                                  .argv = argv, .argv_len = sizeof argv - 1,
                                                  .host = "h", .version = "0.1.0" });
    gs_tb_thread_start(tb, 1, 77, 0); /* the thread the events name, defined first */
}

static uint64_t site_bytes(const struct gs_model *m, uint32_t stack)
{
    cr_assert(stack < m->site_of_cap && m->site_of[stack]);
    return (uint64_t)m->sites[m->site_of[stack] - 1].live_bytes;
}

static const struct gs_live *torch_at(const struct gs_model *m, uint64_t addr)
{
    return gs_model_live_find(m, addr, GS_DOM_TORCH);
}

/* Segments S0 (8 MiB, device 0) and S1 (2 MiB, device 1) from cudaMalloc,
 * then up to three snapshots:
 *   1 (10 ms, scan)  S0: A 1 MiB active (stack 1), B 3 MiB pending free
 *                    (stack 2), 4 MiB cached free; S1: D 2 MiB active
 *                    (stack 1); history: device 0 alloc and free_requested,
 *                    device 1 segment_alloc
 *   2 (20 ms, exit)  S0: A unchanged, E 7 MiB active (stack 2) where B was;
 *                    S1: 2 MiB cached free (D freed); a host allocation
 *                    between its records
 *   3 (30 ms)        announces a segment and a block; only the segment comes */
static struct gs_tb *scene(int snapshots)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_stack(tb, 2, 0, 0x402000);
    gs_tb_stack(tb, 3, 0, 0x403000);
    gs_tb_alloc_ex(tb, 1 * MS, 1, S0, 8 * MIB, 3, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 0);
    gs_tb_alloc_ex(tb, 2 * MS, 1, S1, 2 * MIB, 3, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 1, 0, 0);
    SNAP(tb, 1, 10 * MS, GS_POOL_WHY_SCAN, 2, 4, 3);
    SEG(tb, 1, 0, S0, 8 * MIB, GS_POOL_LARGE);
    BLK(tb, 1, S0, 1 * MIB, 1000000, GS_PBLK_ACTIVE, 1);
    BLK(tb, 1, S0 + 1 * MIB, 3 * MIB, 3 * MIB, GS_PBLK_PENDING_FREE, 2);
    BLK(tb, 1, S0 + 4 * MIB, 4 * MIB, 0, GS_PBLK_INACTIVE, 0);
    SEG(tb, 1, 1, S1, 2 * MIB, GS_POOL_SMALL);
    BLK(tb, 1, S1, 2 * MIB, 2000000, GS_PBLK_ACTIVE, 1);
    EV(tb, 1, 3 * MS, 0, GS_PEV_ALLOC, S0, 1 * MIB, 1);
    EV(tb, 1, 4 * MS, 0, GS_PEV_FREE_REQUESTED, S0 + 1 * MIB, 3 * MIB, 2);
    EV(tb, 1, 0, 1, GS_PEV_SEGMENT_ALLOC, S1, 2 * MIB, 0);
    if (snapshots >= 2) {
        SNAP(tb, 2, 20 * MS, GS_POOL_WHY_EXIT, 2, 3, 0);
        SEG(tb, 2, 0, S0, 8 * MIB, GS_POOL_LARGE);
        gs_tb_alloc(tb, 20 * MS, 1, 0x1000, 64, 1);
        BLK(tb, 2, S0, 1 * MIB, 1000000, GS_PBLK_ACTIVE, 1);
        BLK(tb, 2, S0 + 1 * MIB, 7 * MIB, 7000000, GS_PBLK_ACTIVE, 2);
        SEG(tb, 2, 1, S1, 2 * MIB, GS_POOL_SMALL);
        BLK(tb, 2, S1, 2 * MIB, 0, GS_PBLK_INACTIVE, 0);
    }
    if (snapshots >= 3) {
        SNAP(tb, 3, 30 * MS, GS_POOL_WHY_API, 1, 1, 0);
        SEG(tb, 3, 0, S0, 8 * MIB, GS_POOL_LARGE);
    }
    return tb;
}

/* The device totals hold the two segments and nothing else. */
static void segments_only(const struct gs_model *m)
{
    cr_assert_eq(m->live_bytes[GS_MC_DEVICE], 10 * MIB);
    cr_assert_eq(m->live_blocks[GS_MC_DEVICE], 2);
    cr_assert_eq(gs_model_peak(m, GS_MC_DEVICE), 10 * MIB);
    cr_assert_eq(gs_model_peak(m, GS_MC__N), 10 * MIB + (m->live_bytes[GS_MC_HOST] ? 64 : 0));
    const struct gs_live *seg = gs_model_live_find(m, S0, GS_DOM_CUDA);
    cr_assert_not_null(seg);
    cr_assert_eq(seg->size, 8 * MIB);
    cr_assert_eq(m->allocs, 2 + (m->live_bytes[GS_MC_HOST] ? 1 : 0)); /* no snapshot block */
}

Test(pool, snapshot_fills_the_torch_layer_with_active_and_pending_blocks)
{
    struct gs_model m;
    feed_tb(&m, scene(1));
    cr_assert_eq(m.bad_records, 0);
    cr_assert_eq(m.pool_snapshots, 1);
    cr_assert_eq(m.pool_incomplete, 0);
    cr_assert_eq(m.torch_live_blocks, 3);
    cr_assert_eq(m.torch_live_bytes, 6 * MIB);
    cr_assert_eq(m.torch_peak_bytes, 6 * MIB);
    segments_only(&m);

    const struct gs_live *a = torch_at(&m, S0);
    cr_assert_not_null(a);
    cr_assert_eq(a->size, 1 * MIB);
    cr_assert_eq(a->stack, 1);
    cr_assert_eq(a->t, 10 * MS);
    cr_assert_eq(a->kind, GS_MEM_DEVICE);
    cr_assert_eq(a->fn, GS_FN_TORCH);
    cr_assert_eq(a->device, 0);
    const struct gs_live *b = torch_at(&m, S0 + 1 * MIB);
    cr_assert_not_null(b);
    cr_assert_eq(b->size, 3 * MIB);
    cr_assert_eq(b->stack, 2);
    cr_assert_null(torch_at(&m, S0 + 4 * MIB)); /* cached free: not a tensor */
    const struct gs_live *d = torch_at(&m, S1);
    cr_assert_not_null(d);
    cr_assert_eq(d->device, 1);
    cr_assert_eq(site_bytes(&m, 1), 3 * MIB);
    cr_assert_eq(site_bytes(&m, 2), 3 * MIB);

    cr_assert_eq(m.npool, 2);
    const struct gs_poolfig *p = &m.pool[0];
    cr_assert_eq(p->device, 0);
    cr_assert_eq(p->snap_id, 1);
    cr_assert_eq(p->t, 10 * MS);
    cr_assert_eq(p->reason, GS_POOL_WHY_SCAN);
    cr_assert_eq(p->segments, 1);
    cr_assert_eq(p->reserved, 8 * MIB);
    cr_assert_eq(p->active_blocks, 1);
    cr_assert_eq(p->active_bytes, 1 * MIB);
    cr_assert_eq(p->requested, 1000000);
    cr_assert_eq(p->pending_blocks, 1);
    cr_assert_eq(p->pending_bytes, 3 * MIB);
    cr_assert_eq(p->inactive_blocks, 1);
    cr_assert_eq(p->inactive_bytes, 4 * MIB);
    cr_assert_eq(p->largest_inactive, 4 * MIB);
    cr_assert_eq(p->events, 2);
    cr_assert_eq(p->events_by[GS_PEV_ALLOC], 1);
    cr_assert_eq(p->events_by[GS_PEV_FREE_REQUESTED], 1);
    cr_assert_eq(p->events_by[GS_PEV_SEGMENT_ALLOC], 0);
    p = &m.pool[1];
    cr_assert_eq(p->device, 1);
    cr_assert_eq(p->segments, 1);
    cr_assert_eq(p->reserved, 2 * MIB);
    cr_assert_eq(p->active_blocks, 1);
    cr_assert_eq(p->active_bytes, 2 * MIB);
    cr_assert_eq(p->requested, 2000000);
    cr_assert_eq(p->pending_blocks + p->inactive_blocks, 0);
    cr_assert_eq(p->events, 1);
    cr_assert_eq(p->events_by[GS_PEV_SEGMENT_ALLOC], 1);
    gs_model_free(&m);
}

Test(pool, a_later_snapshot_keeps_replaces_and_frees_blocks)
{
    struct gs_model m;
    feed_tb(&m, scene(2));
    cr_assert_eq(m.bad_records, 0);
    cr_assert_eq(m.pool_snapshots, 2);
    cr_assert_eq(m.torch_live_blocks, 2);
    cr_assert_eq(m.torch_live_bytes, 8 * MIB);
    cr_assert_eq(m.torch_peak_bytes, 8 * MIB);
    segments_only(&m);
    const struct gs_live *a = torch_at(&m, S0);
    cr_assert_not_null(a);
    cr_assert_eq(a->t, 10 * MS); /* the same block: kept, with its time */
    const struct gs_live *e = torch_at(&m, S0 + 1 * MIB);
    cr_assert_not_null(e);
    cr_assert_eq(e->size, 7 * MIB); /* not B: a new block at its address */
    cr_assert_eq(e->t, 20 * MS);
    cr_assert_eq(e->stack, 2);
    cr_assert_null(torch_at(&m, S1));
    cr_assert_eq(site_bytes(&m, 1), 1 * MIB + 64); /* A, and the host block */
    cr_assert_eq(site_bytes(&m, 2), 7 * MIB);

    cr_assert_eq(m.npool, 2);
    cr_assert_eq(m.pool[0].snap_id, 2);
    cr_assert_eq(m.pool[0].t, 20 * MS);
    cr_assert_eq(m.pool[0].reason, GS_POOL_WHY_EXIT);
    cr_assert_eq(m.pool[0].active_blocks, 2);
    cr_assert_eq(m.pool[0].active_bytes, 8 * MIB);
    cr_assert_eq(m.pool[0].requested, 8000000);
    cr_assert_eq(m.pool[0].pending_blocks, 0);
    cr_assert_eq(m.pool[0].inactive_blocks, 0);
    cr_assert_eq(m.pool[0].largest_inactive, 0);
    /* no events of its own: the history is the sum over snapshots */
    cr_assert_eq(m.pool[0].events, 2);
    cr_assert_eq(m.pool[0].events_by[GS_PEV_ALLOC], 1);
    cr_assert_eq(m.pool[1].active_blocks, 0);
    cr_assert_eq(m.pool[1].inactive_blocks, 1);
    cr_assert_eq(m.pool[1].inactive_bytes, 2 * MIB);
    cr_assert_eq(m.pool[1].largest_inactive, 2 * MIB);
    cr_assert_eq(m.pool[1].events_by[GS_PEV_SEGMENT_ALLOC], 1);
    gs_model_free(&m);
}

Test(pool, a_snapshot_cut_short_changes_nothing)
{
    struct gs_model m;
    feed_tb(&m, scene(3));
    cr_assert_eq(m.bad_records, 0);
    cr_assert_eq(m.pool_snapshots, 2);
    cr_assert_eq(m.pool_incomplete, 1);
    cr_assert_eq(m.torch_live_blocks, 2);
    cr_assert_eq(m.torch_live_bytes, 8 * MIB);
    cr_assert_eq(m.pool[0].snap_id, 2);
    cr_assert_eq(m.pool[0].segments, 1);
    cr_assert_eq(m.pool[0].reserved, 8 * MIB);
    cr_assert_eq(m.npool, 2);
    gs_model_free(&m);
}

/* One 1 MiB tensor at S0 in each of n snapshots, 10 ms apart, with stack 1,
 * then 2 (another tensor in the same place), then 0 (PyTorch recorded none). */
static struct gs_tb *restacked(uint64_t n)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_stack(tb, 2, 0, 0x402000);
    for (uint64_t k = 1; k <= n; k++) {
        SNAP(tb, k, k * 10 * MS, GS_POOL_WHY_API, 1, 2, 0);
        SEG(tb, k, 0, S0, 2 * MIB, GS_POOL_LARGE);
        BLK(tb, k, S0, 1 * MIB, 1 * MIB, GS_PBLK_ACTIVE, k == 3 ? 0 : k);
        BLK(tb, k, S0 + 1 * MIB, 1 * MIB, 0, GS_PBLK_INACTIVE, 0);
    }
    return tb;
}

Test(pool, a_block_at_the_same_place_with_another_stack_is_a_new_tensor)
{
    struct gs_model m;
    feed_tb(&m, restacked(1));
    cr_assert_eq(torch_at(&m, S0)->stack, 1);
    cr_assert_eq(torch_at(&m, S0)->t, 10 * MS);
    gs_model_free(&m);
    feed_tb(&m, restacked(3));
    const struct gs_live *e = torch_at(&m, S0);
    cr_assert_not_null(e);
    cr_assert_eq(e->stack, 2);
    cr_assert_eq(e->t, 20 * MS); /* replaced at 20 ms, kept at 30 ms */
    cr_assert_eq(m.torch_live_blocks, 1);
    cr_assert_eq(m.torch_live_bytes, 1 * MIB);
    cr_assert_eq(site_bytes(&m, 1), 0);
    cr_assert_eq(site_bytes(&m, 2), 1 * MIB);
    cr_assert_eq(m.pool_snapshots, 3);
    gs_model_free(&m);
}

Test(pool, malformed_snapshot_records_are_counted_and_left_out)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb);
    gs_tb_stack(tb, 1, 0, 0x401000);
    SEG(tb, 9, 0, S0, 2 * MIB, GS_POOL_LARGE);                      /* 1: no snapshot open */
    SNAP(tb, 1, 10 * MS, GS_POOL_WHY_SCAN, 1, 4, 1);
    BLK(tb, 1, S0, 1 * MIB, 0, GS_PBLK_ACTIVE, 1);                  /* 2: before any segment */
    SEG(tb, 1, 0, S0, 2 * MIB, GS_POOL_LARGE);
    SEG(tb, 1, 0, S1, 2 * MIB, GS_POOL_LARGE);                      /* 3: one more than announced */
    BLK(tb, 2, S0, 1 * MIB, 0, GS_PBLK_ACTIVE, 1);                  /* 4: another snapshot's id */
    BLK(tb, 1, S0 + 1 * MIB, 2 * MIB, 0, GS_PBLK_ACTIVE, 1);        /* 5: runs past the segment */
    BLK(tb, 1, S0, 1 * MIB, 0, 7, 1);                               /* 6: unknown state */
    BLK(tb, 1, S0 + 1 * MIB, 1 * MIB, 0, GS_PBLK_ACTIVE, 99);       /* 7: undefined stack */
    EV(tb, 1, 0, 0, 200, S0, 1, 1);                                 /* unknown action: other */
    struct gs_model m;
    feed_tb(&m, tb);
    cr_assert_eq(m.bad_records, 7);
    cr_assert_eq(m.pool_snapshots, 1);
    cr_assert_eq(m.torch_live_blocks, 1);
    const struct gs_live *e = torch_at(&m, S0 + 1 * MIB);
    cr_assert_not_null(e);
    cr_assert_eq(e->stack, 0);
    cr_assert_eq(m.pool[0].segments, 1);
    cr_assert_eq(m.pool[0].active_blocks, 1);
    cr_assert_eq(m.pool[0].events_by[GS_PEV_OTHER], 1);
    gs_model_free(&m);
}

/* ---- unreachable tensors, through the analysis and the reporters ---- */

/* Python stacks: 1 main at train.py:40, 2 forward at train.py:12 (called
 * from main); 3 a native frame for the segments. S0 (20 MiB) holds tensor A
 * (4 MiB, forward), tensor B (8 MiB, main) and 8 MiB cached free; S1 (2 MiB,
 * allocated with no stack) is exactly one tensor C, also with no stack. The
 * exit scan finds A and C unreachable: C's scan block has the address, size
 * and stack of its segment, and must still not be taken for it. */
static struct gs_result *tensor_leak_result(struct gs_symbolizer *sym)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb);
    gs_tb_pycode(tb, 1, "train.py", "main", 30);
    gs_tb_pycode(tb, 2, "train.py", "forward", 10);
    gs_tb_stack(tb, 1, 0, GS_IP_PYFRAME | (1ull << 32) | 40);
    gs_tb_stack(tb, 2, 1, GS_IP_PYFRAME | (2ull << 32) | 12);
    gs_tb_stack(tb, 3, 0, 0x401000);
    gs_tb_alloc_ex(tb, 1 * MS, 1, S0, 20 * MIB, 3, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 0);
    gs_tb_alloc_ex(tb, 1 * MS, 1, S1, 2 * MIB, 0, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 0);
    SNAP(tb, 1, 5 * MS, GS_POOL_WHY_SCAN, 2, 4, 0);
    SEG(tb, 1, 0, S0, 20 * MIB, GS_POOL_LARGE);
    BLK(tb, 1, S0, 4 * MIB, 4000000, GS_PBLK_ACTIVE, 2);
    BLK(tb, 1, S0 + 4 * MIB, 8 * MIB, 8 * MIB, GS_PBLK_ACTIVE, 1);
    BLK(tb, 1, S0 + 12 * MIB, 8 * MIB, 0, GS_PBLK_INACTIVE, 0);
    SEG(tb, 1, 0, S1, 2 * MIB, GS_POOL_LARGE);
    BLK(tb, 1, S1, 2 * MIB, 2 * MIB, GS_PBLK_ACTIVE, 0);
    gs_tb_scan_begin(tb, 1, 6 * MS, GS_SCAN_TRIG_EXIT, 0);
    REC(tb, GS_REC_SCAN_BLOCK, 1, S0, 4 * MIB, 2, GS_MEM_DEVICE, GS_CLASS_DEFINITE, GS_FN_TORCH);
    REC(tb, GS_REC_SCAN_BLOCK, 1, S1, 2 * MIB, 0, GS_MEM_DEVICE, GS_CLASS_DEFINITE, GS_FN_TORCH);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 1, .t_start = 6 * MS,
                                                 .t_end = 7 * MS });
    gs_tb_trace_end(tb, 8 * MS, 2, 0, 22 * MIB, 2, 22 * MIB);
    size_t len;
    uint8_t *d = gs_tb_data(tb, &len);
    cr_assert_not_null(d);
    struct gs_result *r = NULL;
    char err[256];
    cr_assert_eq(gs_analyze_mem(d, len, "torch.trace", NULL, sym, &r, err, sizeof err), 0, "%s",
                 err);
    cr_assert_not(r->malformed, "%s", r->problem); /* a valid trace, as the shim writes them */
    gs_tb_free(tb);
    return r;
}

Test(pool, unreachable_tensors_are_labelled_device_leaks_at_their_python_line)
{
    struct gs_symbolizer *sym = gs_sym_new(1);
    struct gs_result *r = tensor_leak_result(sym);
    cr_assert(r->complete);
    cr_assert_eq(r->bad_records, 0);
    cr_assert_eq(r->freed_after_scan, 0);
    const struct gs_leak *a = NULL, *c = NULL;
    for (uint32_t i = 0; i < r->nleaks; i++) {
        const struct gs_leak *l = &r->leaks[i];
        /* a live tensor the scan did not report is no group: its segment
         * holds the bytes */
        cr_assert(!(l->torch && l->cls == GS_RC_NOT_FREED), "live tensor listed as not freed");
        if (l->torch && l->stack_id == 2)
            a = l;
        if (l->torch && l->stack_id == 0)
            c = l;
    }
    cr_assert_eq(r->nleaks, 4); /* A, C, and the two segments */
    cr_assert_not_null(a);
    cr_assert_eq(a->cls, GS_CLASS_DEFINITE);
    cr_assert_eq(a->mem, GS_MC_DEVICE);
    cr_assert_eq(a->bytes, 4 * MIB);
    cr_assert_eq(a->blocks, 1);
    cr_assert_eq(a->first_scan, 0);
    cr_assert_eq(a->st.n, 2);
    cr_assert(a->st.f[0].python);
    cr_assert_str_eq(a->st.f[0].function, "forward");
    cr_assert_str_eq(a->st.f[0].file, "train.py");
    cr_assert_eq(a->st.f[0].line, 12);
    cr_assert_str_eq(a->st.f[1].function, "main");
    cr_assert_eq(a->st.f[1].line, 40);
    cr_assert_not_null(c);
    cr_assert_eq(c->cls, GS_CLASS_DEFINITE);
    cr_assert_eq(c->bytes, 2 * MIB);
    /* the segments: not freed, unlabelled, not classified by C's block */
    cr_assert_eq(r->summary[GS_RC_NOT_FREED][GS_MC_DEVICE].bytes, 22 * MIB);
    cr_assert_eq(r->summary[GS_RC_NOT_FREED][GS_MC_DEVICE].blocks, 2);
    cr_assert_eq(r->summary[GS_CLASS_DEFINITE][GS_MC_DEVICE].bytes, 6 * MIB);
    cr_assert_eq(r->summary[GS_CLASS_DEFINITE][GS_MC_DEVICE].blocks, 2);
    cr_assert_eq(r->peak_bytes[GS_MC_DEVICE], 22 * MIB);
    cr_assert_eq(r->live_bytes_end[GS_MC_DEVICE], 22 * MIB);
    cr_assert_eq(r->torch_live_bytes, 14 * MIB);
    cr_assert_eq(r->torch_live_blocks, 3);
    cr_assert_eq(r->npool, 1);
    cr_assert_eq(r->pool[0].reserved, 22 * MIB);
    cr_assert_eq(r->pool[0].active_bytes, 14 * MIB);
    cr_assert_eq(r->pool[0].requested, 4000000 + 8 * MIB + 2 * MIB);
    cr_assert_eq(r->pool[0].inactive_bytes, 8 * MIB);
    gs_result_free(r);
    gs_sym_free(sym);
}

Test(pool, the_gate_counts_tensor_leaks_as_device_memory)
{
    struct gs_result *r = tensor_leak_result(NULL);
    struct gs_check_limits l;
    struct gs_verdict v;
    gs_check_defaults(&l);
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.status, 1, "%s", v.line);
    cr_assert_eq(v.device_bytes, 6 * MIB);
    cr_assert_eq(v.leak_bytes, 0);
    cr_assert(strstr(v.detail, "4194304 bytes in 1 blocks, definite site (definite 4194304/1), "
                               "device, tensor (caching allocator block)"), "%s", v.detail);
    l.max_device_bytes = 6 * MIB;
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.status, 0, "%s", v.line);
    gs_result_free(r);
}

static char *report_to_string(const struct gs_reporter *rep, const struct gs_result *r)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    struct gs_report_item it = { .trace = "torch.trace", .r = r };
    struct gs_report_opts o = { .show_reachable = 1 };
    cr_assert_eq(gs_report_write(rep, f, &it, 1, &o), 0);
    cr_assert_eq(fclose(f), 0);
    return buf;
}

Test(pool, reports_label_the_tensors_and_show_the_allocator_figures)
{
    struct gs_result *r = tensor_leak_result(NULL);
    char *t = report_to_string(&gs_reporter_text, r);
    /* one row per site, the classes as columns */
    cr_assert(strstr(t, "           4.0 MiB/1                -                -                -"
                        "                -  device, no frame of the user's code\n       worst "
                        "class definite, largest block 4.0 MiB, tensor (caching allocator "
                        "block)\n"), "%s", t);
    cr_assert(strstr(t, "                -       20.0 MiB/1  device, no frame of the user's code\n"
                        "       worst class not-freed, largest block 20.0 MiB\n"), "%s", t);
    cr_assert(strstr(t, "                -        2.0 MiB/1  device, no frame of the user's code\n"
                        "       worst class not-freed, largest block 2.0 MiB\n"), "%s", t);
    cr_assert(strstr(t, "    1. leak 4.0 MiB in 1 block, definite, device, at a stack not "
                        "symbolized\n"), "%s", t);
    cr_assert(strstr(t, "     PyTorch caching allocator: latest of 1 snapshot; tensors allocated "
                        "inside segments at the end 14.0 MiB in 3 blocks, peak 14.0 MiB\n"),
              "%s", t);
    cr_assert(strstr(t, "       device 0 (snapshot at 5.0 ms, scan): reserved 22.0 MiB in 2 "
                        "segments; allocated 14.0 MiB in 3 blocks (requested 13.8 MiB); pending "
                        "free 0 bytes; cached free 8.0 MiB in 1 block, largest 8.0 MiB; "
                        "history: 0 events\n"), "%s", t);
    free(t);
    char *j = report_to_string(&gs_reporter_json, r);
    cr_assert(strstr(j, "\"allocator\": \"torch\""), "%s", j);
    cr_assert(strstr(j, "\"allocator\": null"));
    cr_assert(strstr(j, "\"caching_allocator\": {"));
    cr_assert(strstr(j, "\"reserved_bytes\": 23068672,"));
    cr_assert(strstr(j, "\"allocated_bytes\": 14680064,"));
    cr_assert(strstr(j, "\"cached_free_bytes\": 8388608,"));
    free(j);
    gs_result_free(r);
}
