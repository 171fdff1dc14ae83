/*
 * Scans (model_int.h): a scan's SCAN_BLOCK records fill the map being read
 * (m->cur); at its SCAN_END the map becomes the last complete scan's
 * (m->last) and the previous one is cleared for the next. The maps use the
 * live set's scheme (linear probing), keyed by (address, memory category),
 * with a key of their own for caching-allocator blocks, which may start at
 * their segment's address.
 *
 * What stays true: m->last holds exactly the blocks of the last complete
 * scan; a block unreachable in two scans in a row keeps the index of the
 * first one (first_scan), so a report can say when it was lost.
 */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static inline int smap_key(const struct gs_sblock *b)
{
    return b->torch ? GS_SCAN_KEY_TORCH : gs_memcat_of(b->kind);
}

static int smap_init(struct gs_smap *h, size_t cap)
{
    h->slot = calloc(cap, sizeof *h->slot);
    h->cap = cap;
    h->n = 0;
    return h->slot ? 0 : -1;
}

static size_t smap_probe(const struct gs_smap *h, uint64_t addr, int mc)
{
    size_t mask = h->cap - 1;
    size_t i = gs_hash_addr(addr) & mask;
    for (;;) {
        const struct gs_sblock *e = &h->slot[i];
        if (!e->used || (e->addr == addr && smap_key(e) == mc))
            return i;
        i = (i + 1) & mask;
    }
}

static int smap_put(struct gs_smap *h, const struct gs_sblock *b)
{
    if ((h->n + 1) * 4 > h->cap * 3) {
        struct gs_smap n;
        if (smap_init(&n, h->cap * 2))
            return -1;
        for (size_t i = 0; i < h->cap; i++) {
            if (h->slot[i].used) {
                size_t j = smap_probe(&n, h->slot[i].addr, smap_key(&h->slot[i]));
                n.slot[j] = h->slot[i];
            }
        }
        n.n = h->n;
        free(h->slot);
        *h = n;
    }
    size_t i = smap_probe(h, b->addr, smap_key(b));
    if (!h->slot[i].used)
        h->n++;
    h->slot[i] = *b;
    h->slot[i].used = 1;
    return 0;
}

static const struct gs_sblock *smap_get(const struct gs_smap *h, uint64_t addr, int mc)
{
    if (!h->slot)
        return NULL;
    size_t i = smap_probe(h, addr, mc);
    return h->slot[i].used ? &h->slot[i] : NULL;
}
static void scan_reset_cur(struct gs_model *m)
{
    if (m->cur.slot) {
        memset(m->cur.slot, 0, m->cur.cap * sizeof *m->cur.slot);
        m->cur.n = 0;
    }
}

int gs_on_scan_begin(struct gs_model *m, const struct gs_record *r)
{
    if (m->in_scan)
        m->incomplete_scans++;
    if (!m->cur.slot && smap_init(&m->cur, 1024))
        return -1;
    scan_reset_cur(m);
    memset(&m->cur_scan, 0, sizeof m->cur_scan);
    m->cur_scan.id = r->u.scan_begin.scan_id;
    m->cur_scan.trigger = r->u.scan_begin.trigger;
    m->cur_scan.mode = r->u.scan_begin.mode;
    m->cur_scan.t_begin = r->t;
    memcpy(m->cur_scan.marker_before, m->last_label, GS_LABEL_MAX);
    m->in_scan = 1;
    return 0;
}

int gs_on_scan_block(struct gs_model *m, const struct gs_record *r)
{
    if (!m->in_scan || r->u.scan_block.scan_id != m->cur_scan.id ||
        r->u.scan_block.cls >= GS_CLASS__N || !r->u.scan_block.addr) {
        m->bad_records++;
        return 0;
    }
    struct gs_sblock b;
    memset(&b, 0, sizeof b);
    b.addr = r->u.scan_block.addr;
    b.size = r->u.scan_block.size;
    b.stack = r->u.scan_block.stack < GS_MAX_ID ? (uint32_t)r->u.scan_block.stack : 0;
    b.kind = (uint8_t)(r->u.scan_block.kind < GS_MEM__N ? r->u.scan_block.kind : GS_MEM_HOST);
    b.cls = (uint8_t)r->u.scan_block.cls;
    b.torch = r->u.scan_block.fn == GS_FN_TORCH;
    return smap_put(&m->cur, &b);
}

int gs_on_scan_end(struct gs_model *m, const struct gs_record *r)
{
    if (!m->in_scan || r->u.scan_end.scan_id != m->cur_scan.id) {
        m->bad_records++;
        return 0;
    }
    struct gs_scan *s = &m->cur_scan;
    s->t_start = r->u.scan_end.t_start;
    s->t_stopped = r->u.scan_end.t_stopped;
    s->t_marked = r->u.scan_end.t_marked;
    s->t_end = r->u.scan_end.t_end;
    s->threads = r->u.scan_end.threads;
    s->bytes_scanned = r->u.scan_end.bytes_scanned;
    s->blocks_visited = r->u.scan_end.blocks_visited;
    s->live_blocks = r->u.scan_end.live_blocks;
    s->live_bytes = r->u.scan_end.live_bytes;
    s->unreadable_bytes = r->u.scan_end.unreadable;
    memcpy(s->cls_blocks, r->u.scan_end.cls_blocks, sizeof s->cls_blocks);
    memcpy(s->cls_bytes, r->u.scan_end.cls_bytes, sizeof s->cls_bytes);
    /* held by the CUDA runtime: trailing fields since 2.1 (0 before) */
    s->cls_blocks[GS_CLASS_RUNTIME] = r->u.scan_end.runtime_blocks;
    s->cls_bytes[GS_CLASS_RUNTIME] = r->u.scan_end.runtime_bytes;
    s->steps_before = m->steps_at_last_scan;
    s->steps_at = m->nsteps;
    s->user_markers = m->int_users;
    memcpy(s->first_marker, m->int_first, GS_LABEL_MAX);
    memcpy(s->last_marker, m->int_last, GS_LABEL_MAX);

    uint32_t idx = m->nscans;
    /* a block unreachable in the previous scan too (same size and stack)
     * keeps the interval where it first became unreachable */
    for (size_t i = 0; i < m->cur.cap; i++) {
        struct gs_sblock *b = &m->cur.slot[i];
        if (!b->used || b->cls >= GS_CLASS_REACHABLE)
            continue;
        const struct gs_sblock *o = smap_get(&m->last, b->addr, smap_key(b));
        if (o && o->cls < GS_CLASS_REACHABLE && o->size == b->size && o->stack == b->stack) {
            b->first_scan = o->first_scan;
        } else {
            b->first_scan = idx;
            s->new_blocks++;
            s->new_bytes += b->size;
        }
    }
    if (GS_GROW(m->scans, m->scans_cap, (size_t)m->nscans + 1))
        return -1;
    m->scans[m->nscans++] = *s;

    /* the program is stopped from t_start (stopping begins) to t_end (the
     * world restarted); in fork mode the marking after t_end runs in a child
     * and is no pause */
    uint64_t t0 = s->t_start, t1 = s->t_end;
    if (gs_pause_add(&m->scan_pauses, t0, t1, GS_PAUSE_SCAN, s->id, s->threads))
        return -1;

    struct gs_smap tmp = m->last;
    m->last = m->cur;
    m->cur = tmp;
    scan_reset_cur(m);
    m->in_scan = 0;
    m->int_users = 0;
    m->int_first[0] = m->int_last[0] = 0;
    m->steps_at_last_scan = m->nsteps;
    return 0;
}

const struct gs_sblock *gs_model_scan_find(const struct gs_model *m, uint64_t addr, int mc)
{
    return smap_get(&m->last, addr, mc);
}
