/*
 * Unit tests of what records.def generates: for every record type, the
 * encoder (include/gcspy/record.h) and the reader's decoder
 * (analyzer/trace_reader.c) agree on every field, at the extremes of each
 * encoding (0, 2^63, 2^64 - 1, the varint length boundaries, negative
 * signed values, empty and long strings, every byte value, more MODULE
 * segments than the reader keeps), the record takes no more room than its
 * GS_REC_<NAME>_MAX promises, and the names tables cover every type. The
 * round trip is generated from the same table, so a field added there is
 * tested without a line here; a few records are also checked against bytes
 * written out by hand, which the table cannot have produced.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcspy/names.h"
#include "gcspy/record.h"
#include "trace_builder.h"
#include "trace_reader.h"

/* ---- values ---- */

static const uint64_t vals[] = {
    0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0xffffffffull, 0x123456789abcdef0ull,
    (1ull << 63) - 1, 1ull << 63, UINT64_MAX - 1, UINT64_MAX,
};
#define NVALS (sizeof vals / sizeof vals[0])
#define ALL_ZERO NVALS        /* seeds past the table: every field 0, ... */
#define ALL_MAX (NVALS + 1)   /* ... every field 2^64 - 1 */
#define NSEEDS (NVALS + 2)

/* The value of field k under seed s: each field meets every value as s
 * goes round, and neighbours differ. */
static uint64_t val(unsigned s, unsigned k)
{
    if (s == ALL_ZERO)
        return 0;
    if (s == ALL_MAX)
        return UINT64_MAX;
    return vals[(s + 5 * k) % NVALS];
}

static const size_t lens[] = { 0, 1, 127, 128, 4096, 65535 };
#define NLENS (sizeof lens / sizeof lens[0])

static size_t len_of(unsigned s, unsigned k)
{
    if (s == ALL_ZERO)
        return 0;
    if (s == ALL_MAX)
        return lens[NLENS - 1];
    return lens[(s + k) % NLENS];
}

/* Bytes of every value, NUL included, different for each field. */
static uint8_t *bytes_of(size_t n, unsigned k)
{
    uint8_t *b = malloc(n ? n : 1);
    cr_assert_not_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 31 + k * 7);
    return b;
}

static size_t nseg_of(unsigned s)
{
    static const size_t n[] = { 0, 1, GS_MAX_SEGS, GS_MAX_SEGS + 3 };
    return n[s % 4];
}

/* ---- the round trip ---- */

static uint8_t payload[1 << 20];
static char err[512];

/* Frames payload[0, n) (which starts with a TIMEBASE) as a trace and reads
 * its second record into *rec. The reader stays open (rec's strings point
 * into its chunk) until finish(). */
struct read { struct gs_tb *tb; struct gs_reader *r; };

static struct read read_back(size_t n, uint8_t type, struct gs_record *rec)
{
    struct read rd = { gs_tb_new(), NULL };
    cr_assert_not_null(rd.tb);
    cr_assert_eq(gs_tb_raw(rd.tb, payload, n), 0);
    size_t len;
    const uint8_t *data = gs_tb_data(rd.tb, &len);
    cr_assert_not_null(data);
    rd.r = gs_reader_open_mem(data, len, err, sizeof err);
    cr_assert_not_null(rd.r, "%s", err);
    cr_assert_eq(gs_reader_next(rd.r, rec), GS_READ_OK, "%s", gs_reader_error(rd.r));
    cr_assert_eq(rec->type, GS_REC_TIMEBASE);
    int rc = gs_reader_next(rd.r, rec);
    cr_assert_eq(rc, GS_READ_OK, "type 0x%02x: %s", type, gs_reader_error(rd.r));
    cr_assert_eq(rec->type, type);
    return rd;
}

/* The record was read to its end: nothing follows, nothing was skipped. */
static void finish(struct read rd, uint8_t type)
{
    struct gs_record rec;
    cr_assert_eq(gs_reader_next(rd.r, &rec), GS_READ_EOF,
                 "type 0x%02x: the record was not read to its end", type);
    cr_assert_eq(gs_reader_skipped(rd.r), 0);
    gs_reader_close(rd.r);
    gs_tb_free(rd.tb);
}

/* Per field, by encoding: its test value(s) (VAL), the encoder's
 * argument(s) (ARG), the room it may take beyond GS_REC_<NAME>_MAX (ROOM),
 * the check of the decoded record (CHECK) and the test value's release. */
#define VAL(x, enc, m, key, print, en, check) VAL_##enc(m)
#define VAL_NUM(m) uint64_t v_##m = val(s, k_++);
#define VAL_U VAL_NUM
#define VAL_T VAL_NUM
#define VAL_UT VAL_NUM
#define VAL_U1 VAL_NUM
#define VAL_U2 VAL_NUM
#define VAL_U3 VAL_NUM
#define VAL_DT VAL_NUM
#define VAL_DA VAL_NUM
#define VAL_DI VAL_NUM
#define VAL_DP VAL_NUM
#define VAL_TB VAL_NUM
#define VAL_S(m) int64_t v_##m = (int64_t)val(s, k_++);
#define VAL_STR(m) size_t n_##m = len_of(s, k_); uint8_t *v_##m = bytes_of(n_##m, k_++);
#define VAL_BYTES VAL_STR
#define VAL_SEGS(m)                                                       \
    size_t n_##m = nseg_of(s);                                            \
    struct gs_seg v_##m[GS_MAX_SEGS + 3];                                 \
    for (size_t i_ = 0; i_ < n_##m; i_++, k_ += 3)                        \
        v_##m[i_] = (struct gs_seg){ val(s, k_), val(s, k_ + 1), val(s, k_ + 2) };
#define VAL_CLASSES(m)                                                    \
    uint64_t b_##m[GS_CLASS__N], y_##m[GS_CLASS__N];                      \
    for (int c_ = 0; c_ < GS_CLASS__N; c_++, k_ += 2) {                   \
        b_##m[c_] = val(s, k_);                                           \
        y_##m[c_] = val(s, k_ + 1);                                       \
    }

#define ARG(x, enc, m, key, print, en, check) ARG_##enc(m)
#define ARG_U(m) , v_##m
#define ARG_T ARG_U
#define ARG_UT ARG_U
#define ARG_U1 ARG_U
#define ARG_U2 ARG_U
#define ARG_U3 ARG_U
#define ARG_DT ARG_U
#define ARG_DA ARG_U
#define ARG_DI ARG_U
#define ARG_DP ARG_U
#define ARG_TB ARG_U
#define ARG_S ARG_U
#define ARG_STR(m) , v_##m, n_##m
#define ARG_BYTES ARG_STR
#define ARG_SEGS(m) , n_##m, v_##m
#define ARG_CLASSES(m) , b_##m, y_##m

#define ROOM(x, enc, m, key, print, en, check) ROOM_##enc(m)
#define ROOM_U(m)
#define ROOM_T ROOM_U
#define ROOM_UT ROOM_U
#define ROOM_U1 ROOM_U
#define ROOM_U2 ROOM_U
#define ROOM_U3 ROOM_U
#define ROOM_DT ROOM_U
#define ROOM_DA ROOM_U
#define ROOM_DI ROOM_U
#define ROOM_DP ROOM_U
#define ROOM_TB ROOM_U
#define ROOM_S ROOM_U
#define ROOM_STR(m) + n_##m
#define ROOM_BYTES ROOM_STR
#define ROOM_SEGS(m) + 3 * GS_VARINT_MAX * n_##m
#define ROOM_CLASSES ROOM_U

#define CHECK(x, enc, m, key, print, en, check) CHECK_##enc(x, m)
#define CHECK_U(x, m) cr_assert_eq(rec.u.x.m, v_##m, #m ": %" PRIu64 " read back as %" PRIu64, \
                                   (uint64_t)v_##m, (uint64_t)rec.u.x.m);
#define CHECK_U1 CHECK_U
#define CHECK_U2 CHECK_U
#define CHECK_U3 CHECK_U
#define CHECK_DA CHECK_U
#define CHECK_DI CHECK_U
#define CHECK_DP CHECK_U
#define CHECK_S CHECK_U
#define CHECK_UT(x, m) CHECK_U(x, m) cr_assert_eq(rec.t, v_##m);
#define CHECK_T(x, m) cr_assert_eq(rec.t, v_##m, "t: %" PRIu64 " read back as %" PRIu64, \
                                   v_##m, rec.t);
#define CHECK_DT CHECK_T
#define CHECK_TB CHECK_T
#define CHECK_STR(x, m)                                                   \
    cr_assert_eq(rec.u.x.m.n, n_##m, #m ": length");                      \
    cr_assert(n_##m == 0 || memcmp(rec.u.x.m.p, v_##m, n_##m) == 0, #m ": bytes");
#define CHECK_BYTES CHECK_STR
#define CHECK_SEGS(x, m)                                                  \
    cr_assert_eq(rec.u.x.n##m, n_##m < GS_MAX_SEGS ? n_##m : GS_MAX_SEGS); \
    for (size_t i_ = 0; i_ < rec.u.x.n##m; i_++) {                        \
        cr_assert_eq(rec.u.x.m[i_].vaddr, v_##m[i_].vaddr);               \
        cr_assert_eq(rec.u.x.m[i_].memsz, v_##m[i_].memsz);               \
        cr_assert_eq(rec.u.x.m[i_].flags, v_##m[i_].flags);               \
    }
/* the class array on the wire: the classes before RUNTIME (2.1) */
#define CHECK_CLASSES(x, m)                                               \
    cr_assert_eq(memcmp(rec.u.x.m##_blocks, b_##m, GS_CLASS_WIRE_N * 8), 0); \
    cr_assert_eq(memcmp(rec.u.x.m##_bytes, y_##m, GS_CLASS_WIRE_N * 8), 0);

#define FREE_FIELD(x, enc, m, key, print, en, check) FREE_##enc(m)
#define FREE_U(m)
#define FREE_T FREE_U
#define FREE_UT FREE_U
#define FREE_U1 FREE_U
#define FREE_U2 FREE_U
#define FREE_U3 FREE_U
#define FREE_DT FREE_U
#define FREE_DA FREE_U
#define FREE_DI FREE_U
#define FREE_DP FREE_U
#define FREE_TB FREE_U
#define FREE_S FREE_U
#define FREE_SEGS FREE_U
#define FREE_CLASSES FREE_U
#define FREE_STR(m) free(v_##m);
#define FREE_BYTES FREE_STR

#define STATE_DELTA , &st
#define STATE_HOT
#define STATE_LEN

/* rt_<name>(s): one record of that type with seed s's values, encoded,
 * framed, read back and compared field by field. */
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...)                \
    static void rt_##name(unsigned s)                                              \
    {                                                                              \
        unsigned k_ = 0;                                                           \
        GS_PP_EACH(VAL, x, __VA_ARGS__)                                            \
        (void)k_;                                                                  \
        struct gs_enc_state st = { 0 };                                         \
        uint8_t *p = gs_rec_timebase(payload, &st, 0);                             \
        uint8_t *start = p;                                                        \
        (void)st;                                                                  \
        p = gs_rec_##name(p STATE_##cls GS_PP_EACH(ARG, x, __VA_ARGS__));          \
        cr_assert_eq(*start, type);                                                \
        size_t room = GS_REC_##NAME##_MAX GS_PP_EACH(ROOM, x, __VA_ARGS__);        \
        cr_assert_leq((size_t)(p - start), room, #NAME ": %zu bytes, room for %zu", \
                      (size_t)(p - start), room);                                  \
        struct gs_record rec;                                                      \
        struct read rd = read_back((size_t)(p - payload), type, &rec);             \
        GS_PP_EACH(CHECK, x, __VA_ARGS__)                                          \
        finish(rd, type);                                                          \
        GS_PP_EACH(FREE_FIELD, x, __VA_ARGS__)                                     \
    }
#include "gcspy/records.def"
#undef GS_RECORD

Test(records, every_record_round_trips_at_the_extremes)
{
    unsigned types = 0;
    for (unsigned s = 0; s < NSEEDS; s++) {
#define GS_RECORD(NAME, name, ...) rt_##name(s), types += s == 0;
#include "gcspy/records.def"
#undef GS_RECORD
    }
    cr_assert_eq(types, 28, "records.def has %u records; this test knew 28", types);
}

/* ---- bytes written out by hand ---- */

static void bytes_are(const uint8_t *got, const uint8_t *end, const uint8_t *want, size_t n)
{
    cr_assert_eq((size_t)(end - got), n, "%zu bytes, expected %zu", (size_t)(end - got), n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "byte %zu: 0x%02x, expected 0x%02x", i, got[i], want[i]);
}

Test(records, encoders_write_the_documented_bytes)
{
    uint8_t b[256];
    struct gs_enc_state st = { 0 };
    /* TIMEBASE 1000, then FREE_EX at 1300 of 0x5000 (delta +0x5000, zigzag
     * 0xa000), thread 2, kind device, fn cuda_runtime, 7 ns */
    uint8_t *e = gs_rec_timebase(b, &st, 1000);
    e = gs_rec_free_ex(e, &st, 1300, 2, 0x5000, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 7);
    static const uint8_t free_ex[] = { 0x01, 0xe8, 0x07, 0x07, 0xac, 0x02, 0x02,
                                       0x80, 0xc0, 0x02, 0x03, 0x10, 0x07 };
    bytes_are(b, e, free_ex, sizeof free_ex);
    cr_assert_eq(st.t, 1300);
    cr_assert_eq(st.a, 0x5000);
    /* a time before the running one is written as dt 0 */
    e = gs_rec_free(b, &st, 1200, 0x4ff0);
    static const uint8_t free_[] = { 0x03, 0x00, 0x1f };
    bytes_are(b, e, free_, sizeof free_);

    /* PROCESS_EXIT t 300, status -1 (zigzag 1), how signal */
    e = gs_rec_process_exit(b, 300, -1, GS_EXIT_SIGNAL);
    static const uint8_t exit_[] = { 0x21, 0x84, 0x80, 0x00, 0xac, 0x02, 0x01, 0x01 };
    bytes_are(b, e, exit_, sizeof exit_);

    /* MODULE 3 at t 5, base 0x1000, path "/a", build id ab cd, two segments */
    const struct gs_seg seg[2] = { { 0, 0x10, 4 }, { 0x1000, 0x80, 5 } };
    e = gs_rec_module(b, 3, 5, 0x1000, "/a", 2, "\xab\xcd", 2, 2, seg);
    static const uint8_t module[] = { 0x22, 0x93, 0x80, 0x00, 0x03, 0x05, 0x80, 0x20,
                                      0x02, '/', 'a', 0x02, 0xab, 0xcd, 0x02,
                                      0x00, 0x10, 0x04, 0x80, 0x20, 0x80, 0x01, 0x05 };
    bytes_are(b, e, module, sizeof module);

    /* SCAN_END 1: times 1..4, 2 threads, then the class pairs 1, 64 / 0 ...,
     * then (1.2) 8192 bytes unreadable, then (2.1) none held by the CUDA runtime */
    const uint64_t blocks[GS_CLASS__N] = { 1, 0, 0, 2 }, bytes[GS_CLASS__N] = { 64, 0, 0, 300 };
    e = gs_rec_scan_end(b, 1, 1, 2, 3, 4, 2, 4096, 10, 3, 364, blocks, bytes, 8192, 0, 0);
    static const uint8_t scan_end[] = { 0x2d, 0x99, 0x80, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04,
                                        0x02, 0x80, 0x20, 0x0a, 0x03, 0xec, 0x02,
                                        0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x02, 0xac, 0x02,
                                        0x80, 0x40, 0x00, 0x00 };
    bytes_are(b, e, scan_end, sizeof scan_end);
}

/* The largest body a record may have (a 3-byte length): an EXEC whose path
 * fills it reads back whole. */
Test(records, a_body_of_the_largest_length_reads_back)
{
    size_t n = GS_REC_BODY_MAX - GS_VARINT_MAX - 3; /* t of 10 bytes, 3-byte length */
    uint8_t *path = bytes_of(n, 1);
    struct gs_enc_state st = { 0 };
    uint8_t *big = malloc(GS_REC_EXEC_MAX + n + 16);
    cr_assert_not_null(big);
    uint8_t *p = gs_rec_timebase(big, &st, 0);
    uint8_t *e = gs_rec_exec(p, UINT64_MAX, path, n);
    cr_assert_eq((size_t)(e - p), 4 + (size_t)GS_REC_BODY_MAX);
    struct gs_tb *tb = gs_tb_new();
    cr_assert_eq(gs_tb_raw(tb, big, (size_t)(e - big)), 0);
    size_t len;
    const uint8_t *data = gs_tb_data(tb, &len);
    struct gs_reader *r = gs_reader_open_mem(data, len, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct gs_record rec;
    cr_assert_eq(gs_reader_next(r, &rec), GS_READ_OK);
    cr_assert_eq(gs_reader_next(r, &rec), GS_READ_OK, "%s", gs_reader_error(r));
    cr_assert_eq(rec.type, GS_REC_EXEC);
    cr_assert_eq(rec.t, UINT64_MAX);
    cr_assert_eq(rec.u.exec.path.n, n);
    cr_assert_eq(memcmp(rec.u.exec.path.p, path, n), 0);
    gs_reader_close(r);
    gs_tb_free(tb);
    free(big);
    free(path);
}

Test(records, every_type_and_enum_value_has_a_name)
{
    unsigned n = 0;
#define GS_RECORD(NAME, name, type, cls, x, dump, ...)                            \
    cr_assert_str_eq(gs_rec_type_name(type), #NAME);                              \
    cr_assert_str_eq(gs_rec_dump_name(type), dump);                               \
    n++;
#include "gcspy/records.def"
#undef GS_RECORD
    cr_assert_eq(n, 28);
    cr_assert_null(gs_rec_type_name(0x00));
    cr_assert_null(gs_rec_type_name(0x08));
    cr_assert_null(gs_rec_type_name(0x35));
    cr_assert_null(gs_rec_dump_name(0xff));
#define GS_ENUM(e, prefix, doc)
#define GS_ENUM_VAL(prefix, NAME, value, name, doc)                               \
    cr_assert_eq(prefix##NAME, value);                                            \
    cr_assert_str_eq(GS_ENUM_NAME_OF(prefix)(value), name);
#define GS_ENUM_END(e, prefix)
#define GS_ENUM_NAME_OF(prefix) GS_ENUM_NAME_##prefix
#define GS_ENUM_NAME_GS_MEM_ gs_mem_kind_name
#define GS_ENUM_NAME_GS_FN_ gs_alloc_fn_name
#define GS_ENUM_NAME_GS_CLASS_ gs_leak_class_name
#define GS_ENUM_NAME_GS_SCAN_TRIG_ gs_scan_trigger_name
#define GS_ENUM_NAME_GS_PAUSE_ gs_pause_kind_name
#define GS_ENUM_NAME_GS_MARK_ gs_mark_kind_name
#define GS_ENUM_NAME_GS_EXIT_ gs_exit_how_name
#define GS_ENUM_NAME_GS_UNWIND_ gs_unwinder_name
#define GS_ENUM_NAME_GS_POOL_WHY_ gs_pool_why_name
#define GS_ENUM_NAME_GS_POOL_ gs_pool_kind_name
#define GS_ENUM_NAME_GS_PBLK_ gs_pool_block_state_name
#define GS_ENUM_NAME_GS_PEV_ gs_pool_action_name
#include "gcspy/enums.def"
#undef GS_ENUM
#undef GS_ENUM_VAL
#undef GS_ENUM_END
    /* a hole and the end print as numbers */
    cr_assert_null(gs_alloc_fn_name(6));
    cr_assert_null(gs_alloc_fn_name(GS_FN__N));
    cr_assert_null(gs_mem_kind_name(GS_MEM__N));
    cr_assert_eq(GS_CLASS__N, 5);
    cr_assert_eq(GS_PEV__N, 10);
}
