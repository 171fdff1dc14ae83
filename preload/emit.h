/*
 * The record emitters (emit.c, and the inline ones here): every record
 * preload/ writes is encoded in this layer, from the encoders of
 * include/gcspy/record.h, so that a change of a record's fields touches
 * these two files and no other of the shim. Callers above pass values;
 * which stream, how much room and which lock are decided here (the writer
 * below frames the buffers: TIMEBASE, chunks, the file header).
 *
 * The hot records (ALLOC, FREE, REALLOC and their _EX forms) are inline:
 * core.c writes them into the shard stream it already holds locked, and
 * the per-allocation path must stay one inline encoder.
 */
#ifndef GCSPY_EMIT_H
#define GCSPY_EMIT_H

#include "writer.h"

/* ---- hot records, into a reserved shard buffer (caller holds its lock) ---- */
static inline uint8_t *gs_emit_alloc(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                     uint64_t thread, uint64_t addr, uint64_t size,
                                     uint64_t stack)
{
    return gs_rec_alloc(p, st, t, thread, addr, size, stack);
}
static inline uint8_t *gs_emit_alloc_ex(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                        uint64_t thread, uint64_t addr, uint64_t size,
                                        uint64_t stack, unsigned kind, unsigned fn,
                                        unsigned device, uint64_t stream, uint64_t dur_ns)
{
    return gs_rec_alloc_ex(p, st, t, thread, addr, size, stack, kind, fn, device, stream,
                           dur_ns);
}
static inline uint8_t *gs_emit_free(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                    uint64_t addr)
{
    return gs_rec_free(p, st, t, addr);
}
static inline uint8_t *gs_emit_free_ex(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                       uint64_t thread, uint64_t addr, unsigned kind,
                                       unsigned fn, uint64_t dur_ns)
{
    return gs_rec_free_ex(p, st, t, thread, addr, kind, fn, dur_ns);
}
static inline uint8_t *gs_emit_realloc(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                       uint64_t thread, uint64_t addr, uint64_t size,
                                       uint64_t stack)
{
    return gs_rec_realloc(p, st, t, thread, addr, size, stack);
}

/* A STACK node into the meta stream; the caller holds the meta lock (stack.c
 * holds it across a whole stack's nodes). 0, or -1 when tracing stopped. */
static inline int gs_emit_stack_node(uint32_t id, uint32_t parent, uint64_t ip)
{
    uint8_t *p = gs_stream_reserve(&gs_meta, GS_REC_HOT_MAX);
    if (!p)
        return -1;
    gs_stream_commit(&gs_meta, gs_rec_stack(p, &gs_meta.cur->st, id, parent, ip));
    return 0;
}

/* ---- definitions and other records, into the meta stream ----
 * Each takes the meta lock itself; the caller holds the recursion flag. */

/* THREAD_START (with tid) or THREAD_EXIT. */
void gs_emit_thread(uint8_t type, uint32_t index, int tid);

struct gs_process_start {
    uint64_t pid, ppid, wall0_ns;
    const char *exe;
    const char *cmdline;     /* arguments, NUL-separated, cmdline_len bytes */
    size_t cmdline_len;
    const char *node;        /* uname's nodename */
    uint64_t rank, local_rank, world_size; /* value + 1; 0: not set */
    uint64_t flags;          /* GS_PROC_F_* */
    uint64_t unwind, depth;  /* gs_opt's */
    uint64_t page_size;
};
void gs_emit_process_start(const struct gs_process_start *ps);
void gs_emit_exec(const char *path, size_t n);

struct dl_phdr_info;
/* MODULE: id, its load bias and PT_LOAD segments (from info), name, build id.
 * 0, or -1 when tracing stopped. */
int gs_emit_module(const struct dl_phdr_info *info, uint32_t id, const char *name,
                   size_t nlen, const uint8_t *bid, size_t blen);
void gs_emit_module_unload(uint32_t id);
/* PYCODE. 0, or -1 when tracing stopped. */
int gs_emit_pycode(uint32_t id, const char *file, size_t flen, const char *fn, size_t fnlen,
                   int firstline);

void gs_emit_marker(uint64_t thread, unsigned kind, const char *label);
/* PAUSE (of the calling thread) and DEVICE_SAMPLE; times from gs_now_fine. */
void gs_emit_pause(uint64_t t0, uint64_t t1, unsigned kind, uint64_t a, uint64_t b);
void gs_emit_device_sample(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                           uint64_t segments, uint64_t largest_free);

/* SAMPLE: resident bytes and glibc's mallinfo2 counters. */
struct gs_sample {
    uint64_t rss, arena, ordblks, hblks, hblkhd, uordblks, fordblks, keepcost;
};
void gs_emit_sample(const struct gs_sample *s);

/* A scan's records, written after the world restarted. */
void gs_emit_scan_begin(uint64_t id, uint64_t t_start, unsigned trigger, unsigned fork_mode);
void gs_emit_scan_block(uint64_t id, uint64_t addr, uint64_t size, uint32_t stack,
                        unsigned kind, unsigned cls, unsigned fn);
struct gs_scan_end {
    uint64_t id, t_start, t_stopped, t_marked, t_end, nstopped;
    uint64_t bytes_scanned, visited, live_blocks, live_bytes;
    const uint64_t *cls_blocks, *cls_bytes; /* [GS_CLASS__N] */
    uint64_t unreadable; /* bytes of blocks left unread (unreadable pages) */
};
void gs_emit_scan_end(const struct gs_scan_end *e);

/* A caching allocator's snapshot (torch.c). */
void gs_emit_pool_snapshot(uint64_t id, uint64_t t, unsigned why, uint64_t nseg, uint64_t nblk,
                           uint64_t nevents);
void gs_emit_pool_segment(uint64_t id, uint64_t device, uint64_t addr, uint64_t size,
                          uint64_t stream, unsigned type);
void gs_emit_pool_block(uint64_t id, uint64_t addr, uint64_t size, uint64_t requested,
                        unsigned state, uint32_t stack);
void gs_emit_pool_event(uint64_t id, uint64_t t, uint64_t device, unsigned action,
                        uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack);

/* ---- records written outside the streams ---- */
/* PROCESS_EXIT and TRACE_END at p (room: 256 bytes); returns the end. */
uint8_t *gs_emit_exit_tail(uint8_t *p, uint64_t t, int status, uint64_t allocs, uint64_t frees,
                           uint64_t bytes, uint64_t live_blocks, uint64_t live_bytes);
/* STOPPED at p, the writer's last chunk after a failure; returns the end. */
uint8_t *gs_emit_stopped(uint8_t *p, uint64_t t, const char *why);

#endif /* GCSPY_EMIT_H */
