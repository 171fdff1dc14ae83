/*
 * The trace's promises, checked as the replay goes (validate.h). Each check
 * is one rule of docs/trace-format.md's "What a valid trace promises"; what
 * the format leaves open is not checked: time order between records of
 * different buffers, an allocation over a live block (the shim may have
 * missed the earlier block's free), events of a thread after its
 * THREAD_EXIT (the exit is a definition, written ahead of the thread's last
 * events). Which fields are thread ids, stack ids and blocks (address and
 * size) is records.def's check column: those checks are generated from it;
 * the rules about definitions and scans are written here.
 */
#include "validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcspy/names.h"
#include "gcspy/pp.h"
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
    const char *s = gs_rec_type_name(type);
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

/* ---- the field checks records.def asks for ---- */

/* Each check column's fields, as an expression of the record (x: its union
 * member): THREAD and STACK fields are checked one by one, the ADDR and SIZE
 * of a record together (one block). */
#define CK_THREAD(x, enc, m, key, print, en, check) CK_THREAD_##check(r->u.x.m)
#define CK_THREAD_THREAD(v_) need_thread(v, r, v_);
#define CK_THREAD__(v_)
#define CK_THREAD_STACK(v_)
#define CK_THREAD_ADDR(v_)
#define CK_THREAD_SIZE(v_)
#define CK_STACK(x, enc, m, key, print, en, check) CK_STACK_##check(r->u.x.m)
#define CK_STACK_STACK(v_) need_stack(v, r, v_);
#define CK_STACK__(v_)
#define CK_STACK_THREAD(v_)
#define CK_STACK_ADDR(v_)
#define CK_STACK_SIZE(v_)
#define CK_ADDR(x, enc, m, key, print, en, check) CK_ADDR_##check(r->u.x.m)
#define CK_ADDR_ADDR(v_) addr = v_; block = 1;
#define CK_ADDR__(v_)
#define CK_ADDR_THREAD(v_)
#define CK_ADDR_STACK(v_)
#define CK_ADDR_SIZE(v_)
#define CK_SIZE(x, enc, m, key, print, en, check) CK_SIZE_##check(r->u.x.m)
#define CK_SIZE_SIZE(v_) size = v_;
#define CK_SIZE__(v_)
#define CK_SIZE_THREAD(v_)
#define CK_SIZE_STACK(v_)
#define CK_SIZE_ADDR(v_)
/* The fast path's tests: what the checks above would find fine. */
#define OK_THREAD(x, enc, m, key, print, en, check) OK_THREAD_##check(r->u.x.m)
#define OK_THREAD_THREAD(v_) && thread_ok_fast(v, v_)
#define OK_THREAD__(v_)
#define OK_THREAD_STACK(v_)
#define OK_THREAD_ADDR(v_)
#define OK_THREAD_SIZE(v_)
#define OK_STACK(x, enc, m, key, print, en, check) OK_STACK_##check(r->u.x.m)
#define OK_STACK_STACK(v_) && (v_) <= v->max_stack
#define OK_STACK__(v_)
#define OK_STACK_THREAD(v_)
#define OK_STACK_ADDR(v_)
#define OK_STACK_SIZE(v_)

/* Thread 0 (an event of no known thread), or one below GS_TBITS that has
 * started: a bit test. Anything else takes the checks' path. */
static inline int thread_ok_fast(const struct gs_validate *v, uint64_t th)
{
    return !th || (th < GS_TBITS && ((v->tbits[th / 64] >> (th % 64)) & 1));
}

static inline int block_ok_fast(uint64_t addr, uint64_t size)
{
    return addr && size < 1ull << 63 && (!size || addr + (size - 1) >= addr);
}

/* fast_<name>(v, r): 1 when every field check of a record of that type
 * passes, for the fast path (straight-line tests, no switch). */
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...)                  \
    static inline int fast_##name(const struct gs_validate *v, const struct gs_record *r) \
    {                                                                                \
        uint64_t addr = 0, size = 0;                                                 \
        int block = 0;                                                               \
        (void)v, (void)r, (void)addr, (void)size;                                    \
        GS_PP_EACH(CK_ADDR, x, __VA_ARGS__)                                          \
        GS_PP_EACH(CK_SIZE, x, __VA_ARGS__)                                          \
        return 1 GS_PP_EACH(OK_THREAD, x, __VA_ARGS__) GS_PP_EACH(OK_STACK, x, __VA_ARGS__) \
            && (!block || block_ok_fast(addr, size));                                \
    }
#include "gcspy/records.def"
#undef GS_RECORD

/* The field checks of r, each problem counted: its threads, then its
 * stacks, then its block. Returns 0 when the block is impossible (r is not
 * to be applied), else 1. */
static int check_fields(struct gs_validate *v, const struct gs_record *r)
{
    uint64_t addr = 0, size = 0;
    int block = 0;
    switch (r->type) {
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...)                  \
    case GS_REC_##NAME:                                                              \
        GS_PP_EACH(CK_THREAD, x, __VA_ARGS__)                                        \
        GS_PP_EACH(CK_STACK, x, __VA_ARGS__)                                         \
        GS_PP_EACH(CK_ADDR, x, __VA_ARGS__)                                          \
        GS_PP_EACH(CK_SIZE, x, __VA_ARGS__)                                          \
        break;
#include "gcspy/records.def"
#undef GS_RECORD
    default:
        break;
    }
    return !block || block_ok(v, r, addr, size);
}

/* The hot records of a trace in order (most of any trace): the checks that
 * can fail, each a compare or a bit test. 1 when r passed them all; 0 sends
 * it down the general path, which says what is wrong. */
static int fast_path(struct gs_validate *v, const struct gs_record *r)
{
    if (!__builtin_expect(v->have_proc && !v->have_end, 1))
        return 0;
    switch (r->type) {
    case GS_REC_FREE: return fast_free(v, r);
    case GS_REC_FREE_EX: return fast_free_ex(v, r);
    case GS_REC_ALLOC: return fast_alloc(v, r);
    case GS_REC_ALLOC_EX: return fast_alloc_ex(v, r);
    default: return 0;
    }
}

/* Records outside the trace's bounds: after TRACE_END, before PROCESS_START
 * (one problem however many records precede it), a second PROCESS_START. */
static void check_order(struct gs_validate *v, const struct gs_record *r)
{
    char nb[16];
    if (v->have_end)
        gs_validate_problem(v, r, "%s record after TRACE_END", gs_rec_name(r->type, nb));
    if (!v->have_proc && r->type != GS_REC_PROCESS_START && !v->before_proc_noted) {
        v->before_proc_noted = 1;
        gs_validate_problem(v, r, "%s record before PROCESS_START", gs_rec_name(r->type, nb));
    }
    if (r->type == GS_REC_PROCESS_START) {
        if (v->have_proc)
            gs_validate_problem(v, r, "a second PROCESS_START");
        v->have_proc = 1;
    }
    if (r->type == GS_REC_TRACE_END)
        v->have_end = 1;
}

/* STACK ids come 1, 2, 3, ... each once, a parent before its children. */
static void check_stack(struct gs_validate *v, const struct gs_record *r)
{
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
}

/* Definitions: stacks, threads, modules, Python code. -1 out of memory. */
static int check_definition(struct gs_validate *v, const struct gs_record *r)
{
    switch (r->type) {
    case GS_REC_STACK:
        check_stack(v, r);
        break;
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
    case GS_REC_PYCODE:
        /* a Python frame names its code object in 31 bits (GS_IP_PYFRAME) */
        if (r->u.pycode.id >= 1ull << 31)
            gs_validate_problem(v, r, "PYCODE id %" PRIu64 " is too large for a Python frame to "
                                "name", r->u.pycode.id);
        break;
    default:
        break;
    }
    return 0;
}

/* A scan's records nest: SCAN_BEGIN, its SCAN_BLOCKs, SCAN_END. Returns
 * whether records.def's field checks apply to r (a block of no scan, or of
 * no class, is not checked further). */
static int check_scan(struct gs_validate *v, const struct gs_record *r)
{
    switch (r->type) {
    case GS_REC_SCAN_BEGIN:
        if (v->scan_open)
            gs_validate_problem(v, r, "SCAN_BEGIN of scan %" PRIu64 " while scan %" PRIu64
                                " is open", r->u.scan_begin.scan_id, v->scan_id);
        v->scan_open = 1;
        v->scan_id = r->u.scan_begin.scan_id;
        return 1;
    case GS_REC_SCAN_BLOCK:
        if (!v->scan_open || r->u.scan_block.scan_id != v->scan_id) {
            gs_validate_problem(v, r, "SCAN_BLOCK of scan %" PRIu64 " outside that scan",
                                r->u.scan_block.scan_id);
            return 0;
        }
        if (r->u.scan_block.cls >= GS_CLASS__N) {
            gs_validate_problem(v, r, "SCAN_BLOCK of 0x%" PRIx64 " with class %" PRIu64
                                " (classes are 0 to 3)", r->u.scan_block.addr, r->u.scan_block.cls);
            return 0;
        }
        return 1;
    case GS_REC_SCAN_END:
        if (!v->scan_open || r->u.scan_end.scan_id != v->scan_id)
            gs_validate_problem(v, r, "SCAN_END of scan %" PRIu64 " outside that scan",
                                r->u.scan_end.scan_id);
        v->scan_open = 0;
        return 1;
    default:
        return 1;
    }
}

int gs_validate_pre(struct gs_validate *v, const struct gs_model *m, const struct gs_record *r)
{
    v->unmatched_before = m->unmatched_frees;
    if (r->type == GS_REC_TIMEBASE || fast_path(v, r))
        return 1;
    check_order(v, r);
    if (check_definition(v, r))
        return -1;
    int fields = check_scan(v, r); /* whether records.def's field checks apply */
    int apply = !fields || check_fields(v, r);
    if (apply && r->type == GS_REC_REALLOC &&
        !gs_model_live_find(m, r->u.alloc.addr, GS_DOM_HOST))
        gs_validate_problem(v, r, "REALLOC of 0x%" PRIx64 " that is not live", r->u.alloc.addr);
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
