/*
 * The record emitters: every record of preload/ but the hot ones (inline in
 * emit.h) is encoded here, with the encoders generated from the record
 * table (include/gcspy/records.def, record.h), into the meta stream
 * (definitions and everything that is not an allocation event) or into a
 * caller's buffer (the exit's tail, the STOPPED record the writer ends a
 * failed trace with).
 *
 * Each emitter takes the meta lock, reserves room for its record and
 * commits it; a record that finds tracing stopped is dropped. Callers hold
 * the recursion flag (reserving may map a buffer) and no shard lock; the
 * stack and module emitters run under the stack or module lock, which come
 * before the meta lock in the lock order (shim.h).
 */
#define _GNU_SOURCE
#include <link.h>
#include <string.h>

#include "emit.h"

/* Reserves room for one record of at most `max` bytes in the meta stream,
 * under the meta lock; the caller encodes at the result with a generated
 * gs_rec_<name> (record.h) and ends with meta_commit. NULL (lock released)
 * when tracing has stopped. */
static uint8_t *meta_begin(size_t max)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, max);
    if (!p)
        gs_spin_unlock(&gs_meta.lock);
    return p;
}

static void meta_commit(uint8_t *end)
{
    gs_stream_commit(&gs_meta, end);
    gs_spin_unlock(&gs_meta.lock);
}

/* A record of fixed-size fields only, in one call: its maximum size is its
 * GS_REC_<NAME>_MAX, the encoder gs_rec_<name>. */
#define META_FIXED(NAME, name, ...)                                                          \
    do {                                                                                     \
        uint8_t *p_ = meta_begin(GS_REC_##NAME##_MAX);                                       \
        if (p_)                                                                              \
            meta_commit(gs_rec_##name(p_, __VA_ARGS__));                                     \
    } while (0)

/* ---- threads and the process ---- */

void gs_emit_thread(uint8_t type, uint32_t index, int tid)
{
    if (type == GS_REC_THREAD_START)
        META_FIXED(THREAD_START, thread_start, index, (uint64_t)tid, gs_now());
    else
        META_FIXED(THREAD_EXIT, thread_exit, index, gs_now());
}

void gs_emit_process_start(const struct gs_process_start *ps)
{
    size_t exe_len = strlen(ps->exe), node_len = strlen(ps->node);
    uint8_t *p = meta_begin(GS_REC_PROCESS_START_MAX + exe_len + ps->cmdline_len + node_len +
                            sizeof GCSPY_VERSION);
    if (p)
        meta_commit(gs_rec_process_start(p, ps->pid, ps->ppid, ps->wall0_ns, ps->exe, exe_len,
                                         ps->cmdline, ps->cmdline_len, ps->node, node_len,
                                         ps->rank, ps->local_rank, ps->world_size, ps->flags,
                                         GCSPY_VERSION, sizeof GCSPY_VERSION - 1, ps->unwind,
                                         ps->depth, ps->page_size));
}

void gs_emit_exec(const char *path, size_t n)
{
    uint8_t *p = meta_begin(GS_REC_EXEC_MAX + n);
    if (p)
        meta_commit(gs_rec_exec(p, gs_now_fine(), path, n));
}

uint8_t *gs_emit_exit_tail(uint8_t *p, uint64_t t, int status, uint64_t allocs, uint64_t frees,
                           uint64_t bytes, uint64_t live_blocks, uint64_t live_bytes)
{
    p = gs_rec_process_exit(p, t, status, GS_EXIT_NORMAL);
    return gs_rec_trace_end(p, t, allocs, frees, bytes, live_blocks, live_bytes);
}

uint8_t *gs_emit_stopped(uint8_t *p, uint64_t t, const char *why)
{
    /* dropped is 0: nothing is recorded after the stop, so nothing counted */
    return gs_rec_stopped(p, t, 0, why, strlen(why));
}

/* ---- definitions: modules and Python code ---- */

int gs_emit_module(const struct dl_phdr_info *info, uint32_t id, const char *name,
                   size_t nlen, const uint8_t *bid, size_t blen)
{
    /* The loadable segments, a few in any real object: ld.so itself keeps an
     * array of this size (its loadcmds) on the stack for each one. */
    struct gs_seg seg[info->dlpi_phnum ? info->dlpi_phnum : 1];
    size_t nseg = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD)
            seg[nseg++] = (struct gs_seg){ph->p_vaddr, ph->p_memsz, ph->p_flags};
    }
    uint8_t *p = meta_begin(GS_REC_MODULE_MAX + nlen + blen + 3 * GS_VARINT_MAX * nseg);
    if (p)
        meta_commit(gs_rec_module(p, id, gs_now(), info->dlpi_addr, name, nlen, bid, blen, nseg,
                                  seg));
    return p ? 0 : -1;
}

void gs_emit_module_unload(uint32_t id)
{
    META_FIXED(MODULE_UNLOAD, module_unload, id, gs_now());
}

int gs_emit_pycode(uint32_t id, const char *file, size_t flen, const char *fn, size_t fnlen,
                   int firstline)
{
    uint8_t *p = meta_begin(GS_REC_PYCODE_MAX + flen + fnlen);
    if (p)
        meta_commit(gs_rec_pycode(p, id, file, flen, fn, fnlen,
                                  (uint64_t)(firstline > 0 ? firstline : 0)));
    return p ? 0 : -1;
}

/* ---- markers, pauses, samples ---- */

void gs_emit_marker(uint64_t thread, unsigned kind, const char *label)
{
    size_t n = label ? strnlen(label, 4096) : 0;
    uint8_t *p = meta_begin(GS_REC_MARKER_MAX + n);
    if (!p)
        return;
    /* Read and published under the meta lock, so the floor only rises
     * (markers of several threads take it in turn); events recorded after
     * this one read at least t (shim.h, gs_now). */
    uint64_t t = gs_now_fine();
    atomic_store_explicit(&gs_time_floor, t, memory_order_relaxed);
    meta_commit(gs_rec_marker(p, t, thread, kind, label, n));
}

void gs_emit_pause(uint64_t t0, uint64_t t1, unsigned kind, uint64_t a, uint64_t b)
{
    struct gs_thread *th = gs_tls.th;
    META_FIXED(PAUSE, pause, t0, t1, kind, th ? th->index : 0, a, b);
}

void gs_emit_device_sample(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                           uint64_t segments, uint64_t largest_free)
{
    META_FIXED(DEVICE_SAMPLE, device_sample, gs_now_fine(), device, kind, reserved, in_use,
               segments, largest_free);
}

void gs_emit_sample(const struct gs_sample *s)
{
    META_FIXED(SAMPLE, sample, gs_now(), s->rss, s->arena, s->ordblks, s->hblks, s->hblkhd,
               s->uordblks, s->fordblks, s->keepcost);
}

/* ---- scans ---- */

void gs_emit_scan_begin(uint64_t id, uint64_t t_start, unsigned trigger, unsigned fork_mode)
{
    META_FIXED(SCAN_BEGIN, scan_begin, id, t_start, trigger, fork_mode);
}

void gs_emit_scan_block(uint64_t id, uint64_t addr, uint64_t size, uint32_t stack,
                        unsigned kind, unsigned cls, unsigned fn)
{
    META_FIXED(SCAN_BLOCK, scan_block, id, addr, size, stack, kind, cls, fn);
}

void gs_emit_scan_end(const struct gs_scan_end *s)
{
    META_FIXED(SCAN_END, scan_end, s->id, s->t_start, s->t_stopped, s->t_marked, s->t_end,
               s->nstopped, s->bytes_scanned, s->visited, s->live_blocks, s->live_bytes,
               s->cls_blocks, s->cls_bytes, s->unreadable, s->cls_blocks[GS_CLASS_RUNTIME],
               s->cls_bytes[GS_CLASS_RUNTIME]);
}

/* ---- a caching allocator's snapshot ---- */

void gs_emit_pool_snapshot(uint64_t id, uint64_t t, unsigned why, uint64_t nseg, uint64_t nblk,
                           uint64_t nevents)
{
    META_FIXED(POOL_SNAPSHOT, pool_snapshot, id, t, why, nseg, nblk, nevents);
}

void gs_emit_pool_segment(uint64_t id, uint64_t device, uint64_t addr, uint64_t size,
                          uint64_t stream, unsigned type)
{
    META_FIXED(POOL_SEGMENT, pool_segment, id, device, addr, size, stream, type);
}

void gs_emit_pool_block(uint64_t id, uint64_t addr, uint64_t size, uint64_t requested,
                        unsigned state, uint32_t stack)
{
    META_FIXED(POOL_BLOCK, pool_block, id, addr, size, requested, state, stack);
}

void gs_emit_pool_event(uint64_t id, uint64_t t, uint64_t device, unsigned action,
                        uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack)
{
    META_FIXED(POOL_EVENT, pool_event, id, t, device, action, addr, size, stream, stack);
}
