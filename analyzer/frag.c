/*
 * Host heap fragmentation at the end of the trace (analyze.h: gs_frag_heap):
 * the free space between live malloc blocks, reconstructed from the live set
 * alone, the way glibc lays chunks out.
 *
 * A glibc chunk for a request of n bytes spans max(32, (n + 8 + 15) & ~15)
 * bytes and the user pointers of two adjacent chunks are exactly that far
 * apart, so next - (addr + chunk(size)) is the free space between two live
 * blocks that are neighbours in one heap. Blocks served by mmap (user pointer
 * 16 bytes past a page boundary, at least 128 KiB) are mappings of their own
 * and left out. A gap of 64 MiB or more (glibc's largest non-main heap)
 * starts a new region. The result is an estimate: it cannot see free space
 * after the last live block of a heap (glibc's top chunk; the SAMPLE records'
 * keepcost says how much of that could be trimmed).
 *
 * Fragmentation ratio = 1 - largest free extent / total free: 0 when the
 * free space is one extent, near 1 when it is dust.
 */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>

#define REGION_GAP (64ull << 20)
#define MMAP_MIN (128ull << 10)

static int addr_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static uint64_t chunk_span(uint64_t n)
{
    uint64_t c = (n + 8 + 15) & ~15ull;
    return c < 32 ? 32 : c;
}

int gs_frag_heap(const struct gs_model *m, struct gs_heapfrag *out)
{
    memset(out, 0, sizeof *out);
    size_t n = 0;
    for (size_t i = 0; i < m->live.cap; i++) {
        const struct gs_live *e = &m->live.slot[i];
        if (e->addr && e->dom == GS_DOM_HOST && e->kind == GS_MEM_HOST)
            n++;
    }
    if (!n)
        return 0;
    uint64_t (*v)[2] = malloc(n * sizeof *v);
    if (!v)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < m->live.cap; i++) {
        const struct gs_live *e = &m->live.slot[i];
        if (!e->addr || e->dom != GS_DOM_HOST || e->kind != GS_MEM_HOST)
            continue;
        if (e->size >= MMAP_MIN && (e->addr & 0xfff) == 16) {
            out->mmapped_blocks++;
            out->mmapped_bytes += e->size;
            continue;
        }
        v[k][0] = e->addr;
        v[k][1] = e->size;
        k++;
    }
    qsort(v, k, sizeof *v, addr_cmp);
    out->blocks = k;
    for (size_t i = 0; i < k; i++) {
        out->bytes += v[i][1];
        if (i == 0) {
            out->regions = 1;
            continue;
        }
        uint64_t end = v[i - 1][0] + chunk_span(v[i - 1][1]);
        if (v[i][0] < end)
            continue; /* overlapping records (lost frees): no gap to measure */
        uint64_t gap = v[i][0] - end;
        if (gap >= REGION_GAP) {
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
    free(v);
    return 0;
}
