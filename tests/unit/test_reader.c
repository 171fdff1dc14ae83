/*
 * Unit tests of the trace reader (analyzer/trace_reader.c) on traces made by
 * the trace builder: every record type round-trips with exact field values,
 * delta coding across buffers and chunks, streaming from a file equals
 * reading from memory, and each kind of damage is reported once, with the
 * exact byte offset and message, after every record that preceded it.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "gcspy/record.h"
#include "trace_builder.h"
#include "trace_reader.h"

static char err[512];

static struct gs_reader *open_data(const uint8_t *data, size_t len)
{
    struct gs_reader *r = gs_reader_open_mem(data, len, err, sizeof err);
    cr_assert_not_null(r, "open failed: %s", err);
    return r;
}

static void next_type(struct gs_reader *r, struct gs_record *rec, uint8_t type)
{
    int rc = gs_reader_next(r, rec);
    cr_assert_eq(rc, GS_READ_OK, "expected record 0x%02x, got status %d (%s)", type, rc,
                 rc == GS_READ_DAMAGED ? gs_reader_error(r) : "");
    cr_assert_eq(rec->type, type, "expected record 0x%02x, got 0x%02x", type, rec->type);
}

static void bytes_eq(struct gs_bytes b, const void *want, size_t n)
{
    cr_assert_eq(b.n, n, "length %zu, expected %zu", b.n, n);
    cr_assert_eq(memcmp(b.p, want, n), 0);
}

static void str_eq(struct gs_bytes b, const char *want)
{
    bytes_eq(b, want, strlen(want));
}

static void expect_damage(struct gs_reader *r, const char *want)
{
    struct gs_record rec;
    int rc = gs_reader_next(r, &rec);
    cr_assert_eq(rc, GS_READ_DAMAGED, "expected damage, got status %d (type 0x%02x)", rc,
                 rc == GS_READ_OK ? rec.type : 0);
    cr_assert_str_eq(gs_reader_error(r), want);
    /* Sticky: asking again gives the same answer. */
    cr_assert_eq(gs_reader_next(r, &rec), GS_READ_DAMAGED);
    cr_assert_str_eq(gs_reader_error(r), want);
}

static void expect_eof(struct gs_reader *r)
{
    struct gs_record rec;
    int rc = gs_reader_next(r, &rec);
    cr_assert_eq(rc, GS_READ_EOF, "expected EOF, got %d (%s)", rc,
                 rc == GS_READ_DAMAGED ? gs_reader_error(r) : "");
}

/* Every record type once, with values that differ field by field. */
static struct gs_tb *every_type(void)
{
    struct gs_tb *tb = gs_tb_new();
    cr_assert_not_null(tb);
    static const char argv[] = "python3\0train.py\0--lr=0.1";
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = 4242, .ppid = 1, .wall_ns = 1700000000123456789ull, .exe = "/usr/bin/python3.11",
        .argv = argv, .argv_len = sizeof argv - 1, .host = "node7", .rank1 = 3,
        .local_rank1 = 2, .world_size1 = 9, .flags = GS_PROC_F_FORKED, .version = "0.1.0",
        .unwinder = GS_UNWIND_LIBUNWIND, .depth = 64, .page_size = 4096 });
    static const uint8_t bid[] = { 0xde, 0xad, 0xbe, 0xef, 0x01 };
    struct gs_tb_seg segs[2] = { { 0x0, 0x1234, 5 }, { 0x3000, 0x800, 6 } };
    gs_tb_module(tb, 1, 10, 0x7f0000000000ull, "/usr/lib/libc.so.6", bid, sizeof bid, 2, segs);
    gs_tb_thread_start(tb, 1, 4243, 20);
    gs_tb_stack(tb, 1, 0, 0x7f0000001234ull);
    gs_tb_stack(tb, 2, 1, GS_IP_PYFRAME | (5ull << 32) | 17);
    gs_tb_pycode(tb, 5, "train.py", "step", 12);
    gs_tb_alloc(tb, 100, 1, 0x555500001000ull, 64, 2);
    gs_tb_realloc(tb, 150, 1, 0x555500001000ull, 128, 1);
    gs_tb_alloc_ex(tb, 200, 1, 0x7f00dead0000ull, 1 << 20, 2, GS_MEM_DEVICE,
                   GS_FN_CUDA_RUNTIME, 1, 0xabc, 777);
    gs_tb_free_rec(tb, 250, 0x555500001000ull);
    gs_tb_free_ex(tb, 300, 1, 0x7f00dead0000ull, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 55);
    gs_tb_sample(tb, 310, 1000, 2000, 3, 4, 5000, 6000, 7000, 800);
    gs_tb_marker(tb, 320, 1, GS_MARK_STEP, "step 1");
    gs_tb_pause(tb, 330, 340, GS_PAUSE_PYTHON_GC, 1, 2, 99);
    gs_tb_scan_begin(tb, 1, 350, GS_SCAN_TRIG_EXIT, 0);
    gs_tb_scan_block(tb, 1, 0x555500002000ull, 48, 1, GS_MEM_HOST, GS_CLASS_INDIRECT);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){
        .scan_id = 1, .t_start = 350, .t_stopped = 351, .t_marked = 360, .t_end = 370,
        .threads = 2, .bytes_scanned = 123456, .blocks_visited = 10, .live_blocks = 9,
        .live_bytes = 900, .cls_blocks = { 1, 2, 3, 4 }, .cls_bytes = { 10, 20, 30, 40 } });
    gs_tb_device_sample(tb, 380, 0, GS_MEM_DEVICE, 1 << 30, 1 << 20, 3, 4096);
    gs_tb_module_unload(tb, 1, 390);
    gs_tb_thread_exit(tb, 1, 400);
    gs_tb_stopped(tb, 410, 17, "out of memory");
    gs_tb_exec(tb, 420, "/bin/sh");
    gs_tb_process_exit(tb, 430, -9, GS_EXIT_SIGNAL);
    gs_tb_trace_end(tb, 440, 2, 2, 1048640, 0, 0);
    return tb;
}

Test(reader, every_record_type_round_trips)
{
    struct gs_tb *tb = every_type();
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    cr_assert_not_null(data);
    struct gs_reader *r = open_data(data, len);
    cr_assert_eq(gs_reader_major(r), 2);
    cr_assert_eq(gs_reader_minor(r), GS_TRACE_MINOR);
    cr_assert_eq(gs_reader_flags(r), GS_FILE_F_ZSTD);
    struct gs_record rec;

    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.t, 0);
    cr_assert_eq(rec.file_offset, GS_FILE_HDR_SIZE);
    cr_assert_eq(rec.payload_offset, 0);

    next_type(r, &rec, GS_REC_PROCESS_START);
    cr_assert_eq(rec.payload_offset, 2);
    cr_assert_eq(rec.u.proc.pid, 4242);
    cr_assert_eq(rec.u.proc.ppid, 1);
    cr_assert_eq(rec.u.proc.wall_ns, 1700000000123456789ull);
    str_eq(rec.u.proc.exe, "/usr/bin/python3.11");
    bytes_eq(rec.u.proc.argv, "python3\0train.py\0--lr=0.1", 25);
    str_eq(rec.u.proc.host, "node7");
    cr_assert_eq(rec.u.proc.rank1, 3);
    cr_assert_eq(rec.u.proc.local_rank1, 2);
    cr_assert_eq(rec.u.proc.world_size1, 9);
    cr_assert_eq(rec.u.proc.flags, GS_PROC_F_FORKED);
    str_eq(rec.u.proc.version, "0.1.0");
    cr_assert_eq(rec.u.proc.unwinder, GS_UNWIND_LIBUNWIND);
    cr_assert_eq(rec.u.proc.depth, 64);
    cr_assert_eq(rec.u.proc.page_size, 4096);

    next_type(r, &rec, GS_REC_MODULE);
    cr_assert_eq(rec.u.module.id, 1);
    cr_assert_eq(rec.t, 10);
    cr_assert_eq(rec.u.module.base, 0x7f0000000000ull);
    str_eq(rec.u.module.path, "/usr/lib/libc.so.6");
    bytes_eq(rec.u.module.build_id, "\xde\xad\xbe\xef\x01", 5);
    cr_assert_eq(rec.u.module.nseg, 2);
    cr_assert_eq(rec.u.module.seg[0].vaddr, 0);
    cr_assert_eq(rec.u.module.seg[0].memsz, 0x1234);
    cr_assert_eq(rec.u.module.seg[0].flags, 5);
    cr_assert_eq(rec.u.module.seg[1].vaddr, 0x3000);
    cr_assert_eq(rec.u.module.seg[1].memsz, 0x800);
    cr_assert_eq(rec.u.module.seg[1].flags, 6);

    next_type(r, &rec, GS_REC_THREAD_START);
    cr_assert_eq(rec.u.thread.index, 1);
    cr_assert_eq(rec.u.thread.tid, 4243);
    cr_assert_eq(rec.t, 20);

    next_type(r, &rec, GS_REC_STACK);
    cr_assert_eq(rec.u.stack.id, 1);
    cr_assert_eq(rec.u.stack.parent, 0);
    cr_assert_eq(rec.u.stack.ip, 0x7f0000001234ull);
    next_type(r, &rec, GS_REC_STACK);
    cr_assert_eq(rec.u.stack.id, 2);
    cr_assert_eq(rec.u.stack.parent, 1);
    cr_assert_eq(rec.u.stack.ip, GS_IP_PYFRAME | (5ull << 32) | 17);

    next_type(r, &rec, GS_REC_PYCODE);
    cr_assert_eq(rec.u.pycode.id, 5);
    str_eq(rec.u.pycode.file, "train.py");
    str_eq(rec.u.pycode.function, "step");
    cr_assert_eq(rec.u.pycode.firstline, 12);

    next_type(r, &rec, GS_REC_ALLOC);
    cr_assert_eq(rec.t, 100);
    cr_assert_eq(rec.u.alloc.thread, 1);
    cr_assert_eq(rec.u.alloc.addr, 0x555500001000ull);
    cr_assert_eq(rec.u.alloc.size, 64);
    cr_assert_eq(rec.u.alloc.stack, 2);
    cr_assert_eq(rec.u.alloc.kind, GS_MEM_HOST);

    next_type(r, &rec, GS_REC_REALLOC);
    cr_assert_eq(rec.t, 150);
    cr_assert_eq(rec.u.alloc.thread, 1);
    cr_assert_eq(rec.u.alloc.addr, 0x555500001000ull);
    cr_assert_eq(rec.u.alloc.size, 128);
    cr_assert_eq(rec.u.alloc.stack, 1);

    next_type(r, &rec, GS_REC_ALLOC_EX);
    cr_assert_eq(rec.t, 200);
    cr_assert_eq(rec.u.alloc.thread, 1);
    cr_assert_eq(rec.u.alloc.addr, 0x7f00dead0000ull);
    cr_assert_eq(rec.u.alloc.size, 1 << 20);
    cr_assert_eq(rec.u.alloc.stack, 2);
    cr_assert_eq(rec.u.alloc.kind, GS_MEM_DEVICE);
    cr_assert_eq(rec.u.alloc.fn, GS_FN_CUDA_RUNTIME);
    cr_assert_eq(rec.u.alloc.device, 1);
    cr_assert_eq(rec.u.alloc.stream, 0xabc);
    cr_assert_eq(rec.u.alloc.dur_ns, 777);

    next_type(r, &rec, GS_REC_FREE);
    cr_assert_eq(rec.t, 250);
    cr_assert_eq(rec.u.free.addr, 0x555500001000ull);

    next_type(r, &rec, GS_REC_FREE_EX);
    cr_assert_eq(rec.t, 300);
    cr_assert_eq(rec.u.free.thread, 1);
    cr_assert_eq(rec.u.free.addr, 0x7f00dead0000ull);
    cr_assert_eq(rec.u.free.kind, GS_MEM_DEVICE);
    cr_assert_eq(rec.u.free.fn, GS_FN_CUDA_RUNTIME);
    cr_assert_eq(rec.u.free.dur_ns, 55);

    next_type(r, &rec, GS_REC_SAMPLE);
    cr_assert_eq(rec.t, 310);
    cr_assert_eq(rec.u.sample.rss, 1000);
    cr_assert_eq(rec.u.sample.arena, 2000);
    cr_assert_eq(rec.u.sample.ordblks, 3);
    cr_assert_eq(rec.u.sample.hblks, 4);
    cr_assert_eq(rec.u.sample.hblkhd, 5000);
    cr_assert_eq(rec.u.sample.uordblks, 6000);
    cr_assert_eq(rec.u.sample.fordblks, 7000);
    cr_assert_eq(rec.u.sample.keepcost, 800);

    next_type(r, &rec, GS_REC_MARKER);
    cr_assert_eq(rec.t, 320);
    cr_assert_eq(rec.u.marker.thread, 1);
    cr_assert_eq(rec.u.marker.kind, GS_MARK_STEP);
    str_eq(rec.u.marker.label, "step 1");

    next_type(r, &rec, GS_REC_PAUSE);
    cr_assert_eq(rec.t, 330);
    cr_assert_eq(rec.u.pause.t_end, 340);
    cr_assert_eq(rec.u.pause.kind, GS_PAUSE_PYTHON_GC);
    cr_assert_eq(rec.u.pause.thread, 1);
    cr_assert_eq(rec.u.pause.a, 2);
    cr_assert_eq(rec.u.pause.b, 99);

    next_type(r, &rec, GS_REC_SCAN_BEGIN);
    cr_assert_eq(rec.u.scan_begin.scan_id, 1);
    cr_assert_eq(rec.t, 350);
    cr_assert_eq(rec.u.scan_begin.trigger, GS_SCAN_TRIG_EXIT);
    cr_assert_eq(rec.u.scan_begin.mode, 0);

    next_type(r, &rec, GS_REC_SCAN_BLOCK);
    cr_assert_eq(rec.u.scan_block.scan_id, 1);
    cr_assert_eq(rec.u.scan_block.addr, 0x555500002000ull);
    cr_assert_eq(rec.u.scan_block.size, 48);
    cr_assert_eq(rec.u.scan_block.stack, 1);
    cr_assert_eq(rec.u.scan_block.kind, GS_MEM_HOST);
    cr_assert_eq(rec.u.scan_block.cls, GS_CLASS_INDIRECT);
    cr_assert_eq(rec.u.scan_block.fn, 0); /* the builder writes the 1.0 layout */

    next_type(r, &rec, GS_REC_SCAN_END);
    cr_assert_eq(rec.u.scan_end.scan_id, 1);
    cr_assert_eq(rec.u.scan_end.t_start, 350);
    cr_assert_eq(rec.u.scan_end.t_stopped, 351);
    cr_assert_eq(rec.u.scan_end.t_marked, 360);
    cr_assert_eq(rec.u.scan_end.t_end, 370);
    cr_assert_eq(rec.t, 370);
    cr_assert_eq(rec.u.scan_end.threads, 2);
    cr_assert_eq(rec.u.scan_end.bytes_scanned, 123456);
    cr_assert_eq(rec.u.scan_end.blocks_visited, 10);
    cr_assert_eq(rec.u.scan_end.live_blocks, 9);
    cr_assert_eq(rec.u.scan_end.live_bytes, 900);
    for (int c = 0; c < GS_CLASS_WIRE_N; c++) {
        cr_assert_eq(rec.u.scan_end.cls_blocks[c], (uint64_t)c + 1);
        cr_assert_eq(rec.u.scan_end.cls_bytes[c], 10 * ((uint64_t)c + 1));
    }

    next_type(r, &rec, GS_REC_DEVICE_SAMPLE);
    cr_assert_eq(rec.t, 380);
    cr_assert_eq(rec.u.dsample.device, 0);
    cr_assert_eq(rec.u.dsample.kind, GS_MEM_DEVICE);
    cr_assert_eq(rec.u.dsample.reserved, 1 << 30);
    cr_assert_eq(rec.u.dsample.in_use, 1 << 20);
    cr_assert_eq(rec.u.dsample.segments, 3);
    cr_assert_eq(rec.u.dsample.largest_free, 4096);

    next_type(r, &rec, GS_REC_MODULE_UNLOAD);
    cr_assert_eq(rec.u.unload.id, 1);
    cr_assert_eq(rec.t, 390);

    next_type(r, &rec, GS_REC_THREAD_EXIT);
    cr_assert_eq(rec.u.thread.index, 1);
    cr_assert_eq(rec.t, 400);

    next_type(r, &rec, GS_REC_STOPPED);
    cr_assert_eq(rec.t, 410);
    cr_assert_eq(rec.u.stopped.dropped, 17);
    str_eq(rec.u.stopped.reason, "out of memory");

    next_type(r, &rec, GS_REC_EXEC);
    cr_assert_eq(rec.t, 420);
    str_eq(rec.u.exec.path, "/bin/sh");

    next_type(r, &rec, GS_REC_PROCESS_EXIT);
    cr_assert_eq(rec.t, 430);
    cr_assert_eq(rec.u.exit.status, -9);
    cr_assert_eq(rec.u.exit.how, GS_EXIT_SIGNAL);

    next_type(r, &rec, GS_REC_TRACE_END);
    cr_assert_eq(rec.t, 440);
    cr_assert_eq(rec.u.end.allocs, 2);
    cr_assert_eq(rec.u.end.frees, 2);
    cr_assert_eq(rec.u.end.bytes_allocated, 1048640);
    cr_assert_eq(rec.u.end.live_blocks, 0);
    cr_assert_eq(rec.u.end.live_bytes, 0);

    expect_eof(r);
    cr_assert_eq(gs_reader_chunks(r), 1);
    cr_assert_eq(gs_reader_offset(r), len);
    cr_assert_eq(gs_reader_skipped(r), 0);
    gs_reader_close(r);
    gs_tb_free(tb);
}

Test(reader, delta_coding_across_chunks_and_buffers)
{
    struct gs_tb *tb = gs_tb_new();
    gs_tb_alloc(tb, 1000, 1, 0x7fff00000000ull, 8, 1);
    gs_tb_alloc(tb, 1001, 2, 0x1000, 16, 1);       /* big negative delta */
    gs_tb_alloc(tb, 900, 2, 0x2000, 32, 1);        /* earlier: the running time */
    gs_tb_flush_chunk(tb);
    gs_tb_free_rec(tb, 5000, 0x1000);              /* chunk 1: TIMEBASE 1001, a = 0 */
    gs_tb_timebase(tb, 10000);                     /* a new buffer in the same chunk */
    gs_tb_free_rec(tb, 10005, 0x7fff00000000ull);
    gs_tb_flush_chunk(tb);
    gs_tb_alloc_ex(tb, 20000, 3, UINT64_MAX - 15, 16, 0, GS_MEM_VMM, GS_FN_CUDA_DRIVER, 0, 0, 0);
    gs_tb_free_ex(tb, 20001, 3, UINT64_MAX - 15, GS_MEM_VMM, GS_FN_CUDA_DRIVER, 0);
    cr_assert_eq(gs_tb_flush_chunk(tb), 0);
    cr_assert_eq(gs_tb_chunks(tb), 3);

    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    struct gs_reader *r = open_data(data, len);
    struct gs_record rec;
    uint64_t c0 = (uint64_t)gs_tb_chunk_offset(tb, 0), c1 = (uint64_t)gs_tb_chunk_offset(tb, 1),
             c2 = (uint64_t)gs_tb_chunk_offset(tb, 2);

    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.t, 0);
    next_type(r, &rec, GS_REC_ALLOC);
    cr_assert_eq(rec.t, 1000);
    cr_assert_eq(rec.u.alloc.addr, 0x7fff00000000ull);
    cr_assert_eq(rec.file_offset, c0);
    next_type(r, &rec, GS_REC_ALLOC);
    cr_assert_eq(rec.t, 1001);
    cr_assert_eq(rec.u.alloc.addr, 0x1000);
    cr_assert_eq(rec.u.alloc.thread, 2);
    next_type(r, &rec, GS_REC_ALLOC);
    cr_assert_eq(rec.t, 1001, "a time earlier than the running time reads as the running time");
    cr_assert_eq(rec.u.alloc.addr, 0x2000);
    cr_assert_eq(gs_reader_chunks(r), 1);

    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.t, 1001);
    cr_assert_eq(rec.file_offset, c1);
    cr_assert_eq(rec.payload_offset, 0);
    next_type(r, &rec, GS_REC_FREE);
    cr_assert_eq(rec.t, 5000);
    cr_assert_eq(rec.u.free.addr, 0x1000);
    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.t, 10000);
    next_type(r, &rec, GS_REC_FREE);
    cr_assert_eq(rec.t, 10005);
    cr_assert_eq(rec.u.free.addr, 0x7fff00000000ull);
    cr_assert_eq(gs_reader_chunks(r), 2);

    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.t, 10005);
    cr_assert_eq(rec.file_offset, c2);
    next_type(r, &rec, GS_REC_ALLOC_EX);
    cr_assert_eq(rec.u.alloc.addr, UINT64_MAX - 15);
    cr_assert_eq(rec.u.alloc.kind, GS_MEM_VMM);
    next_type(r, &rec, GS_REC_FREE_EX);
    cr_assert_eq(rec.u.free.addr, UINT64_MAX - 15);
    cr_assert_eq(rec.t, 20001);
    expect_eof(r);
    cr_assert_eq(gs_reader_chunks(r), 3);
    gs_reader_close(r);
    gs_tb_free(tb);
}

/* Many chunks through a real file: the streaming path gives exactly what the
 * memory path gives. */
Test(reader, file_streaming_matches_memory)
{
    struct gs_tb *tb = gs_tb_new();
    gs_tb_set_chunk_limit(tb, 4096);
    uint64_t want_bytes = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) {
        gs_tb_alloc(tb, 10 * (uint64_t)i, (uint64_t)i % 7, 0x10000 + 64 * (uint64_t)i,
                    (uint64_t)i % 1000, (uint64_t)i % 13);
        want_bytes += (uint64_t)i % 1000;
    }
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    size_t chunks = gs_tb_chunks(tb);
    cr_assert_gt(chunks, 10);

    char path[] = "/tmp/gcspy-test-reader-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(gs_tb_write_file(tb, path), 0);

    struct gs_reader *rf = gs_reader_open(path, err, sizeof err);
    cr_assert_not_null(rf, "%s", err);
    struct gs_reader *rm = open_data(data, len);
    struct gs_record a, b;
    int allocs = 0;
    uint64_t bytes = 0;
    for (;;) {
        int ra = gs_reader_next(rf, &a), rb = gs_reader_next(rm, &b);
        cr_assert_eq(ra, rb);
        if (ra != GS_READ_OK)
            break;
        cr_assert_eq(a.type, b.type);
        cr_assert_eq(a.t, b.t);
        cr_assert_eq(a.file_offset, b.file_offset);
        cr_assert_eq(a.payload_offset, b.payload_offset);
        if (a.type == GS_REC_ALLOC) {
            cr_assert_eq(a.u.alloc.addr, 0x10000 + 64 * (uint64_t)allocs);
            cr_assert_eq(a.t, 10 * (uint64_t)allocs);
            cr_assert_eq(a.u.alloc.stack, (uint64_t)allocs % 13);
            cr_assert_eq(memcmp(&a.u.alloc, &b.u.alloc, sizeof a.u.alloc), 0);
            bytes += a.u.alloc.size;
            allocs++;
        }
    }
    cr_assert_eq(allocs, n);
    cr_assert_eq(bytes, want_bytes);
    cr_assert_eq(gs_reader_chunks(rf), chunks);
    cr_assert_eq(gs_reader_offset(rf), len);
    gs_reader_close(rf);
    gs_reader_close(rm);
    unlink(path);
    gs_tb_free(tb);
}

Test(reader, header_only_trace_is_empty_and_clean)
{
    struct gs_tb *tb = gs_tb_new();
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    cr_assert_eq(len, GS_FILE_HDR_SIZE);
    struct gs_reader *r = open_data(data, len);
    expect_eof(r);
    cr_assert_eq(gs_reader_chunks(r), 0);
    gs_reader_close(r);
    gs_tb_free(tb);
}

Test(reader, unknown_lengthed_type_is_skipped)
{
    struct gs_tb *tb = gs_tb_new();
    gs_tb_thread_start(tb, 1, 100, 5);
    gs_tb_lengthed(tb, 0x7e, "\x01\x02\x03zzz", 6);
    gs_tb_lengthed(tb, 0xff, "", 0);
    gs_tb_thread_exit(tb, 1, 9);
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    struct gs_reader *r = open_data(data, len);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    next_type(r, &rec, GS_REC_THREAD_START);
    cr_assert_eq(rec.u.thread.tid, 100);
    next_type(r, &rec, GS_REC_THREAD_EXIT);
    cr_assert_eq(rec.t, 9);
    expect_eof(r);
    cr_assert_eq(gs_reader_skipped(r), 2);
    gs_reader_close(r);
    gs_tb_free(tb);
}

Test(reader, unknown_trailing_fields_are_skipped)
{
    struct gs_tb *tb = gs_tb_new();
    /* THREAD_START index 3, tid 300, t 7, then a newer minor's extras: a
     * varint, a string, another varint. */
    uint8_t body[32], *p = body;
    p = gs_put_u(p, 3);
    p = gs_put_u(p, 300);
    p = gs_put_u(p, 7);
    p = gs_put_u(p, 123456789);
    p = gs_put_str(p, "future");
    p = gs_put_u(p, 1);
    gs_tb_lengthed(tb, GS_REC_THREAD_START, body, (size_t)(p - body));
    gs_tb_marker(tb, 8, 3, GS_MARK_USER, "after");
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    struct gs_reader *r = open_data(data, len);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    next_type(r, &rec, GS_REC_THREAD_START);
    cr_assert_eq(rec.u.thread.index, 3);
    cr_assert_eq(rec.u.thread.tid, 300);
    cr_assert_eq(rec.t, 7);
    next_type(r, &rec, GS_REC_MARKER);
    str_eq(rec.u.marker.label, "after");
    expect_eof(r);
    gs_reader_close(r);
    gs_tb_free(tb);
}

Test(reader, module_segments_beyond_the_limit_are_checked_not_kept)
{
    struct gs_tb *tb = gs_tb_new();
    struct gs_tb_seg segs[GS_MAX_SEGS + 3];
    for (size_t i = 0; i < GS_MAX_SEGS + 3; i++)
        segs[i] = (struct gs_tb_seg){ 0x1000 * i, 0x100 + i, 4 };
    gs_tb_module(tb, 2, 1, 0x400000, "/x", NULL, 0, GS_MAX_SEGS + 3, segs);
    gs_tb_module_unload(tb, 2, 2);
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    struct gs_reader *r = open_data(data, len);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    next_type(r, &rec, GS_REC_MODULE);
    cr_assert_eq(rec.u.module.nseg, GS_MAX_SEGS);
    cr_assert_eq(rec.u.module.seg[GS_MAX_SEGS - 1].vaddr, 0x1000 * (GS_MAX_SEGS - 1));
    cr_assert_eq(rec.u.module.seg[GS_MAX_SEGS - 1].memsz, 0x100 + GS_MAX_SEGS - 1);
    cr_assert_eq(rec.u.module.build_id.n, 0);
    next_type(r, &rec, GS_REC_MODULE_UNLOAD);
    expect_eof(r);
    gs_reader_close(r);
    gs_tb_free(tb);
}

Test(reader, newer_minor_and_longer_header_are_read)
{
    struct gs_tb *tb = gs_tb_new();
    gs_tb_thread_start(tb, 1, 2, 3);
    size_t len;
    uint8_t *data = gs_tb_data(tb, &len);
    /* Minor 7, header grown to 40 bytes by 8 bytes a newer writer added. */
    uint8_t *big = malloc(len + 8);
    memcpy(big, data, GS_FILE_HDR_SIZE);
    memset(big + GS_FILE_HDR_SIZE, 0xaa, 8);
    memcpy(big + GS_FILE_HDR_SIZE + 8, data + GS_FILE_HDR_SIZE, len - GS_FILE_HDR_SIZE);
    big[10] = 7;
    gs_st32(big + 12, GS_FILE_HDR_SIZE + 8);
    struct gs_reader *r = open_data(big, len + 8);
    cr_assert_eq(gs_reader_minor(r), 7);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.file_offset, GS_FILE_HDR_SIZE + 8);
    next_type(r, &rec, GS_REC_THREAD_START);
    expect_eof(r);
    gs_reader_close(r);
    free(big);
    gs_tb_free(tb);
}

Test(reader, uncompressed_chunks_when_the_file_says_so)
{
    uint8_t file[256], payload[64], *p = payload;
    struct gs_enc_state st = { 0 };
    p = gs_rec_timebase(p, &st, 50);
    p = gs_rec_alloc(p, &st, 60, 1, 0x5000, 24, 3);
    uint32_t n = (uint32_t)(p - payload);
    gs_file_header(file, 0);
    gs_chunk_header(file + GS_FILE_HDR_SIZE, 0, payload, n, n);
    memcpy(file + GS_FILE_HDR_SIZE + GS_CHUNK_HDR_SIZE, payload, n);
    struct gs_reader *r = open_data(file, GS_FILE_HDR_SIZE + GS_CHUNK_HDR_SIZE + n);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.t, 50);
    next_type(r, &rec, GS_REC_ALLOC);
    cr_assert_eq(rec.t, 60);
    cr_assert_eq(rec.u.alloc.addr, 0x5000);
    cr_assert_eq(rec.u.alloc.size, 24);
    expect_eof(r);
    gs_reader_close(r);
}

/* ---- Refused at open ---------------------------------------------------- */

static uint8_t *small_trace(struct gs_tb **tbp, size_t *len)
{
    struct gs_tb *tb = gs_tb_new();
    gs_tb_alloc(tb, 1, 1, 0x1000, 8, 1);
    *tbp = tb;
    uint8_t *d = gs_tb_data(tb, len);
    cr_assert_not_null(d);
    return d;
}

Test(reader, newer_major_version_is_refused)
{
    struct gs_tb *tb;
    size_t len;
    uint8_t *d = small_trace(&tb, &len);
    d[8] = 3;
    d[10] = 0;
    cr_assert_null(gs_reader_open_mem(d, len, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 8: trace format version 3.0 is newer than this gcspy reads "
                          "(1.x to 2.x); upgrade gcspy");
    d[8] = 0;
    d[10] = 9;
    cr_assert_null(gs_reader_open_mem(d, len, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 8: trace format version 0.9 is not one this gcspy reads "
                          "(1.x to 2.x)");
    gs_tb_free(tb);
}

/* A file flag changes how chunks are read: one this reader does not know
 * (from a newer version) cannot be skipped, a zstd stream without zstd is
 * no framing at all, and major 1 has no stream (2.0 brought it). */
Test(reader, unknown_file_flags_are_refused)
{
    struct gs_tb *tb;
    size_t len;
    uint8_t *d = small_trace(&tb, &len);
    d[10] = 4;
    d[16] = GS_FILE_F_ZSTD | 0x4;
    cr_assert_null(gs_reader_open_mem(d, len, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 16: unknown file flags 0x4 (trace format 2.4); "
                          "upgrade gcspy");
    d[16] = GS_FILE_F_ZSTD_STREAM;
    cr_assert_null(gs_reader_open_mem(d, len, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 16: file flags 0x2: a zstd stream without zstd");
    d[8] = 1;
    d[10] = 2;
    d[16] = GS_FILE_F_ZSTD | GS_FILE_F_ZSTD_STREAM;
    cr_assert_null(gs_reader_open_mem(d, len, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 16: unknown file flags 0x2 (trace format 1.2); "
                          "upgrade gcspy");
    gs_tb_free(tb);
}

/* STACK's id and parent (2.0): id - (sid + 1) and id - parent, zigzag,
 * against the buffer's last STACK id; a 1.x trace has them as plain u. */
Test(reader, stack_ids_are_deltas_since_2_0)
{
    static const uint8_t recs[] = {
        0x06, 0x00, 0x02, 0x05,         /* id 1 (sid 0 + 1 + 0), parent 1 - 1 = 0 */
        0x06, 0x00, 0x02, 0x07,         /* id 2, parent 1 */
        0x06, 0x08, 0x05, 0x09,         /* id 2 + 1 + 4 = 7, parent 7 - (-3) = 10 */
        0x01, 0x00,                     /* TIMEBASE: sid 0 again */
        0x06, 0x02, 0x04, 0x0b,         /* id 0 + 1 + 1 = 2, parent 2 - 2 = 0 */
    };
    static const uint64_t want[][3] = {{1, 0, 5}, {2, 1, 7}, {7, 10, 9}, {2, 0, 11}};
    static const uint64_t want1[][3] = {{0, 2, 5}, {0, 2, 7}, {8, 5, 9}, {2, 4, 11}};
    for (int major = 2; major >= 1; major--) {
        struct gs_tb *tb = gs_tb_new();
        gs_tb_timebase(tb, 0);
        gs_tb_raw(tb, recs, sizeof recs);
        size_t len;
        uint8_t *d = gs_tb_data(tb, &len);
        cr_assert_not_null(d);
        d[8] = (uint8_t)major;
        struct gs_reader *r = open_data(d, len);
        struct gs_record rec;
        next_type(r, &rec, GS_REC_TIMEBASE);
        for (int i = 0; i < 4; i++) {
            if (i == 3)
                next_type(r, &rec, GS_REC_TIMEBASE);
            next_type(r, &rec, GS_REC_STACK);
            const uint64_t *w = major == 2 ? want[i] : want1[i];
            cr_assert_eq(rec.u.stack.id, w[0], "major %d, stack %d: id %" PRIu64, major, i,
                         rec.u.stack.id);
            cr_assert_eq(rec.u.stack.parent, w[1], "major %d, stack %d: parent %" PRIu64,
                         major, i, rec.u.stack.parent);
            cr_assert_eq(rec.u.stack.ip, w[2]);
        }
        gs_reader_close(r);
        gs_tb_free(tb);
    }
}

Test(reader, bad_magic_is_refused)
{
    struct gs_tb *tb;
    size_t len;
    uint8_t *d = small_trace(&tb, &len);
    d[3] = 'X';
    cr_assert_null(gs_reader_open_mem(d, len, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 0: not a gcspy trace (bad magic)");
    cr_assert_null(gs_reader_open_mem("hello", 5, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 0: not a gcspy trace (bad magic)");
    cr_assert_null(gs_reader_open_mem("", 0, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 0: empty file, not a gcspy trace");
    gs_tb_free(tb);
}

Test(reader, truncated_file_header_is_refused)
{
    struct gs_tb *tb;
    size_t len;
    uint8_t *d = small_trace(&tb, &len);
    cr_assert_null(gs_reader_open_mem(d, 20, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 20: truncated file header (20 of 32 bytes)");
    gs_tb_free(tb);
}

Test(reader, bad_header_size_is_refused)
{
    struct gs_tb *tb;
    size_t len;
    uint8_t *d = small_trace(&tb, &len);
    gs_st32(d + 12, 16);
    cr_assert_null(gs_reader_open_mem(d, len, err, sizeof err));
    cr_assert_str_eq(err, "<memory>: offset 12: bad file header size 16");
    gs_tb_free(tb);
}

Test(reader, missing_file_is_refused)
{
    cr_assert_null(gs_reader_open("/nonexistent/x.trace", err, sizeof err));
    cr_assert_str_eq(err, "/nonexistent/x.trace: No such file or directory");
}

/* ---- Caching-allocator records (format 1.1) ----------------------------- */

/* A lengthed record whose body is the n varints given. */
static void lengthed_u(struct gs_tb *tb, uint8_t type, int n, ...)
{
    uint8_t body[16 * GS_VARINT_MAX], *p = body;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        p = gs_put_u(p, va_arg(ap, uint64_t));
    va_end(ap);
    cr_assert_eq(gs_tb_lengthed(tb, type, body, (size_t)(p - body)), 0);
}

#define U64(x) ((uint64_t)(x))

Test(reader, pool_records_and_scan_block_fn_round_trip)
{
    struct gs_tb *tb = gs_tb_new();
    lengthed_u(tb, GS_REC_POOL_SNAPSHOT, 6, U64(7), U64(123456789), U64(GS_POOL_WHY_EXIT),
               U64(1), U64(2), U64(1));
    lengthed_u(tb, GS_REC_POOL_SEGMENT, 6, U64(7), U64(1), U64(0x7f5000000000ull),
               U64(20 << 20), U64(0xabc), U64(GS_POOL_SMALL));
    lengthed_u(tb, GS_REC_POOL_BLOCK, 6, U64(7), U64(0x7f5000000000ull), U64(4 << 20),
               U64(4000000), U64(GS_PBLK_PENDING_FREE), U64(42));
    /* a newer minor's trailing field is skipped */
    lengthed_u(tb, GS_REC_POOL_BLOCK, 7, U64(7), U64(0x7f5000400000ull), U64(16 << 20),
               U64(0), U64(GS_PBLK_INACTIVE), U64(0), U64(999));
    lengthed_u(tb, GS_REC_POOL_EVENT, 8, U64(7), U64(1000), U64(1), U64(GS_PEV_SEGMENT_ALLOC),
               U64(0x7f5000000000ull), U64(20 << 20), U64(0xabc), U64(43));
    lengthed_u(tb, GS_REC_SCAN_BLOCK, 7, U64(3), U64(0x7f5000000000ull), U64(4 << 20), U64(42),
               U64(GS_MEM_DEVICE), U64(GS_CLASS_DEFINITE), U64(GS_FN_TORCH));
    gs_tb_scan_block(tb, 3, 0x1000, 64, 5, GS_MEM_HOST, GS_CLASS_POSSIBLE);
    size_t len;
    uint8_t *d = gs_tb_data(tb, &len);
    struct gs_reader *r = open_data(d, len);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);

    next_type(r, &rec, GS_REC_POOL_SNAPSHOT);
    cr_assert_eq(rec.u.pool_snap.snap_id, 7);
    cr_assert_eq(rec.t, 123456789);
    cr_assert_eq(rec.u.pool_snap.reason, GS_POOL_WHY_EXIT);
    cr_assert_eq(rec.u.pool_snap.nsegments, 1);
    cr_assert_eq(rec.u.pool_snap.nblocks, 2);
    cr_assert_eq(rec.u.pool_snap.nevents, 1);

    next_type(r, &rec, GS_REC_POOL_SEGMENT);
    cr_assert_eq(rec.t, 0);
    cr_assert_eq(rec.u.pool_seg.snap_id, 7);
    cr_assert_eq(rec.u.pool_seg.device, 1);
    cr_assert_eq(rec.u.pool_seg.addr, 0x7f5000000000ull);
    cr_assert_eq(rec.u.pool_seg.size, 20 << 20);
    cr_assert_eq(rec.u.pool_seg.stream, 0xabc);
    cr_assert_eq(rec.u.pool_seg.pool, GS_POOL_SMALL);

    next_type(r, &rec, GS_REC_POOL_BLOCK);
    cr_assert_eq(rec.u.pool_blk.snap_id, 7);
    cr_assert_eq(rec.u.pool_blk.addr, 0x7f5000000000ull);
    cr_assert_eq(rec.u.pool_blk.size, 4 << 20);
    cr_assert_eq(rec.u.pool_blk.requested, 4000000);
    cr_assert_eq(rec.u.pool_blk.state, GS_PBLK_PENDING_FREE);
    cr_assert_eq(rec.u.pool_blk.stack, 42);
    next_type(r, &rec, GS_REC_POOL_BLOCK);
    cr_assert_eq(rec.u.pool_blk.addr, 0x7f5000400000ull);
    cr_assert_eq(rec.u.pool_blk.size, 16 << 20);
    cr_assert_eq(rec.u.pool_blk.state, GS_PBLK_INACTIVE);
    cr_assert_eq(rec.u.pool_blk.stack, 0);

    next_type(r, &rec, GS_REC_POOL_EVENT);
    cr_assert_eq(rec.u.pool_ev.snap_id, 7);
    cr_assert_eq(rec.t, 1000);
    cr_assert_eq(rec.u.pool_ev.device, 1);
    cr_assert_eq(rec.u.pool_ev.action, GS_PEV_SEGMENT_ALLOC);
    cr_assert_eq(rec.u.pool_ev.addr, 0x7f5000000000ull);
    cr_assert_eq(rec.u.pool_ev.size, 20 << 20);
    cr_assert_eq(rec.u.pool_ev.stream, 0xabc);
    cr_assert_eq(rec.u.pool_ev.stack, 43);

    next_type(r, &rec, GS_REC_SCAN_BLOCK);
    cr_assert_eq(rec.u.scan_block.scan_id, 3);
    cr_assert_eq(rec.u.scan_block.stack, 42);
    cr_assert_eq(rec.u.scan_block.kind, GS_MEM_DEVICE);
    cr_assert_eq(rec.u.scan_block.cls, GS_CLASS_DEFINITE);
    cr_assert_eq(rec.u.scan_block.fn, GS_FN_TORCH);
    /* the 1.0 layout, after a 1.1 one in the same buffer: fn 0, not left over */
    next_type(r, &rec, GS_REC_SCAN_BLOCK);
    cr_assert_eq(rec.u.scan_block.addr, 0x1000);
    cr_assert_eq(rec.u.scan_block.cls, GS_CLASS_POSSIBLE);
    cr_assert_eq(rec.u.scan_block.fn, 0);
    expect_eof(r);
    cr_assert_eq(gs_reader_skipped(r), 0);
    gs_reader_close(r);
    gs_tb_free(tb);
}

Test(reader, minor_0_trace_scan_block_without_fn)
{
    struct gs_tb *tb = gs_tb_new();
    gs_tb_scan_block(tb, 1, 0x2000, 48, 1, GS_MEM_DEVICE, GS_CLASS_DEFINITE);
    size_t len;
    uint8_t *d = gs_tb_data(tb, &len);
    d[10] = 0; /* a trace a 1.0 shim wrote */
    struct gs_reader *r = open_data(d, len);
    cr_assert_eq(gs_reader_minor(r), 0);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    next_type(r, &rec, GS_REC_SCAN_BLOCK);
    cr_assert_eq(rec.u.scan_block.addr, 0x2000);
    cr_assert_eq(rec.u.scan_block.size, 48);
    cr_assert_eq(rec.u.scan_block.kind, GS_MEM_DEVICE);
    cr_assert_eq(rec.u.scan_block.cls, GS_CLASS_DEFINITE);
    cr_assert_eq(rec.u.scan_block.fn, 0);
    expect_eof(r);
    gs_reader_close(r);
    gs_tb_free(tb);
}

/* ---- Damage after good records ------------------------------------------ */

/* Two chunks: chunk 0 holds TIMEBASE + 3 allocs; chunk 1 is what the test
 * damages. *c1 is the offset of chunk 1's header. */
struct two {
    struct gs_tb *tb;
    uint8_t *d;
    size_t len;
    uint64_t c1;
};

static void chunk0(struct gs_tb *tb)
{
    for (uint64_t i = 0; i < 3; i++)
        gs_tb_alloc(tb, 10 + i, 1, 0x1000 + 0x100 * i, 16, 1);
    cr_assert_eq(gs_tb_flush_chunk(tb), 0);
}

static struct two two_chunks(void)
{
    struct two t;
    t.tb = gs_tb_new();
    chunk0(t.tb);
    gs_tb_free_rec(t.tb, 20, 0x1000);
    gs_tb_free_rec(t.tb, 21, 0x1100);
    t.d = gs_tb_data(t.tb, &t.len);
    cr_assert_not_null(t.d);
    cr_assert_eq(gs_tb_chunks(t.tb), 2);
    t.c1 = (uint64_t)gs_tb_chunk_offset(t.tb, 1);
    return t;
}

/* Reads chunk 0's four records (TIMEBASE and 3 allocs), checking them. */
static void read_chunk0(struct gs_reader *r)
{
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    for (uint64_t i = 0; i < 3; i++) {
        next_type(r, &rec, GS_REC_ALLOC);
        cr_assert_eq(rec.u.alloc.addr, 0x1000 + 0x100 * i);
        cr_assert_eq(rec.t, 10 + i);
    }
}

/* Chunk 0 reads, then the damage is reported as fmt (with the offset off).
 * Only a file that ends inside a chunk is merely cut (gs_reader_cut). */
static void check_damage(const uint8_t *d, size_t len, const char *fmt, uint64_t off)
{
    char want[512];
    snprintf(want, sizeof want, fmt, (unsigned long long)off);
    struct gs_reader *r = open_data(d, len);
    read_chunk0(r);
    expect_damage(r, want);
    cr_assert_eq(gs_reader_chunks(r), 1);
    cr_assert_eq(gs_reader_cut(r), strstr(want, "truncated chunk") != NULL,
                 "%s: cut %d", want, gs_reader_cut(r));
    gs_reader_close(r);
}

Test(reader, cut_at_a_chunk_boundary_is_a_clean_shorter_trace)
{
    struct two t = two_chunks();
    struct gs_reader *r = open_data(t.d, t.c1);
    read_chunk0(r);
    expect_eof(r);
    cr_assert_eq(gs_reader_chunks(r), 1);
    gs_reader_close(r);
    gs_tb_free(t.tb);
}

Test(reader, truncated_chunk_header)
{
    struct two t = two_chunks();
    check_damage(t.d, t.c1 + 10,
                 "offset %llu: chunk 1: truncated chunk (header has 10 of 24 bytes)", t.c1);
    gs_tb_free(t.tb);
}

Test(reader, truncated_chunk_payload)
{
    struct two t = two_chunks();
    uint32_t comp = gs_le32(t.d + t.c1 + 8);
    char fmt[160];
    snprintf(fmt, sizeof fmt, "offset %%llu: chunk 1: truncated chunk (payload has %u of %u bytes)",
             comp - 3, comp);
    check_damage(t.d, t.len - 3, fmt, t.c1);
    gs_tb_free(t.tb);
}

Test(reader, truncated_chunk_payload_from_a_file)
{
    struct two t = two_chunks();
    char path[] = "/tmp/gcspy-test-reader-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, t.d, t.len - 1), (ssize_t)(t.len - 1));
    close(fd);
    struct gs_reader *r = gs_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    read_chunk0(r);
    uint32_t comp = gs_le32(t.d + t.c1 + 8);
    char want[160];
    snprintf(want, sizeof want, "offset %llu: chunk 1: truncated chunk (payload has %u of %u bytes)",
             (unsigned long long)t.c1, comp - 1, comp);
    expect_damage(r, want);
    cr_assert(gs_reader_cut(r));
    gs_reader_close(r);
    unlink(path);
    gs_tb_free(t.tb);
}

Test(reader, chunk_length_past_end_of_file)
{
    struct two t = two_chunks();
    uint8_t *h = t.d + t.c1;
    uint32_t comp = gs_le32(h + 8);
    gs_st32(h + 8, comp + 1000);
    gs_st32(h + 20, gs_crc32c(h, 20));   /* a valid header that lies */
    /* the whole payload is there (it matches the CRC): malformed, not cut */
    char fmt[200];
    snprintf(fmt, sizeof fmt, "offset %%llu: chunk 1: chunk length %u runs past the end of the "
             "file (the %u bytes there are the whole payload: they match its CRC)",
             comp + 1000, comp);
    check_damage(t.d, t.len, fmt, t.c1);
    gs_tb_free(t.tb);
}

Test(reader, bad_chunk_magic)
{
    struct two t = two_chunks();
    t.d[t.c1] = 'X';
    check_damage(t.d, t.len, "offset %llu: chunk 1: bad chunk magic 0x4b435358", t.c1);
    gs_tb_free(t.tb);
}

Test(reader, chunk_header_crc_mismatch)
{
    struct two t = two_chunks();
    t.d[t.c1 + 12] ^= 1;   /* raw_len, not resealed */
    check_damage(t.d, t.len, "offset %llu: chunk 1: chunk header CRC mismatch", t.c1);
    gs_tb_free(t.tb);
}

Test(reader, payload_crc_mismatch)
{
    struct two t = two_chunks();
    t.d[t.len - 1] ^= 0x40;
    check_damage(t.d, t.len, "offset %llu: chunk 1: payload CRC mismatch", t.c1);
    gs_tb_free(t.tb);
}

Test(reader, bad_zstd_data)
{
    struct two t = two_chunks();
    t.d[t.c1 + GS_CHUNK_HDR_SIZE] ^= 0xff;   /* the zstd frame magic */
    gs_tb_reseal_chunk(t.d + t.c1);
    check_damage(t.d, t.len, "offset %llu: chunk 1: bad zstd data (Unknown frame descriptor)",
                 t.c1);
    gs_tb_free(t.tb);
}

Test(reader, raw_size_smaller_than_the_payload)
{
    struct two t = two_chunks();
    uint32_t raw = gs_le32(t.d + t.c1 + 12);
    gs_st32(t.d + t.c1 + 12, raw - 1);
    gs_tb_reseal_chunk(t.d + t.c1);
    char fmt[200];
    snprintf(fmt, sizeof fmt, "offset %%llu: chunk 1: raw size mismatch (header says %u bytes, "
             "payload decompresses to more)", raw - 1);
    check_damage(t.d, t.len, fmt, t.c1);
    gs_tb_free(t.tb);
}

Test(reader, raw_size_larger_than_the_payload)
{
    struct two t = two_chunks();
    uint32_t raw = gs_le32(t.d + t.c1 + 12);
    gs_st32(t.d + t.c1 + 12, raw + 5);
    gs_tb_reseal_chunk(t.d + t.c1);
    char fmt[200];
    snprintf(fmt, sizeof fmt, "offset %%llu: chunk 1: raw size mismatch (header says %u bytes, "
             "payload decompresses to %u)", raw + 5, raw);
    check_damage(t.d, t.len, fmt, t.c1);
    gs_tb_free(t.tb);
}

Test(reader, raw_size_over_the_limit)
{
    struct two t = two_chunks();
    gs_st32(t.d + t.c1 + 12, GS_CHUNK_RAW_MAX + 1);
    gs_tb_reseal_chunk(t.d + t.c1);
    check_damage(t.d, t.len, "offset %llu: chunk 1: raw size 16777217 exceeds the limit of "
                 "16777216 bytes", t.c1);
    gs_tb_free(t.tb);
}

Test(reader, sequence_gap)
{
    struct two t = two_chunks();
    gs_st32(t.d + t.c1 + 4, 2);
    gs_tb_reseal_chunk(t.d + t.c1);
    check_damage(t.d, t.len, "offset %llu: chunks out of order (seq 2 where 1 was expected)",
                 t.c1);
    gs_tb_free(t.tb);
}

Test(reader, repeated_chunk_is_out_of_order)
{
    struct two t = two_chunks();
    gs_st32(t.d + t.c1 + 4, 0);
    gs_tb_reseal_chunk(t.d + t.c1);
    check_damage(t.d, t.len, "offset %llu: chunks out of order (seq 0 where 1 was expected)",
                 t.c1);
    gs_tb_free(t.tb);
}

/* Record-level damage: chunk 1 is TIMEBASE(1000) (3 bytes), then the given
 * raw bytes. The reader returns chunk 0, chunk 1's TIMEBASE, then damage at
 * payload offset 3. */
static void record_damage(const void *bytes, size_t n, const char *what)
{
    struct gs_tb *tb = gs_tb_new();
    chunk0(tb);
    gs_tb_timebase(tb, 1000);
    gs_tb_raw(tb, bytes, n);
    size_t len;
    uint8_t *d = gs_tb_data(tb, &len);
    uint64_t c1 = (uint64_t)gs_tb_chunk_offset(tb, 1);
    struct gs_reader *r = open_data(d, len);
    read_chunk0(r);
    struct gs_record rec;
    next_type(r, &rec, GS_REC_TIMEBASE);
    cr_assert_eq(rec.t, 1000);
    char want[512];
    snprintf(want, sizeof want, "offset %llu: chunk 1, record at payload offset 3: %s",
             (unsigned long long)c1, what);
    expect_damage(r, want);
    cr_assert_eq(gs_reader_chunks(r), 2);
    gs_reader_close(r);
    gs_tb_free(tb);
}

Test(reader, hot_record_runs_past_payload_end)
{
    record_damage("\x02\x05\x01", 3, "record runs past payload end (type 0x02)");
}

Test(reader, varint_overflow)
{
    uint8_t b[14];
    b[0] = GS_REC_FREE;
    memset(b + 1, 0xff, 11);
    b[12] = 0x01;
    b[13] = 0x00;
    record_damage(b, sizeof b, "varint longer than 10 bytes (type 0x03)");
}

Test(reader, unknown_hot_type)
{
    record_damage("\x1f\x00\x00", 3, "unknown hot record type (type 0x1f)");
}

Test(reader, lengthed_record_length_past_payload_end)
{
    record_damage("\x22\x7f\x01\x02", 4,
                  "record length 127 runs past payload end (2 bytes left) (type 0x22)");
}

Test(reader, lengthed_record_body_too_short)
{
    /* THREAD_START with index and tid but no t. */
    record_damage("\x24\x02\x01\x02", 4, "field at body offset 2 runs past the end of the "
                  "2-byte record body (type 0x24)");
}

Test(reader, string_field_past_body_end)
{
    /* EXEC: t = 1, then a string of length 9 with 1 byte in the body. */
    record_damage("\x29\x03\x01\x09x", 5, "field at body offset 1 runs past the end of the "
                  "3-byte record body (type 0x29)");
}

Test(reader, truncated_pool_bodies_are_damage)
{
    /* POOL_SNAPSHOT: id, t, reason, nsegments, nblocks; nevents missing */
    record_damage("\x31\x05\x01\x02\x00\x01\x02", 7, "field at body offset 5 runs past "
                  "the end of the 5-byte record body (type 0x31)");
}

Test(reader, truncated_pool_segment_is_damage)
{
    record_damage("\x32\x02\x01\x00", 4, "field at body offset 2 runs past the end of the "
                  "2-byte record body (type 0x32)");
}

Test(reader, truncated_pool_block_is_damage)
{
    /* id, addr, size, requested, state; stack missing */
    record_damage("\x33\x05\x01\x80\x20\x10\x00", 7, "field at body offset 5 runs past "
                  "the end of the 5-byte record body (type 0x33)");
}

Test(reader, truncated_pool_event_is_damage)
{
    record_damage("\x34\x00", 2, "field at body offset 0 runs past the end of the "
                  "0-byte record body (type 0x34)");
}

Test(reader, truncated_scan_block_fn_varint_is_damage)
{
    /* the six 1.0 fields, then a fn varint cut in the middle */
    record_damage("\x2c\x07\x01\x10\x08\x01\x03\x00\x80", 9, "field at body offset 6 "
                  "runs past the end of the 7-byte record body (type 0x2c)");
}

Test(reader, payload_must_start_with_timebase)
{
    struct gs_tb *tb = gs_tb_new();
    chunk0(tb);
    gs_tb_raw(tb, "\x06\x01\x00\x05", 4);   /* a STACK first */
    size_t len;
    uint8_t *d = gs_tb_data(tb, &len);
    char want[256];
    snprintf(want, sizeof want, "offset %ld: chunk 1, record at payload offset 0: payload does "
             "not start with TIMEBASE (type 0x06)", gs_tb_chunk_offset(tb, 1));
    struct gs_reader *r = open_data(d, len);
    read_chunk0(r);
    expect_damage(r, want);
    gs_reader_close(r);
    gs_tb_free(tb);
}

/* Random damage never crashes the reader or makes it loop: every run ends in
 * EOF or one "offset N: ..." message. Half the runs reseal the chunk CRCs so
 * the damage reaches the decompressor and the record decoder. Deterministic
 * (fixed seed); the sanitizer build (make asan) runs it too. */
Test(reader, random_damage_is_always_reported)
{
    struct gs_tb *tb = every_type();
    gs_tb_set_level(tb, 1);
    size_t len;
    uint8_t *orig = gs_tb_data(tb, &len);
    uint8_t *d = malloc(len);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int damaged = 0;
    for (int run = 0; run < 3000; run++) {
        memcpy(d, orig, len);
        int flips = 1 + run % 4;
        for (int k = 0; k < flips; k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            size_t at = GS_FILE_HDR_SIZE + (size_t)(x % (len - GS_FILE_HDR_SIZE));
            d[at] ^= (uint8_t)(1u << ((x >> 32) % 8));
        }
        if (run % 2 && gs_le32(d + GS_FILE_HDR_SIZE + 8) == gs_le32(orig + GS_FILE_HDR_SIZE + 8))
            gs_tb_reseal_chunk(d + GS_FILE_HDR_SIZE);
        struct gs_reader *r = gs_reader_open_mem(d, len, err, sizeof err);
        cr_assert_not_null(r, "%s", err);
        struct gs_record rec;
        int rc, n = 0;
        while ((rc = gs_reader_next(r, &rec)) == GS_READ_OK)
            cr_assert_lt(++n, 1000, "reader loops");
        if (rc == GS_READ_DAMAGED) {
            damaged++;
            cr_assert_eq(strncmp(gs_reader_error(r), "offset ", 7), 0, "%s", gs_reader_error(r));
        } else {
            cr_assert_eq(rc, GS_READ_EOF);
        }
        gs_reader_close(r);
    }
    /* Without a reseal every flip is caught by a CRC. */
    cr_assert_geq(damaged, 1500);
    free(d);
    gs_tb_free(tb);
}

/* gs_reader_seek_last_chunk: from the first record, straight to the last
 * whole chunk (a cut one after it is not "whole"); the records read then
 * are that chunk's and no other; memory input and a trace already at its
 * last chunk stay where they are. */
Test(reader, seek_last_chunk_reads_only_the_last_whole_chunk)
{
    struct gs_tb *tb = gs_tb_new();
    gs_tb_set_chunk_limit(tb, 4096);
    for (int i = 0; i < 5000; i++)
        gs_tb_alloc(tb, 10 * (uint64_t)i, 0, 0x10000 + 64 * (uint64_t)i, 32, 0);
    gs_tb_flush_chunk(tb);
    gs_tb_trace_end(tb, 60000, 5000, 0, 5000 * 32, 5000, 5000 * 32);
    gs_tb_flush_chunk(tb);
    size_t len, chunks = gs_tb_chunks(tb);
    uint8_t *data = gs_tb_data(tb, &len);
    cr_assert_gt(chunks, 3);
    char path[] = "/tmp/gcspy-test-reader-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    /* the whole trace, then the first 10 bytes of a chunk header (cut) */
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    cr_assert_eq(write(fd, "GSCK\0\0\0\0\0\0", 10), 10);
    close(fd);

    struct gs_reader *r = gs_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct gs_record rec;
    cr_assert_eq(gs_reader_next(r, &rec), GS_READ_OK);
    cr_assert_eq(gs_reader_seek_last_chunk(r), 1);
    int n = 0, ends = 0;
    while (gs_reader_next(r, &rec) == GS_READ_OK) {
        n++;
        ends += rec.type == GS_REC_TRACE_END;
        cr_assert_eq(rec.chunk, chunks - 1, "record of chunk %u", rec.chunk);
    }
    cr_assert_eq(ends, 1);
    cr_assert_eq(n, 2); /* TIMEBASE and TRACE_END */
    cr_assert(gs_reader_cut(r), "%s", gs_reader_error(r));
    gs_reader_close(r);

    /* at the last chunk already: no move */
    r = gs_reader_open(path, err, sizeof err);
    cr_assert_eq(gs_reader_seek_last_chunk(r), 1);
    cr_assert_eq(gs_reader_seek_last_chunk(r), 0);
    gs_reader_close(r);
    /* memory input: no move */
    r = open_data(data, len);
    cr_assert_eq(gs_reader_seek_last_chunk(r), 0);
    gs_reader_close(r);
    unlink(path);
    gs_tb_free(tb);
}

/* ---- stream traces (2.0, GS_FILE_F_ZSTD_STREAM), written here with zstd
 * as the shim writes them: one stream, ZSTD_e_flush at each chunk ---- */

struct zs {
    uint8_t buf[1 << 16];
    size_t len;
    uint32_t seq;
    ZSTD_CCtx *cctx;
};

/* A chunk of n TIMEBASE records at time t; alone: a frame of its own. */
static void zs_chunk(struct zs *z, uint64_t t, int n, int alone)
{
    uint8_t raw[4096], *p = raw;
    struct gs_enc_state st;
    for (int i = 0; i < n; i++)
        p = gs_rec_timebase(p, &st, t);
    if (alone)
        ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_only);
    uint8_t *h = z->buf + z->len;
    ZSTD_inBuffer in = {raw, (size_t)(p - raw), 0};
    ZSTD_outBuffer out = {h + GS_CHUNK_HDR_SIZE, sizeof z->buf - z->len - GS_CHUNK_HDR_SIZE, 0};
    cr_assert_eq(ZSTD_compressStream2(z->cctx, &out, &in, alone ? ZSTD_e_end : ZSTD_e_flush), 0);
    gs_chunk_header(h, z->seq++, h + GS_CHUNK_HDR_SIZE, (uint32_t)out.pos, (uint32_t)(p - raw));
    z->len += GS_CHUNK_HDR_SIZE + out.pos;
}

/* A stream trace of two chunks (50 TIMEBASE records at t = 100, then at
 * t = 200, the second continuing the first's frame); *c1: the second's
 * offset. */
static struct zs *zs_new(int window_log, uint64_t *c1)
{
    struct zs *z = calloc(1, sizeof *z);
    cr_assert_not_null(z);
    z->cctx = ZSTD_createCCtx();
    cr_assert_not_null(z->cctx);
    ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, 1);
    if (window_log)
        ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_windowLog, window_log);
    gs_file_header(z->buf, GS_FILE_F_ZSTD | GS_FILE_F_ZSTD_STREAM);
    z->len = GS_FILE_HDR_SIZE;
    zs_chunk(z, 100, 50, 0);
    *c1 = z->len;
    zs_chunk(z, 200, 50, 0);
    return z;
}

static struct gs_reader *zs_open(struct zs *z)
{
    struct gs_reader *r = gs_reader_open_mem(z->buf, z->len, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    return r;
}

static void zs_free(struct zs *z, struct gs_reader *r)
{
    gs_reader_close(r);
    ZSTD_freeCCtx(z->cctx);
    free(z);
}

/* The stream's first chunk is bad zstd data, named at its offset; frees z. */
static void zs_expect_bad_zstd(struct zs *z)
{
    struct gs_reader *r = zs_open(z);
    struct gs_record rec;
    cr_assert_eq(gs_reader_next(r, &rec), GS_READ_DAMAGED);
    cr_assert(strncmp(gs_reader_error(r), "offset 32: chunk 0: bad zstd data (", 35) == 0,
              "%s", gs_reader_error(r));
    zs_free(z, r);
}

/* Every chunk of a stream decodes, whether it continues the frame before it
 * or starts one; only the first chunk of a frame carries the magic. */
Test(reader, stream_chunks_continue_one_frame)
{
    uint64_t c1;
    struct zs *z = zs_new(0, &c1);
    zs_chunk(z, 300, 50, 0);
    uint64_t c3 = z->len;
    zs_chunk(z, 400, 5, 1);
    cr_assert_eq(gs_le32(z->buf + GS_FILE_HDR_SIZE + GS_CHUNK_HDR_SIZE), GS_ZSTD_MAGIC);
    cr_assert_neq(gs_le32(z->buf + c1 + GS_CHUNK_HDR_SIZE), GS_ZSTD_MAGIC);
    cr_assert_eq(gs_le32(z->buf + c3 + GS_CHUNK_HDR_SIZE), GS_ZSTD_MAGIC);
    struct gs_reader *r = zs_open(z);
    struct gs_record rec;
    int n[5] = {0};
    while (gs_reader_next(r, &rec) == GS_READ_OK) {
        cr_assert_eq(rec.type, GS_REC_TIMEBASE);
        cr_assert_eq(rec.t, 100 * (rec.chunk + 1));
        n[rec.chunk]++;
    }
    cr_assert_eq(gs_reader_next(r, &rec), GS_READ_EOF, "%s", gs_reader_error(r));
    cr_assert(n[0] == 50 && n[1] == 50 && n[2] == 50 && n[3] == 5);
    zs_free(z, r);
}

/* A chunk that continues a frame cannot be read without the chunks before
 * it: as the first chunk it is bad zstd data, named at its offset. */
Test(reader, stream_continuation_without_its_frame_is_damage)
{
    uint64_t c1;
    struct zs *z = zs_new(0, &c1);
    /* the file header, then chunk 1 renumbered 0 */
    memmove(z->buf + GS_FILE_HDR_SIZE, z->buf + c1, z->len - c1);
    z->len -= c1 - GS_FILE_HDR_SIZE;
    uint8_t *h = z->buf + GS_FILE_HDR_SIZE;
    gs_chunk_header(h, 0, h + GS_CHUNK_HDR_SIZE, gs_le32(h + 8), gs_le32(h + 12));
    zs_expect_bad_zstd(z);
}

/* A window over GS_ZSTD_WINDOW_LOG_MAX is refused: the reader's memory
 * stays bounded whatever a frame header asks. */
Test(reader, stream_window_over_the_limit_is_damage)
{
    uint64_t c1;
    zs_expect_bad_zstd(zs_new(GS_ZSTD_WINDOW_LOG_MAX + 1, &c1));
}
