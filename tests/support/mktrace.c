/*
 * mktrace: writes a builder-made trace to a file, for scripts that test the
 * CLI on exact, known input (tests/integration/cli_basics.sh) and for the
 * worked example in docs/trace-format.md.
 *
 *   mktrace small OUT   one chunk: process, stack, alloc, free, trace end
 *   mktrace full OUT    two chunks with every record type once
 *
 * The expected `gcspy dump` lines are spelled out in cli_basics.sh; change
 * both together.
 */
#include <stdio.h>
#include <string.h>

#include "trace_builder.h"

static void small(struct gs_tb *tb)
{
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = 7, .ppid = 1, .exe = "/bin/x", .argv = "x", .argv_len = 1, .host = "h",
        .version = "0.1.0", .depth = 64, .page_size = 4096 });
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_alloc(tb, 100, 0, 0x5000, 64, 1); /* thread 0: no THREAD_START needed */
    gs_tb_free_rec(tb, 200, 0x5000);
    gs_tb_trace_end(tb, 300, 1, 1, 64, 0, 0);
}

static void full(struct gs_tb *tb)
{
    static const char argv[] = "python3\0train.py\0--name=a b";
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = 4242, .ppid = 1, .wall_ns = 1700000000000000000ull, .exe = "/usr/bin/python3",
        .argv = argv, .argv_len = sizeof argv - 1, .host = "node7", .rank1 = 1,
        .world_size1 = 2, .version = "0.1.0", .unwinder = 0, .depth = 64,
        .page_size = 4096 });
    static const unsigned char bid[] = { 0xab, 0xcd, 0x01 };
    struct gs_tb_seg segs[2] = { { 0, 0x2000, 5 }, { 0x3000, 0x1000, 6 } };
    gs_tb_module(tb, 1, 5, 0x7f0000000000ull, "/usr/lib/libc.so.6", bid, sizeof bid, 2, segs);
    gs_tb_thread_start(tb, 1, 4243, 6);
    gs_tb_stack(tb, 1, 0, 0x7f0000001234ull);
    gs_tb_stack(tb, 2, 1, (1ull << 63) | (3ull << 32) | 42);
    gs_tb_pycode(tb, 3, "train.py", "step\t\"q\"", 40);
    gs_tb_alloc(tb, 100, 1, 0x555555550000ull, 64, 2);
    gs_tb_realloc(tb, 110, 1, 0x555555550000ull, 128, 2);
    gs_tb_alloc_ex(tb, 120, 1, 0x7f1000000000ull, 1048576, 1, GS_MEM_DEVICE,
                   GS_FN_CUDA_RUNTIME, 0, 0x10, 500);
    gs_tb_flush_chunk(tb);
    gs_tb_free_rec(tb, 200, 0x555555550000ull);
    gs_tb_free_ex(tb, 210, 1, 0x7f1000000000ull, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 40);
    gs_tb_sample(tb, 220, 1000000, 200000, 3, 1, 65536, 1000, 2000, 100);
    gs_tb_marker(tb, 230, 1, GS_MARK_STEP, "epoch 1\n");
    gs_tb_pause(tb, 240, 250, GS_PAUSE_PYTHON_GC, 1, 2, 17);
    gs_tb_scan_begin(tb, 1, 260, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x555555560000ull, 32, 1, GS_MEM_HOST, GS_CLASS_DEFINITE);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){
        .scan_id = 1, .t_start = 260, .t_stopped = 261, .t_marked = 270, .t_end = 280,
        .threads = 1, .bytes_scanned = 4096, .blocks_visited = 2, .live_blocks = 1,
        .live_bytes = 32, .cls_blocks = { 1, 0, 0, 0 }, .cls_bytes = { 32, 0, 0, 0 } });
    gs_tb_device_sample(tb, 290, 0, GS_MEM_DEVICE, 2097152, 0, 1, 2097152);
    gs_tb_module_unload(tb, 1, 295);
    gs_tb_thread_exit(tb, 1, 296);
    gs_tb_stopped(tb, 297, 0, "disabled");
    gs_tb_exec(tb, 298, "/bin/true");
    gs_tb_process_exit(tb, 299, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 300, 2, 2, 1048704, 0, 0);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "small") && strcmp(argv[1], "full"))) {
        fprintf(stderr, "usage: mktrace small|full OUT\n");
        return 2;
    }
    struct gs_tb *tb = gs_tb_new();
    if (!tb) {
        fprintf(stderr, "mktrace: out of memory\n");
        return 2;
    }
    if (strcmp(argv[1], "small") == 0)
        small(tb);
    else
        full(tb);
    int rc = gs_tb_write_file(tb, argv[2]);
    gs_tb_free(tb);
    if (rc) {
        fprintf(stderr, "mktrace: cannot write %s\n", argv[2]);
        return 2;
    }
    return 0;
}
