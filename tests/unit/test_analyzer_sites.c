/*
 * Unit tests of the per-site figures (analyzer/siteext.c, sites.c: docs/
 * exports.md) and of comparing two runs (analyzer/diff.c), on traces built
 * in memory: the peak found in time order when the file order hides it,
 * across the bucket doubling of a long run; the temporary threshold at its
 * edge; diff's statuses and sums.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "analyze.h"
#include "diff.h"
#include "symbols.h"
#include "trace_builder.h"

#define MS 1000000ull
#define SEC 1000000000ull

/* A builder with process 5 and stacks 1..3 (one frame each). */
static struct gs_tb *start(void)
{
    struct gs_tb *tb = gs_tb_new();
    cr_assert_not_null(tb);
    gs_tb_process_start(tb, &(struct gs_tb_proc){ .pid = 5, .ppid = 1, .exe = "/bin/s",
                                                  .argv = "s", .argv_len = 1, .host = "h",
                                                  .version = "0.1.0" });
    for (uint64_t s = 1; s <= 3; s++)
        gs_tb_stack(tb, s, 0, 0x400000 + s * 0x100);
    return tb;
}

/* The builder's trace analysed with the sites (threshold: 0 for 1 ms). */
static struct gs_result *sites_of(struct gs_tb *tb, uint64_t temp_ns, struct gs_symbolizer *sym)
{
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    cr_assert_not_null(data);
    struct gs_analyze_opts o;
    gs_analyze_defaults(&o);
    o.sites = 1;
    o.temp_threshold_ns = temp_ns;
    struct gs_result *r = NULL;
    char err[256];
    cr_assert_eq(gs_analyze_mem(data, len, "sites.trace", &o, sym, &r, err, sizeof err), 0, "%s", err);
    gs_tb_free(tb);
    return r;
}

static const struct gs_sitestat *site(const struct gs_result *r, uint32_t stack)
{
    for (uint32_t i = 0; i < r->nsitestats; i++)
        if (r->sitestats[i].stack_id == stack)
            return &r->sitestats[i];
    cr_assert_fail("no site for stack %u", stack);
    return NULL;
}

/* Two buffers: in file order A comes and goes before B comes, in time they
 * overlap from 20 to 50 ms, 3000 bytes live. */
Test(sites, peak_is_found_in_time_order_not_file_order)
{
    struct gs_tb *tb = start();
    gs_tb_timebase(tb, 10 * MS);
    gs_tb_alloc(tb, 10 * MS, 1, 0x10000, 1000, 1);
    gs_tb_free_rec(tb, 50 * MS, 0x10000);
    gs_tb_timebase(tb, 20 * MS);        /* another buffer, earlier in time */
    gs_tb_alloc(tb, 20 * MS, 2, 0x20000, 2000, 2);
    gs_tb_free_rec(tb, 60 * MS, 0x20000);
    gs_tb_alloc(tb, 100 * MS, 2, 0x30000, 500, 3);
    gs_tb_trace_end(tb, 200 * MS, 3, 2, 3500, 1, 500);
    struct gs_result *r = sites_of(tb, 0, NULL);
    cr_assert(r->peak_known);
    cr_assert_eq(r->peak_live, 3000);
    cr_assert_eq(r->peak_total, 3000, "the report's peak is in time order too (tbuckets.h)");
    cr_assert(r->peak_t >= 20 * MS && r->peak_t < 50 * MS, "peak_t %lu", (unsigned long)r->peak_t);
    cr_assert_eq(site(r, 1)->at_peak_bytes, 1000);
    cr_assert_eq(site(r, 1)->at_peak_blocks, 1);
    cr_assert_eq(site(r, 2)->at_peak_bytes, 2000);
    cr_assert_eq(site(r, 3)->at_peak_bytes, 0);
    cr_assert_eq(site(r, 3)->live_bytes, 500);
    cr_assert_eq(site(r, 3)->alloc_bytes, 500);
    gs_result_free(r);
}

/* A 30 s run: the 65.5 us buckets double nine times; the peak stays exact
 * at the new width. */
Test(sites, peak_survives_bucket_doubling_in_a_long_run)
{
    struct gs_tb *tb = start();
    gs_tb_alloc(tb, 1 * SEC, 1, 0x10000, 100, 1);
    gs_tb_alloc(tb, 10 * SEC, 1, 0x20000, 5000, 2);
    gs_tb_free_rec(tb, 20 * SEC, 0x20000);
    gs_tb_alloc(tb, 30 * SEC, 1, 0x30000, 3000, 3);
    gs_tb_trace_end(tb, 31 * SEC, 3, 1, 8100, 2, 3100);
    struct gs_result *r = sites_of(tb, 0, NULL);
    cr_assert_eq(r->peak_live, 5100);
    cr_assert(r->peak_t >= 10 * SEC && r->peak_t < 20 * SEC, "peak_t %lu", (unsigned long)r->peak_t);
    cr_assert_eq(site(r, 1)->at_peak_bytes, 100);
    cr_assert_eq(site(r, 2)->at_peak_bytes, 5000);
    cr_assert_eq(site(r, 2)->at_peak_blocks, 1);
    cr_assert_eq(site(r, 3)->at_peak_bytes, 0);
    gs_result_free(r);
}

/* Freed 0.7 ms after: temporary; 1 ms after: not (the threshold is "less
 * than"); with 2 ms both. A realloc's old block is no temporary free. */
static struct gs_result *temp_trace(uint64_t threshold)
{
    struct gs_tb *tb = start();
    gs_tb_alloc(tb, 1 * MS, 1, 0x10000, 64, 1);
    gs_tb_free_rec(tb, 1 * MS + 700000, 0x10000);
    gs_tb_alloc(tb, 2 * MS, 1, 0x20000, 128, 2);
    gs_tb_free_rec(tb, 3 * MS, 0x20000);
    gs_tb_alloc(tb, 4 * MS, 1, 0x30000, 32, 3);
    gs_tb_realloc(tb, 4 * MS, 1, 0x30000, 48, 3);
    gs_tb_trace_end(tb, 10 * MS, 3, 2, 240, 1, 48);
    return sites_of(tb, threshold, NULL);
}

Test(sites, temporary_means_freed_sooner_than_the_threshold)
{
    struct gs_result *r = temp_trace(0);
    cr_assert_eq(r->temp_threshold_ns, 1 * MS);
    cr_assert_eq(r->temp_allocs, 1);
    cr_assert_eq(r->temp_bytes, 64);
    cr_assert_eq(site(r, 1)->temp_allocs, 1);
    cr_assert_eq(site(r, 2)->temp_allocs, 0);
    cr_assert_eq(site(r, 3)->temp_allocs, 0);
    gs_result_free(r);
    r = temp_trace(2 * MS);
    cr_assert_eq(r->temp_allocs, 2);
    cr_assert_eq(r->temp_bytes, 192);
    gs_result_free(r);
}

static uint64_t alloc_bytes(const struct gs_sitestat *s, int which)
{
    (void)which;
    return s->alloc_bytes;
}

/* A: stack 1 100 bytes, stack 2 200; B: stack 2 250, stack 3 40. */
Test(diff, sites_new_gone_grown_and_the_rise)
{
    struct gs_symbolizer *sym = gs_sym_new(0);
    cr_assert_not_null(sym);
    struct gs_tb *tb = start();
    gs_tb_alloc(tb, 1 * MS, 1, 0x10000, 100, 1);
    gs_tb_alloc(tb, 1 * MS, 1, 0x20000, 200, 2);
    gs_tb_trace_end(tb, 2 * MS, 2, 0, 300, 2, 300);
    struct gs_result *a = sites_of(tb, 0, sym);
    tb = start();
    gs_tb_alloc(tb, 1 * MS, 1, 0x20000, 250, 2);
    gs_tb_alloc(tb, 1 * MS, 1, 0x30000, 40, 3);
    gs_tb_trace_end(tb, 2 * MS, 2, 0, 290, 2, 290);
    struct gs_result *b = sites_of(tb, 0, sym);
    struct gs_diff d;
    cr_assert_eq(gs_diff_sites(a, b, alloc_bytes, 0, &d), 0);
    cr_assert_eq(d.total_a, 300);
    cr_assert_eq(d.total_b, 290);
    cr_assert_eq(d.rise, 90);
    cr_assert_eq(d.n, 3);
    /* largest rise first: grown +50, new +40, gone -100 */
    cr_assert_eq(d.v[0].status, GS_DIFF_GROWN);
    cr_assert_eq(d.v[0].a, 200);
    cr_assert_eq(d.v[0].b, 250);
    cr_assert_eq(d.v[1].status, GS_DIFF_NEW);
    cr_assert_eq(d.v[1].b, 40);
    cr_assert_eq(d.v[2].status, GS_DIFF_GONE);
    cr_assert_eq(d.v[2].a, 100);
    cr_assert_eq(d.count[GS_DIFF_SHRUNK], 0);
    cr_assert_str_eq(gs_diff_status_name(d.v[2].status), "gone");
    gs_diff_free(&d);
    gs_result_free(a);
    gs_result_free(b);
    gs_sym_free(sym);
}
