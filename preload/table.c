/*
 * The live-block table: every tracked block (address, size, stack, kind),
 * sharded so that the hot path never takes a global lock.
 *
 * A block's shard is chosen by its 64 KiB region (gs_shard_of). Each shard is
 * an open-addressing hash table with linear probing and backward-shift
 * deletion (no tombstones, so long-running churn never degrades it), guarded
 * by the shard's spinlock, which also guards the shard's event buffer: the
 * ALLOC and FREE records of one address are therefore written in the order
 * the events happened, whatever thread did them.
 *
 * The scanner reads the tables while the world is stopped, without locks. It
 * may find one shard mid-update; what must stay true for that to be safe: a
 * table is grown by building the new slot array completely before publishing
 * it (one pointer store) and the old array is unmapped only after that.
 */
#include <string.h>
#include <sys/mman.h>

#include "mem.h"
#include "table.h"

struct gs_shard gs_shards[GS_SHARDS];

#define GS_TABLE_INIT_CAP 256u /* one slot window (table.h): the least a table may be */

#define slot_of gs_slot_of

int gs_table_init(void)
{
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        sh->slots = gs_pages_alloc(GS_TABLE_INIT_CAP * sizeof(struct gs_block));
        if (!sh->slots)
            return -1;
        sh->cap = GS_TABLE_INIT_CAP;
        sh->count = sh->bytes = 0;
    }
    return 0;
}

/* Faults in, in as few calls as it can, the pages of ns (ncap slots) that
 * the rehash of sh's blocks will write first: the page of each block's home
 * slot. A block's window (table.h) is chosen by the page it lies on, so a
 * shard whose blocks lie on fewer pages than the new table has windows
 * leaves whole windows empty, and faulting in every page of the array cost
 * memory no block uses (rel_load's 1 M live blocks: 16 MiB, 18 bytes a
 * block). A slot a probe moves to another page faults there as usual. Best
 * effort: without memory for the page map, plain faults. */
static void prefault_homes(const struct gs_shard *sh, struct gs_block *ns, uint64_t ncap)
{
    const size_t page = 4096;
    size_t bytes = ncap * sizeof *ns, npages = (bytes + page - 1) / page;
    size_t mapbytes = (npages + 63) / 64 * sizeof(uint64_t);
    uint64_t *map = gs_pages_alloc(mapbytes), mask = ncap - 1;
    if (!map)
        return;
    for (uint64_t i = 0; i < sh->cap; i++) {
        uint64_t a = sh->slots[i].addr;
        if (!a)
            continue;
        size_t off = (size_t)slot_of(a, mask) * sizeof *ns;
        size_t p0 = off / page, p1 = (off + sizeof *ns - 1) / page;
        map[p0 / 64] |= 1ull << (p0 % 64);
        map[p1 / 64] |= 1ull << (p1 % 64);
    }
    for (size_t p = 0; p < npages;) {
        if (!(map[p / 64] >> (p % 64) & 1)) {
            p++;
            continue;
        }
        size_t q = p;
        while (q < npages && map[q / 64] >> (q % 64) & 1)
            q++;
        size_t end = q * page < bytes ? q * page : bytes;
        gs_pages_prefault((char *)ns + p * page, end - p * page);
        p = q;
    }
    gs_pages_free(map, mapbytes);
}

int gs_table_grow(struct gs_shard *sh)
{
    uint64_t ncap = sh->cap * 2, mask = ncap - 1;
    struct gs_block *ns = gs_pages_alloc(ncap * sizeof(struct gs_block));
    if (!ns)
        return -1;
    /* Big tables on huge pages: fewer TLB misses for the scanner's lookups. */
    if (ncap * sizeof(struct gs_block) >= (4u << 20))
        madvise(ns, ncap * sizeof(struct gs_block), MADV_HUGEPAGE);
    /* The rehash below writes slots all over it: fault those pages in at
     * once (import torch took a tenth of its page faults here, one by one). */
    prefault_homes(sh, ns, ncap);
    for (uint64_t i = 0; i < sh->cap; i++) {
        const struct gs_block *b = &sh->slots[i];
        if (!b->addr)
            continue;
        uint64_t j = slot_of(b->addr, mask);
        while (ns[j].addr)
            j = (j + 1) & mask;
        ns[j] = *b;
    }
    struct gs_block *old = sh->slots;
    uint64_t ocap = sh->cap;
    __atomic_store_n(&sh->slots, ns, __ATOMIC_RELEASE);
    sh->cap = ncap;
    gs_pages_free(old, ocap * sizeof(struct gs_block));
    return 0;
}

struct gs_block *gs_table_find(struct gs_shard *sh, uint64_t addr)
{
    return gs_table_lookup(sh, addr);
}

void gs_table_remove_at(struct gs_shard *sh, struct gs_block *b, struct gs_block *out)
{
    if (out)
        *out = *b;
    sh->count--;
    sh->bytes -= b->size;
    /* Backward-shift deletion: move later members of the probe run into the
     * hole so every remaining key stays reachable from its home slot. */
    struct gs_block *slots = sh->slots;
    uint64_t mask = sh->cap - 1, i = (uint64_t)(b - slots), j = i;
    for (;;) {
        j = (j + 1) & mask;
        uint64_t a = slots[j].addr;
        if (!a)
            break;
        /* Move j into i when its home is not in the cyclic range (i, j]:
         * when it sits at least as far from its home as from i. */
        if (((j - slot_of(a, mask)) & mask) >= ((j - i) & mask)) {
            slots[i] = slots[j];
            i = j;
        }
    }
    memset(&slots[i], 0, sizeof slots[i]);
}
