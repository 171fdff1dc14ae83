/*
 * mktraces: writes the hand-built traces the analyzer's golden tests read
 * (the analyzer_ scripts in tests/integration compare `gcspy report
 * --format json` on them with the JSON files in tests/golden). Built -O0 -g: its own functions are the
 * allocation sites, so the traces name real code in a real module (this
 * program, with its load bias, segments and build id taken from the running
 * process) and symbolization to function, file, line and inlined frames can
 * be checked exactly. Other modules are fake paths, so their frames stay
 * module+offset.
 *
 *   mktraces DIR       writes DIR/<scenario>.trace for every scenario below
 *
 * Each scenario states its expected outcome above it. Changing a line of
 * this file moves the golden line numbers: regenerate with UPDATE_GOLDEN=1.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_builder.h"

#define MS 1000000ull

/* ---- real allocation sites: each returns a return address inside itself ---- */

__attribute__((noinline)) static uint64_t here(void)
{
    return (uint64_t)__builtin_return_address(0);
}

__attribute__((noinline)) uint64_t site_a(void)
{
    return here(); /* golden: site_a */
}

__attribute__((noinline)) uint64_t site_b(void)
{
    return here(); /* golden: site_b */
}

__attribute__((noinline)) uint64_t caller_main(void)
{
    return here(); /* golden: caller_main */
}

static inline __attribute__((always_inline)) uint64_t inlined_helper(void)
{
    return here(); /* golden: inlined_helper */
}

__attribute__((noinline)) uint64_t outer_with_inline(void)
{
    return inlined_helper(); /* golden: outer_with_inline */
}

/* ---- this program as a MODULE record ---- */

struct selfmod {
    uint64_t base;
    struct gs_tb_seg seg[8];
    size_t nseg;
    unsigned char bid[64];
    size_t bidlen;
    char path[PATH_MAX];
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct selfmod *m = data;
    if (info->dlpi_name && info->dlpi_name[0])
        return 0; /* the main program is the entry without a name */
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && m->nseg < 8) {
            m->seg[m->nseg].vaddr = ph->p_vaddr;
            m->seg[m->nseg].memsz = ph->p_memsz;
            m->seg[m->nseg].flags = ph->p_flags;
            m->nseg++;
        } else if (ph->p_type == PT_NOTE) {
            const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
            const unsigned char *e = p + ph->p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= e) {
                const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
                const unsigned char *name = p + sizeof *nh;
                const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
                if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= sizeof m->bid) {
                    memcpy(m->bid, desc, nh->n_descsz);
                    m->bidlen = nh->n_descsz;
                }
                p = desc + ((nh->n_descsz + 3) & ~3u);
            }
        }
    }
    return 1;
}

static struct selfmod self;

static void modules(struct gs_tb *tb, uint64_t t)
{
    gs_tb_module(tb, 1, t, self.base, self.path, self.bid, self.bidlen, self.nseg, self.seg);
    static const unsigned char fake_bid[] = { 0x01, 0x02, 0x03, 0x04 };
    struct gs_tb_seg fseg[1] = { { 0, 0x10000, 5 } };
    gs_tb_module(tb, 2, t, 0x7f0000000000ull, "/nonexistent/libfake.so", fake_bid,
                 sizeof fake_bid, 1, fseg);
}

static void proc(struct gs_tb *tb, uint64_t pid, uint64_t ppid, const char *argv, size_t argv_len,
                 uint64_t flags)
{
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = pid, .ppid = ppid, .wall_ns = 1700000000000000000ull, .exe = "/usr/bin/leaky",
        .argv = argv, .argv_len = argv_len, .host = "golden", .flags = flags,
        .version = "0.1.0", .depth = 64, .page_size = 4096 });
    /* thread 1, the one every event names, is defined before it is used */
    gs_tb_thread_start(tb, 1, pid + 1, 0);
}

static void scan_end(struct gs_tb *tb, uint64_t id, uint64_t t0, uint64_t t1,
                     const uint64_t blocks[4], const uint64_t bytes[4])
{
    struct gs_tb_scan_end e = {
        .scan_id = id, .t_start = t0, .t_stopped = t0 + 100000, .t_marked = t1 - 100000,
        .t_end = t1, .threads = 1, .bytes_scanned = 65536, .blocks_visited = 10,
        .live_blocks = 10, .live_bytes = 10000,
    };
    memcpy(e.cls_blocks, blocks, 4 * sizeof *blocks); /* the four classes before RUNTIME */
    memcpy(e.cls_bytes, bytes, 4 * sizeof *bytes);
    gs_tb_scan_end(tb, &e);
}

/* leaks: every class and memory kind, symbolized stacks.
 *   definite  host   100 bytes, 1 block, stack [site_a]
 *   indirect  host   100 bytes, 1 block, stack [site_a]
 *   possible  host  1000 bytes, 1 block, stack [site_b, caller_main]
 *   reachable host   100 bytes [site_a]; pinned 4096 bytes [site_a]
 *   definite  device 1 MiB, 1 block, stack [site_b, caller_main]
 *   not-freed host    50 bytes [inlined_helper (inlined), outer_with_inline]
 *   libfake.so+0x1234 block (4096) was definite but freed after the scan: dropped
 * Three chunks, so the damage tests can cut it in several places. */
static void leaks(struct gs_tb *tb)
{
    static const char argv[] = "leaky\0--n\0003";
    proc(tb, 100, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    gs_tb_stack(tb, 2, 0, caller_main());
    gs_tb_stack(tb, 3, 2, site_b());
    gs_tb_stack(tb, 4, 2, 0x7f0000001234ull);
    gs_tb_stack(tb, 5, 0, outer_with_inline());
    gs_tb_alloc(tb, 1 * MS, 1, 0x10000, 100, 1);
    gs_tb_alloc(tb, 2 * MS, 1, 0x20000, 100, 1);
    gs_tb_alloc(tb, 3 * MS, 1, 0x30000, 100, 1);
    gs_tb_alloc(tb, 4 * MS, 1, 0x40000, 1000, 3);
    gs_tb_alloc(tb, 5 * MS, 1, 0x50000, 1000, 3);
    gs_tb_alloc(tb, 6 * MS, 1, 0x60000, 4096, 4);
    gs_tb_alloc_ex(tb, 7 * MS, 1, 0x7f5000000000ull, 1 << 20, 3, GS_MEM_DEVICE,
                   GS_FN_CUDA_RUNTIME, 0, 0, 20000);
    gs_tb_alloc_ex(tb, 8 * MS, 1, 0x7f6000000000ull, 4096, 1, GS_MEM_PINNED,
                   GS_FN_CUDA_RUNTIME, 0, 0, 20000);
    gs_tb_free_rec(tb, 9 * MS, 0x50000);
    gs_tb_flush_chunk(tb);

    gs_tb_scan_begin(tb, 1, 10 * MS, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x10000, 100, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 1, 0x20000, 100, 1, GS_MEM_HOST, GS_CLASS_INDIRECT);
    gs_tb_scan_block(tb, 1, 0x30000, 100, 1, GS_MEM_HOST, GS_CLASS_REACHABLE);
    gs_tb_scan_block(tb, 1, 0x40000, 1000, 3, GS_MEM_HOST, GS_CLASS_POSSIBLE);
    gs_tb_scan_block(tb, 1, 0x60000, 4096, 4, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 1, 0x7f5000000000ull, 1 << 20, 3, GS_MEM_DEVICE, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 1, 0x7f6000000000ull, 4096, 1, GS_MEM_PINNED, GS_CLASS_REACHABLE);
    scan_end(tb, 1, 10 * MS, 12 * MS, (const uint64_t[4]){ 3, 1, 1, 2 },
             (const uint64_t[4]){ 4196 + (1 << 20), 100, 1000, 4196 });
    gs_tb_flush_chunk(tb);

    gs_tb_alloc(tb, 13 * MS, 1, 0x70000, 50, 5);
    gs_tb_free_rec(tb, 14 * MS, 0x60000);
    gs_tb_process_exit(tb, 15 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 16 * MS, 8, 2, 4 * 100 + 2 * 1000 + 4096 + (1 << 20) + 4096 + 50 - 100, 7,
                    0);
}

/* intervals: three periodic scans; one block becomes unreachable before
 * each. Expected: each scan has new_unreachable 1 block; the groups carry
 * first_unreachable scan 1 (marker_before "epoch 1"), scan 2 (markers
 * "epoch 2".."epoch 2b", steps 1..2) and scan 3 (steps 3..3). */
static void intervals(struct gs_tb *tb)
{
    static const char argv[] = "trainer";
    proc(tb, 300, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    gs_tb_stack(tb, 2, 0, site_b());
    gs_tb_stack(tb, 3, 0, caller_main());
    gs_tb_marker(tb, 1 * MS, 1, GS_MARK_USER, "epoch 1");
    gs_tb_alloc(tb, 2 * MS, 1, 0x10000, 64, 1);
    gs_tb_scan_begin(tb, 1, 10 * MS, GS_SCAN_TRIG_PERIODIC, 0);
    gs_tb_scan_block(tb, 1, 0x10000, 64, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    scan_end(tb, 1, 10 * MS, 11 * MS, (const uint64_t[4]){ 1, 0, 0, 0 },
             (const uint64_t[4]){ 64, 0, 0, 0 });
    gs_tb_marker(tb, 20 * MS, 1, GS_MARK_USER, "epoch 2");
    gs_tb_marker(tb, 21 * MS, 1, GS_MARK_STEP, "1");
    gs_tb_alloc(tb, 22 * MS, 1, 0x20000, 128, 2);
    gs_tb_marker(tb, 23 * MS, 1, GS_MARK_STEP, "2");
    gs_tb_marker(tb, 24 * MS, 1, GS_MARK_USER, "epoch 2b");
    gs_tb_scan_begin(tb, 2, 30 * MS, GS_SCAN_TRIG_PERIODIC, 0);
    gs_tb_scan_block(tb, 2, 0x10000, 64, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 2, 0x20000, 128, 2, GS_MEM_HOST, GS_CLASS_DEFINITE);
    scan_end(tb, 2, 30 * MS, 31 * MS, (const uint64_t[4]){ 2, 0, 0, 0 },
             (const uint64_t[4]){ 192, 0, 0, 0 });
    gs_tb_marker(tb, 40 * MS, 1, GS_MARK_STEP, "3");
    gs_tb_alloc(tb, 41 * MS, 1, 0x30000, 256, 3);
    gs_tb_scan_begin(tb, 3, 50 * MS, GS_SCAN_TRIG_PERIODIC, 0);
    gs_tb_scan_block(tb, 3, 0x10000, 64, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 3, 0x20000, 128, 2, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 3, 0x30000, 256, 3, GS_MEM_HOST, GS_CLASS_DEFINITE);
    scan_end(tb, 3, 50 * MS, 51 * MS, (const uint64_t[4]){ 3, 0, 0, 0 },
             (const uint64_t[4]){ 448, 0, 0, 0 });
    gs_tb_process_exit(tb, 60 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 61 * MS, 3, 0, 448, 3, 448);
}

/* growth_leak: 100 steps of 10 ms; each keeps 1000 bytes from site_a (a
 * list of loss tensors) and allocates and frees 5000 bytes at site_b. At
 * exit the kept blocks are freed (interpreter teardown). Expected: one
 * growth suspect, site_a, 1000 bytes/step, confidence 1; site_b not. */
static void growth_leak(struct gs_tb *tb)
{
    static const char argv[] = "python3\0train.py";
    proc(tb, 400, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    gs_tb_stack(tb, 2, 0, site_b());
    uint64_t t = 1 * MS;
    for (int k = 1; k <= 100; k++) {
        gs_tb_alloc(tb, t + 1 * MS, 1, 0x100000 + (uint64_t)k * 0x1000, 1000, 1);
        gs_tb_alloc(tb, t + 2 * MS, 1, 0x900000, 5000, 2);
        gs_tb_free_rec(tb, t + 3 * MS, 0x900000);
        char label[16];
        snprintf(label, sizeof label, "%d", k);
        gs_tb_marker(tb, t + 9 * MS, 1, GS_MARK_STEP, label);
        t += 10 * MS;
    }
    for (int k = 1; k <= 100; k++)
        gs_tb_free_rec(tb, t + (uint64_t)k * 1000, 0x100000 + (uint64_t)k * 0x1000);
    gs_tb_process_exit(tb, t + 1 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, t + 2 * MS, 200, 200, 100 * 6000, 0, 0);
}

/* growth_many (not a golden: the HTML page's growth legend,
 * html_browser.sh): 60 steps of 10 ms; twelve sites (stacks 2-13, each a
 * caller of site_a) keep k x 2000 bytes a step for k = 1..12, all freed at
 * exit. Expected: twelve growth suspects, the largest stack 13's. */
static void growth_many(struct gs_tb *tb)
{
    static const char argv[] = "python3\0many.py";
    proc(tb, 460, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    for (uint64_t k = 1; k <= 12; k++)
        gs_tb_stack(tb, 1 + k, 1, site_b() + k);
    uint64_t t = 1 * MS, addr = 0x100000;
    for (int step = 1; step <= 60; step++) {
        for (uint64_t k = 1; k <= 12; k++, addr += 0x10000)
            gs_tb_alloc(tb, t + k * 100000, 1, addr, k * 2000, 1 + k);
        char label[16];
        snprintf(label, sizeof label, "%d", step);
        gs_tb_marker(tb, t + 9 * MS, 1, GS_MARK_STEP, label);
        t += 10 * MS;
    }
    for (uint64_t a = 0x100000; a < addr; a += 0x10000)
        gs_tb_free_rec(tb, t, a);
    gs_tb_process_exit(tb, t + 1 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, t + 2 * MS, 720, 720, 60 * 156000, 0, 0);
}

/* growth_steady: 100 steps; each step's 1000-byte block (site_a) is freed in
 * the next step, and a cache (site_b) grows for the first 10 steps, then
 * stays. Expected: no growth suspect. */
static void growth_steady(struct gs_tb *tb)
{
    static const char argv[] = "python3\0steady.py";
    proc(tb, 500, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    gs_tb_stack(tb, 2, 0, site_b());
    uint64_t t = 1 * MS;
    for (int k = 1; k <= 100; k++) {
        uint64_t a = 0x100000 + (uint64_t)(k % 2) * 0x1000;
        gs_tb_alloc(tb, t + 1 * MS, 1, a, 1000, 1);
        if (k > 1)
            gs_tb_free_rec(tb, t + 2 * MS, 0x100000 + (uint64_t)((k - 1) % 2) * 0x1000);
        if (k <= 10)
            gs_tb_alloc(tb, t + 3 * MS, 1, 0x800000 + (uint64_t)k * 0x10000, 50000, 2);
        char label[16];
        snprintf(label, sizeof label, "%d", k);
        gs_tb_marker(tb, t + 9 * MS, 1, GS_MARK_STEP, label);
        t += 10 * MS;
    }
    gs_tb_process_exit(tb, t + 1 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, t + 2 * MS, 110, 99, 100 * 1000 + 10 * 50000, 11, 1000 + 500000);
}

/* growth_time: no step markers; 200 blocks of 1000 bytes kept, one every
 * 10 ms over 2 s (site_b), freed at exit. Expected: one suspect on the time
 * axis, 100000 bytes/s. */
static void growth_time(struct gs_tb *tb)
{
    static const char argv[] = "server";
    proc(tb, 600, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_b());
    for (int k = 0; k < 200; k++)
        gs_tb_alloc(tb, (uint64_t)(k + 1) * 10 * MS, 1, 0x100000 + (uint64_t)k * 0x1000, 1000, 1);
    for (int k = 0; k < 200; k++)
        gs_tb_free_rec(tb, 2010 * MS + (uint64_t)k, 0x100000 + (uint64_t)k * 0x1000);
    gs_tb_process_exit(tb, 2011 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 2012 * MS, 200, 200, 200000, 0, 0);
}

/* pauses: over 1 s, python-gc [100,110] ms and [500,501] ms, a 5 ms cudaFree
 * at 200 ms (a CUDA-sync pause), a 0.5 ms one at 300 ms (below the 1 ms
 * threshold), a scan [900,902] ms. Expected: 4 pauses, 18 ms, share 0.018,
 * p50 2 ms, p90 10 ms, max 10 ms; MMU 0 at 1..10 ms, 0.5 at 20 ms, 0.9 at
 * 100 ms, 0.925 at 200 ms, 0.968 at 500 ms, 0.982 at 1 s. */
static void pauses(struct gs_tb *tb)
{
    static const char argv[] = "gpu";
    proc(tb, 700, 1, argv, sizeof argv - 1, 0);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_pause(tb, 100 * MS, 110 * MS, GS_PAUSE_PYTHON_GC, 1, 2, 300);
    gs_tb_alloc_ex(tb, 150 * MS, 1, 0x7f5000000000ull, 1 << 20, 1, GS_MEM_DEVICE,
                   GS_FN_CUDA_RUNTIME, 0, 0, 100000);
    gs_tb_free_ex(tb, 200 * MS, 1, 0x7f5000000000ull, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME,
                  5 * MS);
    gs_tb_alloc_ex(tb, 250 * MS, 1, 0x7f5000000000ull, 1 << 20, 1, GS_MEM_DEVICE,
                   GS_FN_CUDA_RUNTIME, 0, 0, 100000);
    gs_tb_free_ex(tb, 300 * MS, 1, 0x7f5000000000ull, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME,
                  MS / 2);
    gs_tb_pause(tb, 500 * MS, 501 * MS, GS_PAUSE_PYTHON_GC, 1, 0, 12);
    gs_tb_scan_begin(tb, 1, 900 * MS, GS_SCAN_TRIG_EXIT, 0);
    scan_end(tb, 1, 900 * MS, 902 * MS, (const uint64_t[4]){ 0, 0, 0, 0 },
             (const uint64_t[4]){ 0, 0, 0, 0 });
    gs_tb_process_exit(tb, 999 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000 * MS, 2, 2, 2 << 20, 0, 0);
}

/* frag: three malloc samples (last: arena 1 MiB, in use 600 KiB, free
 * 424 KiB, top pad 128 KiB), device 0 samples (last: reserved 100 MiB, in
 * use 60 MiB, 4 segments, largest free 10 MiB: ratio 0.75), and live host
 * blocks 0x10010 (24 bytes), 0x10030 (100), 0x10100 (16): one gap of 96
 * bytes; a 1 MiB block at a page + 16 is an mmapped chunk, left out. */
static void frag(struct gs_tb *tb)
{
    static const char argv[] = "fragger";
    proc(tb, 800, 1, argv, sizeof argv - 1, 0);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_alloc(tb, 1 * MS, 1, 0x10010, 24, 1);
    gs_tb_alloc(tb, 1 * MS, 1, 0x10030, 100, 1);
    gs_tb_alloc(tb, 1 * MS, 1, 0x10100, 16, 1);
    gs_tb_alloc(tb, 1 * MS, 1, 0x7f0000001010ull, 1 << 20, 1);
    gs_tb_sample(tb, 100 * MS, 50 << 20, 512 << 10, 10, 1, 1 << 20, 300 << 10, 212 << 10, 64 << 10);
    gs_tb_sample(tb, 200 * MS, 60 << 20, 2 << 20, 40, 1, 1 << 20, 1 << 20, 1 << 20, 256 << 10);
    gs_tb_sample(tb, 300 * MS, 55 << 20, 1 << 20, 30, 1, 1 << 20, 600 << 10, 424 << 10, 128 << 10);
    gs_tb_device_sample(tb, 100 * MS, 0, 0, 80 << 20, 70 << 20, 2, 10 << 20);
    gs_tb_device_sample(tb, 200 * MS, 0, 0, 100 << 20, 60 << 20, 4, 10 << 20);
    gs_tb_process_exit(tb, 400 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 401 * MS, 4, 0, 140 + (1 << 20), 4, 140 + (1 << 20));
}

/* multi_parent / multi_child: a parent (pid 200) leaks 100 bytes at
 * site_a, forks; the child (pid 201) inherits the block (leaked there too)
 * and leaks 10 bytes of its own at site_b. Expected totals: definite 110
 * bytes in 2 blocks (the inherited block counted once). */
static void multi_parent(struct gs_tb *tb)
{
    static const char argv[] = "launcher";
    proc(tb, 200, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    gs_tb_alloc(tb, 1 * MS, 1, 0x10000, 100, 1);
    gs_tb_scan_begin(tb, 1, 10 * MS, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x10000, 100, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    scan_end(tb, 1, 10 * MS, 11 * MS, (const uint64_t[4]){ 1, 0, 0, 0 },
             (const uint64_t[4]){ 100, 0, 0, 0 });
    gs_tb_process_exit(tb, 12 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 13 * MS, 1, 0, 100, 1, 100);
}

static void multi_child(struct gs_tb *tb)
{
    static const char argv[] = "launcher\0--worker";
    proc(tb, 201, 200, argv, sizeof argv - 1, GS_PROC_F_FORKED);
    modules(tb, 0);
    gs_tb_stack(tb, 1, 0, site_a());
    gs_tb_stack(tb, 2, 0, site_b());
    gs_tb_alloc_ex(tb, 0, 0, 0x10000, 100, 1, GS_MEM_HOST, GS_FN_INHERITED, 0, 0, 0);
    gs_tb_alloc(tb, 1 * MS, 1, 0x20000, 10, 2);
    gs_tb_scan_begin(tb, 1, 5 * MS, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x10000, 100, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_block(tb, 1, 0x20000, 10, 2, GS_MEM_HOST, GS_CLASS_DEFINITE);
    scan_end(tb, 1, 5 * MS, 6 * MS, (const uint64_t[4]){ 2, 0, 0, 0 },
             (const uint64_t[4]){ 110, 0, 0, 0 });
    gs_tb_process_exit(tb, 7 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 8 * MS, 1, 0, 10, 2, 110);
}

/* python: a block allocated under two Python frames. The recorded stack
 * interleaves interpreter frames (module libpython3.11.so) with the Python
 * frames; expected stack: [libfake.so+0x10, step at train.py:12, main at
 * train.py:40], the interpreter's frames replaced by the Python ones. */
static void python(struct gs_tb *tb)
{
    static const char argv[] = "python3\0train.py";
    proc(tb, 900, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    struct gs_tb_seg pseg[1] = { { 0, 0x400000, 5 } };
    gs_tb_module(tb, 3, 1000, 0x7f1000000000ull, "/nonexistent/libpython3.11.so.1.0", NULL, 0,
                 1, pseg);
    gs_tb_pycode(tb, 1, "train.py", "main", 30);
    gs_tb_pycode(tb, 2, "train.py", "step", 10);
    gs_tb_stack(tb, 1, 0, 0x7f1000001000ull);                      /* Py_RunMain */
    gs_tb_stack(tb, 2, 1, GS_IP_PYFRAME | (1ull << 32) | 40);        /* main, line 40 */
    gs_tb_stack(tb, 3, 2, 0x7f1000002000ull);                      /* _PyEval_EvalFrameDefault */
    gs_tb_stack(tb, 4, 3, GS_IP_PYFRAME | (2ull << 32) | 12);        /* step, line 12 */
    gs_tb_stack(tb, 5, 4, 0x7f1000003000ull);                      /* PyObject_Malloc */
    gs_tb_stack(tb, 6, 5, 0x7f0000000010ull);                      /* libfake.so+0x10 */
    gs_tb_alloc(tb, 1 * MS, 1, 0x10000, 4096, 6);
    gs_tb_process_exit(tb, 2 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 3 * MS, 1, 0, 4096, 1, 4096);
}

/* noend: the leaks scenario's first chunk only, as a SIGKILL leaves it:
 * complete false, no TRACE_END, the five live blocks not freed. */
static void noend(struct gs_tb *tb)
{
    static const char argv[] = "leaky";
    proc(tb, 110, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    for (int k = 0; k < 5; k++)
        gs_tb_alloc(tb, (uint64_t)(k + 1) * MS, 1, 0x10000 + (uint64_t)k * 0x1000, 100, 1);
}

/* The start both exec scenarios share: a shell image allocating 100 and
 * 200 bytes at site_a. */
static void shell_image(struct gs_tb *tb, uint64_t pid, const char *argv, size_t argv_len)
{
    proc(tb, pid, 1, argv, argv_len, 0);
    modules(tb, 1000);
    gs_tb_stack(tb, 1, 0, site_a());
    gs_tb_alloc(tb, 1 * MS, 1, 0x10000, 100, 1);
    gs_tb_alloc(tb, 2 * MS, 1, 0x11000, 200, 1);
}

/* exec: a shell's image that allocates three blocks, frees one and execs
 * /bin/true (EXEC last, no TRACE_END, as the shim leaves it): complete,
 * ended by exec with no scan (leak_status "exec"), exit how "exec", the
 * two blocks live then released by the exec (released_by_exec 300 bytes in
 * 2 blocks), no group and nothing in the summary. */
static void exec_end(struct gs_tb *tb)
{
    static const char argv[] = "sh\0-c\0true";
    shell_image(tb, 120, argv, sizeof argv - 1);
    gs_tb_alloc(tb, 3 * MS, 1, 0x12000, 400, 1);
    gs_tb_free_rec(tb, 4 * MS, 0x12000);
    gs_tb_sample(tb, 5 * MS, 1 << 20, 0, 0, 0, 0, 0, 0, 0);
    gs_tb_exec(tb, 5 * MS, "/bin/true");
}

/* exec_failed: the same image whose exec failed (EXEC, then an allocation
 * later in time) and which was then killed: no end, so incomplete, no scan
 * (leak_status "no-scan"), the three live blocks not freed, no exit. */
static void exec_failed(struct gs_tb *tb)
{
    static const char argv[] = "sh\0-c\0nosuchcommand";
    shell_image(tb, 121, argv, sizeof argv - 1);
    gs_tb_exec(tb, 3 * MS, "/usr/bin/nosuchcommand");
    gs_tb_alloc(tb, 4 * MS, 1, 0x12000, 400, 1);
}

/* A lengthed record whose body is the n varints given (the caching
 * allocator's records have no builder call). */
static void lengthed_u(struct gs_tb *tb, uint8_t type, int n, const uint64_t *v)
{
    uint8_t body[16 * 10], *p = body;
    for (int i = 0; i < n && i < 16; i++) {
        uint64_t x = v[i];
        do { /* LEB128, as gcspy/codec.h writes it */
            *p++ = (uint8_t)((x & 0x7f) | (x > 0x7f ? 0x80 : 0));
            x >>= 7;
        } while (x);
    }
    gs_tb_lengthed(tb, type, body, (size_t)(p - body));
}

#define REC(tb, type, ...)                                                             \
    lengthed_u(tb, type, (int)(sizeof (const uint64_t[]){ __VA_ARGS__ } / sizeof(uint64_t)), \
               (const uint64_t[]){ __VA_ARGS__ })

/* torch: PyTorch's CUDA caching allocator on device 0, two cudaMalloc
 * segments (site_b, 20 MiB and 2 MiB) and a snapshot before the exit scan:
 *   segment 0: tensor A 4 MiB active (forward at train.py:12), tensor B
 *              8 MiB active (main at train.py:40), 8 MiB cached free
 *   segment 1: tensor C 512 KiB active (forward), 1.5 MiB pending free (main)
 *   history: alloc 2, free_requested 1, segment_alloc 1
 * The scan finds A and C unreachable. Expected: one definite device group
 * labelled torch, 4.5 MiB in 2 blocks at [forward at train.py:12, main at
 * train.py:40]; the segments not freed (22 MiB, 2 blocks, site_b); B and the
 * pending block no group of their own; peak device 22 MiB (the tensors are
 * inside the segments); caching allocator: reserved 22 MiB in 2 segments,
 * allocated 12.5 MiB in 3 blocks (requested 12888608), pending free
 * 1.5 MiB in 1 block, cached free 8 MiB in 1 block, largest 8 MiB,
 * 4 events; tensors live at the end 14 MiB in 4 blocks. */
static void torch(struct gs_tb *tb)
{
    static const char argv[] = "python3\0train.py";
    const uint64_t S0 = 0x7f5000000000ull, S1 = 0x7f5002000000ull, MIB = 1 << 20;
    proc(tb, 1000, 1, argv, sizeof argv - 1, 0);
    modules(tb, 1000);
    gs_tb_pycode(tb, 1, "train.py", "main", 30);
    gs_tb_pycode(tb, 2, "train.py", "forward", 10);
    gs_tb_stack(tb, 1, 0, GS_IP_PYFRAME | (1ull << 32) | 40);   /* main, line 40 */
    gs_tb_stack(tb, 2, 1, GS_IP_PYFRAME | (2ull << 32) | 12);   /* forward, line 12 */
    gs_tb_stack(tb, 3, 0, site_b());
    gs_tb_alloc_ex(tb, 1 * MS, 1, S0, 20 * MIB, 3, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 1000);
    gs_tb_alloc_ex(tb, 2 * MS, 1, S1, 2 * MIB, 3, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0, 0, 1000);
    REC(tb, GS_REC_POOL_SNAPSHOT, 1, 5 * MS, GS_POOL_WHY_SCAN, 2, 5, 4);
    REC(tb, GS_REC_POOL_SEGMENT, 1, 0, S0, 20 * MIB, 0, GS_POOL_LARGE);
    REC(tb, GS_REC_POOL_BLOCK, 1, S0, 4 * MIB, 4000000, GS_PBLK_ACTIVE, 2);
    REC(tb, GS_REC_POOL_BLOCK, 1, S0 + 4 * MIB, 8 * MIB, 8 * MIB, GS_PBLK_ACTIVE, 1);
    REC(tb, GS_REC_POOL_BLOCK, 1, S0 + 12 * MIB, 8 * MIB, 0, GS_PBLK_INACTIVE, 0);
    REC(tb, GS_REC_POOL_SEGMENT, 1, 0, S1, 2 * MIB, 0, GS_POOL_SMALL);
    REC(tb, GS_REC_POOL_BLOCK, 1, S1, MIB / 2, 500000, GS_PBLK_ACTIVE, 2);
    REC(tb, GS_REC_POOL_BLOCK, 1, S1 + MIB / 2, 3 * MIB / 2, 3 * MIB / 2, GS_PBLK_PENDING_FREE, 1);
    REC(tb, GS_REC_POOL_EVENT, 1, 1 * MS, 0, GS_PEV_SEGMENT_ALLOC, S0, 20 * MIB, 0, 1);
    REC(tb, GS_REC_POOL_EVENT, 1, 3 * MS, 0, GS_PEV_ALLOC, S0, 4 * MIB, 0, 2);
    REC(tb, GS_REC_POOL_EVENT, 1, 4 * MS, 0, GS_PEV_ALLOC, S1, MIB / 2, 0, 2);
    REC(tb, GS_REC_POOL_EVENT, 1, 4 * MS, 0, GS_PEV_FREE_REQUESTED, S1 + MIB / 2, 3 * MIB / 2, 0, 1);
    gs_tb_scan_begin(tb, 1, 6 * MS, GS_SCAN_TRIG_EXIT, 0);
    REC(tb, GS_REC_SCAN_BLOCK, 1, S0, 4 * MIB, 2, GS_MEM_DEVICE, GS_CLASS_DEFINITE, GS_FN_TORCH);
    REC(tb, GS_REC_SCAN_BLOCK, 1, S1, MIB / 2, 2, GS_MEM_DEVICE, GS_CLASS_DEFINITE, GS_FN_TORCH);
    scan_end(tb, 1, 6 * MS, 7 * MS, (const uint64_t[4]){ 2, 0, 0, 0 },
             (const uint64_t[4]){ 4 * MIB + MIB / 2, 0, 0, 0 });
    gs_tb_process_exit(tb, 8 * MS, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 9 * MS, 2, 0, 22 * MIB, 2, 22 * MIB);
}

struct scenario {
    const char *name;
    void (*fn)(struct gs_tb *);
};

static const struct scenario scenarios[] = {
    { "leaks", leaks }, { "intervals", intervals }, { "growth_leak", growth_leak },
    { "growth_steady", growth_steady }, { "growth_time", growth_time }, { "pauses", pauses },
    { "frag", frag }, { "multi_parent", multi_parent }, { "multi_child", multi_child },
    { "python", python }, { "noend", noend }, { "torch", torch },
    { "exec", exec_end }, { "exec_failed", exec_failed }, { "growth_many", growth_many },
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: mktraces DIR\n");
        return 2;
    }
    if (!realpath("/proc/self/exe", self.path)) {
        perror("mktraces: /proc/self/exe");
        return 1;
    }
    dl_iterate_phdr(phdr_cb, &self);
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        struct gs_tb *tb = gs_tb_new();
        if (!tb)
            return 1;
        scenarios[i].fn(tb);
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.trace", argv[1], scenarios[i].name);
        if (gs_tb_write_file(tb, path)) {
            fprintf(stderr, "mktraces: cannot write %s\n", path);
            gs_tb_free(tb);
            return 1;
        }
        gs_tb_free(tb);
    }
    return 0;
}
