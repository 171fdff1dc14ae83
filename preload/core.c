/*
 * The shim's core: what happens on each allocation event (core.h).
 *
 * Event order for one address (what the trace promises, see writer.c): a
 * FREE is recorded before the real free() runs, an ALLOC after the real
 * malloc() returns, both under the address's shard lock; so whatever thread
 * gets an address next, its ALLOC is recorded after our FREE. realloc holds
 * the old block's shard lock across the real call for the same reason.
 *
 * Each recorded event is counted, under its shard lock, in its thread's
 * struct (threads.c) or, for a thread without one, in the anon_* totals;
 * the exit's TRACE_END (gs_totals) then matches the records exactly.
 *
 * Nothing here calls above the events layer: what the scan triggers need
 * from the allocation path is a byte count and a request flag, both plain
 * atomics read by scan_trigger.c; the writer is woken for a request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "gcspy.h"
#include "core.h"
#include "emit.h"
#include "threads.h"

/* Events of a thread without its struct (after its TSD destructor ran: a
 * later key's destructor, a signal handler) carry thread 0; they are counted
 * here, so TRACE_END matches the records. */
static atomic_uint_fast64_t anon_allocs, anon_frees, anon_bytes;

atomic_int gs_scan_requested;
atomic_uint_fast64_t gs_bytes_since_scan;

/* GCSPY_SCAN_BYTES: once that many bytes were allocated since the last
 * scan, a scan is requested (unless one already is) and the writer woken. */
static void note_bytes(uint64_t n)
{
    int none = 0;
    if (atomic_fetch_add(&gs_bytes_since_scan, n) + n >= gs_opt.scan_bytes &&
        atomic_compare_exchange_strong(&gs_scan_requested, &none, GS_SCAN_TRIG_BYTES + 1))
        gs_writer_wake();
}

/* ---- events ---- */

/* The body of gs_on_alloc and gs_on_alloc_ex, inlined into each: the
 * malloc hook's call then goes straight to its own copy (one call and its
 * register saves less on every allocation). */
static inline __attribute__((always_inline)) void on_alloc(uint64_t addr, uint64_t size,
                                                           uint32_t stack, unsigned kind,
                                                           unsigned fn, unsigned device,
                                                           uint64_t stream, uint64_t dur_ns)
{
    struct gs_thread *th = gs_tls.th;
    struct gs_shard *sh = gs_shard_of(addr);
    struct gs_block b = {addr, size, stack, (uint8_t)kind, (uint8_t)fn, 0, 0};
    uint64_t t = gs_now();
    uint64_t ti = th ? th->index : 0;
    gs_spin_lock(&sh->s.lock);
    if (GS_UNLIKELY(!gs_tracing())) { /* the exit has taken its totals */
        gs_spin_unlock(&sh->s.lock);
        return;
    }
    /* Room first: reserve may let the lock go (backpressure), and the block
     * must not be in the table meanwhile, or a context teardown
     * (gs_drop_device_blocks) could record its FREE ahead of its ALLOC.
     * The table changes only with the record written, both under the lock. */
    uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
    if (GS_LIKELY(p) && GS_UNLIKELY(gs_table_insert(sh, &b))) {
        gs_spin_unlock(&sh->s.lock);
        gs_fail("out of memory for the block table", ENOMEM);
        return;
    }
    if (GS_LIKELY(p)) {
        struct gs_enc_state *st = &sh->s.cur->st;
        if (GS_LIKELY(kind == GS_MEM_HOST && fn == GS_FN_MALLOC))
            p = gs_emit_alloc(p, st, t, ti, addr, size, stack);
        else
            p = gs_emit_alloc_ex(p, st, t, ti, addr, size, stack, kind, fn, device, stream,
                                 dur_ns);
        gs_stream_commit(&sh->s, p);
        /* Counted when written, under the shard lock: once the exit has
         * passed every shard lock, every recorded event is counted. */
        if (th) {
            th->allocs++;
            th->bytes += size;
        } else {
            atomic_fetch_add_explicit(&anon_allocs, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&anon_bytes, size, memory_order_relaxed);
        }
    }
    gs_spin_unlock(&sh->s.lock);
    if (GS_UNLIKELY(gs_opt.scan_bytes))
        note_bytes(size);
}

void gs_on_alloc(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn)
{
    on_alloc(addr, size, stack, kind, fn, 0, 0, 0);
}

void gs_on_alloc_ex(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn,
                    unsigned device, uint64_t stream, uint64_t dur_ns)
{
    on_alloc(addr, size, stack, kind, fn, device, stream, dur_ns);
}

/* Removes addr's block and writes its FREE, both or neither: the table and
 * the trace must agree (TRACE_END's live counts come from the table). The
 * room is reserved first; reserve may let the lock go, so the block is
 * looked up after. Caller holds the shard lock. Returns 1 when done. */
static int take_and_record_free(struct gs_shard *sh, uint64_t addr, struct gs_block *out)
{
    struct gs_block *b;
    if (!gs_tracing() || !(b = gs_table_find(sh, addr)))
        return 0;
    struct gs_block *slots = sh->slots;
    uint64_t cap = sh->cap;
    uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
    if (!p)
        return 0;
    /* One lookup, not two: b still names addr's slot unless reserve let the
     * lock go (backpressure) and the table changed meanwhile. Same array
     * and capacity: b is still mapped, and reading it says whether it is
     * still addr's (keys are unique); else look again. */
    if (GS_UNLIKELY(sh->slots != slots || sh->cap != cap || b->addr != addr) &&
        !(b = gs_table_find(sh, addr)))
        return 0;
    gs_table_remove_at(sh, b, out);
    struct gs_enc_state *st = &sh->s.cur->st;
    if (GS_LIKELY(out->kind == GS_MEM_HOST))
        p = gs_emit_free(p, st, gs_now(), out->addr);
    else
        p = gs_emit_free_ex(p, st, gs_now(), gs_tls.th ? gs_tls.th->index : 0, out->addr,
                            out->kind, out->fn, 0);
    gs_stream_commit(&sh->s, p);
    /* Counted when written, so TRACE_END matches the records. */
    if (gs_tls.th)
        gs_tls.th->frees++;
    else
        atomic_fetch_add_explicit(&anon_frees, 1, memory_order_relaxed);
    return 1;
}

int gs_on_free_block(uint64_t addr, struct gs_block *out)
{
    if (GS_UNLIKELY(!gs_tls.th) && !gs_tls.exited)
        gs_thread_get(); /* a thread that only frees is still counted */
    struct gs_shard *sh = gs_shard_of(addr);
    gs_spin_lock(&sh->s.lock);
    int found = take_and_record_free(sh, addr, out);
    gs_spin_unlock(&sh->s.lock);
    return found;
}

int gs_on_free(uint64_t addr)
{
    struct gs_block b;
    return gs_on_free_block(addr, &b);
}

/* A CUDA context went away and the driver freed all of its memory. */
void gs_drop_device_blocks(int (*match)(uint64_t addr, void *arg), void *arg)
{
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        gs_spin_lock(&sh->s.lock);
        for (uint64_t j = 0; j < sh->cap; j++) {
            /* Removal shifts later entries into slot j: look at it again. */
            for (;;) {
                struct gs_block *b = &sh->slots[j], was;
                if (!b->addr || b->kind == GS_MEM_HOST || (match && !match(b->addr, arg)))
                    break;
                if (!take_and_record_free(sh, b->addr, &was))
                    break;
            }
        }
        gs_spin_unlock(&sh->s.lock);
    }
}

struct gs_shard *gs_on_realloc_begin(uint64_t old)
{
    struct gs_shard *sh = gs_shard_of(old);
    gs_spin_lock(&sh->s.lock);
    return sh;
}

void gs_on_realloc_end(struct gs_shard *sh, uint64_t old, uint64_t neu, uint64_t size,
                       uint32_t stack)
{
    if ((!neu && size) || !gs_tracing()) { /* failed (the old block is untouched), or stopped */
        gs_spin_unlock(&sh->s.lock);
        return;
    }
    if (neu == old) {
        struct gs_block *b = gs_table_find(sh, old);
        if (b) {
            /* Reserve first (it may let the lock go and the table move), and
             * change the table only with a record written, so TRACE_END's
             * live bytes match the records. */
            uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
            b = gs_table_find(sh, old);
            if (p && b) {
                sh->bytes += size - b->size;
                b->size = size;
                b->stack = stack;
                struct gs_thread *th = gs_tls.th;
                p = gs_emit_realloc(p, &sh->s.cur->st, gs_now(), th ? th->index : 0, old, size,
                                    stack);
                gs_stream_commit(&sh->s, p);
            }
        }
        gs_spin_unlock(&sh->s.lock);
        if (!b)
            gs_on_alloc(neu, size, stack, GS_MEM_HOST, GS_FN_REALLOC);
        return;
    }
    struct gs_block b;
    take_and_record_free(sh, old, &b);
    gs_spin_unlock(&sh->s.lock);
    if (neu)
        gs_on_alloc(neu, size, stack, GS_MEM_HOST, GS_FN_REALLOC);
}

/* ---- totals ---- */

void gs_totals(uint64_t *allocs, uint64_t *frees, uint64_t *bytes, uint64_t *live_blocks,
               uint64_t *live_bytes)
{
    gs_threads_totals(allocs, frees, bytes);
    *allocs += atomic_load(&anon_allocs);
    *frees += atomic_load(&anon_frees);
    *bytes += atomic_load(&anon_bytes);
    *live_blocks = *live_bytes = 0;
    for (int i = 0; i < GS_SHARDS; i++) {
        gs_spin_lock(&gs_shards[i].s.lock);
        *live_blocks += gs_shards[i].count;
        *live_bytes += gs_shards[i].bytes;
        gs_spin_unlock(&gs_shards[i].s.lock);
    }
}

/* The child's writer already runs: each shard is written under its lock. */
void gs_events_reemit(void)
{
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        gs_spin_lock(&sh->s.lock);
        for (uint64_t j = 0; j < sh->cap; j++) {
            const struct gs_block *b = &sh->slots[j];
            if (!b->addr)
                continue;
            uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
            if (!p)
                break;
            p = gs_emit_alloc_ex(p, &sh->s.cur->st, 0, 0, b->addr, b->size, b->stack, b->kind,
                                 GS_FN_INHERITED, 0, 0, 0);
            gs_stream_commit(&sh->s, p);
        }
        gs_spin_unlock(&sh->s.lock);
    }
}

void gs_events_atfork_child(void)
{
    atomic_store(&anon_allocs, 0);
    atomic_store(&anon_frees, 0);
    atomic_store(&anon_bytes, 0);
}

/* ---- the program's own markers ---- */

__attribute__((visibility("default"))) void gcspy_mark(const char *label)
{
    if (!gs_tracing())
        return;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    struct gs_thread *th = gs_thread_get();
    gs_emit_marker(th ? th->index : 0, GS_MARK_USER, label);
    gs_restore(saved);
}
