/*
 * The leak scan's classifier, run right after marking (mark.c), with the
 * world still stopped: every block still unmarked is lost. A lost block is
 * INDIRECT when another lost block outside its own cycle reaches it; of
 * each group of lost blocks that nothing else lost reaches (a tree's root,
 * a whole cycle) one block is DEFINITE and the rest INDIRECT: a leaked tree
 * is 1 definite + N indirect, a leaked cycle 1 definite + the rest indirect,
 * as valgrind's memcheck reports them.
 *
 * Two passes make the counts independent of the order in which leaders are
 * taken:
 *  1. Taking lost blocks in order, each one not yet claimed leads a
 *     clique: everything reachable from it that is still unmarked becomes
 *     INDIRECT, and a former leader it reaches joins it (INDIRECT too). A
 *     leader can then still be reached from a LATER leader only, through a
 *     block an earlier clique had claimed (a cycle pointing into another
 *     cycle whose leader was taken first): never from an earlier one, since
 *     the earliest drain that meets the path would have claimed it.
 *  2. So the leaders are walked again in reverse order, each through
 *     the lost blocks no second-pass walk has seen yet: a leader met on the
 *     way is reached from outside its cycle and becomes INDIRECT. A walk may
 *     stop at blocks an earlier (later-leader) walk saw: what they reach was
 *     seen then, and can include no leader still standing. Each lost block
 *     is read at most once per pass.
 * Leaders are taken in an order of what reports show of a block (its
 * allocation stack, size, kind, fn: before()), not of the table's slots, so
 * which block of a leaked cycle is the definite one does not depend on
 * addresses either (memcheck's follows addresses).
 *
 * Then every block's class is counted, the reported ones (all but the
 * reachable, unless the exit scan reports those too) are listed in the
 * scan's results, and the marks are reset (the prepass resets them too:
 * when nothing is lost or possible, the table is not walked here at all). In PyTorch-aware mode the
 * allocator's segments (M_POOL) are reserved memory: never counted, never
 * results; the snapshot's active blocks are classified and reported like
 * other blocks (kind device, fn torch, the snapshot's stack). CUDA blocks
 * only the CUDA runtime's own memory reaches (M_HELD, mark.c) are "held by
 * the CUDA runtime": never leaders, never indirect, never new.
 */
#include "mark.h"

static void walk_lost(struct gs_scan *s, struct gs_block *b, uint8_t mode)
{
    if (b->kind == GS_MEM_DEVICE || b->kind == GS_MEM_VMM || gs_is_data(s, b) ||
        (b->kind == GS_MEM_MANAGED && !s->scan_managed))
        return; /* leaves */
    s->visited++;
    s->cur_weak = gs_is_weak(s, b);
    s->cur_cuda = gs_is_cuda(s, b);
    gs_mark_block(s, b, mode, b);
    gs_mark_drain(s, mode, b);
}

/* 5b. leaders reached from a later clique (the second pass, above) */
static void demote_reached_leaders(struct gs_scan *s)
{
    for (int i = GS_SHARDS; i-- > 0;) {
        struct gs_shard *sh = &gs_shards[i];
        for (uint64_t j = sh->cap; j-- > 0;) {
            struct gs_block *b = &sh->slots[j];
            if (b->addr && b->mark == M_LEAD)
                walk_lost(s, b, M_IND2);
        }
    }
}

/* The order leaders are taken in: by allocation stack, size, kind and fn
 * (what a report shows of a block), never by address, so that the definite
 * block of a leaked cycle is always its first in this order; blocks alike
 * in all four are alike in every report. */
static int before(const struct gs_block *a, const struct gs_block *b)
{
    if (a->stack != b->stack)
        return a->stack < b->stack;
    if (a->size != b->size)
        return a->size < b->size;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    return a->fn < b->fn;
}

/* Heap sort (no allocation, no recursion: the world is stopped). */
static void sift(struct gs_block **v, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && before(v[c], v[c + 1]))
            c++;
        if (!before(v[i], v[c]))
            return;
        struct gs_block *t = v[i];
        v[i] = v[c];
        v[c] = t;
        i = c;
    }
}

static void sort_blocks(struct gs_block **v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(v, i, n);
    for (size_t k = n; k-- > 1;) {
        struct gs_block *t = v[0];
        v[0] = v[k];
        v[k] = t;
        sift(v, 0, k);
    }
}

/* 5. cliques of lost blocks, leaders taken in before()'s order; in table
 * order when there is no memory for the list (then which block of a cycle
 * is definite follows the table, how many are does not). */
static void cliques(struct gs_scan *s)
{
    size_t n = 0;
    for (int i = 0; i < GS_SHARDS; i++)
        for (uint64_t j = 0; j < gs_shards[i].cap; j++)
            n += gs_shards[i].slots[j].addr && gs_shards[i].slots[j].mark == M_NONE;
    struct gs_block **v = n ? gs_pages_alloc(n * sizeof *v) : NULL;
    if (v) {
        size_t k = 0;
        for (int i = 0; i < GS_SHARDS; i++)
            for (uint64_t j = 0; j < gs_shards[i].cap && k < n; j++)
                if (gs_shards[i].slots[j].addr && gs_shards[i].slots[j].mark == M_NONE)
                    v[k++] = &gs_shards[i].slots[j];
        sort_blocks(v, k);
        for (size_t a = 0; a < k; a++)
            if (v[a]->mark == M_NONE) {
                v[a]->mark = M_LEAD;
                walk_lost(s, v[a], M_IND);
            }
        for (size_t a = k; a-- > 0;) /* the second pass, in reverse */
            if (v[a]->mark == M_LEAD)
                walk_lost(s, v[a], M_IND2);
        gs_pages_free(v, n * sizeof *v);
        return;
    }
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        for (uint64_t j = 0; j < sh->cap; j++) {
            struct gs_block *b = &sh->slots[j];
            if (!b->addr || b->mark != M_NONE)
                continue;
            b->mark = M_LEAD;
            walk_lost(s, b, M_IND);
        }
    }
    demote_reached_leaders(s);
}

/* A reached managed block left unread (GCSPY_SCAN_MANAGED=0) may hold the
 * only pointer to any lost block: lost is then at most possible, never
 * definite. */
static int class_in(const struct gs_scan *s, int cls)
{
    return s->managed_unread && (cls == GS_CLASS_DEFINITE || cls == GS_CLASS_INDIRECT)
               ? GS_CLASS_POSSIBLE
               : cls;
}

static int class_of(uint8_t mark)
{
    return mark == M_REACH ? GS_CLASS_REACHABLE
         : mark == M_POSS  ? GS_CLASS_POSSIBLE
         : mark == M_IND || mark == M_IND2 ? GS_CLASS_INDIRECT
         : mark == M_HELD  ? GS_CLASS_RUNTIME
                           : GS_CLASS_DEFINITE;
}

/* Counts a block in its class, and lists it when that class is reported. */
static void count(struct gs_scan *s, int cls, struct gs_scan_result r)
{
    s->cls_blocks[cls]++;
    s->cls_bytes[cls] += r.size;
    if (r.fresh) {
        s->new_blocks[cls]++;
        s->new_bytes[cls] += r.size;
    }
    if (cls == GS_CLASS_REACHABLE && !s->with_reachable)
        return;
    if (s->nres < s->res_cap)
        s->res[s->nres++] = r;
}

/* 6. collect and reset */
static void collect_table(struct gs_scan *s)
{
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        for (uint64_t j = 0; j < sh->cap; j++) {
            struct gs_block *b = &sh->slots[j];
            if (!b->addr)
                continue;
            if (b->mark == M_POOL) { /* a segment: reserved, its blocks count */
                b->mark = M_NONE;
                continue;
            }
            int cls = class_in(s, class_of(b->mark));
            b->mark = M_NONE;
            uint8_t fresh = cls < GS_CLASS_REACHABLE && !(b->flags & GS_BLOCK_LOST_SEEN);
            count(s, cls, (struct gs_scan_result){b->addr, b->size, b->stack, b->kind,
                                                  (uint8_t)cls, b->fn, fresh});
        }
    }
}

/* the caching allocator's active blocks; pending-free ones are being
 * freed (their stream has not caught up): never results */
static void collect_pool(struct gs_scan *s)
{
    const struct gs_pool_view *pool = s->pool;
    for (size_t i = 0; pool && i < pool->nblk; i++) {
        struct gs_pool_blk *pb = &pool->blk[i];
        int cls = class_in(s, class_of(pb->mark));
        pb->mark = M_NONE;
        if (pb->state != GS_PBLK_ACTIVE)
            continue;
        count(s, cls, (struct gs_scan_result){pb->addr, pb->size, pb->stack, GS_MEM_DEVICE,
                                              (uint8_t)cls, GS_FN_TORCH, 0});
    }
}

void gs_classify(struct gs_scan *s)
{
    uint64_t lost = s->live_blocks - s->pool_blocks - s->reach_blocks - s->poss_blocks -
                    s->held_blocks;
    if (lost)
        cliques(s);
    if (lost || s->poss_blocks || s->held_blocks || s->with_reachable) {
        collect_table(s);
    } else {
        /* Every block reachable and none reported: the marker counted them,
         * and the next scan's prepass resets the marks, so the table is not
         * read again (one pass over it in all for a clean heap). */
        s->cls_blocks[GS_CLASS_REACHABLE] = s->reach_blocks;
        s->cls_bytes[GS_CLASS_REACHABLE] = s->reach_bytes;
    }
    collect_pool(s);
}
