/*
 * Blocks by address (blocks.h). The live set comes in hash order and is
 * sorted at every snapshot, so the sort is an LSD radix sort, 16 bits a
 * pass, skipping the passes whose digit every address shares (a heap's high
 * bits): qsort's merge sort of these 32-byte records cost the snapshots most
 * of their time.
 */
#include "blocks.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

int gs_blkv_push(struct gs_blkv *b, const struct gs_blk *x)
{
    if (GS_GROW_RAW(b->v, b->cap, b->n + 1))
        return -1;
    b->v[b->n++] = *x;
    return 0;
}

void gs_blkv_free(struct gs_blkv *b)
{
    free(b->v);
    memset(b, 0, sizeof *b);
}

int gs_blk_sort(struct gs_blkv *b, struct gs_blkv *tmp, uint32_t *count)
{
    size_t n = b->n;
    if (n < 2)
        return 0;
    if (GS_GROW_RAW(tmp->v, tmp->cap, n))
        return -1;
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, 65536 * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[(b->v[i].addr >> shift) & 0xffff]++;
        if (count[(b->v[0].addr >> shift) & 0xffff] == n)
            continue;
        uint32_t sum = 0;
        for (size_t d = 0; d < 65536; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp->v[count[(b->v[i].addr >> shift) & 0xffff]++] = b->v[i];
        struct gs_blk *v = b->v;
        size_t cap = b->cap;
        b->v = tmp->v;
        b->cap = tmp->cap;
        tmp->v = v;
        tmp->cap = cap;
    }
    return 0;
}

int gs_blk_addr_cmp(const void *a, const void *b)
{
    const struct gs_blk *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int gs_blk_size_desc(const void *a, const void *b)
{
    const struct gs_blk *x = a, *y = b;
    return x->size > y->size ? -1 : x->size < y->size;
}
