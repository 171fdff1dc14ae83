/*
 * zstd_levels: what the trace writer's compression costs at each zstd level,
 * on a real trace. The writer compresses one chunk's records at a time (a
 * flush round's buffers, or 1 MiB of them), so the chunks of a trace are
 * exactly the inputs its compressor saw, in order. This program reads them
 * back (gs_reader_next_chunk) and compresses that sequence again, for every
 * level asked, two ways:
 *
 *   frames  one zstd frame per chunk (format 1.2 and earlier: every chunk
 *           starts from an empty window)
 *   stream  one zstd stream per trace, ZSTD_e_flush at each chunk (format
 *           2.0, GS_FILE_F_ZSTD_STREAM: the window carries across chunks)
 *
 * and prints, per level and way, the bytes written (chunk headers included)
 * per event and the compressing thread's CPU time per event, the best of
 * three passes (CLOCK_THREAD_CPUTIME_ID: the writer thread's share, not the
 * wall clock of a loaded machine). Events are the trace's ALLOC, FREE,
 * REALLOC, ALLOC_EX and FREE_EX records, as bench/run-bench.sh counts them.
 *
 *   zstd_levels TRACE [LEVEL[:PARAM=N...]...]   (default levels: -7 -5 -3 -1 1 2 3)
 *
 * A level may carry parameters that override the level's own, as zstd's
 * advanced API sets them: wlog (windowLog), hlog (hashLog), clog
 * (chainLog), mml (minMatch), strat (strategy, 1 fast .. 9 btultra2), e.g.
 * `1:mml=4:hlog=16`.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "trace_reader.h"

struct chunk {
    uint8_t *raw;
    size_t len;
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One pass over every chunk: the compressed bytes (plus a chunk header per
 * chunk), or 0 on a zstd error. */
static size_t compress_all(ZSTD_CCtx *cctx, int stream, const struct chunk *c, size_t n,
                           uint8_t *out, size_t cap)
{
    size_t total = 0;
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    for (size_t i = 0; i < n; i++) {
        if (!stream)
            ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
        ZSTD_inBuffer in = {c[i].raw, c[i].len, 0};
        ZSTD_outBuffer o = {out, cap, 0};
        size_t left;
        do
            left = ZSTD_compressStream2(cctx, &o, &in, stream ? ZSTD_e_flush : ZSTD_e_end);
        while (!ZSTD_isError(left) && left && o.pos < o.size);
        if (ZSTD_isError(left) || left)
            return 0;
        total += GS_CHUNK_HDR_SIZE + o.pos;
    }
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: zstd_levels TRACE [LEVEL...]\n");
        return 2;
    }
    char err[512];
    struct gs_reader *r = gs_reader_open(argv[1], err, sizeof err);
    if (!r) {
        fprintf(stderr, "zstd_levels: %s\n", err);
        return 2;
    }
    struct chunk *c = NULL;
    size_t n = 0, cap = 0, maxlen = 0, raw_total = 0;
    const uint8_t *raw;
    size_t len;
    int rc;
    while ((rc = gs_reader_next_chunk(r, &raw, &len)) == GS_READ_OK) {
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            struct chunk *g = realloc(c, cap * sizeof *c);
            if (!g)
                return 2;
            c = g;
        }
        c[n].raw = malloc(len ? len : 1);
        if (!c[n].raw)
            return 2;
        memcpy(c[n].raw, raw, len);
        c[n].len = len;
        raw_total += len;
        if (len > maxlen)
            maxlen = len;
        n++;
    }
    if (rc == GS_READ_DAMAGED) {
        fprintf(stderr, "zstd_levels: %s: %s\n", argv[1], gs_reader_error(r));
        return 2;
    }
    gs_reader_close(r);

    r = gs_reader_open(argv[1], err, sizeof err);
    struct gs_record rec;
    uint64_t events = 0;
    while (r && gs_reader_next(r, &rec) == GS_READ_OK)
        events += rec.type == GS_REC_ALLOC || rec.type == GS_REC_FREE ||
                  rec.type == GS_REC_REALLOC || rec.type == GS_REC_ALLOC_EX ||
                  rec.type == GS_REC_FREE_EX;
    gs_reader_close(r);
    if (!events) {
        fprintf(stderr, "zstd_levels: %s: no allocation events\n", argv[1]);
        return 2;
    }

    static const int def_levels[] = {-7, -5, -3, -1, 1, 2, 3};
    int nlev = argc > 2 ? argc - 2 : (int)(sizeof def_levels / sizeof def_levels[0]);
    size_t ocap = ZSTD_compressBound(maxlen) + 64;
    uint8_t *out = malloc(ocap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (!out || !cctx)
        return 2;
    printf("trace %s: %zu chunks, %zu raw bytes, %llu events (%.3f raw B/event)\n", argv[1],
           n, raw_total, (unsigned long long)events, (double)raw_total / (double)events);
    printf("\n| level | framing | B/event | writer CPU ns/event |\n|---|---|---|---|\n");
    for (int l = 0; l < nlev; l++) {
        const char *spec = argc > 2 ? argv[2 + l] : NULL;
        int level = spec ? atoi(spec) : def_levels[l];
        char name[64];
        snprintf(name, sizeof name, "%s", spec ? spec : "");
        if (!spec)
            snprintf(name, sizeof name, "%d", level);
        ZSTD_CCtx_reset(cctx, ZSTD_reset_parameters);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
        for (const char *q = spec ? strchr(spec, ':') : NULL; q; q = strchr(q + 1, ':')) {
            static const struct { const char *name; ZSTD_cParameter p; } names[] = {
                {"wlog=", ZSTD_c_windowLog}, {"hlog=", ZSTD_c_hashLog},
                {"clog=", ZSTD_c_chainLog},  {"mml=", ZSTD_c_minMatch},
                {"strat=", ZSTD_c_strategy}};
            size_t k = 0;
            while (k < sizeof names / sizeof names[0] &&
                   strncmp(q + 1, names[k].name, strlen(names[k].name)))
                k++;
            if (k == sizeof names / sizeof names[0] ||
                ZSTD_isError(ZSTD_CCtx_setParameter(
                    cctx, names[k].p, atoi(q + 1 + strlen(names[k].name))))) {
                fprintf(stderr, "zstd_levels: bad parameter in '%s'\n", spec);
                return 2;
            }
        }
        for (int stream = 0; stream <= 1; stream++) {
            double best = 1e30;
            size_t bytes = 0;
            for (int pass = 0; pass < 3; pass++) {
                double t0 = thread_cpu_s();
                bytes = compress_all(cctx, stream, c, n, out, ocap);
                double t = thread_cpu_s() - t0;
                if (t < best)
                    best = t;
            }
            if (!bytes) {
                fprintf(stderr, "zstd_levels: level %d: zstd error\n", level);
                return 1;
            }
            printf("| %s | %s | %.3f | %.1f |\n", name, stream ? "stream" : "frames",
                   (double)(bytes + GS_FILE_HDR_SIZE) / (double)events,
                   best * 1e9 / (double)events);
        }
    }
    return 0;
}
