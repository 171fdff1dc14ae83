/*
 * The trace's promises, checked as the replay goes (validate.h). Each check
 * is one rule of docs/trace-format.md's "What a valid trace promises"; what
 * the format leaves open is not checked: time order between records of
 * different buffers, an allocation over a live block (the shim may have
 * missed the earlier block's free), events of a thread after its
 * THREAD_EXIT (the exit is a definition, written ahead of the thread's last
 * events).
 */
#include "validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* ---- a set of ids ---- */

static size_t idset_probe(const struct gs_idset *s, uint64_t key)
{
    size_t mask = s->cap - 1, i = gs_hash_addr(key + 1) & mask;
    while (s->slot[i] && s->slot[i] != key + 1)
        i = (i + 1) & mask;
    return i;
}

static int idset_has(const struct gs_idset *s, uint64_t key)
{
    return s->n && s->slot[idset_probe(s, key)] != 0;
}

static int idset_add(struct gs_idset *s, uint64_t key)
{
    if ((s->n + 1) * 2 > s->cap) {
        struct gs_idset n = { calloc(s->cap ? s->cap * 2 : 64, sizeof *n.slot),
                              s->cap ? s->cap * 2 : 64, s->n };
        if (!n.slot)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                n.slot[idset_probe(&n, s->slot[i] - 1)] = s->slot[i];
        free(s->slot);
        *s = n;
    }
    size_t i = idset_probe(s, key);
    if (!s->slot[i]) {
        s->slot[i] = key + 1;
        s->n++;
    }
    return 0;
}

static void idset_del(struct gs_idset *s, uint64_t key)
{
    if (!s->n)
        return;
    size_t mask = s->cap - 1, i = idset_probe(s, key);
    if (!s->slot[i])
        return;
    /* backward-shift deletion, as the model's live set does */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (!s->slot[j])
            break;
        size_t home = gs_hash_addr(s->slot[j]) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i] = 0;
    s->n--;
}

/* ---- problems ---- */

const char *gs_rec_name(uint8_t type, char *buf)
{
    static const char *const hot[] = {
        [GS_REC_TIMEBASE] = "TIMEBASE", [GS_REC_ALLOC] = "ALLOC", [GS_REC_FREE] = "FREE",
        [GS_REC_REALLOC] = "REALLOC", [GS_REC_ALLOC_EX] = "ALLOC_EX", [GS_REC_STACK] = "STACK",
        [GS_REC_FREE_EX] = "FREE_EX",
    };
    static const char *const lengthed[] = {
        "PROCESS_START", "PROCESS_EXIT", "MODULE", "MODULE_UNLOAD", "THREAD_START",
        "THREAD_EXIT", "SAMPLE", "MARKER", "PAUSE", "EXEC", "STOPPED", "SCAN_BEGIN",
        "SCAN_BLOCK", "SCAN_END", "PYCODE", "TRACE_END", "DEVICE_SAMPLE", "POOL_SNAPSHOT",
        "POOL_SEGMENT", "POOL_BLOCK", "POOL_EVENT",
    };
    const char *s = NULL;
    if (type < sizeof hot / sizeof *hot)
        s = hot[type];
    else if (type >= GS_REC_LENGTHED && type - GS_REC_LENGTHED < (int)(sizeof lengthed / sizeof *lengthed))
        s = lengthed[type - GS_REC_LENGTHED];
    if (s)
        return s;
    snprintf(buf, 16, "type 0x%02x", type);
    return buf;
}

void gs_validate_problem(struct gs_validate *v, const struct gs_record *r, const char *fmt, ...)
{
    if (v->problems++)
        return;
    size_t n = 0;
    if (r)
        n = (size_t)snprintf(v->first, sizeof v->first,
                             "offset %" PRIu64 ": chunk %" PRIu32 ", record at payload offset %"
                             PRIu64 ": ", r->file_offset, r->chunk, r->payload_offset);
    if (n >= sizeof v->first)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->first + n, sizeof v->first - n, fmt, ap);
    va_end(ap);
}

void gs_validate_init(struct gs_validate *v)
{
    memset(v, 0, sizeof *v);
}

void gs_validate_free(struct gs_validate *v)
{
    free(v->threads.slot);
    free(v->modules.slot);
    memset(v, 0, sizeof *v);
}

/* ---- the checks ---- */

static int thread_started(const struct gs_validate *v, uint64_t t)
{
    if (t < GS_TBITS)
        return (v->tbits[t / 64] >> (t % 64)) & 1;
    return idset_has(&v->threads, t);
}

static int thread_start(struct gs_validate *v, uint64_t t)
{
    if (t < GS_TBITS) {
        v->tbits[t / 64] |= 1ull << (t % 64);
        return 0;
    }
    return idset_add(&v->threads, t);
}

static void need_thread(struct gs_validate *v, const struct gs_record *r, uint64_t thread)
{
    char nb[16];
    /* thread 0: an event of no known thread (one whose thread state is gone) */
    if (thread && !thread_started(v, thread))
        gs_validate_problem(v, r, "%s by thread %" PRIu64 ", which has no THREAD_START before it",
                            gs_rec_name(r->type, nb), thread);
}

static void need_stack(struct gs_validate *v, const struct gs_record *r, uint64_t stack)
{
    char nb[16];
    if (stack > v->max_stack)
        gs_validate_problem(v, r, "%s names stack %" PRIu64 ", which no STACK record before it "
                            "defines", gs_rec_name(r->type, nb), stack);
}

/* A block [addr, addr + size) must be possible: somewhere, and within the
 * 64-bit address space. Returns 0 (with the problem counted) when not. */
static int block_ok(struct gs_validate *v, const struct gs_record *r, uint64_t addr, uint64_t size)
{
    char nb[16];
    const char *what = gs_rec_name(r->type, nb);
    if (!addr) {
        gs_validate_problem(v, r, "%s of address 0", what);
        return 0;
    }
    if (size >= 1ull << 63) {
        gs_validate_problem(v, r, "%s of 0x%" PRIx64 " with impossible size %" PRIu64
                            " (2^63 or more)", what, addr, size);
        return 0;
    }
    if (size && addr + (size - 1) < addr) {
        gs_validate_problem(v, r, "%s of 0x%" PRIx64 " with size %" PRIu64 " runs past the end "
                            "of the address space", what, addr, size);
        return 0;
    }
    return 1;
}

int gs_validate_pre(struct gs_validate *v, const struct gs_model *m, const struct gs_record *r)
{
    char nb[16];
    int apply = 1;
    v->unmatched_before = m->unmatched_frees;
    if (r->type == GS_REC_TIMEBASE)
        return 1;
    /* The hot records of a trace in order (most of any trace): the checks
     * that can fail, each a compare or a bit test; anything odd takes the
     * general path below, which says what is wrong. */
    if (__builtin_expect(v->have_proc && !v->have_end, 1)) {
        uint64_t th;
        switch (r->type) {
        case GS_REC_FREE:
            return 1;
        case GS_REC_FREE_EX:
            th = r->u.free.thread;
            if (!th || (th < GS_TBITS && ((v->tbits[th / 64] >> (th % 64)) & 1)))
                return 1;
            break;
        case GS_REC_ALLOC:
        case GS_REC_ALLOC_EX:
            th = r->u.alloc.thread;
            if ((!th || (th < GS_TBITS && ((v->tbits[th / 64] >> (th % 64)) & 1))) &&
                r->u.alloc.stack <= v->max_stack && r->u.alloc.addr &&
                r->u.alloc.size < 1ull << 63 &&
                (!r->u.alloc.size || r->u.alloc.addr + (r->u.alloc.size - 1) >= r->u.alloc.addr))
                return 1;
            break;
        default:
            break;
        }
    }
    if (v->have_end)
        gs_validate_problem(v, r, "%s record after TRACE_END", gs_rec_name(r->type, nb));
    if (!v->have_proc && r->type != GS_REC_PROCESS_START && !v->before_proc_noted) {
        /* one problem however many records precede it */
        v->before_proc_noted = 1;
        gs_validate_problem(v, r, "%s record before PROCESS_START", gs_rec_name(r->type, nb));
    }
    switch (r->type) {
    case GS_REC_PROCESS_START:
        if (v->have_proc)
            gs_validate_problem(v, r, "a second PROCESS_START");
        v->have_proc = 1;
        break;
    case GS_REC_ALLOC:
    case GS_REC_ALLOC_EX:
    case GS_REC_REALLOC:
        need_thread(v, r, r->u.alloc.thread);
        need_stack(v, r, r->u.alloc.stack);
        apply = block_ok(v, r, r->u.alloc.addr, r->u.alloc.size);
        if (apply && r->type == GS_REC_REALLOC &&
            !gs_model_live_find(m, r->u.alloc.addr, GS_DOM_HOST))
            gs_validate_problem(v, r, "REALLOC of 0x%" PRIx64 " that is not live",
                                r->u.alloc.addr);
        break;
    case GS_REC_FREE_EX:
        need_thread(v, r, r->u.free.thread);
        break;
    case GS_REC_STACK: {
        uint64_t id = r->u.stack.id, parent = r->u.stack.parent;
        if (!id)
            gs_validate_problem(v, r, "STACK id 0 (ids start at 1)");
        else if (id <= v->max_stack)
            gs_validate_problem(v, r, "STACK %" PRIu64 " defined again", id);
        else if (id != v->max_stack + 1)
            gs_validate_problem(v, r, "STACK %" PRIu64 " out of sequence (the next id is %" PRIu64
                                ")", id, v->max_stack + 1);
        else {
            if (parent > v->max_stack)
                gs_validate_problem(v, r, "STACK %" PRIu64 " names parent %" PRIu64
                                    ", which is not defined before it", id, parent);
            v->max_stack = id;
        }
        break;
    }
    case GS_REC_THREAD_START:
        if (!r->u.thread.index)
            gs_validate_problem(v, r, "THREAD_START of thread 0 (0 means no thread)");
        else if (thread_started(v, r->u.thread.index))
            gs_validate_problem(v, r, "THREAD_START of thread %" PRIu64 ", started before",
                                r->u.thread.index);
        else if (thread_start(v, r->u.thread.index))
            return -1;
        break;
    case GS_REC_THREAD_EXIT:
        if (!thread_started(v, r->u.thread.index))
            gs_validate_problem(v, r, "THREAD_EXIT of thread %" PRIu64 ", which never started",
                                r->u.thread.index);
        break;
    case GS_REC_MODULE:
        if (idset_add(&v->modules, r->u.module.id))
            return -1;
        break;
    case GS_REC_MODULE_UNLOAD:
        if (!idset_has(&v->modules, r->u.unload.id))
            gs_validate_problem(v, r, "MODULE_UNLOAD of module %" PRIu64 ", which is not loaded",
                                r->u.unload.id);
        idset_del(&v->modules, r->u.unload.id);
        break;
    case GS_REC_MARKER:
        need_thread(v, r, r->u.marker.thread);
        break;
    case GS_REC_PAUSE:
        need_thread(v, r, r->u.pause.thread);
        break;
    case GS_REC_SCAN_BEGIN:
        if (v->scan_open)
            gs_validate_problem(v, r, "SCAN_BEGIN of scan %" PRIu64 " while scan %" PRIu64
                                " is open", r->u.scan_begin.scan_id, v->scan_id);
        v->scan_open = 1;
        v->scan_id = r->u.scan_begin.scan_id;
        break;
    case GS_REC_SCAN_BLOCK:
        if (!v->scan_open || r->u.scan_block.scan_id != v->scan_id) {
            gs_validate_problem(v, r, "SCAN_BLOCK of scan %" PRIu64 " outside that scan",
                                r->u.scan_block.scan_id);
        } else if (r->u.scan_block.cls >= GS_CLASS__N) {
            gs_validate_problem(v, r, "SCAN_BLOCK of 0x%" PRIx64 " with class %" PRIu64
                                " (classes are 0 to 3)", r->u.scan_block.addr, r->u.scan_block.cls);
        } else {
            need_stack(v, r, r->u.scan_block.stack);
            apply = block_ok(v, r, r->u.scan_block.addr, r->u.scan_block.size);
        }
        break;
    case GS_REC_SCAN_END:
        if (!v->scan_open || r->u.scan_end.scan_id != v->scan_id)
            gs_validate_problem(v, r, "SCAN_END of scan %" PRIu64 " outside that scan",
                                r->u.scan_end.scan_id);
        v->scan_open = 0;
        break;
    case GS_REC_PYCODE:
        /* a Python frame names its code object in 31 bits (GS_IP_PYFRAME) */
        if (r->u.pycode.id >= 1ull << 31)
            gs_validate_problem(v, r, "PYCODE id %" PRIu64 " is too large for a Python frame to "
                                "name", r->u.pycode.id);
        break;
    case GS_REC_TRACE_END:
        v->have_end = 1;
        break;
    default:
        break;
    }
    return apply;
}

void gs_validate_post(struct gs_validate *v, const struct gs_model *m, const struct gs_record *r)
{
    char nb[16];
    if ((r->type == GS_REC_FREE || r->type == GS_REC_FREE_EX) &&
        m->unmatched_frees > v->unmatched_before)
        gs_validate_problem(v, r, "%s of 0x%" PRIx64 " that is not live",
                            gs_rec_name(r->type, nb), r->u.free.addr);
}
