/*
 * The record emitters: every record of preload/ but the hot ones (inline in
 * emit.h) is encoded here, field by field in the order trace_format.h
 * documents, into the meta stream (definitions and everything that is not
 * an allocation event) or into a caller's buffer (the exit's tail, the
 * STOPPED record the writer ends a failed trace with).
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
#include <sys/utsname.h>

#include "emit.h"

/* One length-prefixed record of n unsigned varints. */
static void meta_varints(uint8_t type, const uint64_t *v, int n)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, 16 + (size_t)n * GS_VARINT_MAX);
    if (p) {
        uint8_t *b = gs_rec_open(p, type), *e = b;
        for (int i = 0; i < n; i++)
            e = gs_put_u(e, v[i]);
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
}

/* ---- threads and the process ---- */

void gs_emit_thread(uint8_t type, uint32_t index, int tid)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, 48);
    if (p) {
        uint8_t *b = gs_rec_open(p, type);
        uint8_t *e = gs_put_u(b, index);
        if (type == GS_REC_THREAD_START)
            e = gs_put_u(e, (uint64_t)tid);
        e = gs_put_u(e, gs_now());
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
}

void gs_emit_process_start(const struct gs_process_start *ps)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, ps->cmdline_len + strlen(ps->exe) +
                                                 sizeof((struct utsname *)0)->nodename + 128);
    if (p) {
        uint8_t *b = gs_rec_open(p, GS_REC_PROCESS_START);
        uint8_t *q = gs_put_u(b, ps->pid);
        q = gs_put_u(q, ps->ppid);
        q = gs_put_u(q, ps->wall0_ns);
        q = gs_put_str(q, ps->exe);
        q = gs_put_bytes(q, ps->cmdline, ps->cmdline_len);
        q = gs_put_str(q, ps->node);
        q = gs_put_u(q, ps->rank);
        q = gs_put_u(q, ps->local_rank);
        q = gs_put_u(q, ps->world_size);
        q = gs_put_u(q, ps->flags);
        q = gs_put_str(q, GCSPY_VERSION);
        q = gs_put_u(q, ps->unwind);
        q = gs_put_u(q, ps->depth);
        q = gs_put_u(q, ps->page_size);
        gs_stream_commit(&gs_meta, gs_rec_close(b, q));
    }
    gs_spin_unlock(&gs_meta.lock);
}

void gs_emit_exec(const char *path, size_t n)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, n + 32);
    if (p) {
        uint8_t *b = gs_rec_open(p, GS_REC_EXEC);
        uint8_t *e = gs_put_u(b, gs_now_fine());
        e = gs_put_bytes(e, path, n);
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
}

uint8_t *gs_emit_exit_tail(uint8_t *p, uint64_t t, int status, uint64_t allocs, uint64_t frees,
                           uint64_t bytes, uint64_t live_blocks, uint64_t live_bytes)
{
    uint8_t *b = gs_rec_open(p, GS_REC_PROCESS_EXIT);
    uint8_t *e = gs_put_u(b, t);
    e = gs_put_s(e, status);
    e = gs_put_u(e, GS_EXIT_NORMAL);
    e = gs_rec_close(b, e);
    b = gs_rec_open(e, GS_REC_TRACE_END);
    e = gs_put_u(b, t);
    e = gs_put_u(e, allocs);
    e = gs_put_u(e, frees);
    e = gs_put_u(e, bytes);
    e = gs_put_u(e, live_blocks);
    e = gs_put_u(e, live_bytes);
    return gs_rec_close(b, e);
}

uint8_t *gs_emit_stopped(uint8_t *p, uint64_t t, const char *why)
{
    uint8_t *b = gs_rec_open(p, GS_REC_STOPPED);
    uint8_t *e = gs_put_u(b, t);
    e = gs_put_u(e, 0); /* nothing is recorded after the stop, so nothing counted */
    e = gs_put_str(e, why);
    return gs_rec_close(b, e);
}

/* ---- definitions: modules and Python code ---- */

int gs_emit_module(const struct dl_phdr_info *info, uint32_t id, const char *name,
                   size_t nlen, const uint8_t *bid, size_t blen)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, 64 + nlen + blen + 32 * (size_t)info->dlpi_phnum);
    if (p) {
        uint8_t *b = gs_rec_open(p, GS_REC_MODULE);
        uint8_t *e = gs_put_u(b, id);
        e = gs_put_u(e, gs_now());
        e = gs_put_u(e, info->dlpi_addr);
        e = gs_put_bytes(e, name, nlen);
        e = gs_put_bytes(e, bid, blen);
        int nseg = 0;
        for (int i = 0; i < info->dlpi_phnum; i++)
            nseg += info->dlpi_phdr[i].p_type == PT_LOAD;
        e = gs_put_u(e, (uint64_t)nseg);
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type != PT_LOAD)
                continue;
            e = gs_put_u(e, ph->p_vaddr);
            e = gs_put_u(e, ph->p_memsz);
            e = gs_put_u(e, ph->p_flags);
        }
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
    return p ? 0 : -1;
}

void gs_emit_module_unload(uint32_t id)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, 32);
    if (p) {
        uint8_t *b = gs_rec_open(p, GS_REC_MODULE_UNLOAD);
        uint8_t *e = gs_put_u(gs_put_u(b, id), gs_now());
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
}

int gs_emit_pycode(uint32_t id, const char *file, size_t flen, const char *fn, size_t fnlen,
                   int firstline)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, flen + fnlen + 48);
    if (p) {
        uint8_t *b = gs_rec_open(p, GS_REC_PYCODE);
        uint8_t *e = gs_put_u(b, id);
        e = gs_put_bytes(e, file, flen);
        e = gs_put_bytes(e, fn, fnlen);
        e = gs_put_u(e, (uint64_t)(firstline > 0 ? firstline : 0));
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
    return p ? 0 : -1;
}

/* ---- markers, pauses, samples ---- */

void gs_emit_marker(uint64_t thread, unsigned kind, const char *label)
{
    size_t n = label ? strnlen(label, 4096) : 0;
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, n + 48);
    if (p) {
        uint8_t *b = gs_rec_open(p, GS_REC_MARKER);
        uint8_t *e = gs_put_u(b, gs_now_fine());
        e = gs_put_u(e, thread);
        e = gs_put_u(e, kind);
        e = gs_put_bytes(e, label, n);
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
}

void gs_emit_pause(uint64_t t0, uint64_t t1, unsigned kind, uint64_t a, uint64_t b)
{
    struct gs_thread *th = gs_tls.th;
    uint64_t v[6] = {t0, t1, kind, th ? th->index : 0, a, b};
    meta_varints(GS_REC_PAUSE, v, 6);
}

void gs_emit_device_sample(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                           uint64_t segments, uint64_t largest_free)
{
    uint64_t v[7] = {gs_now_fine(), device, kind, reserved, in_use, segments, largest_free};
    meta_varints(GS_REC_DEVICE_SAMPLE, v, 7);
}

void gs_emit_sample(const struct gs_sample *s)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, 128);
    if (p) {
        uint8_t *b = gs_rec_open(p, GS_REC_SAMPLE);
        uint8_t *e = gs_put_u(b, gs_now());
        e = gs_put_u(e, s->rss);
        e = gs_put_u(e, s->arena);
        e = gs_put_u(e, s->ordblks);
        e = gs_put_u(e, s->hblks);
        e = gs_put_u(e, s->hblkhd);
        e = gs_put_u(e, s->uordblks);
        e = gs_put_u(e, s->fordblks);
        e = gs_put_u(e, s->keepcost);
        gs_stream_commit(&gs_meta, gs_rec_close(b, e));
    }
    gs_spin_unlock(&gs_meta.lock);
}

/* ---- scans ---- */

void gs_emit_scan_begin(uint64_t id, uint64_t t_start, unsigned trigger, unsigned fork_mode)
{
    uint64_t v[4] = {id, t_start, trigger, fork_mode};
    meta_varints(GS_REC_SCAN_BEGIN, v, 4);
}

void gs_emit_scan_block(uint64_t id, uint64_t addr, uint64_t size, uint32_t stack,
                        unsigned kind, unsigned cls, unsigned fn)
{
    uint64_t v[7] = {id, addr, size, stack, kind, cls, fn};
    meta_varints(GS_REC_SCAN_BLOCK, v, 7);
}

void gs_emit_scan_end(const struct gs_scan_end *s)
{
    uint64_t v[10 + 2 * GS_CLASS__N] = {s->id, s->t_start, s->t_stopped, s->t_marked, s->t_end,
                                        s->nstopped, s->bytes_scanned, s->visited,
                                        s->live_blocks, s->live_bytes};
    for (int c = 0; c < GS_CLASS__N; c++) {
        v[10 + 2 * c] = s->cls_blocks[c];
        v[11 + 2 * c] = s->cls_bytes[c];
    }
    meta_varints(GS_REC_SCAN_END, v, 10 + 2 * GS_CLASS__N);
}

/* ---- a caching allocator's snapshot ---- */

void gs_emit_pool_snapshot(uint64_t id, uint64_t t, unsigned why, uint64_t nseg, uint64_t nblk,
                           uint64_t nevents)
{
    uint64_t v[6] = {id, t, why, nseg, nblk, nevents};
    meta_varints(GS_REC_POOL_SNAPSHOT, v, 6);
}

void gs_emit_pool_segment(uint64_t id, uint64_t device, uint64_t addr, uint64_t size,
                          uint64_t stream, unsigned type)
{
    uint64_t v[6] = {id, device, addr, size, stream, type};
    meta_varints(GS_REC_POOL_SEGMENT, v, 6);
}

void gs_emit_pool_block(uint64_t id, uint64_t addr, uint64_t size, uint64_t requested,
                        unsigned state, uint32_t stack)
{
    uint64_t v[6] = {id, addr, size, requested, state, stack};
    meta_varints(GS_REC_POOL_BLOCK, v, 6);
}

void gs_emit_pool_event(uint64_t id, uint64_t t, uint64_t device, unsigned action,
                        uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack)
{
    uint64_t v[8] = {id, t, device, action, addr, size, stream, stack};
    meta_varints(GS_REC_POOL_EVENT, v, 8);
}
