/*
 * Record encoders, generated from records.def: gs_rec_<name>(p, ...) appends
 * the whole record at p and returns the new end. The shim's writer and the
 * tests that build traces by hand both use these, so hand-built traces are
 * byte-for-byte what the shim writes. Parameters are the record's fields in
 * encoding order, named as in records.def:
 *   U S T UT U1 U2 U3 uint64_t (int64_t for S)
 *   DT DA TB DI DP uint64_t absolute time / address / id; hot records that have
 *                  them (class DELTA) take the buffer's state first, after p
 *   STR BYTES      const void *x, size_t x_len (NULL with 0: empty)
 *   SEGS           size_t nx, const struct gs_seg *x
 *   CLASSES        const uint64_t *x_blocks, const uint64_t *x_bytes
 *                  (GS_CLASS_WIRE_N each: the classes before RUNTIME,
 *                  whose totals are trailing fields of SCAN_END since 2.1)
 * Each is static inline straight-line code, as a hand-written encoder would
 * be: nothing is looked up at run time.
 *
 * Callers guarantee room: hot records need at most GS_REC_HOT_MAX bytes; a
 * lengthed record GS_REC_<NAME>_MAX plus the bytes of its strings (and
 * 3 * GS_VARINT_MAX per MODULE segment). Lengthed records are built in
 * place: gs_rec_open() reserves a fixed 3-byte length (bodies are below
 * 2 MiB), gs_rec_close() fills it, so no second buffer is needed.
 */
#ifndef GCSPY_RECORD_H
#define GCSPY_RECORD_H

#include "gcspy/codec.h"
#include "gcspy/pp.h"
#include "gcspy/trace_format.h"

#define GS_REC_HOT_MAX (1 + 10 * GS_VARINT_MAX)
#define GS_REC_BODY_MAX ((1u << 21) - 1)

/* Running state of one buffer: what hot records are delta-coded against. */
struct gs_enc_state {
    uint64_t t;
    uint64_t a;
    uint64_t sid; /* the last STACK id (2.0): the next is sid + 1 */
};

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

/* A lengthed record's frame: open, append the body, close. The generated
 * encoders below use it; so do tests that make records of unknown types. */
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

/* A MODULE segment (SEGS); vaddr is relative to the module's base. */
struct gs_seg {
    uint64_t vaddr, memsz, flags;
};

static inline uint8_t *gs_put_segs(uint8_t *p, size_t n, const struct gs_seg *seg)
{
    p = gs_put_u(p, n);
    for (size_t i = 0; i < n; i++) {
        p = gs_put_u(p, seg[i].vaddr);
        p = gs_put_u(p, seg[i].memsz);
        p = gs_put_u(p, seg[i].flags);
    }
    return p;
}

_Static_assert(GS_CLASS_WIRE_N == GS_CLASS_REACHABLE + 1, "the wire's class array");

static inline uint8_t *gs_put_classes(uint8_t *p, const uint64_t *blocks, const uint64_t *bytes)
{
    for (int c = 0; c < GS_CLASS_WIRE_N; c++) {
        p = gs_put_u(p, blocks[c]);
        p = gs_put_u(p, bytes[c]);
    }
    return p;
}

/* ---- generated from records.def ---- */

/* Parameters, by encoding. */
#define GS_ENC_PARAM(c, enc, m, key, print, en, check) GS_ENC_PARAM_##enc(m)
#define GS_ENC_PARAM_U(m) , uint64_t m
#define GS_ENC_PARAM_S(m) , int64_t m
#define GS_ENC_PARAM_T(m) , uint64_t m
#define GS_ENC_PARAM_UT(m) , uint64_t m
#define GS_ENC_PARAM_U1(m) , uint64_t m
#define GS_ENC_PARAM_U2(m) , uint64_t m
#define GS_ENC_PARAM_U3(m) , uint64_t m
#define GS_ENC_PARAM_DT(m) , uint64_t m
#define GS_ENC_PARAM_DA(m) , uint64_t m
#define GS_ENC_PARAM_TB(m) , uint64_t m
#define GS_ENC_PARAM_DI(m) , uint64_t m
#define GS_ENC_PARAM_DP(m) , uint64_t m
#define GS_ENC_PARAM_STR(m) , const void *m, size_t m##_len
#define GS_ENC_PARAM_BYTES(m) , const void *m, size_t m##_len
#define GS_ENC_PARAM_SEGS(m) , size_t n##m, const struct gs_seg *m
#define GS_ENC_PARAM_CLASSES(m) , const uint64_t *m##_blocks, const uint64_t *m##_bytes

/* The field's bytes at p. */
#define GS_ENC_PUT(c, enc, m, key, print, en, check) GS_ENC_PUT_##enc(m)
#define GS_ENC_PUT_U(m) p = gs_put_u(p, m);
#define GS_ENC_PUT_S(m) p = gs_put_s(p, m);
#define GS_ENC_PUT_T(m) p = gs_put_u(p, m);
#define GS_ENC_PUT_UT(m) p = gs_put_u(p, m);
#define GS_ENC_PUT_U1(m) p = gs_put_u(p, m);
#define GS_ENC_PUT_U2(m) p = gs_put_u(p, m);
#define GS_ENC_PUT_U3(m) p = gs_put_u(p, m);
#define GS_ENC_PUT_DT(m) p = gs_put_dt(p, st, m);
#define GS_ENC_PUT_DA(m) p = gs_put_addr(p, st, m);
#define GS_ENC_PUT_TB(m) st->t = m; st->a = 0; st->sid = 0; p = gs_put_u(p, m);
/* A STACK's id after the last (0 for the dense ids the shim hands out) and
 * its parent as a distance back from it (1 for a chain): the two fields
 * cost 5 to 6 bytes as u on import torch, which writes more STACK records
 * than events. DP reads the record's id from its DI field, named id. */
#define GS_ENC_PUT_DI(m) p = gs_put_s(p, (int64_t)(m - st->sid - 1)); st->sid = m;
#define GS_ENC_PUT_DP(m) p = gs_put_s(p, (int64_t)(id - m));
#define GS_ENC_PUT_STR(m) p = gs_put_bytes(p, m, m##_len);
#define GS_ENC_PUT_BYTES(m) p = gs_put_bytes(p, m, m##_len);
#define GS_ENC_PUT_SEGS(m) p = gs_put_segs(p, n##m, m);
#define GS_ENC_PUT_CLASSES(m) p = gs_put_classes(p, m##_blocks, m##_bytes);

/* At most this many bytes, besides a string's bytes and the segments. */
#define GS_ENC_MAX(c, enc, m, key, print, en, check) + GS_ENC_MAX_##enc
#define GS_ENC_MAX_U GS_VARINT_MAX
#define GS_ENC_MAX_S GS_VARINT_MAX
#define GS_ENC_MAX_T GS_VARINT_MAX
#define GS_ENC_MAX_UT GS_VARINT_MAX
#define GS_ENC_MAX_U1 GS_VARINT_MAX
#define GS_ENC_MAX_U2 GS_VARINT_MAX
#define GS_ENC_MAX_U3 GS_VARINT_MAX
#define GS_ENC_MAX_DT GS_VARINT_MAX
#define GS_ENC_MAX_DA GS_VARINT_MAX
#define GS_ENC_MAX_TB GS_VARINT_MAX
#define GS_ENC_MAX_DI GS_VARINT_MAX
#define GS_ENC_MAX_DP GS_VARINT_MAX
#define GS_ENC_MAX_STR GS_VARINT_MAX
#define GS_ENC_MAX_BYTES GS_VARINT_MAX
#define GS_ENC_MAX_SEGS GS_VARINT_MAX
#define GS_ENC_MAX_CLASSES (2 * GS_CLASS_WIRE_N * GS_VARINT_MAX)

/* By class: the state parameter, the record's start and its end. */
#define GS_ENC_STATE_DELTA , struct gs_enc_state *st
#define GS_ENC_STATE_HOT
#define GS_ENC_STATE_LEN
#define GS_ENC_OPEN_DELTA(type) *p++ = type;
#define GS_ENC_OPEN_HOT(type) *p++ = type;
#define GS_ENC_OPEN_LEN(type) uint8_t *body_ = gs_rec_open(p, type); p = body_;
#define GS_ENC_CLOSE_DELTA return p;
#define GS_ENC_CLOSE_HOT return p;
#define GS_ENC_CLOSE_LEN return gs_rec_close(body_, p);
#define GS_ENC_HEAD_DELTA 1
#define GS_ENC_HEAD_HOT 1
#define GS_ENC_HEAD_LEN 4 /* type, fixed 3-byte length */
#define GS_ENC_HOT_DELTA 1
#define GS_ENC_HOT_HOT 1
#define GS_ENC_HOT_LEN 0

#define GS_RECORD(NAME, name, type, cls, member, dump, minor, doc, ...)                 \
    enum { GS_REC_##NAME##_MAX = GS_ENC_HEAD_##cls GS_PP_EACH(GS_ENC_MAX, _, __VA_ARGS__) }; \
    _Static_assert(!GS_ENC_HOT_##cls || GS_REC_##NAME##_MAX <= GS_REC_HOT_MAX,         \
                   "hot record " #NAME " is larger than GS_REC_HOT_MAX");             \
    _Static_assert((type < GS_REC_LENGTHED) == GS_ENC_HOT_##cls,                       \
                   "record " #NAME ": its type and its class disagree");              \
    static inline uint8_t *gs_rec_##name(uint8_t *p GS_ENC_STATE_##cls                 \
                                         GS_PP_EACH(GS_ENC_PARAM, _, __VA_ARGS__))     \
    {                                                                                   \
        GS_ENC_OPEN_##cls(type)                                                         \
        GS_PP_EACH(GS_ENC_PUT, _, __VA_ARGS__)                                          \
        GS_ENC_CLOSE_##cls                                                              \
    }
#include "gcspy/records.def"
#undef GS_RECORD

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
