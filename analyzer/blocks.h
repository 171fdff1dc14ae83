/*
 * Live blocks laid out by address, for the measurements that need the heap
 * in address order: the host heap's fragmentation (frag.c) at the end and at
 * every snapshot of the run (snapshots.c). A gs_blk is a live block's place
 * (address, size), age (allocation time) and site (stack id).
 */
#ifndef GCSPY_BLOCKS_H
#define GCSPY_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

struct gs_blk {
    uint64_t addr, size, t;
    uint32_t stack, pad;
};

struct gs_blkv {
    struct gs_blk *v;
    size_t n, cap;
};

/* 0, or -1 when out of memory. */
int gs_blkv_push(struct gs_blkv *b, const struct gs_blk *x);
void gs_blkv_free(struct gs_blkv *b);

/* Sorts b by address. scratch is another vector the sort may use (and swap
 * with b's storage), count room for 65536 counters; both are reused from one
 * call to the next. 0, or -1 when out of memory. */
int gs_blk_sort(struct gs_blkv *b, struct gs_blkv *scratch, uint32_t *count);

/* qsort orders: by address; by size, largest first. */
int gs_blk_addr_cmp(const void *a, const void *b);
int gs_blk_size_desc(const void *a, const void *b);

#endif /* GCSPY_BLOCKS_H */
