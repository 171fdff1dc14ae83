/*
 * rel_clitraces: writes the crafted traces of the CLI's bounded-answer tests
 * (tests/integration/rel_cli.sh, docs/reliability.md "The CLI: bounded
 * answers") with the trace builder, so every byte is known. Each once made
 * `gcspy report` or `gcspy check` loop, crash under UBSan or use memory out
 * of proportion to its size. It is a generator, not a program run under the
 * shim.
 *
 *   rel_clitraces DIR FIFO
 *     writes DIR/NAME.trace for every case below; FIFO is the path the
 *     module-fifo trace's MODULE record names (the test makes the FIFO).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gcspy/codec.h"
#include "trace_builder.h"

static void proc(struct gs_tb *tb, const char *argv, size_t argv_len)
{
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = 77, .ppid = 1, .wall_ns = 1700000000000000000ull, .exe = "/bin/cli",
        .argv = argv ? argv : "cli", .argv_len = argv ? argv_len : 3, .host = "h",
        .version = "0.1.0", .depth = 64, .page_size = 4096 });
}

static int put(struct gs_tb *tb, const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.trace", dir, name);
    int rc = gs_tb_write_file(tb, path);
    if (rc)
        fprintf(stderr, "rel_clitraces: cannot write %s\n", path);
    gs_tb_free(tb);
    return rc ? 2 : 0;
}

/* Times near 2^64: the model's time checkpoints (10 ms apart, then a
 * thousandth of the elapsed time) wrapped past the top and looped. */
static int time_top(const char *dir)
{
    struct gs_tb *tb = gs_tb_new();
    const uint64_t t = UINT64_MAX - 5;
    proc(tb, NULL, 0);
    gs_tb_thread_start(tb, 1, 77, t - 100);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_alloc(tb, t - 50, 1, 0x1000, 100, 1);
    gs_tb_alloc(tb, t, 1, 0x2000, 100, 1);
    gs_tb_free_rec(tb, t, 0x1000);
    gs_tb_process_exit(tb, UINT64_MAX, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, UINT64_MAX, 2, 1, 200, 1, 100);
    return put(tb, dir, "time-top");
}

/* A valid block ending just below 2^64: the HTML page's address map. */
static int block_top(const char *dir)
{
    struct gs_tb *tb = gs_tb_new();
    proc(tb, NULL, 0);
    gs_tb_thread_start(tb, 1, 77, 1);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_alloc(tb, 10, 1, 0x1000, 100, 1);
    gs_tb_alloc(tb, 20, 1, UINT64_MAX - 0x1000, 0x1000 - 8, 1);
    gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000, 2, 0, 0x1000 - 8 + 100, 2, 0x1000 - 8 + 100);
    return put(tb, dir, "block-top");
}

/* Only PYCODE records, their ids spread over [0, 2^30): the replay indexed
 * them directly, in one array as long as the largest id (24 GB). 20,000
 * of them. */
static int pycode_sparse(const char *dir)
{
    struct gs_tb *tb = gs_tb_new();
    proc(tb, NULL, 0);
    for (uint64_t k = 0; k < 20000; k++) {
        char fn[32];
        snprintf(fn, sizeof fn, "f%" PRIu64, k);
        gs_tb_pycode(tb, k * 50000 + 1, "t.py", fn, k);
    }
    gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000, 0, 0, 0, 0, 0);
    return put(tb, dir, "pycode-sparse");
}

/* A lengthed record whose body is the varints given. */
static void rec_u(struct gs_tb *tb, uint8_t type, size_t n, const uint64_t *v)
{
    uint8_t body[16 * GS_VARINT_MAX], *p = body;
    for (size_t i = 0; i < n && i < 16; i++)
        p = gs_put_u(p, v[i]);
    gs_tb_lengthed(tb, type, body, (size_t)(p - body));
}

/* A tensor block of 2^63 bytes in a caching-allocator snapshot, gone in
 * the next, so the replay takes it out of the totals: it negated the size
 * as an int64_t (INT64_MIN: undefined). (An ALLOC of that size is never
 * replayed: the format checks refuse it.) */
static int pool_2_63(const char *dir)
{
    struct gs_tb *tb = gs_tb_new();
    const uint64_t seg = 0x7f0000000000ull, big = 1ull << 63;
    proc(tb, NULL, 0);
    gs_tb_thread_start(tb, 1, 77, 1);
    rec_u(tb, GS_REC_POOL_SNAPSHOT, 6, (const uint64_t[]){ 1, 10, GS_POOL_WHY_API, 1, 1, 0 });
    rec_u(tb, GS_REC_POOL_SEGMENT, 6, (const uint64_t[]){ 1, 0, seg, big, 0, GS_POOL_LARGE });
    rec_u(tb, GS_REC_POOL_BLOCK, 6, (const uint64_t[]){ 1, seg, big, big, GS_PBLK_ACTIVE, 0 });
    rec_u(tb, GS_REC_POOL_SNAPSHOT, 6, (const uint64_t[]){ 2, 20, GS_POOL_WHY_API, 1, 0, 0 });
    rec_u(tb, GS_REC_POOL_SEGMENT, 6, (const uint64_t[]){ 2, 0, seg, big, 0, GS_POOL_LARGE });
    gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000, 0, 0, 0, 0, 0);
    return put(tb, dir, "pool-2-63");
}

/* A leak whose stack has no frame (stack 5, which no STACK record
 * defines: malformed): building its frames handed memcpy a null pointer
 * (with a length of 0, still undefined) when stacks are symbolized. With a
 * caching-allocator snapshot of no segment beside it. */
static int empty_arrays(const char *dir)
{
    struct gs_tb *tb = gs_tb_new();
    proc(tb, NULL, 0);
    gs_tb_thread_start(tb, 1, 77, 1);
    gs_tb_alloc(tb, 10, 1, 0x1000, 100, 5);
    rec_u(tb, GS_REC_POOL_SNAPSHOT, 6, (const uint64_t[]){ 1, 20, GS_POOL_WHY_EXIT, 0, 0, 0 });
    struct gs_tb_scan_end e = { .scan_id = 1, .t_start = 30, .t_stopped = 31, .t_marked = 32,
                                .t_end = 33, .threads = 1, .live_blocks = 1, .live_bytes = 100 };
    e.cls_blocks[GS_CLASS_DEFINITE] = 1;
    e.cls_bytes[GS_CLASS_DEFINITE] = 100;
    gs_tb_scan_begin(tb, 1, 30, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x1000, 100, 5, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_end(tb, &e);
    gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000, 1, 0, 100, 1, 100);
    return put(tb, dir, "empty-arrays");
}

/* A definite leak of 100 bytes at 0x1000 from stack `stack`, found by an
 * exit scan: `gcspy check` fails on it (exit 1). */
static void leak(struct gs_tb *tb, uint64_t stack)
{
    gs_tb_alloc(tb, 10, 1, 0x1000, 100, stack);
    struct gs_tb_scan_end e = { .scan_id = 1, .t_start = 30, .t_stopped = 31, .t_marked = 32,
                                .t_end = 33, .threads = 1, .live_blocks = 1, .live_bytes = 100 };
    e.cls_blocks[GS_CLASS_DEFINITE] = 1;
    e.cls_bytes[GS_CLASS_DEFINITE] = 100;
    gs_tb_scan_begin(tb, 1, 30, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x1000, 100, stack, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_end(tb, &e);
    gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000, 1, 0, 100, 1, 100);
}

/* A MODULE record naming a FIFO, and a leak whose stack is in it: the
 * symbolizer opens the module's file (symbols on), and waited forever for
 * a writer. */
static int module_fifo(const char *dir, const char *fifo)
{
    struct gs_tb *tb = gs_tb_new();
    proc(tb, NULL, 0);
    struct gs_tb_seg seg = { 0, 0x10000, 5 };
    gs_tb_module(tb, 1, 1, 0x400000, fifo, NULL, 0, 1, &seg);
    gs_tb_thread_start(tb, 1, 77, 1);
    gs_tb_stack(tb, 1, 0, 0x401234);
    leak(tb, 1);
    return put(tb, dir, "module-fifo");
}

/* An argv holding what XML 1.0 cannot carry and well-formed UTF-8 must not
 * hold: an overlong '/' (C0 AF, E0 80 AF), a surrogate (ED A0 80), U+FFFE
 * and U+FFFF (EF BF BE, EF BF BF), a code point past U+10FFFF (F4 90 80
 * 80), a 0xF5 lead; and "argv-ok", which must survive. With a leak, so the
 * JUnit file has a failure naming the command. */
static int utf8_argv(const char *dir)
{
    static const char argv[] = "prog\0argv-ok \xc0\xaf \xe0\x80\xaf \xed\xa0\x80 "
                               "\xef\xbf\xbe \xef\xbf\xbf \xf4\x90\x80\x80 \xf5\x80 end";
    struct gs_tb *tb = gs_tb_new();
    proc(tb, argv, sizeof argv - 1);
    gs_tb_thread_start(tb, 1, 77, 1);
    gs_tb_stack(tb, 1, 0, 0x401234);
    leak(tb, 1);
    return put(tb, dir, "utf8-argv");
}

/* C1 controls, as raw bytes (0x9B is CSI to an 8-bit terminal, 0x85 NEL)
 * and as UTF-8 (U+009B: C2 9B), in the command line and a marker. */
static int c1(const char *dir)
{
    static const char argv[] = "prog\0c1-ok \x9b" "2J \xc2\x9b" "31m \x85 \xc2\x85 \x90 end";
    /* and a host name of "x" and 7,499 U+1F600 (4 bytes each): stdio hands
     * the text filter its buffer in pieces, which cut this line where the
     * buffer fills, inside a sequence unless the text before it happens to
     * end on one (rel_cli.sh varies that length); the filter must still
     * pass every sequence */
    static char host[30001];
    size_t n = 0;
    host[n++] = 'x';
    while (n + 4 < sizeof host) {
        memcpy(host + n, "\xf0\x9f\x98\x80", 4);
        n += 4;
    }
    host[n] = 0;
    struct gs_tb *tb = gs_tb_new();
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = 77, .ppid = 1, .wall_ns = 1700000000000000000ull, .exe = "/bin/cli",
        .argv = argv, .argv_len = sizeof argv - 1, .host = host, .version = "0.1.0",
        .depth = 64, .page_size = 4096 });
    gs_tb_thread_start(tb, 1, 77, 1);
    gs_tb_marker(tb, 5, 1, 1, "step \xc2\x9b" "2J \x9b" "2J");
    gs_tb_stack(tb, 1, 0, 0x401234);
    leak(tb, 1);
    return put(tb, dir, "c1");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rel_clitraces DIR FIFO\n");
        return 2;
    }
    mkdir(argv[1], 0755);
    int rc = 0;
    rc |= time_top(argv[1]);
    rc |= block_top(argv[1]);
    rc |= pycode_sparse(argv[1]);
    rc |= empty_arrays(argv[1]);
    rc |= pool_2_63(argv[1]);
    rc |= module_fifo(argv[1], argv[2]);
    rc |= utf8_argv(argv[1]);
    rc |= c1(argv[1]);
    return rc;
}
