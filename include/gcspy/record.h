/*
 * Record encoders: one function per record type, appending the encoded record
 * at p and returning the new end. The shim's writer and the tests that build
 * traces by hand both use these, so hand-built traces are byte-for-byte what
 * the shim writes. Field order is the one trace_format.h documents.
 *
 * Callers guarantee room: hot records need at most GS_REC_HOT_MAX bytes; a
 * lengthed record at most 1 + GS_VARINT_MAX + its body. Lengthed records are
 * built in place: gs_rec_open() reserves a fixed 3-byte length (bodies are
 * below 2 MiB), gs_rec_close() fills it, so no second buffer is needed.
 */
#ifndef GCSPY_RECORD_H
#define GCSPY_RECORD_H

#include "gcspy/codec.h"
#include "gcspy/trace_format.h"

#define GS_REC_HOT_MAX (1 + 10 * GS_VARINT_MAX)
#define GS_REC_BODY_MAX ((1u << 21) - 1)

/* Running state of one buffer: what hot records are delta-coded against. */
struct gs_enc_state {
    uint64_t t;
    uint64_t a;
};

static inline uint8_t *gs_rec_timebase(uint8_t *p, struct gs_enc_state *st, uint64_t t)
{
    *p++ = GS_REC_TIMEBASE;
    st->t = t;
    st->a = 0;
    return gs_put_u(p, t);
}

/* Time never goes back inside a buffer: a caller whose clock reads earlier
 * than the buffer's running time (another thread wrote a later coarse tick)
 * is recorded at the running time. */
static inline uint8_t *gs_put_dt(uint8_t *p, struct gs_enc_state *st, uint64_t t)
{
    uint64_t dt = t > st->t ? t - st->t : 0;
    st->t += dt;
    return gs_put_u(p, dt);
}

static inline uint8_t *gs_put_addr(uint8_t *p, struct gs_enc_state *st, uint64_t addr)
{
    p = gs_put_s(p, (int64_t)(addr - st->a));
    st->a = addr;
    return p;
}

static inline uint8_t *gs_rec_alloc(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                    uint64_t thread, uint64_t addr, uint64_t size,
                                    uint64_t stack)
{
    *p++ = GS_REC_ALLOC;
    p = gs_put_dt(p, st, t);
    p = gs_put_u(p, thread);
    p = gs_put_addr(p, st, addr);
    p = gs_put_u(p, size);
    return gs_put_u(p, stack);
}

static inline uint8_t *gs_rec_free(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                   uint64_t addr)
{
    *p++ = GS_REC_FREE;
    p = gs_put_dt(p, st, t);
    return gs_put_addr(p, st, addr);
}

static inline uint8_t *gs_rec_realloc(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                      uint64_t thread, uint64_t addr, uint64_t size,
                                      uint64_t stack)
{
    *p++ = GS_REC_REALLOC;
    p = gs_put_dt(p, st, t);
    p = gs_put_u(p, thread);
    p = gs_put_addr(p, st, addr);
    p = gs_put_u(p, size);
    return gs_put_u(p, stack);
}

static inline uint8_t *gs_rec_alloc_ex(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                       uint64_t thread, uint64_t addr, uint64_t size,
                                       uint64_t stack, uint64_t kind, uint64_t fn,
                                       uint64_t device, uint64_t stream, uint64_t dur_ns)
{
    *p++ = GS_REC_ALLOC_EX;
    p = gs_put_dt(p, st, t);
    p = gs_put_u(p, thread);
    p = gs_put_addr(p, st, addr);
    p = gs_put_u(p, size);
    p = gs_put_u(p, stack);
    p = gs_put_u(p, kind);
    p = gs_put_u(p, fn);
    p = gs_put_u(p, device);
    p = gs_put_u(p, stream);
    return gs_put_u(p, dur_ns);
}

static inline uint8_t *gs_rec_free_ex(uint8_t *p, struct gs_enc_state *st, uint64_t t,
                                      uint64_t thread, uint64_t addr, uint64_t kind,
                                      uint64_t fn, uint64_t dur_ns)
{
    *p++ = GS_REC_FREE_EX;
    p = gs_put_dt(p, st, t);
    p = gs_put_u(p, thread);
    p = gs_put_addr(p, st, addr);
    p = gs_put_u(p, kind);
    p = gs_put_u(p, fn);
    return gs_put_u(p, dur_ns);
}

static inline uint8_t *gs_rec_stack(uint8_t *p, uint64_t id, uint64_t parent, uint64_t ip)
{
    *p++ = GS_REC_STACK;
    p = gs_put_u(p, id);
    p = gs_put_u(p, parent);
    return gs_put_u(p, ip);
}

/* Lengthed records: open, append fields with gs_put_*, close. */
static inline uint8_t *gs_rec_open(uint8_t *p, uint8_t type)
{
    *p++ = type;
    return p + 3; /* fixed 3-byte varint length, filled by gs_rec_close */
}

static inline uint8_t *gs_rec_close(uint8_t *open_end, uint8_t *p)
{
    size_t n = (size_t)(p - open_end);
    uint8_t *l = open_end - 3;
    l[0] = (uint8_t)(n | 0x80);
    l[1] = (uint8_t)((n >> 7) | 0x80);
    l[2] = (uint8_t)(n >> 14);
    return p;
}

/* File and chunk framing (trace_format.h has the layouts). */
static inline void gs_file_header(uint8_t out[GS_FILE_HDR_SIZE], uint64_t flags)
{
    memset(out, 0, GS_FILE_HDR_SIZE);
    memcpy(out, GS_TRACE_MAGIC, GS_TRACE_MAGIC_LEN);
    out[8] = GS_TRACE_MAJOR; out[9] = 0;
    out[10] = GS_TRACE_MINOR; out[11] = 0;
    gs_st32(out + 12, GS_FILE_HDR_SIZE);
    gs_st64(out + 16, flags);
}

static inline void gs_chunk_header(uint8_t out[GS_CHUNK_HDR_SIZE], uint32_t seq,
                                   const void *payload, uint32_t comp_len,
                                   uint32_t raw_len)
{
    gs_st32(out, GS_CHUNK_MAGIC);
    gs_st32(out + 4, seq);
    gs_st32(out + 8, comp_len);
    gs_st32(out + 12, raw_len);
    gs_st32(out + 16, gs_crc32c(payload, comp_len));
    gs_st32(out + 20, gs_crc32c(out, 20));
}

#endif /* GCSPY_RECORD_H */
