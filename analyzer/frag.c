/*
 * Host heap fragmentation (frag.h).
 *
 * The user pointers of two adjacent glibc chunks are exactly a chunk span
 * apart (gcspy/chunk.h), so next - (addr + span(size)) is the free space
 * between two live blocks that are neighbours in one heap. Blocks served by
 * mmap are mappings of their own and left out (counted apart). A gap of
 * GS_REGION_GAP or more starts a new region. The result is an estimate: it
 * cannot see free space after the last live block of a heap (glibc's top
 * chunk; the SAMPLE records' keepcost says how much of that could be
 * trimmed).
 *
 * Fragmentation ratio = 1 - largest free extent / total free: 0 when the
 * free space is one extent, near 1 when it is dust.
 */
#include "frag.h"

#include <stdlib.h>
#include <string.h>

#include "gcspy/chunk.h"

void gs_frag_measure(const struct gs_blk *v, size_t n, struct gs_heapfrag *out)
{
    memset(out, 0, sizeof *out);
    out->blocks = n;
    for (size_t i = 0; i < n; i++) {
        out->bytes += v[i].size;
        if (i == 0) {
            out->regions = 1;
            continue;
        }
        uint64_t end = v[i - 1].addr + gs_chunk_span(v[i - 1].size);
        if (v[i].addr < end)
            continue; /* overlapping records (lost frees): no gap to measure */
        uint64_t gap = v[i].addr - end;
        if (gap >= GS_REGION_GAP) {
            out->regions++;
            continue;
        }
        if (gap) {
            out->gaps++;
            out->free_bytes += gap;
            if (gap > out->largest_free)
                out->largest_free = gap;
        }
    }
    out->ratio = out->free_bytes ? 1.0 - (double)out->largest_free / (double)out->free_bytes : 0;
}

int gs_frag_heap(const struct gs_model *m, struct gs_heapfrag *out)
{
    struct gs_blkv v = { 0 }, tmp = { 0 };
    uint64_t mmapped_blocks = 0, mmapped_bytes = 0;
    uint32_t *count = NULL;
    int rc = -1;
    for (size_t i = 0; i < m->live.cap; i++) {
        const struct gs_live *e = &m->live.slot[i];
        if (!e->addr || e->dom != GS_DOM_HOST || e->kind != GS_MEM_HOST)
            continue;
        if (gs_chunk_mmapped(e->addr, e->size)) {
            mmapped_blocks++;
            mmapped_bytes += e->size;
            continue;
        }
        struct gs_blk b = { e->addr, e->size, e->t, e->stack, 0 };
        if (gs_blkv_push(&v, &b))
            goto out;
    }
    if (v.n > 1 && (!(count = malloc(65536 * sizeof *count)) || gs_blk_sort(&v, &tmp, count)))
        goto out;
    gs_frag_measure(v.v, v.n, out);
    out->mmapped_blocks = mmapped_blocks;
    out->mmapped_bytes = mmapped_bytes;
    rc = 0;
out:
    free(count);
    gs_blkv_free(&v);
    gs_blkv_free(&tmp);
    return rc;
}
