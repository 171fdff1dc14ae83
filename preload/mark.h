/*
 * The leak scan's marking state, shared by the marker (mark.c), the
 * classifier (classify.c) and the scan's phases (scan.c); and the caching
 * allocator's view that marking resolves device pointers against (torch.c
 * builds it).
 */
#ifndef GCSPY_MARK_H
#define GCSPY_MARK_H

#include "roots.h"
#include "stack.h"
#include "table.h"

/* ---- a caching allocator's state at one moment (PyTorch-aware mode) ---- */
struct gs_pool_seg { uint64_t addr, size; };
struct gs_pool_blk {
    uint64_t addr, size;
    uint32_t stack;
    uint8_t state, mark, pad[2];
};
/* Sorted by address (gs_keyed_upto looks them up); blk holds the active and
 * pending-free blocks only. A segment's range may hold many device or VMM
 * blocks (expandable_segments maps its pages one cuMemMap at a time).
 * no_segments: the allocator keeps none (backend:cudaMallocAsync: every
 * tensor is a block of its own, and no snapshot exists), so its device
 * blocks are plain leaves, not segments. */
struct gs_pool_view {
    struct gs_pool_seg *seg;
    size_t nseg;
    struct gs_pool_blk *blk;
    size_t nblk;
    int no_segments;
};

/* ---- marks (struct gs_block's and gs_pool_blk's mark) ---- */
/* M_IND2: indirect, and visited by the classifier's second pass. M_HELD: a
 * CUDA block only the CUDA runtime's own memory reaches (cuda_owned.c). */
enum { M_NONE = 0, M_REACH = 1, M_POSS = 2, M_IND = 3, M_LEAD = 4, M_POOL = 5, M_IND2 = 6,
       M_HELD = 7 };
#define GS_REGION_SHIFT 16
#define GS_LARGE (1ull << GS_REGION_SHIFT)

struct gs_scan_result {
    uint64_t addr, size;
    uint32_t stack;
    uint8_t kind, cls, fn, fresh; /* fresh: lost, and not GS_BLOCK_LOST_SEEN */
};

/* One scan's state. It lives in gcspy's bss (scan.c), not on a stack: the
 * scanning thread's frames must hold no copy of a block address. */
struct gs_scan {
    /* plausibility: a hash set of 64 KiB regions holding any tracked byte */
    uint64_t *regions;
    uint64_t rmask, nregions;
    uintptr_t lo, hi;
    uintptr_t large_lo, large_hi;
    /* blocks >= 64 KiB, sorted by address */
    struct gs_block **large;
    size_t nlarge, large_cap;
    /* mark stack */
    struct gs_block **stack;
    size_t sp, stack_cap;
    /* interior pointers met while marking REACHABLE */
    uintptr_t *interior;
    size_t ninterior, interior_cap;
    int interior_overflow;
    /* the roots' unreadable mappings over the heap (roots.h), and the bytes
     * of blocks left unread there */
    const struct gs_range *noread;
    size_t nnoread;
    /* memory read as zeros: roots.h's slack (sorted, merged) */
    const struct gs_range *slack;
    size_t nslack;
    uint64_t unreadable_bytes;
    /* counters */
    uint64_t bytes_scanned, visited, live_blocks, live_bytes;
    /* blocks marked from the roots, and the allocator's segments: what is
     * lost is the rest (the classifier skips its table passes when that is
     * nothing) */
    uint64_t reach_blocks, reach_bytes, poss_blocks, pool_blocks, held_blocks;
    int cur_weak; /* the words being scanned are a weak block's */
    int cur_loader; /* ... or the dynamic loader's data (mark.c) */
    int cur_cuda;   /* ... or the CUDA runtime's (a data segment, or an owned block) */
    int scan_managed;        /* GCSPY_SCAN_MANAGED: managed blocks are read */
    uint64_t managed_unread; /* managed blocks reached and left unread */
    uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
    /* of those lost, the host blocks no API scan had found lost before
     * (GS_BLOCK_LOST_SEEN unset; their results' `fresh` is 1) */
    uint64_t new_blocks[GS_CLASS__N], new_bytes[GS_CLASS__N];
    /* results */
    struct gs_scan_result *res;
    size_t nres, res_cap;
    int with_reachable;
    /* PyTorch-aware mode, for this scan (set by its owner): */
    struct gs_pool_view *pool;   /* the allocator's blocks, or NULL */
    const uint8_t *bits;         /* per stack id: GS_SB_* bits (stack.h), or NULL */
    uint32_t nbits;
    /* The CUDA runtime's own memory (cuda_owned.c), for this scan: */
    const uint8_t *cbits;        /* per stack id: allocated from CUDA code */
    uint32_t ncbits;
    const struct gs_range *cdata; /* the CUDA modules' writable segments, sorted */
    size_t ncdata;
};

/* allocator metadata: scanned, its device and interior pointers ignored */
static inline int gs_is_weak(const struct gs_scan *s, const struct gs_block *b)
{
    return s->bits && b->stack < s->nbits && (s->bits[b->stack] & GS_SB_WEAK);
}

/* the CUDA runtime's bookkeeping: a heap block allocated from its code */
static inline int gs_is_cuda(const struct gs_scan *s, const struct gs_block *b)
{
    return s->cbits && b->kind == GS_MEM_HOST && b->stack < s->ncbits && s->cbits[b->stack];
}

/* pointer-free (a CPU tensor's storage): never scanned */
static inline int gs_is_data(const struct gs_scan *s, const struct gs_block *b)
{
    return s->bits && b->stack < s->nbits && (s->bits[b->stack] & GS_SB_DATA);
}

/* ---- the marker (mark.c) ---- */
/* Before the stop, sized for `total` live blocks: the page lists of interior
 * lookups. 0 or -1 (no memory). */
int gs_mark_pages_init(uint64_t total);
/* The pass over the table (world stopped): regions, large blocks, segments,
 * totals, and the heap ranges that are not roots (sorted, merged). */
int gs_mark_prepass(struct gs_scan *s, struct gs_range **heap, size_t *nheap, size_t *heap_cap);
/* Marks from the roots: REACHABLE, then POSSIBLE through interior pointers. */
void gs_mark_roots(struct gs_scan *s, const struct gs_roots *roots);
/* After gs_mark_roots: the CUDA blocks that only the CUDA runtime's own
 * memory reaches become M_HELD (the words of that memory were ignored for
 * CUDA blocks while marking). */
void gs_mark_held(struct gs_scan *s);
/* Scans n words (a block's, from leader: M_IND or M_IND2), then everything
 * pushed. */
void gs_mark_words(struct gs_scan *s, const uintptr_t *p, size_t n, uint8_t mode,
                   struct gs_block *leader);
void gs_mark_drain(struct gs_scan *s, uint8_t mode, struct gs_block *leader);
/* Scans one block's words as gs_mark_words does, less its unreadable bytes. */
void gs_mark_block(struct gs_scan *s, const struct gs_block *b, uint8_t mode,
                   struct gs_block *leader);
/* Gives back everything the marker mapped (page lists, regions, stacks). */
void gs_mark_free(struct gs_scan *s);

/* ---- the classifier (classify.c) ---- */
/* After marking: cliques of lost blocks, then every block's class counted
 * (and listed in s->res where reported), marks reset. */
void gs_classify(struct gs_scan *s);

#endif /* GCSPY_MARK_H */
