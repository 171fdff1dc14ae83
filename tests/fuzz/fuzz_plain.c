/*
 * fuzz_plain IN OUT: rewrites a trace with uncompressed chunks (file flag
 * GS_FILE_F_ZSTD and GS_FILE_F_ZSTD_STREAM cleared, each chunk's payload
 * stored as is, CRCs recomputed; a stream trace's chunks are decompressed
 * in order with one context, as the reader does). The seed corpus keeps such a twin of every real trace, so
 * mutations of its bytes reach the record decoder directly. Stops at the
 * first damaged chunk (what precedes it is written).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "gcspy/codec.h"
#include "gcspy/trace_format.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: fuzz_plain IN OUT\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "rb");
    if (!in) {
        perror(argv[1]);
        return 2;
    }
    static uint8_t buf[64 << 20];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    if (n < GS_FILE_HDR_SIZE || memcmp(buf, GS_TRACE_MAGIC, GS_TRACE_MAGIC_LEN)) {
        fprintf(stderr, "fuzz_plain: %s: not a trace\n", argv[1]);
        return 2;
    }
    FILE *out = fopen(argv[2], "wb");
    if (!out) {
        perror(argv[2]);
        return 2;
    }
    uint8_t hdr[GS_FILE_HDR_SIZE];
    memcpy(hdr, buf, sizeof hdr);
    hdr[16] &= (uint8_t)~(GS_FILE_F_ZSTD | GS_FILE_F_ZSTD_STREAM);
    fwrite(hdr, 1, sizeof hdr, out);
    int zstd = (gs_le64(buf + 16) & GS_FILE_F_ZSTD) != 0;
    int stream = (gs_le64(buf + 16) & GS_FILE_F_ZSTD_STREAM) != 0;
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (!dctx)
        return 2;
    size_t off = gs_le32(buf + 12);
    static uint8_t raw[GS_CHUNK_RAW_MAX];
    while (off + GS_CHUNK_HDR_SIZE <= n) {
        const uint8_t *h = buf + off;
        uint32_t comp = gs_le32(h + 8), rl = gs_le32(h + 12);
        if (gs_le32(h) != GS_CHUNK_MAGIC || comp > n - off - GS_CHUNK_HDR_SIZE || rl > sizeof raw)
            break;
        size_t got = rl;
        if (zstd && stream) {
            if (comp >= 4 && gs_le32(h + GS_CHUNK_HDR_SIZE) == GS_ZSTD_MAGIC)
                ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
            ZSTD_inBuffer zi = {h + GS_CHUNK_HDR_SIZE, comp, 0};
            ZSTD_outBuffer zo = {raw, rl, 0};
            size_t r;
            do
                r = ZSTD_decompressStream(dctx, &zo, &zi);
            while (!ZSTD_isError(r) && zi.pos < zi.size && zo.pos < zo.size);
            if (ZSTD_isError(r) || zi.pos != zi.size || zo.pos != rl)
                break;
        } else if (zstd) {
            got = ZSTD_decompress(raw, rl, h + GS_CHUNK_HDR_SIZE, comp);
            if (ZSTD_isError(got) || got != rl)
                break;
        } else {
            memcpy(raw, h + GS_CHUNK_HDR_SIZE, rl);
        }
        uint32_t v[6] = {GS_CHUNK_MAGIC, gs_le32(h + 4), rl, rl, gs_crc32c(raw, rl), 0};
        v[5] = gs_crc32c(v, 20); /* little-endian host */
        fwrite(v, 1, sizeof v, out);
        fwrite(raw, 1, rl, out);
        off += GS_CHUNK_HDR_SIZE + comp;
    }
    ZSTD_freeDCtx(dctx);
    return fclose(out) ? 2 : 0;
}
