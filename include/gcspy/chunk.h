/*
 * glibc's malloc chunks, as the shim's scanner and the analyzer both reason
 * about them (preload/mark.c: a pointer just past a block that is about the
 * next chunk; analyzer/frag.c and the address-space snapshots: the free
 * space between neighbouring blocks): the one statement of the layout.
 *
 * A chunk for a request of n bytes spans max(32, (n + 8 + 15) & ~15) bytes
 * (the request plus its 8-byte size field, rounded up to 16), starting 16
 * bytes before the user pointer, so the user pointers of two adjacent chunks
 * are exactly a span apart. A request of at least 128 KiB (the default
 * M_MMAP_THRESHOLD) that glibc served by mmap sits 16 bytes past a page
 * boundary, in a mapping of its own: not heap.
 */
#ifndef GCSPY_CHUNK_H
#define GCSPY_CHUNK_H

#include <stdint.h>

#define GS_CHUNK_MMAP_MIN (128ull << 10)

/* Bytes the chunk of an n-byte request spans. */
static inline uint64_t gs_chunk_span(uint64_t n)
{
    uint64_t c = (n + 8 + 15) & ~(uint64_t)15;
    return c < 32 ? 32 : c;
}

/* Whether the block at addr of size bytes looks served by mmap. */
static inline int gs_chunk_mmapped(uint64_t addr, uint64_t size)
{
    return size >= GS_CHUNK_MMAP_MIN && (addr & 0xfff) == 16;
}

#endif /* GCSPY_CHUNK_H */
