/*
 * The live-block table (table.c): every tracked block, in 128 shards; each
 * shard is also the stream its blocks' events are written to (shim.h's
 * struct gs_stream), under the same lock.
 */
#ifndef GCSPY_TABLE_H
#define GCSPY_TABLE_H

#include "shim.h"

struct gs_block {
    uint64_t addr;   /* 0: empty slot */
    uint64_t size;
    uint32_t stack;
    uint8_t kind;    /* enum gs_mem_kind */
    uint8_t fn;      /* enum gs_alloc_fn */
    uint8_t mark;    /* scanner's use */
    uint8_t flags;   /* GS_BLOCK_* */
};
/* flags: an API scan found the block lost (scan.c), so a later one does
 * not count it as newly lost (gcspy_scan_leaks, include/gcspy.h). A freed
 * block's slot goes, and a new block starts with no flags. */
#define GS_BLOCK_LOST_SEEN 1
#define GS_SHARDS 128
struct gs_shard {
    struct gs_stream s;     /* lock guards the table and the buffer */
    struct gs_block *slots;
    uint64_t cap;           /* power of two */
    uint64_t count;
    uint64_t bytes;
    char pad[64 - (sizeof(struct gs_stream) + 4 * sizeof(uint64_t)) % 64];
};
extern struct gs_shard gs_shards[GS_SHARDS];
static inline struct gs_shard *gs_shard_of(uint64_t addr)
{
    /* Blocks of one 64 KiB region share a shard: consecutive allocations of
     * one thread land in one buffer, so address deltas stay small. */
    return &gs_shards[((addr >> 16) * 0x9E3779B97F4A7C15ull) >> 57];
}
/* Slot of an address in its shard's table. The page (4 KiB) picks, by a
 * hash, an aligned window of 256 slots; the address within the page picks
 * the slot in that window (plus a per-page hash, so pages laid out alike do
 * not collide slot for slot). So the blocks of one page sit together
 * (malloc hands out neighbours: the hot path stays in cache), every block of
 * a page has its home in one window (the scanner's interior lookup reads
 * just that window), and pages spread evenly over the table. The offset is
 * added, not xored: a page's blocks then sit in address order around their
 * window, so the scanner, following pointers to neighbouring blocks (a list
 * built in allocation order), reads the table at a steady stride the
 * hardware prefetcher follows, not at scattered lines of the window. Tables
 * start at one window (256 slots, table.c), so a window always fits. */
static inline uint64_t gs_slot_of(uint64_t addr, uint64_t mask)
{
    uint64_t ph = (addr >> 12) * 0x9E3779B97F4A7C15ull;
    return (((ph >> 32) << 8) | (((addr >> 4) + (ph >> 56)) & 255)) & mask;
}
static inline struct gs_block *gs_table_lookup(const struct gs_shard *sh, uint64_t addr)
{
    uint64_t mask = sh->cap - 1, j = gs_slot_of(addr, mask);
    for (;;) {
        struct gs_block *b = &sh->slots[j];
        if (!b->addr)
            return NULL;
        if (b->addr == addr)
            return b;
        j = (j + 1) & mask;
    }
}
int gs_table_init(void);
/* Under the shard lock: */
int gs_table_grow(struct gs_shard *sh); /* doubles the table; 0 or -1 (no memory) */
/* Inline: every allocation inserts once (its call cost about 18
 * instructions, bench/hotpath-profile.sh). 0 or -1 (no memory). */
static inline int gs_table_insert(struct gs_shard *sh, const struct gs_block *b)
{
    if (GS_UNLIKELY((sh->count + 1) * 4 > sh->cap * 3) && gs_table_grow(sh))
        return -1;
    struct gs_block *slots = sh->slots;
    uint64_t mask = sh->cap - 1, j = gs_slot_of(b->addr, mask);
    for (uint64_t a; (a = slots[j].addr); j = (j + 1) & mask)
        if (a == b->addr) { /* a block we missed the free of */
            sh->bytes -= slots[j].size;
            slots[j] = *b;
            sh->bytes += b->size;
            return 0;
        }
    slots[j] = *b;
    sh->count++;
    sh->bytes += b->size;
    return 0;
}
struct gs_block *gs_table_find(struct gs_shard *sh, uint64_t addr);
/* Removes the block b, a slot gs_table_find returned (under the same hold
 * of the lock, or checked since), copying it to out if out is not NULL. */
void gs_table_remove_at(struct gs_shard *sh, struct gs_block *b, struct gs_block *out);

#endif /* GCSPY_TABLE_H */
