/*
 * Streaming reader of gcspy traces: the analyzer's only way into a trace file.
 * It validates every byte it reads (file header, chunk headers and CRCs,
 * decompression, record bounds, chunk order) and hands out decoded records one
 * at a time with the delta coding undone: absolute times and addresses.
 * Memory use is bounded by one chunk (GS_CHUNK_RAW_MAX, and a stream's
 * window: GS_ZSTD_WINDOW_LOG_MAX) whatever the length of
 * the trace.
 *
 * Damage never loses what came before it: gs_reader_next returns
 * GS_READ_DAMAGED once, with a message naming the byte offset in the file,
 * after every record that preceded the damage has been returned; the caller
 * reports what it has and marks the result incomplete (and, unless the file
 * merely ends inside a chunk, gs_reader_cut, malformed).
 */
#ifndef GCSPY_TRACE_READER_H
#define GCSPY_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gcspy/trace_format.h"

enum gs_read_status {
    GS_READ_OK = 0,      /* *rec holds a record */
    GS_READ_EOF = 1,     /* clean end of file */
    GS_READ_DAMAGED = 2, /* stopped at damage; gs_reader_error() says where */
};

/* A byte string inside the reader's current chunk: valid until the next
 * gs_reader_next call; not NUL-terminated. */
struct gs_bytes {
    const uint8_t *p;
    size_t n;
};

#define GS_MAX_SEGS 16

struct gs_record {
    uint8_t type;          /* enum gs_rec_type; unknown lengthed types are skipped */
    uint64_t file_offset;  /* offset of the chunk holding the record */
    uint64_t payload_offset; /* offset of the record in the decompressed payload */
    uint32_t chunk;        /* seq of the chunk holding the record */
    uint64_t t;            /* ns since process start; 0 for records without a time
                            * (STACK, PYCODE, SCAN_BLOCK, PROCESS_START, the
                            * POOL_SEGMENT and POOL_BLOCK of a snapshot); PAUSE:
                            * t_start; SCAN_END: t_end; hot records: absolute */
    union {
        struct { uint64_t thread, addr, size, stack, kind, fn, device, stream, dur_ns; } alloc;
                                                /* ALLOC, ALLOC_EX, REALLOC (size = new size) */
        struct { uint64_t thread, addr, kind, fn, dur_ns; } free; /* FREE, FREE_EX */
        struct { uint64_t id, parent, ip; } stack;
        struct {
            uint64_t pid, ppid, wall_ns, rank1, local_rank1, world_size1, flags,
                unwinder, depth, page_size;
            struct gs_bytes exe, argv, host, version;
        } proc;
        struct { int64_t status; uint64_t how; } exit;
        struct {
            uint64_t id, base, nseg;
            struct gs_bytes path, build_id;
            struct { uint64_t vaddr, memsz, flags; } seg[GS_MAX_SEGS];
        } module;
        struct { uint64_t id; } unload;
        struct { uint64_t index, tid; } thread;
        struct { uint64_t rss, arena, ordblks, hblks, hblkhd, uordblks, fordblks, keepcost; } sample;
        struct { uint64_t thread, kind; struct gs_bytes label; } marker;
        struct { uint64_t t_end, kind, thread, a, b; } pause;
        struct { struct gs_bytes path; } exec;
        struct { uint64_t dropped; struct gs_bytes reason; } stopped;
        struct { uint64_t scan_id, trigger, mode; } scan_begin;
        struct { uint64_t scan_id, addr, size, stack, kind, cls, fn; } scan_block;
                                                /* fn: 0 in minor-0 traces */
        struct {
            uint64_t scan_id, t_start, t_stopped, t_marked, t_end, threads,
                bytes_scanned, blocks_visited, live_blocks, live_bytes;
            uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
            uint64_t unreadable; /* 0 before minor 2 */
            uint64_t runtime_blocks, runtime_bytes; /* 0 before 2.1 */
        } scan_end;
        struct { uint64_t id, firstline; struct gs_bytes file, function; } pycode;
        struct { uint64_t allocs, frees, bytes_allocated, live_blocks, live_bytes; } end;
        struct { uint64_t device, kind, reserved, in_use, segments, largest_free; } dsample;
        /* Caching-allocator snapshots (minor 1); POOL_SNAPSHOT and POOL_EVENT
         * carry their time in t. */
        struct { uint64_t snap_id, reason, nsegments, nblocks, nevents; } pool_snap;
        struct { uint64_t snap_id, device, addr, size, stream, pool; } pool_seg;
        struct { uint64_t snap_id, addr, size, requested, state, stack; } pool_blk;
        struct { uint64_t snap_id, device, action, addr, size, stream, stack; } pool_ev;
    } u;
};

struct gs_reader;

/* Opens and validates the file header. On failure returns NULL and writes a
 * one-line message (naming the path and, for bad headers, the offset) into
 * err. A newer major version is refused with a message saying so. */
struct gs_reader *gs_reader_open(const char *path, char *err, size_t errlen);
/* The same over a caller-owned memory buffer (tests, fuzzing). */
struct gs_reader *gs_reader_open_mem(const void *data, size_t len, char *err, size_t errlen);
/* The same over an open file descriptor (a pipe too: `gcspy dump -`); name is
 * used in messages; the fd stays the caller's. */
struct gs_reader *gs_reader_open_fd(int fd, const char *name, char *err, size_t errlen);
int gs_reader_next(struct gs_reader *r, struct gs_record *rec);
/* After GS_READ_DAMAGED: "offset N: what is wrong". */
const char *gs_reader_error(const struct gs_reader *r);
/* After GS_READ_DAMAGED: 1 when the damage is only that the file ends inside
 * a chunk (its header or payload cut short), as a write cut by a kill or a
 * full disk leaves a trace: the trace is cut, not malformed. A chunk whose
 * length runs past the end although its whole payload is there (the bytes
 * present match its CRC) is malformed, not cut. */
int gs_reader_cut(const struct gs_reader *r);
uint16_t gs_reader_major(const struct gs_reader *r);
uint16_t gs_reader_minor(const struct gs_reader *r);
uint64_t gs_reader_flags(const struct gs_reader *r);    /* file header flags */
uint64_t gs_reader_skipped(const struct gs_reader *r);  /* unknown lengthed records skipped */
uint64_t gs_reader_chunks(const struct gs_reader *r);   /* complete chunks read */
uint64_t gs_reader_offset(const struct gs_reader *r);   /* bytes consumed so far */
/* Skips to the last whole chunk of a trace file (not a pipe, not memory)
 * by reading the chunk headers after the current position alone (magic,
 * header CRC, sequence, the payload within the file; payloads are neither
 * read nor checked), so the next gs_reader_next returns that chunk's first
 * record: what `gcspy run` reads of a trace's end (TRACE_END, in a chunk of
 * its own) without decompressing the rest. In a stream trace (2.0) only
 * chunks that start a zstd frame decode alone: the last of those (the
 * tail is one). 1 when it moved, 0 when no such whole chunk follows (the
 * reader is left as it was), -1 on a read or seek error. */
int gs_reader_seek_last_chunk(struct gs_reader *r);
/* The next chunk's decompressed payload, whole (bench/zstd_levels: the
 * writer's compressor inputs), valid until the next call; its records are
 * not decoded. GS_READ_OK, or what gs_reader_next would return. */
int gs_reader_next_chunk(struct gs_reader *r, const uint8_t **raw, size_t *len);
void gs_reader_close(struct gs_reader *r);

/* For a reader on one thread and the replay on another (analyze.c's
 * pipeline): once on, each chunk is decompressed into a new buffer, and
 * the one it replaces, which the records already returned point into, is
 * handed over by gs_reader_take_spent (NULL when the last call loaded no
 * new chunk); the caller frees it once those records are used. */
void gs_reader_keep_chunks(struct gs_reader *r);
void *gs_reader_take_spent(struct gs_reader *r);

#endif /* GCSPY_TRACE_READER_H */
