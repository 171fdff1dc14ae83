/*
 * Encoding primitives of the trace format, shared by writer and reader so the
 * two can never disagree: LEB128 varints, zigzag signed varints, strings, and
 * CRC-32C. Everything is static inline and allocation-free, so the shim can
 * use it on its hot path and inside signal-unsafe-free sections.
 *
 * Decoders take a cursor and an end pointer and return 0 on success, -1 when
 * the input runs out or a varint is longer than 10 bytes; they never read
 * past `end`.
 */
#ifndef GCSPY_CODEC_H
#define GCSPY_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GS_VARINT_MAX 10

static inline uint8_t *gs_put_u(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *gs_put_s(uint8_t *p, int64_t v)
{
    return gs_put_u(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static inline uint8_t *gs_put_bytes(uint8_t *p, const void *s, size_t n)
{
    p = gs_put_u(p, n);
    if (n)
        memcpy(p, s, n);
    return p + n;
}

static inline uint8_t *gs_put_str(uint8_t *p, const char *s)
{
    return gs_put_bytes(p, s, s ? strlen(s) : 0);
}

/* Most fields of a trace are one byte (a type, a thread, a stack delta)
 * or two (a time delta): those are read first, under one bounds check. */
static inline int gs_get_u(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(end - p >= 2, 1)) {
        if (!(p[0] & 0x80)) {
            *out = p[0];
            *pp = p + 1;
            return 0;
        }
        if (!(p[1] & 0x80)) {
            *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            *pp = p + 2;
            return 0;
        }
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline int gs_get_s(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
    uint64_t u;
    if (gs_get_u(pp, end, &u))
        return -1;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* A length-prefixed byte string; *s points into the input (not terminated). */
static inline int gs_get_bytes(const uint8_t **pp, const uint8_t *end,
                               const uint8_t **s, size_t *n)
{
    uint64_t len;
    if (gs_get_u(pp, end, &len) || len > (uint64_t)(end - *pp))
        return -1;
    *s = *pp;
    *n = (size_t)len;
    *pp += len;
    return 0;
}

static inline uint32_t gs_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t gs_le64(const uint8_t *p)
{
    return (uint64_t)gs_le32(p) | (uint64_t)gs_le32(p + 4) << 32;
}

static inline void gs_st32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static inline void gs_st64(uint8_t *p, uint64_t v)
{
    gs_st32(p, (uint32_t)v);
    gs_st32(p + 4, (uint32_t)(v >> 32));
}

/* CRC-32C (Castagnoli). The SSE4.2 instruction when the CPU has it (every
 * x86-64 machine of the last decade), a bitwise loop otherwise; both give the
 * same value, so traces move between machines. */
#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static inline uint32_t gs_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}
#endif

static inline uint32_t gs_crc32c_sw(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & -(crc & 1));
    }
    return crc;
}

static inline uint32_t gs_crc32c(const void *data, size_t n)
{
    const uint8_t *p = (const uint8_t *)data;
    uint32_t crc = 0xFFFFFFFFu;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~gs_crc32c_hw(crc, p, n);
#endif
    return ~gs_crc32c_sw(crc, p, n);
}

#endif /* GCSPY_CODEC_H */
