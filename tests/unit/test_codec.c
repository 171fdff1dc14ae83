/*
 * Unit tests of include/gcspy/codec.h: varint and zigzag round trips at the
 * edges of every byte length, exact encodings of known values, decoder bounds
 * (never past `end`, over-long varints refused), strings, little-endian
 * helpers, and CRC-32C against published vectors with the SSE4.2 and the
 * portable paths agreeing.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "gcspy/codec.h"

static size_t enc_u(uint8_t *buf, uint64_t v)
{
    return (size_t)(gs_put_u(buf, v) - buf);
}

static const uint64_t u_edges[] = {
    0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1fffff, 0x200000, 0xfffffff, 0x10000000,
    0x7ffffffffull, 0x800000000ull, 0xffffffffull, 0x100000000ull,
    (1ull << 49) - 1, 1ull << 49, (1ull << 56) - 1, 1ull << 56, (1ull << 63) - 1,
    1ull << 63, UINT64_MAX,
};

Test(codec, varint_round_trip_edges)
{
    for (size_t i = 0; i < sizeof u_edges / sizeof u_edges[0]; i++) {
        uint8_t buf[GS_VARINT_MAX + 4];
        size_t n = enc_u(buf, u_edges[i]);
        cr_assert_leq(n, GS_VARINT_MAX);
        const uint8_t *p = buf;
        uint64_t got = 12345;
        cr_assert_eq(gs_get_u(&p, buf + n, &got), 0, "value %llu", (unsigned long long)u_edges[i]);
        cr_assert_eq(got, u_edges[i]);
        cr_assert_eq(p, buf + n, "decoder consumed %td of %zu bytes", p - buf, n);
    }
}

Test(codec, varint_lengths)
{
    uint8_t buf[16];
    cr_assert_eq(enc_u(buf, 0), 1);
    cr_assert_eq(enc_u(buf, 0x7f), 1);
    cr_assert_eq(enc_u(buf, 0x80), 2);
    cr_assert_eq(enc_u(buf, 0x3fff), 2);
    cr_assert_eq(enc_u(buf, 0x4000), 3);
    cr_assert_eq(enc_u(buf, (1ull << 63) - 1), 9);
    cr_assert_eq(enc_u(buf, UINT64_MAX), 10);
}

Test(codec, varint_known_bytes)
{
    uint8_t buf[16];
    size_t n = enc_u(buf, 300);
    cr_assert_eq(n, 2);
    cr_assert_eq(buf[0], 0xac);
    cr_assert_eq(buf[1], 0x02);
    n = enc_u(buf, UINT64_MAX);
    for (size_t i = 0; i < 9; i++)
        cr_assert_eq(buf[i], 0xff);
    cr_assert_eq(buf[9], 0x01);
}

Test(codec, varint_truncated_input_is_refused)
{
    uint8_t buf[16];
    size_t n = enc_u(buf, 1ull << 40);
    for (size_t cut = 0; cut < n; cut++) {
        const uint8_t *p = buf;
        uint64_t v = 7;
        cr_assert_eq(gs_get_u(&p, buf + cut, &v), -1, "cut at %zu", cut);
        cr_assert_eq(p, buf, "cursor must not move on failure");
        cr_assert_eq(v, 7, "output must not change on failure");
    }
}

Test(codec, varint_longer_than_ten_bytes_is_refused)
{
    uint8_t buf[12];
    memset(buf, 0x80, sizeof buf);
    buf[11] = 0x00;
    const uint8_t *p = buf;
    uint64_t v;
    cr_assert_eq(gs_get_u(&p, buf + sizeof buf, &v), -1);
    cr_assert_eq(p, buf);
}

Test(codec, zigzag_round_trip_and_mapping)
{
    static const int64_t s[] = {
        0, -1, 1, -2, 2, 63, -64, 64, -65, INT32_MAX, INT32_MIN,
        INT64_MAX, INT64_MIN, INT64_MIN + 1, -0x1000, 0x1000,
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        uint8_t buf[16];
        size_t n = (size_t)(gs_put_s(buf, s[i]) - buf);
        const uint8_t *p = buf;
        int64_t got = 0;
        cr_assert_eq(gs_get_s(&p, buf + n, &got), 0);
        cr_assert_eq(got, s[i], "value %lld", (long long)s[i]);
        cr_assert_eq(p, buf + n);
    }
    /* zigzag: 0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3; small magnitudes stay one byte */
    uint8_t b[16];
    gs_put_s(b, 0);  cr_assert_eq(b[0], 0);
    gs_put_s(b, -1); cr_assert_eq(b[0], 1);
    gs_put_s(b, 1);  cr_assert_eq(b[0], 2);
    gs_put_s(b, -2); cr_assert_eq(b[0], 3);
    cr_assert_eq(gs_put_s(b, -64) - b, 1);
    cr_assert_eq(gs_put_s(b, 64) - b, 2);
    cr_assert_eq(gs_put_s(b, INT64_MIN) - b, 10);
}

Test(codec, address_delta_wraps_modulo_2_64)
{
    /* The writer codes addr - a as a signed 64-bit delta; from a high
     * address to a low one and back must reproduce both exactly. */
    uint64_t a = 0xffff800000001000ull, b = 0x1000;
    uint8_t buf[32];
    uint8_t *e = gs_put_s(buf, (int64_t)(b - a));
    e = gs_put_s(e, (int64_t)(a - b));
    const uint8_t *p = buf;
    int64_t d1, d2;
    cr_assert_eq(gs_get_s(&p, e, &d1), 0);
    cr_assert_eq(gs_get_s(&p, e, &d2), 0);
    cr_assert_eq(a + (uint64_t)d1, b);
    cr_assert_eq(b + (uint64_t)d2, a);
}

Test(codec, bytes_and_strings)
{
    uint8_t buf[64];
    uint8_t *e = gs_put_str(buf, "hello");
    e = gs_put_str(e, NULL);
    e = gs_put_bytes(e, "a\0b", 3);
    cr_assert_eq(e - buf, 6 + 1 + 4);
    const uint8_t *p = buf, *s;
    size_t n;
    cr_assert_eq(gs_get_bytes(&p, e, &s, &n), 0);
    cr_assert_eq(n, 5);
    cr_assert_eq(memcmp(s, "hello", 5), 0);
    cr_assert_eq(gs_get_bytes(&p, e, &s, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(gs_get_bytes(&p, e, &s, &n), 0);
    cr_assert_eq(n, 3);
    cr_assert_eq(memcmp(s, "a\0b", 3), 0);
    cr_assert_eq(p, e);
    /* A length past the end is refused. */
    p = buf;
    cr_assert_eq(gs_get_bytes(&p, buf + 5, &s, &n), -1);
}

Test(codec, little_endian_helpers)
{
    uint8_t b[8];
    gs_st32(b, 0x11223344u);
    cr_assert_eq(b[0], 0x44);
    cr_assert_eq(b[3], 0x11);
    cr_assert_eq(gs_le32(b), 0x11223344u);
    gs_st64(b, 0x0102030405060708ull);
    cr_assert_eq(b[0], 0x08);
    cr_assert_eq(b[7], 0x01);
    cr_assert_eq(gs_le64(b), 0x0102030405060708ull);
}

Test(codec, crc32c_known_vectors)
{
    cr_assert_eq(gs_crc32c("123456789", 9), 0xE3069283u);
    cr_assert_eq(gs_crc32c("", 0), 0x00000000u);
    /* RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of 0xff, and ascending. */
    uint8_t z[32], f[32], inc[32];
    memset(z, 0, sizeof z);
    memset(f, 0xff, sizeof f);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    cr_assert_eq(gs_crc32c(z, 32), 0x8A9136AAu);
    cr_assert_eq(gs_crc32c(f, 32), 0x62A8AB43u);
    cr_assert_eq(gs_crc32c(inc, 32), 0x46DD794Eu);
}

Test(codec, crc32c_software_path_matches_vectors)
{
    cr_assert_eq(~gs_crc32c_sw(0xFFFFFFFFu, (const uint8_t *)"123456789", 9), 0xE3069283u);
}

#if defined(__x86_64__)
Test(codec, crc32c_hardware_and_software_agree)
{
    if (!__builtin_cpu_supports("sse4.2"))
        cr_skip_test("no SSE4.2 on this CPU");
    /* Every length 0..300 and every start alignment 0..7, over pseudo-random
     * bytes, so the 8-byte loop and the byte tail are both exercised. */
    uint8_t buf[320];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n <= 300; n++) {
            uint32_t hw = ~gs_crc32c_hw(0xFFFFFFFFu, buf + off, n);
            uint32_t sw = ~gs_crc32c_sw(0xFFFFFFFFu, buf + off, n);
            cr_assert_eq(hw, sw, "off %zu len %zu: hw %08x sw %08x", off, n, hw, sw);
        }
    cr_assert_eq(~gs_crc32c_hw(0xFFFFFFFFu, (const uint8_t *)"123456789", 9), 0xE3069283u);
}
#endif
