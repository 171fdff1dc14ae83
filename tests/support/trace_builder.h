/*
 * Trace builder for tests: makes complete, valid gcspy traces in memory, byte
 * for byte what the shim writes, because it encodes with the same
 * include/gcspy/record.h encoders and frames chunks with the same helpers.
 * Tests use it to feed the reader and the analyzer exact, known input, and to
 * make damaged traces: gs_tb_data() hands out the writable file image and
 * gs_tb_chunk_offset()/gs_tb_reseal_chunk() let a test change a chunk header
 * (seq, raw_len, ...) and still give it valid CRCs.
 *
 * Usage (link build/obj/tests/support/trace_builder.o and -lzstd; compile with
 * -Itests/support):
 *
 *   struct gs_tb *tb = gs_tb_new();
 *   gs_tb_process_start(tb, &(struct gs_tb_proc){ .pid = 42, .exe = "/bin/x" });
 *   gs_tb_stack(tb, 1, 0, 0x401000);
 *   gs_tb_alloc(tb, 100, 1, 0x1000, 64, 1);
 *   gs_tb_flush_chunk(tb);                      // close chunk 0
 *   gs_tb_free_rec(tb, 200, 0x1000);
 *   gs_tb_trace_end(tb, 300, 1, 1, 64, 0, 0);
 *   gs_tb_write_file(tb, "x.trace");            // flushes the open chunk
 *   gs_tb_free(tb);
 *
 * Time: hot records (alloc, free, realloc, alloc_ex, free_ex) are delta-coded
 * against the running time of the current buffer, like the shim does: a time
 * earlier than the running time is recorded as the running time (the reader
 * then returns the running time). Every chunk's payload starts with a
 * TIMEBASE, added automatically at the chunk's first record with the running
 * time; gs_tb_timebase() starts a new buffer (new TIMEBASE) mid-chunk.
 *
 * Every append returns 0, or -1 when out of memory; a failure is also
 * remembered, so gs_tb_data()/gs_tb_write_file() fail too and tests need not
 * check each append.
 */
#ifndef GCSPY_TRACE_BUILDER_H
#define GCSPY_TRACE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "gcspy/trace_format.h"

struct gs_tb;

/* PROCESS_START fields; NULL strings are written as empty. argv is a
 * NUL-separated byte string of argv_len bytes (0: none). rank, local_rank and
 * world_size are stored +1 in the trace; give them here as the trace stores
 * them (0 = unset). */
struct gs_tb_proc {
    uint64_t pid, ppid, wall_ns;
    const char *exe;
    const char *argv;
    size_t argv_len;
    const char *host;
    uint64_t rank1, local_rank1, world_size1, flags;
    const char *version;
    uint64_t unwinder, depth, page_size;
};

struct gs_tb_seg {
    uint64_t vaddr, memsz, flags;
};

struct gs_tb_scan_end {
    uint64_t scan_id, t_start, t_stopped, t_marked, t_end, threads,
        bytes_scanned, blocks_visited, live_blocks, live_bytes;
    uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
    uint64_t unreadable;
};

struct gs_tb *gs_tb_new(void);
void gs_tb_free(struct gs_tb *tb);

/* Chunks whose raw payload grows past this many bytes are closed
 * automatically after the record that crossed it (default 1 MiB). */
void gs_tb_set_chunk_limit(struct gs_tb *tb, size_t raw_bytes);
/* zstd level of the chunks closed from now on (default 1). */
void gs_tb_set_level(struct gs_tb *tb, int level);

/* Hot records. */
int gs_tb_timebase(struct gs_tb *tb, uint64_t t);
int gs_tb_alloc(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                uint64_t size, uint64_t stack);
int gs_tb_free_rec(struct gs_tb *tb, uint64_t t, uint64_t addr);
int gs_tb_realloc(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                  uint64_t new_size, uint64_t stack);
int gs_tb_alloc_ex(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                   uint64_t size, uint64_t stack, uint64_t kind, uint64_t fn,
                   uint64_t device, uint64_t stream, uint64_t dur_ns);
int gs_tb_free_ex(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                  uint64_t kind, uint64_t fn, uint64_t dur_ns);
int gs_tb_stack(struct gs_tb *tb, uint64_t id, uint64_t parent, uint64_t ip);

/* Length-prefixed records. */
int gs_tb_process_start(struct gs_tb *tb, const struct gs_tb_proc *p);
int gs_tb_process_exit(struct gs_tb *tb, uint64_t t, int64_t status, uint64_t how);
int gs_tb_module(struct gs_tb *tb, uint64_t id, uint64_t t, uint64_t base,
                 const char *path, const void *build_id, size_t build_id_len,
                 size_t nseg, const struct gs_tb_seg *segs);
int gs_tb_module_unload(struct gs_tb *tb, uint64_t id, uint64_t t);
int gs_tb_thread_start(struct gs_tb *tb, uint64_t index, uint64_t tid, uint64_t t);
int gs_tb_thread_exit(struct gs_tb *tb, uint64_t index, uint64_t t);
int gs_tb_sample(struct gs_tb *tb, uint64_t t, uint64_t rss, uint64_t arena,
                 uint64_t ordblks, uint64_t hblks, uint64_t hblkhd,
                 uint64_t uordblks, uint64_t fordblks, uint64_t keepcost);
int gs_tb_marker(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t kind,
                 const char *label);
int gs_tb_pause(struct gs_tb *tb, uint64_t t_start, uint64_t t_end, uint64_t kind,
                uint64_t thread, uint64_t a, uint64_t b);
int gs_tb_exec(struct gs_tb *tb, uint64_t t, const char *path);
int gs_tb_stopped(struct gs_tb *tb, uint64_t t, uint64_t dropped, const char *reason);
int gs_tb_scan_begin(struct gs_tb *tb, uint64_t scan_id, uint64_t t,
                     uint64_t trigger, uint64_t mode);
int gs_tb_scan_block(struct gs_tb *tb, uint64_t scan_id, uint64_t addr,
                     uint64_t size, uint64_t stack, uint64_t kind, uint64_t cls);
int gs_tb_scan_end(struct gs_tb *tb, const struct gs_tb_scan_end *e);
int gs_tb_pycode(struct gs_tb *tb, uint64_t id, const char *file,
                 const char *function, uint64_t firstline);
int gs_tb_trace_end(struct gs_tb *tb, uint64_t t, uint64_t allocs, uint64_t frees,
                    uint64_t bytes_allocated, uint64_t live_blocks,
                    uint64_t live_bytes);
int gs_tb_device_sample(struct gs_tb *tb, uint64_t t, uint64_t device, uint64_t kind,
                        uint64_t reserved, uint64_t in_use, uint64_t segments,
                        uint64_t largest_free);

/* Raw material for tests of unknown or malformed input. */
/* A lengthed record of any type with the given body (unknown types, known
 * types with extra trailing fields). */
int gs_tb_lengthed(struct gs_tb *tb, uint8_t type, const void *body, size_t n);
/* Bytes appended to the payload as they are (no TIMEBASE is added first if
 * the payload is still empty: the test controls every byte). */
int gs_tb_raw(struct gs_tb *tb, const void *bytes, size_t n);

/* Closes the current chunk: compresses the payload and appends header and
 * frame to the file image. A no-op when nothing was added since the last
 * close. Chunk seq numbers are 0, 1, 2, ... */
int gs_tb_flush_chunk(struct gs_tb *tb);
/* Closes the current chunk, then returns the whole file image, writable so
 * tests can damage it; valid until the next append or gs_tb_free. */
uint8_t *gs_tb_data(struct gs_tb *tb, size_t *len);
int gs_tb_write_file(struct gs_tb *tb, const char *path);

/* Where the last record appended (by any of the calls above but gs_tb_raw)
 * went: the seq of its chunk and its offset in that chunk's decompressed
 * payload, after the TIMEBASE a chunk opens with. With gs_tb_chunk_offset
 * once the chunk is closed, that is where a reader names the record:
 * "offset FILE_OFFSET: chunk SEQ, record at payload offset N". */
void gs_tb_last_record(const struct gs_tb *tb, uint32_t *chunk, size_t *payload_offset);

/* Chunks closed so far, and the file offset of chunk k's header (-1 when
 * there is no such chunk). */
size_t gs_tb_chunks(const struct gs_tb *tb);
long gs_tb_chunk_offset(const struct gs_tb *tb, size_t k);
/* Recomputes the payload CRC (over the comp_len bytes its header names,
 * which must lie within the image) and the header CRC of the chunk whose
 * header starts at hdr, after a test edited it. */
void gs_tb_reseal_chunk(uint8_t *hdr);

#endif /* GCSPY_TRACE_BUILDER_H */
