/*
 * Unit tests of the analyzer: the replay model (live set, realloc, domains,
 * scans and their reconciliation with the end state), growth detection,
 * pause statistics and MMU, heap fragmentation, the bounded time series and
 * marker log, suppressions (LeakSanitizer's matching rules), the CI gate's
 * judgement, the JSON writer, and the format's promises (validate.h): a
 * valid trace has no problem, a malformed one is named at its first bad
 * record, a cut trace is incomplete but not malformed. Records are fed to the model directly, or
 * traces are built in memory with the trace builder and analysed whole.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "check.h"
#include "findings.h"
#include "cli/cmdutil.h"
#include "frag.h"
#include "sitelog.h"
#include "gcspy/codec.h"
#include "model.h"
#include "suppress.h"
#include "trace_builder.h"
#include "../reports/jsonw.h"

#define MS 1000000ull

/* ---- helpers ---- */

static struct gs_record rec_alloc(uint64_t t, uint64_t addr, uint64_t size, uint64_t stack)
{
    struct gs_record r;
    memset(&r, 0, sizeof r);
    r.type = GS_REC_ALLOC;
    r.t = t;
    r.u.alloc.addr = addr;
    r.u.alloc.size = size;
    r.u.alloc.stack = stack;
    return r;
}

static struct gs_record rec_alloc_ex(uint64_t t, uint64_t addr, uint64_t size, uint64_t stack,
                                     uint64_t kind, uint64_t fn)
{
    struct gs_record r = rec_alloc(t, addr, size, stack);
    r.type = GS_REC_ALLOC_EX;
    r.u.alloc.kind = kind;
    r.u.alloc.fn = fn;
    return r;
}

static struct gs_record rec_free(uint64_t t, uint64_t addr)
{
    struct gs_record r;
    memset(&r, 0, sizeof r);
    r.type = GS_REC_FREE;
    r.t = t;
    r.u.free.addr = addr;
    return r;
}

static struct gs_record rec_free_ex(uint64_t t, uint64_t addr, uint64_t kind, uint64_t fn)
{
    struct gs_record r = rec_free(t, addr);
    r.type = GS_REC_FREE_EX;
    r.u.free.kind = kind;
    r.u.free.fn = fn;
    return r;
}

static struct gs_record rec_marker(uint64_t t, uint64_t kind, const char *label)
{
    struct gs_record r;
    memset(&r, 0, sizeof r);
    r.type = GS_REC_MARKER;
    r.t = t;
    r.u.marker.kind = kind;
    r.u.marker.label.p = (const uint8_t *)label;
    r.u.marker.label.n = strlen(label);
    return r;
}

static void feed(struct gs_model *m, struct gs_record r)
{
    cr_assert_eq(gs_model_feed(m, &r), 0);
}

static void model_new(struct gs_model *m)
{
    struct gs_analyze_opts o;
    gs_analyze_defaults(&o);
    cr_assert_eq(gs_model_init(m, &o.model), 0);
}

/* Analyses a builder-made trace; frees the builder. */
static struct gs_result *analyze_tb(struct gs_tb *tb, const struct gs_analyze_opts *o,
                                    struct gs_symbolizer *sym)
{
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    cr_assert_not_null(data);
    struct gs_result *r = NULL;
    char err[512];
    int rc = gs_analyze_mem(data, len, "mem.trace", o, sym, &r, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    gs_tb_free(tb);
    return r;
}

static void proc_start(struct gs_tb *tb, uint64_t pid)
{
    gs_tb_process_start(tb, &(struct gs_tb_proc){ .pid = pid, .ppid = 1, .exe = "/bin/t",
                                                  .argv = "t", .argv_len = 1, .host = "h",
                                                  .version = "0.1.0" });
}

/* A trace builder that has started process 3 and its thread 1. */
static struct gs_tb *tb_one_thread(void)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 3);
    gs_tb_thread_start(tb, 1, 3, 0);
    return tb;
}

static const struct gs_leak *find_leak(const struct gs_result *r, int cls, uint32_t stack)
{
    for (uint32_t i = 0; i < r->nleaks; i++)
        if (r->leaks[i].cls == cls && r->leaks[i].stack_id == stack)
            return &r->leaks[i];
    return NULL;
}

/* ---- live set ---- */

Test(model, live_set_matches_a_reference_under_churn)
{
    /* addresses chosen to collide in the table (same low bits), freed in an
     * order that exercises backward-shift deletion */
    struct gs_model m;
    model_new(&m);
    enum { N = 20000 };
    static uint64_t size[N];
    static int live[N];
    uint64_t bytes = 0, blocks = 0;
    unsigned seed = 12345;
    for (int step = 0; step < 200000; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % N);
        uint64_t addr = 0x10000000ull + (uint64_t)k * 0x100000ull;
        if (live[k]) {
            feed(&m, rec_free((uint64_t)step, addr));
            bytes -= size[k];
            blocks--;
            live[k] = 0;
        } else {
            size[k] = 16 + (seed >> 20) % 1000;
            feed(&m, rec_alloc((uint64_t)step, addr, size[k], 1 + (uint64_t)(k % 7)));
            bytes += size[k];
            blocks++;
            live[k] = 1;
        }
    }
    cr_assert_eq(m.live.n, blocks);
    cr_assert_eq(m.live_bytes[GS_MC_HOST], bytes);
    cr_assert_eq(m.live_blocks[GS_MC_HOST], blocks);
    for (int k = 0; k < N; k++) {
        const struct gs_live *e = gs_model_live_find(&m, 0x10000000ull + (uint64_t)k * 0x100000ull,
                                                     GS_DOM_HOST);
        cr_assert_eq(e != NULL, live[k] != 0, "block %d", k);
        if (e)
            cr_assert_eq(e->size, size[k]);
    }
    cr_assert_eq(m.unmatched_frees, 0);
    gs_model_free(&m);
}

Test(model, free_of_unknown_address_and_double_alloc_are_counted)
{
    struct gs_model m;
    model_new(&m);
    feed(&m, rec_free(1, 0x5000));
    feed(&m, rec_alloc(2, 0x6000, 10, 1));
    feed(&m, rec_alloc(3, 0x6000, 30, 2));
    cr_assert_eq(m.unmatched_frees, 1);
    cr_assert_eq(m.replaced_allocs, 1);
    cr_assert_eq(m.live.n, 1);
    cr_assert_eq(m.live_bytes[GS_MC_HOST], 30);
    cr_assert_eq(m.sites[m.site_of[1] - 1].live_bytes, 0);
    cr_assert_eq(m.sites[m.site_of[2] - 1].live_bytes, 30);
    gs_model_free(&m);
}

Test(model, realloc_in_place_moves_the_block_to_the_new_stack)
{
    struct gs_model m;
    model_new(&m);
    feed(&m, rec_alloc(1, 0x7000, 100, 1));
    struct gs_record r = rec_alloc(2, 0x7000, 250, 2);
    r.type = GS_REC_REALLOC;
    feed(&m, r);
    const struct gs_live *e = gs_model_live_find(&m, 0x7000, GS_DOM_HOST);
    cr_assert_not_null(e);
    cr_assert_eq(e->size, 250);
    cr_assert_eq(e->stack, 2);
    cr_assert_eq(m.live_bytes[GS_MC_HOST], 250);
    cr_assert_eq(m.allocs, 1);
    cr_assert_eq(m.reallocs, 1);
    cr_assert_eq(gs_model_peak(&m, GS_MC_HOST), 250);
    gs_model_free(&m);
}

Test(model, torch_blocks_and_cuda_segments_are_separate_layers)
{
    struct gs_model m;
    model_new(&m);
    feed(&m, rec_alloc_ex(1, 0x7f0000000000ull, 1 << 20, 1, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME));
    feed(&m, rec_alloc_ex(2, 0x7f0000000000ull, 4096, 2, GS_MEM_DEVICE, GS_FN_TORCH));
    cr_assert_eq(m.live.n, 2);
    cr_assert_eq(m.replaced_allocs, 0);
    /* the PyTorch block lies inside the segment: device totals hold the
     * segment alone, the torch layer its own */
    cr_assert_eq(m.live_bytes[GS_MC_DEVICE], 1 << 20);
    cr_assert_eq(gs_model_peak(&m, GS_MC__N), 1 << 20);
    cr_assert_eq(m.torch_live_bytes, 4096);
    cr_assert_eq(m.torch_live_blocks, 1);
    feed(&m, rec_free_ex(3, 0x7f0000000000ull, GS_MEM_DEVICE, GS_FN_TORCH));
    cr_assert_eq(m.torch_live_bytes, 0);
    cr_assert_eq(m.torch_peak_bytes, 4096);
    cr_assert_eq(m.live_bytes[GS_MC_DEVICE], 1 << 20);
    cr_assert_not_null(gs_model_live_find(&m, 0x7f0000000000ull, GS_DOM_CUDA));
    cr_assert_null(gs_model_live_find(&m, 0x7f0000000000ull, GS_DOM_TORCH));
    /* a host free at that address is a different block */
    feed(&m, rec_free(4, 0x7f0000000000ull));
    cr_assert_eq(m.unmatched_frees, 1);
    gs_model_free(&m);
}

Test(model, inherited_blocks_are_live_but_not_allocations)
{
    struct gs_model m;
    model_new(&m);
    feed(&m, rec_alloc_ex(0, 0x1000, 64, 1, GS_MEM_HOST, GS_FN_INHERITED));
    feed(&m, rec_alloc(1, 0x2000, 32, 1));
    cr_assert_eq(m.allocs, 1);
    cr_assert_eq(m.bytes_allocated, 32);
    cr_assert_eq(m.live_bytes[GS_MC_HOST], 96);
    gs_model_free(&m);
}

/* ---- scans ---- */

Test(analyze, block_reallocated_after_the_scan_is_not_freed_not_leaked)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 5);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_stack(tb, 2, 0, 0x402000);
    gs_tb_alloc(tb, 1 * MS, 1, 0x1000, 64, 1);
    gs_tb_alloc(tb, 1 * MS, 1, 0x2000, 64, 1);
    gs_tb_scan_begin(tb, 1, 2 * MS, GS_SCAN_TRIG_PERIODIC, 0);
    gs_tb_scan_block(tb, 1, 0x1000, 64, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 1, 0x2000, 64, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 1, .t_start = 2 * MS,
                                                 .t_end = 3 * MS });
    /* 0x1000 freed and its address reused by another block */
    gs_tb_free_rec(tb, 4 * MS, 0x1000);
    gs_tb_alloc(tb, 5 * MS, 1, 0x1000, 64, 2);
    gs_tb_trace_end(tb, 6 * MS, 3, 1, 192, 2, 128);
    struct gs_result *r = analyze_tb(tb, NULL, NULL);
    cr_assert(r->complete);
    cr_assert_eq(r->summary[GS_CLASS_DEFINITE][GS_MC_HOST].blocks, 1);
    cr_assert_eq(r->summary[GS_RC_NOT_FREED][GS_MC_HOST].blocks, 1);
    cr_assert_not_null(find_leak(r, GS_RC_NOT_FREED, 2));
    cr_assert_eq(r->freed_after_scan, 1);
    gs_result_free(r);
}

/* The trace is in time order per address only: thread 2's records come
 * after thread 1's in the file, though its block was made while thread 1's
 * was live. Both are held at 20-25 ms, so the timeline's highest point is
 * the report's peak, 300 KB, in the bucket of 22 ms; a running total in file
 * order never passed 200 KB. */
Test(analyze, timeline_is_summed_by_time_not_in_file_order)
{
    struct gs_tb *tb = tb_one_thread();
    gs_tb_thread_start(tb, 2, 4, 0);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_stack(tb, 2, 0, 0x402000);
    gs_tb_alloc(tb, 10 * MS, 1, 0x100000, 200000, 1);
    gs_tb_free_rec(tb, 30 * MS, 0x100000);
    /* thread 2's buffer: a chunk of its own, its clock back at 20 ms */
    gs_tb_flush_chunk(tb);
    gs_tb_timebase(tb, 20 * MS);
    gs_tb_alloc(tb, 20 * MS, 2, 0x900000, 100000, 2);
    gs_tb_free_rec(tb, 25 * MS, 0x900000);
    gs_tb_trace_end(tb, 40 * MS, 2, 2, 300000, 0, 0);
    struct gs_result *r = analyze_tb(tb, NULL, NULL);
    cr_assert_eq(r->peak_total, 300000, "peak %lu", (unsigned long)r->peak_total);
    cr_assert_eq(r->peak_bytes[GS_MC_HOST], 300000);
    const struct gs_timeline *tl = &r->tl;
    cr_assert_gt(tl->nb, 30);
    uint64_t best[2] = { 0, 0 };
    for (uint32_t i = 0; i < tl->nb; i++) {
        for (int k = 0; k < 2; k++) {
            uint64_t v = tl->ch[k ? GS_CH_TOTAL : GS_CH_HOST][i];
            if (v != UINT64_MAX && v > best[k])
                best[k] = v;
        }
    }
    cr_assert_eq(best[0], r->peak_bytes[GS_MC_HOST], "host: chart %lu, peak %lu",
                 (unsigned long)best[0], (unsigned long)r->peak_bytes[GS_MC_HOST]);
    cr_assert_eq(best[1], r->peak_total);
    uint64_t at22 = tl->ch[GS_CH_TOTAL][22 * MS / tl->bucket_ns];
    cr_assert_eq(at22, 300000, "at 22 ms: %lu", (unsigned long)at22);
    /* before the first block: no value; after the last free: none live */
    cr_assert_eq(tl->ch[GS_CH_TOTAL][0], UINT64_MAX);
    cr_assert_eq(tl->ch[GS_CH_TOTAL][tl->nb - 1], 0);
    gs_result_free(r);
}

Test(analyze, groups_are_sorted_by_class_then_bytes)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 6);
    for (uint64_t s = 1; s <= 3; s++)
        gs_tb_stack(tb, s, 0, 0x400000 + s * 0x100);
    /* stack 1: 3 x 10 bytes; stack 2: 1 x 100 bytes; stack 3: 2 x 20 bytes */
    uint64_t a = 0x10000;
    for (int i = 0; i < 3; i++, a += 0x100)
        gs_tb_alloc(tb, 1, 1, a, 10, 1);
    gs_tb_alloc(tb, 1, 1, a, 100, 2);
    a += 0x100;
    for (int i = 0; i < 2; i++, a += 0x100)
        gs_tb_alloc(tb, 1, 1, a, 20, 3);
    gs_tb_trace_end(tb, 2, 6, 0, 170, 6, 170);
    struct gs_result *r = analyze_tb(tb, NULL, NULL);
    cr_assert_eq(r->nleaks, 3);
    cr_assert_eq(r->leaks[0].stack_id, 2);
    cr_assert_eq(r->leaks[0].bytes, 100);
    cr_assert_eq(r->leaks[1].stack_id, 3);
    cr_assert_eq(r->leaks[1].blocks, 2);
    cr_assert_eq(r->leaks[1].largest, 20);
    cr_assert_eq(r->leaks[2].stack_id, 1);
    cr_assert_eq(r->leaks[2].bytes, 30);
    for (uint32_t i = 0; i < 3; i++)
        cr_assert_eq(r->leaks[i].cls, GS_RC_NOT_FREED);
    gs_result_free(r);
}

Test(analyze, unknown_modules_give_module_plus_offset_and_python_frames_resolve)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 7);
    struct gs_tb_seg seg[1] = { { 0x1000, 0x1000, 5 } };
    gs_tb_module(tb, 1, 0, 0x7f0000000000ull, "/nonexistent/libq.so", NULL, 0, 1, seg);
    gs_tb_pycode(tb, 9, "m.py", "f", 3);
    gs_tb_stack(tb, 1, 0, GS_IP_PYFRAME | (9ull << 32) | 7);
    gs_tb_stack(tb, 2, 1, 0x7f0000001234ull);
    gs_tb_stack(tb, 3, 0, 0x1234);          /* in no module */
    gs_tb_alloc(tb, 1, 1, 0x1000, 8, 2);
    gs_tb_alloc(tb, 1, 1, 0x2000, 8, 3);
    gs_tb_trace_end(tb, 2, 2, 0, 16, 2, 16);
    struct gs_symbolizer *sym = gs_sym_new(1);
    struct gs_result *r = analyze_tb(tb, NULL, sym);
    const struct gs_leak *l = find_leak(r, GS_RC_NOT_FREED, 2);
    cr_assert_not_null(l);
    cr_assert_eq(l->st.n, 2);
    cr_assert_null(l->st.f[0].function);
    cr_assert_str_eq(l->st.f[0].module, "/nonexistent/libq.so");
    cr_assert_eq(l->st.f[0].offset, 0x1234);
    cr_assert(l->st.f[1].python);
    cr_assert_str_eq(l->st.f[1].function, "f");
    cr_assert_str_eq(l->st.f[1].file, "m.py");
    cr_assert_eq(l->st.f[1].line, 7);
    l = find_leak(r, GS_RC_NOT_FREED, 3);
    cr_assert_eq(l->st.n, 1);
    cr_assert_null(l->st.f[0].module);
    cr_assert_eq(l->st.f[0].ip, 0x1234);
    cr_assert_str_eq(gs_sym_problem(sym, 0),
                     "/nonexistent/libq.so: cannot read the file (frames shown as module+offset)");
    cr_assert_null(gs_sym_problem(sym, 1));
    gs_result_free(r);
    gs_sym_free(sym);
}

__attribute__((noinline)) int gs_test_sym_target(int x)
{
    return x * 3 + 1;
}

Test(analyze, symbolizes_this_test_binary_and_caches_per_address)
{
    /* this binary as a module: an address inside a function of it resolves
     * to that function */
    struct gs_module md;
    memset(&md, 0, sizeof md);
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    cr_assert_gt(n, 0);
    path[n] = 0;
    md.path = path;
    Dl_info info;
    cr_assert(dladdr((void *)gs_test_sym_target, &info));
    md.base = (uint64_t)info.dli_fbase;
    /* PIE: load bias = dli_fbase; a non-PIE build has base 0 */
    struct gs_symbolizer *s = gs_sym_new(1);
    struct gs_frame *f;
    uint32_t nf;
    uint64_t ip = (uint64_t)(uintptr_t)gs_test_sym_target + 2; /* a "return address" in it */
    cr_assert_eq(gs_sym_resolve(s, &md, ip, &f, &nf), 0);
    cr_assert_geq(nf, 1);
    cr_assert_not_null(f[nf - 1].function);
    cr_assert_str_eq(f[nf - 1].function, "gs_test_sym_target");
    cr_assert_not_null(f[nf - 1].file);
    cr_assert(strstr(f[nf - 1].file, "test_analyzer.c"), "%s", f[nf - 1].file);
    cr_assert_gt(f[nf - 1].line, 0);
    cr_assert_eq(gs_sym_resolve(s, &md, ip, &f, &nf), 0);
    struct gs_sym_stats st;
    gs_sym_stats(s, &st);
    cr_assert_eq(st.lookups, 2);
    cr_assert_eq(st.cache_hits, 1);
    cr_assert_eq(st.modules_opened, 1);
    gs_sym_free(s);
}

Test(analyze, intervals_attribute_new_unreachable_blocks)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 8);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_alloc(tb, 1, 1, 0x1000, 10, 1);
    gs_tb_alloc(tb, 1, 1, 0x2000, 20, 1);
    gs_tb_scan_begin(tb, 1, 2, GS_SCAN_TRIG_PERIODIC, 0);
    gs_tb_scan_block(tb, 1, 0x1000, 10, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 1, .t_start = 2, .t_end = 3 });
    gs_tb_marker(tb, 4, 1, GS_MARK_USER, "phase two");
    gs_tb_scan_begin(tb, 2, 5, GS_SCAN_TRIG_PERIODIC, 0);
    gs_tb_scan_block(tb, 2, 0x1000, 10, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 2, 0x2000, 20, 1, GS_MEM_HOST, GS_CLASS_INDIRECT);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 2, .t_start = 5, .t_end = 6 });
    /* scan 3 never ends: the trace was cut */
    gs_tb_scan_begin(tb, 3, 7, GS_SCAN_TRIG_PERIODIC, 0);
    gs_tb_scan_block(tb, 3, 0x1000, 10, 1, GS_MEM_HOST, GS_CLASS_REACHABLE);
    struct gs_result *r = analyze_tb(tb, NULL, NULL);
    cr_assert_not(r->complete);
    cr_assert_eq(r->nscans, 2);
    cr_assert_eq(r->incomplete_scans, 1);
    cr_assert_eq(r->scans[0].new_blocks, 1);
    cr_assert_eq(r->scans[1].new_blocks, 1);
    cr_assert_eq(r->scans[1].new_bytes, 20);
    cr_assert_str_eq(r->scans[1].first_marker, "phase two");
    const struct gs_leak *d = find_leak(r, GS_CLASS_DEFINITE, 1);
    const struct gs_leak *i = find_leak(r, GS_CLASS_INDIRECT, 1);
    cr_assert_eq(d->first_scan, 0);
    cr_assert_eq(i->first_scan, 1);
    gs_result_free(r);
}

/* ---- the format's promises (validate.h) ---- */

static struct gs_result *analyze_bytes(const uint8_t *data, size_t len)
{
    struct gs_result *r = NULL;
    char err[512];
    cr_assert_eq(gs_analyze_mem(data, len, "mem.trace", NULL, NULL, &r, err, sizeof err), 0,
                 "%s", err);
    return r;
}

/* Where a reader names the last record the builder appended. */
static void last_at(struct gs_tb *tb, char *buf, size_t len)
{
    uint32_t k;
    size_t at;
    gs_tb_last_record(tb, &k, &at);
    size_t n;
    cr_assert_not_null(gs_tb_data(tb, &n)); /* closes the chunk: its offset is known */
    snprintf(buf, len, "offset %ld: chunk %u, record at payload offset %zu", gs_tb_chunk_offset(tb, k),
             k, at);
}

Test(validate, a_valid_trace_has_no_problem)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 3);
    struct gs_tb_seg seg = { 0, 0x1000, 5 };
    gs_tb_module(tb, 1, 0, 0x400000, "/bin/t", NULL, 0, 1, &seg);
    gs_tb_thread_start(tb, 1, 3, 0);
    gs_tb_stack(tb, 1, 0, 0x400100);
    gs_tb_stack(tb, 2, 1, 0x400200);
    gs_tb_alloc(tb, 1, 1, 0x1000, 10, 2);
    gs_tb_realloc(tb, 2, 1, 0x1000, 20, 1);
    gs_tb_alloc_ex(tb, 3, 1, 0x7f0000000000ull, 4096, 2, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0,
                   0, 0);
    gs_tb_thread_start(tb, 2, 4, 3);
    gs_tb_free_ex(tb, 4, 2, 0x7f0000000000ull, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0);
    gs_tb_thread_exit(tb, 2, 5);
    gs_tb_alloc(tb, 6, 2, 0x3000, 30, 0); /* after its thread's exit: allowed */
    gs_tb_alloc(tb, 6, 0, 0x4000, 40, 0); /* thread 0: no thread */
    gs_tb_alloc(tb, 7, 1, 0x4000, 50, 1); /* over a live block: its free was missed */
    gs_tb_scan_begin(tb, 1, 8, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x1000, 20, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 1, .t_start = 8, .t_end = 9 });
    gs_tb_module_unload(tb, 1, 10);
    gs_tb_free_rec(tb, 11, 0x1000);
    gs_tb_process_exit(tb, 12, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 13, 5, 2, 4216, 2, 80);
    struct gs_result *r = analyze_tb(tb, NULL, NULL);
    cr_assert(r->complete, "%s", r->damage);
    cr_assert_not(r->malformed, "%s", r->problem);
    cr_assert_eq(r->problems, 0);
    cr_assert_null(r->problem);
    cr_assert_eq(r->replaced_allocs, 1);
    gs_result_free(r);
}

Test(validate, the_first_problem_is_named_at_its_record_and_all_are_counted)
{
    struct gs_tb *tb = tb_one_thread();
    gs_tb_stack(tb, 1, 0, 0x400100);
    gs_tb_alloc(tb, 1, 1, 0x1000, 10, 1);
    gs_tb_flush_chunk(tb);
    gs_tb_alloc(tb, 2, 1, 0x2000, 20, 1);
    gs_tb_free_rec(tb, 3, 0x9000);
    char at[128], want[256];
    last_at(tb, at, sizeof at);
    gs_tb_alloc(tb, 4, 1, 0x3000, 30, 9);   /* stack 9 never defined */
    gs_tb_alloc(tb, 5, 5, 0x4000, 40, 1);   /* thread 5 never started */
    struct gs_result *r = analyze_tb(tb, NULL, NULL);
    snprintf(want, sizeof want, "%s: FREE of 0x9000 that is not live", at);
    cr_assert(strstr(at, "chunk 1, record at payload offset "), "%s", at);
    cr_assert(r->malformed);
    cr_assert_str_eq(r->problem, want);
    cr_assert_eq(r->problems, 3);
    /* what could be applied was: the free counted, the two blocks live */
    cr_assert_eq(r->unmatched_frees, 1);
    cr_assert_eq(r->allocs, 4);
    cr_assert_eq(r->live_bytes_end[GS_MC_HOST], 100);
    gs_result_free(r);
}

Test(validate, impossible_blocks_are_named_and_left_out)
{
    struct gs_tb *tb = tb_one_thread();
    gs_tb_alloc(tb, 1, 1, 0x1000, 10, 0);
    gs_tb_alloc(tb, 2, 1, 0x2000, 1ull << 63, 0);
    char at[128], want[256];
    last_at(tb, at, sizeof at);
    gs_tb_alloc(tb, 3, 1, UINT64_MAX - 15, 32, 0); /* wraps */
    gs_tb_alloc(tb, 3, 1, UINT64_MAX - 15, 16, 0); /* ends at 2^64: fits */
    gs_tb_alloc(tb, 4, 1, 0, 16, 0);
    struct gs_result *r = analyze_tb(tb, NULL, NULL);
    snprintf(want, sizeof want, "%s: ALLOC of 0x2000 with impossible size 9223372036854775808 "
             "(2^63 or more)", at);
    cr_assert_str_eq(r->problem, want);
    cr_assert_eq(r->problems, 3);
    cr_assert_eq(r->allocs, 2);
    cr_assert_eq(r->live_bytes_end[GS_MC_HOST], 26);
    gs_result_free(r);
}

Test(validate, a_cut_is_incomplete_a_corruption_is_malformed)
{
    struct gs_tb *tb = tb_one_thread();
    gs_tb_alloc(tb, 1, 1, 0x1000, 10, 0);
    gs_tb_flush_chunk(tb);
    for (uint64_t i = 0; i < 100; i++)
        gs_tb_alloc(tb, 2 + i, 1, 0x10000 + i * 64, 64, 0);
    gs_tb_trace_end(tb, 200, 101, 0, 6410, 101, 6410);
    size_t len;
    uint8_t *d = gs_tb_data(tb, &len);
    long c1 = gs_tb_chunk_offset(tb, 1);
    cr_assert_gt(c1, 0);

    /* no TRACE_END, and the file ends inside chunk 1: cut, not malformed */
    struct gs_result *r = analyze_bytes(d, (size_t)c1);
    cr_assert_not(r->complete);
    cr_assert_not(r->malformed);
    gs_result_free(r);
    r = analyze_bytes(d, len - 5);
    cr_assert_not(r->complete);
    cr_assert(strstr(r->damage, "truncated chunk"), "%s", r->damage);
    cr_assert_not(r->malformed, "%s", r->problem);
    cr_assert_eq(r->allocs, 1);
    gs_result_free(r);

    /* a flipped payload byte: malformed, named by the reader's message */
    uint8_t *bad = malloc(len);
    cr_assert_not_null(bad);
    memcpy(bad, d, len);
    bad[c1 + 24 + 3] ^= 0x40;
    r = analyze_bytes(bad, len);
    char want[128];
    snprintf(want, sizeof want, "offset %ld: chunk 1: payload CRC mismatch", c1);
    cr_assert_not(r->complete);
    cr_assert(r->malformed);
    cr_assert_eq(r->problems, 1);
    cr_assert_str_eq(r->problem, want);
    cr_assert_str_eq(r->damage, want);
    cr_assert_eq(r->allocs, 1);
    gs_result_free(r);
    free(bad);
    gs_tb_free(tb);
}

/* ---- growth ---- */

static struct gs_result *growth_trace(int leak_every, int steady_noise, int shuffle)
{
    /* 200 steps, 10 ms apart; site 1 keeps 512 bytes every leak_every steps
     * (0: never); site 2 allocates and frees per step */
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 9);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_stack(tb, 2, 0, 0x402000);
    uint64_t t = 0;
    for (int k = 1; k <= 200; k++) {
        if (leak_every && k % leak_every == 0)
            gs_tb_alloc(tb, t + 1 * MS, 1, 0x100000 + (uint64_t)k * 0x1000, 4096, 1);
        uint64_t n = 1 + (uint64_t)(steady_noise ? (k * 7919) % 5 : 0);
        for (uint64_t j = 0; j < n; j++)
            gs_tb_alloc(tb, t + 2 * MS, 1, 0x9000000 + j * 0x1000, 1000, 2);
        if (!shuffle) {
            for (uint64_t j = 0; j < n; j++)
                gs_tb_free_rec(tb, t + 3 * MS, 0x9000000 + j * 0x1000);
        }
        char label[16];
        snprintf(label, sizeof label, "%d", k);
        gs_tb_marker(tb, t + 9 * MS, 1, GS_MARK_STEP, label);
        if (shuffle) {
            /* the frees of this step are written after the step marker,
             * in a buffer that starts earlier: out of time order */
            gs_tb_timebase(tb, t + 3 * MS);
            for (uint64_t j = 0; j < n; j++)
                gs_tb_free_rec(tb, t + 3 * MS, 0x9000000 + j * 0x1000);
        }
        t += 10 * MS;
    }
    gs_tb_trace_end(tb, t, 0, 0, 0, 0, 0);
    struct gs_analyze_opts o;
    gs_analyze_defaults(&o);
    o.growth.min_bytes = 16 * 1024;
    return analyze_tb(tb, &o, NULL);
}

Test(growth, leaking_loop_is_flagged_with_its_rate)
{
    struct gs_result *r = growth_trace(1, 1, 0);
    cr_assert_eq(r->growth_axis, GS_AXIS_STEP);
    cr_assert_eq(r->nsuspects, 1);
    cr_assert_eq(r->suspects[0].stack_id, 1);
    cr_assert_float_eq(r->suspects[0].rate, 4096.0, 4096.0 * 0.01);
    cr_assert_gt(r->suspects[0].confidence, 0.99);
    gs_result_free(r);
}

Test(growth, sparse_leak_is_flagged_with_the_average_rate)
{
    struct gs_result *r = growth_trace(10, 1, 0);
    cr_assert_eq(r->nsuspects, 1);
    cr_assert_float_eq(r->suspects[0].rate, 409.6, 409.6 * 0.10);
    gs_result_free(r);
}

Test(growth, steady_loop_is_not_flagged)
{
    struct gs_result *r = growth_trace(0, 1, 0);
    cr_assert_eq(r->nsuspects, 0);
    gs_result_free(r);
}

Test(growth, out_of_order_records_keep_the_verdicts)
{
    struct gs_result *r = growth_trace(1, 1, 1);
    cr_assert_eq(r->nsuspects, 1);
    cr_assert_eq(r->suspects[0].stack_id, 1);
    cr_assert_float_eq(r->suspects[0].rate, 4096.0, 4096.0 * 0.10);
    gs_result_free(r);
    r = growth_trace(0, 1, 1);
    cr_assert_eq(r->nsuspects, 0);
    gs_result_free(r);
}

Test(growth, judge_rejects_a_step_and_a_transient)
{
    struct gs_cps c;
    memset(&c, 0, sizeof c);
    for (int k = 0; k < 100; k++)
        cr_assert_eq(gs_cps_add(&c, (uint64_t)k, (double)k), 0);
    struct gs_growth_opts o = { 5, 0.8, 1000 };
    struct gs_line line;
    /* one jump half way: R^2 = 0.75 */
    struct gs_axis ax;
    memset(&ax, 0, sizeof ax);
    for (uint32_t k = 0; k < 100; k++)
        gs_axis_flush(&ax, &c, k + 1, k < 50 ? 0 : 1e6);
    cr_assert_eq(gs_growth_judge(&ax, &c, &o, &line), 0);
    /* rises for 20 checkpoints then drops to zero for 80: a transient */
    memset(&ax, 0, sizeof ax);
    for (uint32_t k = 0; k < 100; k++)
        gs_axis_flush(&ax, &c, k + 1, k < 20 ? k * 1e5 : 0);
    cr_assert_eq(gs_growth_judge(&ax, &c, &o, &line), 0);
    /* a steady rise, dropping only at the very end (teardown): growth */
    memset(&ax, 0, sizeof ax);
    for (uint32_t k = 0; k < 100; k++)
        gs_axis_flush(&ax, &c, k + 1, k < 99 ? k * 1e3 : 0);
    cr_assert_eq(gs_growth_judge(&ax, &c, &o, &line), 1);
    cr_assert_float_eq(line.slope, 1e3, 1e-6);
    cr_assert_float_eq(line.r2, 1.0, 1e-9);
    cr_assert_float_eq(line.x1, 98.0, 1e-9);
    gs_cps_free(&c);
}

Test(growth, time_checkpoints_stay_few_on_long_traces)
{
    struct gs_model m;
    model_new(&m);
    /* ten hours, one event a second */
    for (uint64_t s = 0; s < 36000; s++)
        feed(&m, rec_alloc(s * 1000000000ull, 0x1000 + (s % 2) * 0x1000, 8, 1)),
            feed(&m, rec_free(s * 1000000000ull + 1, 0x1000 + (s % 2) * 0x1000));
    cr_assert_lt(m.cps[GS_AXIS_TIME].n, 10000);
    cr_assert_gt(m.cps[GS_AXIS_TIME].n, 1000);
    for (uint32_t k = 1; k < m.cps[GS_AXIS_TIME].n; k++)
        cr_assert_geq(m.cps[GS_AXIS_TIME].t[k], m.cps[GS_AXIS_TIME].t[k - 1]);
    /* the series reach the trace's end when the model finishes (the live
     * channels are summed by time at the end: timeline.c) */
    cr_assert_eq(gs_model_finish(&m), 0);
    cr_assert_leq(m.series.nb, GS_SERIES_BUCKETS);
    cr_assert_geq(m.series.nb, GS_SERIES_BUCKETS / 2);
    gs_model_free(&m);
}

/* ---- series and markers ---- */

Test(series, keeps_peaks_within_a_bounded_bucket_count)
{
    struct gs_series s;
    cr_assert_eq(gs_series_init(&s, 1), 0);
    for (uint64_t i = 0; i < 1000000; i++) {
        uint64_t t = i * 7919 * 1000;   /* about 7.9 ms apart: ~2.2 hours */
        gs_series_put(&s, 0, t, i == 777777 ? 1000000 : i % 100);
    }
    cr_assert_leq(s.nb, GS_SERIES_BUCKETS);
    uint64_t peak = 0;
    for (uint32_t i = 0; i < s.nb; i++)
        if (s.v[i].set && s.v[i].max > peak)
            peak = s.v[i].max;
    cr_assert_eq(peak, 1000000);
    uint64_t w = gs_series_width(&s);
    cr_assert_eq(s.v[(777777ull * 7919 * 1000) / w].max, 1000000);
    gs_series_free(&s);
}

Test(markers, step_markers_are_thinned_by_a_doubling_stride)
{
    struct gs_model m;
    model_new(&m);
    for (int k = 1; k <= 100000; k++) {
        char label[16];
        snprintf(label, sizeof label, "%d", k);
        feed(&m, rec_marker((uint64_t)k * MS, GS_MARK_STEP, label));
    }
    cr_assert_eq(m.nsteps, 100000);
    cr_assert_leq(m.steps.n, GS_MARKERS_KEPT);
    cr_assert_geq(m.steps.n, GS_MARKERS_KEPT / 2);
    uint64_t stride = m.steps.stride;
    cr_assert_eq(stride & (stride - 1), 0);
    for (size_t i = 0; i < m.steps.n; i++) {
        cr_assert_eq((m.steps.v[i].ordinal - 1) % stride, 0);
        cr_assert_eq(atoi(m.steps.v[i].label), (int)m.steps.v[i].ordinal);
    }
    /* the step axis of growth is thinned too, and its x values are step ordinals */
    cr_assert_lt(m.cps[GS_AXIS_STEP].n, 10000);
    cr_assert_eq(m.cps[GS_AXIS_STEP].x[0], 1.0);
    gs_model_free(&m);
}

/* ---- pauses ---- */

Test(pauses, percentiles_share_and_mmu)
{
    struct gs_pause v[4] = {
        { .t0 = 100 * MS, .t1 = 110 * MS, .kind = GS_PAUSE_PYTHON_GC },
        { .t0 = 500 * MS, .t1 = 501 * MS, .kind = GS_PAUSE_PYTHON_GC },
        { .t0 = 200 * MS, .t1 = 205 * MS, .kind = GS_PAUSE_CUDA_SYNC },
        { .t0 = 900 * MS, .t1 = 902 * MS, .kind = GS_PAUSE_SCAN },
    };
    struct gs_pause_stats s;
    cr_assert_eq(gs_pauses_compute(v, 4, 1000 * MS, &s), 0);
    cr_assert_eq(s.count, 4);
    cr_assert_eq(s.total_ns, 18 * MS);
    cr_assert_eq(s.union_ns, 18 * MS);
    cr_assert_float_eq(s.share, 0.018, 1e-12);
    cr_assert_eq(s.pct_ns[0], 2 * MS);
    cr_assert_eq(s.pct_ns[1], 10 * MS);
    cr_assert_eq(s.pct_ns[3], 10 * MS);
    cr_assert_eq(s.by_kind[GS_PAUSE_PYTHON_GC].count, 2);
    cr_assert_eq(s.longest[0].t0, 100 * MS);
    cr_assert_eq(s.longest[3].t0, 500 * MS);
    static const double want[10] = { 0, 0, 0, 0, 0.5, 0.8, 0.9, 0.925, 0.968, 0.982 };
    for (int k = 0; k < 10; k++) {
        cr_assert(s.mmu[k].valid);
        cr_assert_float_eq(s.mmu[k].mmu, want[k], 1e-9, "window %d", k);
    }
    cr_assert_not(s.mmu[10].valid);
}

Test(pauses, overlapping_pauses_count_once_in_paused_time)
{
    struct gs_pause v[3] = {
        { .t0 = 0, .t1 = 10 * MS },
        { .t0 = 5 * MS, .t1 = 15 * MS },
        { .t0 = 12 * MS, .t1 = 13 * MS },
    };
    struct gs_pause_stats s;
    cr_assert_eq(gs_pauses_compute(v, 3, 100 * MS, &s), 0);
    cr_assert_eq(s.total_ns, 21 * MS);
    cr_assert_eq(s.union_ns, 15 * MS);
    cr_assert_float_eq(s.mmu[4].mmu, 0.25, 1e-9); /* 20 ms window: 15 ms paused */
}

/* ---- fragmentation ---- */

Test(frag, gaps_between_live_chunks)
{
    struct gs_model m;
    model_new(&m);
    /* chunk spans: 24 -> 32, 100 -> 112; gaps: 0, 96; one mmapped block */
    feed(&m, rec_alloc(1, 0x10010, 24, 1));
    feed(&m, rec_alloc(1, 0x10030, 100, 1));
    feed(&m, rec_alloc(1, 0x10100, 16, 1));
    feed(&m, rec_alloc(1, 0x10200, 8, 1));      /* gap 0x10200 - 0x10120 = 224 */
    feed(&m, rec_alloc(1, 0x7f0000001010ull, 1 << 20, 1));
    feed(&m, rec_alloc(1, 0x7f1000000000ull, 64, 1)); /* far away: another region */
    struct gs_heapfrag h;
    cr_assert_eq(gs_frag_heap(&m, &h), 0);
    cr_assert_eq(h.blocks, 5);
    cr_assert_eq(h.mmapped_blocks, 1);
    cr_assert_eq(h.regions, 2);
    cr_assert_eq(h.gaps, 2);
    cr_assert_eq(h.free_bytes, 96 + 224);
    cr_assert_eq(h.largest_free, 224);
    cr_assert_float_eq(h.ratio, 1.0 - 224.0 / 320.0, 1e-12);
    gs_model_free(&m);
}

/* ---- suppressions ---- */

Test(suppress, template_match_follows_lsan)
{
    struct { const char *t, *s; int want; } c[] = {
        { "foo", "xfooy", 1 },   { "foo", "fo", 0 },        { "^foo", "foobar", 1 },
        { "^foo", "xfoo", 0 },   { "foo$", "barfoo", 1 },   { "foo$", "foobar", 0 },
        { "f*o", "fxxxo", 1 },   { "f*o", "oof", 0 },       { "^a*b$", "axxb", 1 },
        { "^a*b$", "axxbc", 0 }, { "*", "anything", 1 },    { "a", "", 0 },
        { "a", NULL, 0 },        { "lib*.so", "/usr/lib/libz.so.1", 1 },
        { "^*$", "x", 1 },       { "foo*$", "foobar", 1 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        cr_assert_eq(gs_supp_template_match(c[i].t, c[i].s), c[i].want, "%s vs %s", c[i].t,
                     c[i].s ? c[i].s : "(null)");
}

Test(suppress, file_format_and_errors)
{
    char path[] = "/tmp/gs_supp_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("# comment\n\n   leak:foo  \nleak:^bar$\n", f);
    fclose(f);
    struct gs_supps s;
    memset(&s, 0, sizeof s);
    char err[256];
    cr_assert_eq(gs_supp_load(&s, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.n, 2);
    cr_assert_str_eq(s.v[0].pattern, "foo");
    cr_assert_eq(s.v[0].line, 3);
    cr_assert_str_eq(s.v[1].pattern, "^bar$");
    f = fopen(path, "w");
    fputs("leak:ok\ncalled_from_lib:x\n", f);
    fclose(f);
    cr_assert_eq(gs_supp_load(&s, path, err, sizeof err), -1);
    cr_assert(strstr(err, ":2: unsupported suppression type 'called_from_lib'"), "%s", err);
    unlink(path);
    cr_assert_eq(gs_supp_load(&s, path, err, sizeof err), -1);
    cr_assert(strstr(err, "cannot read suppressions"), "%s", err);
    gs_supp_free(&s);
}

Test(suppress, matches_function_file_and_module_of_any_frame)
{
    struct gs_frame fr[2] = {
        { .function = "alloc_buf", .file = "src/buf.c", .module = "/usr/lib/libbuf.so" },
        { .function = "main", .file = "main.c", .module = "/usr/bin/app" },
    };
    struct gs_stackv st = { fr, 2, 1 };
    struct gs_supps s;
    memset(&s, 0, sizeof s);
    gs_supp_add(&s, "nomatch", NULL, 1);
    cr_assert_null(gs_supp_match(&s, &st));
    gs_supp_add(&s, "libbuf.so", NULL, 2);
    cr_assert_str_eq(gs_supp_match(&s, &st)->pattern, "libbuf.so");
    gs_supp_free(&s);
    gs_supp_add(&s, "^main.c$", NULL, 1);
    cr_assert_not_null(gs_supp_match(&s, &st));
    gs_supp_free(&s);
    gs_supp_add(&s, "^ain", NULL, 1);
    cr_assert_null(gs_supp_match(&s, &st));
    gs_supp_free(&s);
}

/* ---- the CI gate ---- */

static struct gs_result *gate_result(void)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 10);
    gs_tb_thread_start(tb, 1, 10, 0);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_stack(tb, 2, 0, 0x402000);
    gs_tb_alloc(tb, 1, 1, 0x1000, 100, 1);
    gs_tb_alloc(tb, 1, 1, 0x2000, 50, 2);
    gs_tb_alloc_ex(tb, 1, 1, 0x3000, 70, 1, GS_MEM_HOST, GS_FN_INHERITED, 0, 0, 0);
    gs_tb_alloc_ex(tb, 1, 1, 0x7f0000000000ull, 4096, 2, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0,
                   0, 0);
    gs_tb_scan_begin(tb, 1, 2, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x1000, 100, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 1, 0x2000, 50, 2, GS_MEM_HOST, GS_CLASS_POSSIBLE);
    gs_tb_scan_block(tb, 1, 0x3000, 70, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 1, 0x7f0000000000ull, 4096, 2, GS_MEM_DEVICE, GS_CLASS_DEFINITE);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 1, .t_start = 2, .t_end = 3 });
    gs_tb_trace_end(tb, 4, 3, 0, 4246, 4, 4316);
    return analyze_tb(tb, NULL, NULL);
}

Test(check, limits_classes_and_inherited_blocks)
{
    struct gs_result *r = gate_result();
    struct gs_check_limits l;
    struct gs_verdict v;
    gs_check_defaults(&l);
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.status, 1);
    cr_assert_eq(v.leak_bytes, 100); /* the inherited 70 bytes are the parent's */
    cr_assert_eq(v.leak_blocks, 1);
    cr_assert_eq(v.device_bytes, 4096);
    l.max_bytes = 100;
    l.max_blocks = UINT64_MAX;
    l.max_device_bytes = 4096;
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.status, 0, "%s", v.line);
    cr_assert(strncmp(v.line, "PASS t (pid 10 t): 100 bytes in 1 block leaked", 46) == 0, "%s", v.line);
    l.fail_on |= 1u << GS_CLASS_POSSIBLE;
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.status, 1);
    cr_assert_eq(v.leak_bytes, 150);
    cr_assert(strstr(v.detail, "leaked 150 bytes (definite,indirect,possible), limit 100"), "%s",
              v.detail);
    gs_check_eval(&l, "gone.trace", NULL, "gone.trace: no such file", &v);
    cr_assert_eq(v.status, 2);
    /* the reader's message names the trace: once in the line */
    cr_assert_str_eq(v.line, "ERROR gone.trace: no such file");
    gs_result_free(r);
}

Test(check, suppressed_groups_do_not_count)
{
    struct gs_result *r = gate_result();
    struct gs_supps s;
    memset(&s, 0, sizeof s);
    gs_supp_add(&s, "0x", NULL, 1); /* matches nothing: frames have no names */
    gs_supp_apply(&s, r, 0xff);
    struct gs_check_limits l;
    struct gs_verdict v;
    gs_check_defaults(&l);
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.leak_bytes, 100);
    /* mark stack 1's group suppressed by hand, as a match would */
    for (uint32_t i = 0; i < r->nleaks; i++)
        if (r->leaks[i].stack_id == 1 && !r->leaks[i].inherited)
            r->leaks[i].suppressed = "x";
    /* the sites are built after the suppressions (gs_load_traces) */
    cr_assert_eq(gs_findings_build(r, NULL), 0);
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.leak_bytes, 0);
    l.per_class = 1;
    gs_check_eval(&l, "t", r, NULL, &v);
    cr_assert_eq(v.leak_bytes, 0);
    gs_supp_free(&s);
    gs_result_free(r);
}

/* A forked child's inherited blocks it no longer reaches are the parent's
 * business: the built-in rule suppresses them there (and only there), in
 * the report as in the gate; its own leaks stay. */
Test(suppress, inherited_blocks_of_a_forked_child)
{
    for (int forked = 0; forked <= 1; forked++) {
        struct gs_result *r = gate_result();
        r->flags = forked ? GS_PROC_F_FORKED : 0;
        struct gs_supps s;
        memset(&s, 0, sizeof s);
        cr_assert_eq(gs_supp_add_defaults(&s), 0);
        gs_supp_apply(&s, r, 0xff);
        uint32_t inh = 0, own_suppressed = 0;
        for (uint32_t i = 0; i < r->nleaks; i++) {
            const struct gs_leak *l = &r->leaks[i];
            if (l->inherited) {
                inh++;
                if (forked)
                    cr_assert_str_eq(l->suppressed, GS_SUPP_INHERITED);
                else
                    cr_assert_null(l->suppressed);
            } else if (l->suppressed) {
                own_suppressed++;
            }
        }
        cr_assert_eq(inh, 1);
        cr_assert_eq(own_suppressed, 0);
        cr_assert_eq(r->suppressed[GS_CLASS_DEFINITE].bytes, forked ? 70u : 0u);
        gs_supp_free(&s);
        gs_result_free(r);
    }
}

Test(check, fail_on_parsing)
{
    uint32_t m;
    char bad[64];
    cr_assert_eq(gs_check_parse_fail_on("definite,growth", &m, bad, sizeof bad), 0);
    cr_assert_eq(m, (1u << GS_CLASS_DEFINITE) | GS_CHECK_GROWTH);
    cr_assert_eq(gs_check_parse_fail_on("not-freed", &m, bad, sizeof bad), 0);
    cr_assert_eq(m, 1u << GS_RC_NOT_FREED);
    cr_assert_eq(gs_check_parse_fail_on("definite,,x", &m, bad, sizeof bad), -1);
    cr_assert_eq(gs_check_parse_fail_on("leaky", &m, bad, sizeof bad), -1);
    cr_assert_str_eq(bad, "leaky");
    cr_assert_eq(gs_check_parse_fail_on("", &m, bad, sizeof bad), -1);
}

Test(check, size_parsing)
{
    struct gs_args a = { 0, NULL, 0, "test", 0 };
    uint64_t v;
    cr_assert_eq(gs_parse_size(&a, "-x", "1234", &v), 0);
    cr_assert_eq(v, 1234);
    cr_assert_eq(gs_parse_size(&a, "-x", "64K", &v), 0);
    cr_assert_eq(v, 65536);
    cr_assert_eq(gs_parse_size(&a, "-x", "1.5M", &v), 0);
    cr_assert_eq(v, 1572864);
    cr_assert_eq(gs_parse_size(&a, "-x", "2GiB", &v), 0);
    cr_assert_eq(v, 2147483648ull);
    cr_assert_eq(gs_parse_size(&a, "-x", "12Q", &v), -1);
    cr_assert_eq(gs_parse_size(&a, "-x", "-1", &v), -1);
    cr_assert_eq(gs_parse_size(&a, "-x", "", &v), -1);
}

/* ---- JSON writer ---- */

Test(json, escapes_and_non_finite_numbers)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct gs_jw w;
    gs_jw_init(&w, f);
    gs_jw_obj_compact(&w, NULL);
    gs_jw_str(&w, "s", "a\"b\\c\n\x01");
    gs_jw_strn(&w, "bad", "x\xff\xc3\xa9y\xe2\x82", 7);
    gs_jw_dbl(&w, "nan", NAN);
    gs_jw_dbl(&w, "d", 0.5);
    gs_jw_u64(&w, "u", UINT64_MAX);
    gs_jw_hex(&w, "h", 0xdeadbeefull);
    gs_jw_str(&w, "n", NULL);
    gs_jw_end_obj(&w);
    fclose(f);
    cr_assert_str_eq(buf, "{\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"bad\":\"x\\ufffd\xc3\xa9y\\ufffd\\ufffd\","
                          "\"nan\":null,\"d\":0.5,\"u\":18446744073709551615,\"h\":\"0xdeadbeef\","
                          "\"n\":null}\n");
    free(buf);
}

/* ---- robustness ---- */

static uint64_t fz_state;
static uint64_t fz(uint64_t n)
{
    fz_state ^= fz_state << 13;
    fz_state ^= fz_state >> 7;
    fz_state ^= fz_state << 17;
    return n ? fz_state % n : fz_state;
}

/* A lengthed record of n varints (the caching allocator's records). */
static void tb_varints(struct gs_tb *tb, uint8_t type, int n, const uint64_t *v)
{
    uint8_t body[16 * GS_VARINT_MAX], *p = body;
    for (int i = 0; i < n; i++)
        p = gs_put_u(p, v[i]);
    gs_tb_lengthed(tb, type, body, (size_t)(p - body));
}

Test(robust, random_but_valid_records_never_break_the_analysis)
{
    /* every record type with arbitrary field values (small ranges, so ids
     * and addresses collide): the analysis must finish and stay consistent */
    struct gs_symbolizer *sym = gs_sym_new(0);
    uint64_t snapshots = 0, torch_peak = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        fz_state = seed * 0x9e3779b97f4a7c15ull;
        struct gs_tb *tb = gs_tb_new();
        if (fz(2))
            proc_start(tb, seed);
        uint64_t t = 0;
        for (int i = 0; i < 4000; i++) {
            t += fz(3000000);
            uint64_t a = 0x1000 * (1 + fz(64)), id = fz(40), k = fz(6), c = fz(5);
            uint64_t sid = fz(3), pa = 0x7f0000000000ull + 0x100000 * fz(8);
            switch (fz(25)) {
            case 0: case 1: case 2: gs_tb_alloc(tb, t, fz(4), a, fz(5000), id); break;
            case 3: case 4: gs_tb_free_rec(tb, t, a); break;
            case 5: gs_tb_realloc(tb, t, 1, a, fz(9000), id); break;
            case 6: gs_tb_alloc_ex(tb, t, 1, a, fz(1 << 22), id, k, fz(24), fz(3), 0, fz(5000000)); break;
            case 7: gs_tb_free_ex(tb, t, 1, a, k, fz(24), fz(5000000)); break;
            case 8: gs_tb_stack(tb, id, fz(40), fz(2) ? 0x400000 + fz(0x10000)
                                                      : GS_IP_PYFRAME | (fz(8) << 32) | fz(100)); break;
            case 9: gs_tb_scan_begin(tb, fz(4), t, fz(5), fz(2)); break;
            case 10: case 11: gs_tb_scan_block(tb, fz(4), a, fz(5000), id, k, c); break;
            case 12: gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = fz(4), .t_start = t,
                                                                 .t_end = t + fz(1000000) }); break;
            case 13: gs_tb_marker(tb, t, 1, fz(3), fz(2) ? "step" : ""); break;
            case 14: gs_tb_pause(tb, t, t + fz(10000000), fz(4), 1, fz(9), fz(9)); break;
            case 15: gs_tb_sample(tb, t, fz(1 << 30), fz(1 << 20), 1, 1, 0, fz(1 << 20), fz(1 << 20), 0); break;
            case 16: gs_tb_device_sample(tb, t, fz(40), fz(3), fz(1 << 30), fz(1 << 30), fz(9), fz(1 << 30)); break;
            case 17: {
                struct gs_tb_seg sg[2] = { { fz(0x1000), fz(0x10000), 5 }, { 0x20000, fz(0x1000), 6 } };
                gs_tb_module(tb, fz(5), t, 0x400000 * fz(3), "/nonexistent/m.so", NULL, 0, fz(3), sg);
                break;
            }
            case 18: gs_tb_module_unload(tb, fz(5), t); break;
            case 19:
                tb_varints(tb, GS_REC_POOL_SNAPSHOT, 6, (const uint64_t[]){ sid, t, fz(4), fz(3),
                                                                            fz(6), fz(3) });
                break;
            case 20:
                tb_varints(tb, GS_REC_POOL_SEGMENT, 6, (const uint64_t[]){ sid, fz(3), pa,
                                                                           0x100000 * fz(3), 0, fz(4) });
                break;
            case 21: case 22:
                tb_varints(tb, GS_REC_POOL_BLOCK, 6, (const uint64_t[]){ sid, pa + 0x10000 * fz(20),
                                                                         0x10000 * fz(4), fz(70000),
                                                                         fz(4), id });
                break;
            case 23:
                tb_varints(tb, GS_REC_POOL_EVENT, 8, (const uint64_t[]){ sid, t, fz(3), fz(12), pa,
                                                                         fz(9), 0, id });
                break;
            case 24: {
                uint64_t v[7] = { fz(4), pa + 0x10000 * fz(20), 0x10000 * fz(4), id, k, c,
                                  fz(2) ? GS_FN_TORCH : fz(30) };
                tb_varints(tb, GS_REC_SCAN_BLOCK, 7, v);
                break;
            }
            default: gs_tb_pycode(tb, fz(8), "f.py", fz(2) ? "g" : "", fz(50)); break;
            }
            if (fz(500) == 0)
                gs_tb_flush_chunk(tb);
        }
        if (fz(2))
            gs_tb_trace_end(tb, t, 0, 0, 0, 0, 0);
        struct gs_result *r = analyze_tb(tb, NULL, sym);
        uint64_t blocks = 0;
        for (uint32_t i = 0; i < r->nleaks; i++) {
            blocks += r->leaks[i].blocks;
            cr_assert(r->leaks[i].st.resolved);
        }
        uint64_t sum = 0;
        for (int c = 0; c < GS_RC__N; c++)
            for (int mc = 0; mc < GS_MC__N; mc++)
                sum += r->summary[c][mc].blocks;
        cr_assert_eq(blocks, sum, "seed %lu", (unsigned long)seed);
        cr_assert_leq(r->torch_live_bytes, r->torch_peak_bytes);
        cr_assert_leq(r->npool, GS_MAX_DEVICES);
        snapshots += r->pool_snapshots;
        torch_peak += r->torch_peak_bytes;
        cr_assert_leq(r->tl.nb, GS_SERIES_BUCKETS);
        gs_result_free(r);
    }
    /* the caching allocator's records reached the model: snapshots were
     * applied and made tensors live */
    cr_assert_gt(snapshots, 0);
    cr_assert_gt(torch_peak, 0);
    gs_sym_free(sym);
}

/* More sites holding a value than half the sitelog's budget: thinning
 * cannot make room, so the axis is dropped. It used to thin on every later
 * entry, doubling the stride until it wrapped to 0 (a division by zero at
 * the next entry; gs_sitelog_values looped for ever on the HTML path). */
Test(sitelog, too_many_sites_drop_the_axis_instead_of_wrapping_the_stride)
{
    struct gs_cps steps;
    memset(&steps, 0, sizeof steps);
    struct gs_sitelog l;
    gs_sitelog_init(&l, &steps, 1000);
    const uint32_t n = GS_SITELOG_BUDGET + 64;
    for (uint32_t si = 0; si < n; si++)
        gs_sitelog_note(&l, GS_AXIS_STEP, si, 0, 1, 100.0 + si);
    cr_assert_eq(l.failed, 0);
    cr_assert_eq(l.ax[GS_AXIS_STEP].off, 1);
    cr_assert_neq(l.ax[GS_AXIS_STEP].stride, 0);
    double out[4];
    gs_sitelog_values(&l, GS_AXIS_STEP, 7, 4, out);
    cr_assert_eq(out[0], 0.0);
    gs_sitelog_free(&l);
}

/* One Python line that reached malloc through two paths of the interpreter
 * (3.14's specialised and generic CALL handlers, frames of python3.14 that
 * the report leaves out under the Python frames) is one site, one row, with
 * both blocks; the same two native paths without Python frames stay two
 * sites, and so does a Python line that differs. */
Test(analyze, stacks_differing_only_in_the_interpreter_are_one_site)
{
    struct gs_tb *tb = gs_tb_new();
    proc_start(tb, 8);
    struct gs_tb_seg seg[1] = { { 0x1000, 0x100000, 5 } };
    gs_tb_module(tb, 1, 0, 0x400000, "/usr/bin/python3.14", NULL, 0, 1, seg);
    gs_tb_module(tb, 2, 0, 0x7f0000000000ull, "/nonexistent/libffi.so.8", NULL, 0, 1, seg);
    gs_tb_pycode(tb, 9, "train.py", "leak_native", 200);
    gs_tb_stack(tb, 1, 0, GS_IP_PYFRAME | (9ull << 32) | 210);
    gs_tb_stack(tb, 2, 1, 0x401100);                    /* generic handler */
    gs_tb_stack(tb, 3, 2, 0x7f0000001234ull);           /* libffi */
    gs_tb_stack(tb, 4, 1, 0x402200);                    /* specialised handler */
    gs_tb_stack(tb, 5, 4, 0x7f0000001234ull);
    gs_tb_stack(tb, 6, 0, GS_IP_PYFRAME | (9ull << 32) | 211); /* another line */
    gs_tb_stack(tb, 7, 6, 0x402200);
    gs_tb_stack(tb, 8, 7, 0x7f0000001234ull);
    gs_tb_stack(tb, 10, 0, 0x401100);                   /* no Python frame */
    gs_tb_stack(tb, 11, 10, 0x7f0000001234ull);
    gs_tb_stack(tb, 12, 0, 0x402200);
    gs_tb_stack(tb, 13, 12, 0x7f0000001234ull);
    gs_tb_alloc(tb, 1, 1, 0x10000, 100, 3);
    gs_tb_alloc(tb, 1, 1, 0x20000, 100, 5);
    gs_tb_alloc(tb, 1, 1, 0x30000, 100, 5);
    gs_tb_alloc(tb, 1, 1, 0x40000, 100, 8);
    gs_tb_alloc(tb, 1, 1, 0x50000, 10, 11);
    gs_tb_alloc(tb, 1, 1, 0x60000, 10, 13);
    gs_tb_trace_end(tb, 2, 6, 0, 420, 6, 420);
    struct gs_symbolizer *sym = gs_sym_new(1);
    struct gs_result *r = analyze_tb(tb, NULL, sym);
    cr_assert_eq(r->nleaks, 4);
    const struct gs_leak *l = find_leak(r, GS_RC_NOT_FREED, 3);
    cr_assert_not_null(l);
    cr_assert_eq(l->blocks, 3);
    cr_assert_eq(l->bytes, 300);
    cr_assert_null(find_leak(r, GS_RC_NOT_FREED, 5));
    cr_assert_not_null(find_leak(r, GS_RC_NOT_FREED, 8));
    cr_assert_eq(find_leak(r, GS_RC_NOT_FREED, 11)->blocks, 1);
    cr_assert_eq(find_leak(r, GS_RC_NOT_FREED, 13)->blocks, 1);
    gs_result_free(r);
    gs_sym_free(sym);
}
