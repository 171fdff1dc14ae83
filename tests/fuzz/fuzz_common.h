/*
 * Shared by the fuzz targets: the three ways one fuzzer input is fed to the
 * trace reader, so that mutations get past the layers that would otherwise
 * reject nearly all of them (a random byte flip almost always breaks a
 * CRC; a random payload almost never decompresses):
 *
 *   as is      the input is a trace file;
 *   resealed   the same, with every chunk's header and payload CRC
 *              recomputed, so mutated headers and payloads are decoded;
 *   payload    the input is the decompressed payload of one chunk, wrapped
 *              in an uncompressed trace (file flags 0) with valid CRCs, so
 *              the record decoder sees the mutated bytes directly.
 *
 * The seed corpus (tests/fuzz/corpus/) holds real traces, compressed and
 * uncompressed twins, so all three ways start from valid input.
 */
#ifndef GCSPY_FUZZ_COMMON_H
#define GCSPY_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gcspy/codec.h"
#include "gcspy/trace_format.h"

/* The resealed copy of a trace image (caller frees), or NULL when the input
 * has no chunk to reseal. */
static inline uint8_t *fz_reseal(const uint8_t *d, size_t n)
{
    if (n < GS_FILE_HDR_SIZE + GS_CHUNK_HDR_SIZE)
        return NULL;
    uint8_t *b = malloc(n);
    if (!b)
        return NULL;
    memcpy(b, d, n);
    size_t off = GS_FILE_HDR_SIZE;
    while (off + GS_CHUNK_HDR_SIZE <= n) {
        uint8_t *h = b + off;
        uint32_t comp = gs_le32(h + 8);
        size_t avail = n - off - GS_CHUNK_HDR_SIZE;
        size_t len = comp < avail ? comp : avail;
        uint32_t crc = gs_crc32c(h + GS_CHUNK_HDR_SIZE, len);
        memcpy(h + 16, &crc, 4);
        uint32_t hcrc = gs_crc32c(h, 20);
        memcpy(h + 20, &hcrc, 4);
        off += GS_CHUNK_HDR_SIZE + len;
    }
    return b;
}

/* An uncompressed one-chunk trace whose payload is d[0..n) (caller frees). */
static inline uint8_t *fz_wrap(const uint8_t *d, size_t n, size_t *out_len)
{
    size_t len = GS_FILE_HDR_SIZE + GS_CHUNK_HDR_SIZE + n;
    uint8_t *b = calloc(1, len);
    if (!b)
        return NULL;
    memcpy(b, GS_TRACE_MAGIC, GS_TRACE_MAGIC_LEN);
    b[8] = GS_TRACE_MAJOR;
    b[10] = GS_TRACE_MINOR;
    b[12] = GS_FILE_HDR_SIZE;
    uint8_t *h = b + GS_FILE_HDR_SIZE;
    uint32_t v[5] = {GS_CHUNK_MAGIC, 0, (uint32_t)n, (uint32_t)n, gs_crc32c(d, n)};
    memcpy(h, v, sizeof v); /* little-endian host (x86-64) */
    uint32_t hcrc = gs_crc32c(h, 20);
    memcpy(h + 20, &hcrc, 4);
    if (n)
        memcpy(h + GS_CHUNK_HDR_SIZE, d, n);
    *out_len = len;
    return b;
}

#endif /* GCSPY_FUZZ_COMMON_H */
