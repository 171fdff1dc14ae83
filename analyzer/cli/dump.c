/*
 * `gcspy dump FILE`: every record of a trace as one line of text, for people
 * debugging traces and for tests that compare traces as text. The grammar is
 * stable (docs/trace-format.md, "gcspy dump"):
 *
 *   line  = name *(" " key "=" value)
 *   value = decimal | "-" (unset) | "0x" hex (addresses, ips, streams)
 *         | hex bytes (build_id, possibly empty) | a word (enum names)
 *         | '"' C-escaped string '"'
 *
 * Strings are quoted with C escapes (\\ \" \n \r \t, any other byte outside
 * 0x20..0x7e as \xHH, always two digits), so any bytes print safely and each
 * record stays on one line. Records with one time put t= first. Unknown enum
 * values print as decimal numbers. Each record's line is generated from
 * include/gcspy/records.def (its word, keys, order and print column) and
 * enum names come from enums.def, so the table and the printer cannot
 * disagree.
 *
 * The first line is `trace version=MAJOR.MINOR file="..."`, the last
 * `end chunks=N records=M complete=yes|no` (complete: a TRACE_END was read).
 * On damage everything readable is printed, the end line too, then one line
 * on stderr and exit status 2.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "gcspy/names.h"
#include "gcspy/pp.h"
#include "trace_reader.h"

/* Output through the stream's buffer one byte at a time (dump writes tens of
 * millions of short fields; printf's parsing was most of its time). */
static void put_s(FILE *f, const char *s)
{
    while (*s)
        putc_unlocked(*s++, f);
}

static void put_u64(FILE *f, uint64_t v)
{
    char b[20], *p = b + sizeof b;
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    while (p < b + sizeof b)
        putc_unlocked(*p++, f);
}

static void put_i64(FILE *f, int64_t v)
{
    if (v < 0)
        putc_unlocked('-', f);
    put_u64(f, v < 0 ? -(uint64_t)v : (uint64_t)v);
}

/* "0x" then lower-case hex digits, as printf's "0x%x". */
static void put_x64(FILE *f, uint64_t v)
{
    char b[16], *p = b + sizeof b;
    do
        *--p = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    putc_unlocked('0', f);
    putc_unlocked('x', f);
    while (p < b + sizeof b)
        putc_unlocked(*p++, f);
}

static void put_byte_hex(FILE *f, uint8_t c)
{
    putc_unlocked("0123456789abcdef"[c >> 4], f);
    putc_unlocked("0123456789abcdef"[c & 15], f);
}

/* One byte of a quoted string, C-escaped. */
static void put_char(FILE *f, uint8_t c)
{
    switch (c) {
    case '\\': put_s(f, "\\\\"); break;
    case '"': put_s(f, "\\\""); break;
    case '\n': put_s(f, "\\n"); break;
    case '\r': put_s(f, "\\r"); break;
    case '\t': put_s(f, "\\t"); break;
    default:
        if (c >= 0x20 && c < 0x7f) {
            putc_unlocked(c, f);
        } else {
            put_s(f, "\\x");
            put_byte_hex(f, c);
        }
    }
}

static void put_str(FILE *f, struct gs_bytes b)
{
    putc_unlocked('"', f);
    for (size_t i = 0; i < b.n; i++)
        put_char(f, b.p[i]);
    putc_unlocked('"', f);
}

/* argv is NUL-separated: printed as one string with the arguments joined by
 * spaces; a space inside an argument is written \x20 so the split stays
 * recoverable. */
static void put_argv(FILE *f, struct gs_bytes b)
{
    putc_unlocked('"', f);
    for (size_t i = 0; i < b.n; i++) {
        if (b.p[i] == '\0')
            putc_unlocked(' ', f);
        else if (b.p[i] == ' ')
            put_s(f, "\\x20");
        else
            put_char(f, b.p[i]);
    }
    putc_unlocked('"', f);
}

static void put_hex(FILE *f, struct gs_bytes b)
{
    for (size_t i = 0; i < b.n; i++)
        put_byte_hex(f, b.p[i]);
}

/* name, or v in decimal when it has none. */
static void put_enum(FILE *f, uint64_t v, const char *name)
{
    if (name)
        put_s(f, name);
    else
        put_u64(f, v);
}

static void put_segflags(FILE *f, uint64_t fl)
{
    /* PF_R 4, PF_W 2, PF_X 1 (elf.h) */
    putc_unlocked(fl & 4 ? 'r' : '-', f);
    putc_unlocked(fl & 2 ? 'w' : '-', f);
    putc_unlocked(fl & 1 ? 'x' : '-', f);
}

/* " key=" then the value, by records.def's print column; s is the
 * record's union member, m the field's member in it, en its enum. */
#define PUT_KEY(key) put_s(f, " " key "=")
#define PUT_DEC(key, s, m, en) PUT_KEY(key), _Generic((s).m, int64_t: put_i64, default: put_u64)(f, (s).m)
#define PUT_HEX(key, s, m, en) PUT_KEY(key), put_x64(f, (s).m)
/* rank+1 style fields: 0 means unset. */
#define PUT_PLUS1(key, s, m, en) \
    PUT_KEY(key), (s).m ? put_u64(f, (s).m - 1) : (void)putc_unlocked('-', f)
#define PUT_ENUM(key, s, m, en) PUT_KEY(key), put_enum(f, (s).m, gs_##en##_name((s).m))
/* minor 1 appended the field: 0 (and older records) print as before */
#define PUT_ENUMNZ(key, s, m, en) if ((s).m) PUT_ENUM(key, s, m, en)
#define PUT_DECNZ(key, s, m, en) if ((s).m) PUT_DEC(key, s, m, en)
#define PUT_QSTR(key, s, m, en) PUT_KEY(key), put_str(f, (s).m)
#define PUT_HEXB(key, s, m, en) PUT_KEY(key), put_hex(f, (s).m)
#define PUT_ARGV(key, s, m, en) PUT_KEY(key), put_argv(f, (s).m)
#define PUT_IP(key, s, m, en)                                                   \
    PUT_HEX(key, s, m, en);                                                     \
    if ((s).m & GS_IP_PYFRAME) {                                                \
        put_s(f, " pycode=");                                                   \
        put_u64(f, ((s).m & ~GS_IP_PYFRAME) >> 32);                             \
        put_s(f, " line=");                                                     \
        put_u64(f, (s).m & 0xffffffffu);                                        \
    }
#define PUT_SEGS(key, s, m, en)                                                 \
    PUT_KEY(key);                                                               \
    for (uint64_t i_ = 0; i_ < (s).n##m; i_++) {                                \
        if (i_)                                                                 \
            putc_unlocked(',', f);                                              \
        put_x64(f, (s).m[i_].vaddr);                                            \
        putc_unlocked('+', f);                                                  \
        put_x64(f, (s).m[i_].memsz);                                            \
        putc_unlocked(':', f);                                                  \
        put_segflags(f, (s).m[i_].flags);                                       \
    }
#define PUT_CLASSES(key, s, m, en)                                              \
    for (int c_ = 0; c_ < GS_CLASS_WIRE_N; c_++) {                              \
        putc_unlocked(' ', f);                                                  \
        put_s(f, gs_##en##_name(c_));                                           \
        put_s(f, "_blocks=");                                                   \
        put_u64(f, (s).m##_blocks[c_]);                                         \
        putc_unlocked(' ', f);                                                  \
        put_s(f, gs_##en##_name(c_));                                           \
        put_s(f, "_bytes=");                                                    \
        put_u64(f, (s).m##_bytes[c_]);                                          \
    }

/* The record's time prints first (as t=), every other field in order. */
#define TIME_FIELD(x, enc, m, key, print, en, check) TIME_##enc
#define TIME_T put_s(f, " t="), put_u64(f, r->t);
#define TIME_DT TIME_T
#define TIME_TB TIME_T
#define TIME_U
#define TIME_S
#define TIME_UT
#define TIME_U1
#define TIME_U2
#define TIME_U3
#define TIME_DA
#define TIME_DI
#define TIME_DP
#define TIME_STR
#define TIME_BYTES
#define TIME_SEGS
#define TIME_CLASSES
#define OTHER_FIELD(x, enc, m, key, print, en, check) OTHER_##enc(PUT_##print(key, r->u.x, m, en);)
#define OTHER_T(put)
#define OTHER_DT(put)
#define OTHER_TB(put)
#define OTHER_U(put) put
#define OTHER_S(put) put
#define OTHER_UT(put) put
#define OTHER_U1(put) put
#define OTHER_U2(put) put
#define OTHER_U3(put) put
#define OTHER_DA(put) put
#define OTHER_DI(put) put
#define OTHER_DP(put) put
#define OTHER_STR(put) put
#define OTHER_BYTES(put) put
#define OTHER_SEGS(put) put
#define OTHER_CLASSES(put) put

static void print_record(FILE *f, const struct gs_record *r)
{
    switch (r->type) {
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...)                 \
    case GS_REC_##NAME:                                                             \
        put_s(f, dump);                                                             \
        GS_PP_EACH(TIME_FIELD, x, __VA_ARGS__)                                      \
        GS_PP_EACH(OTHER_FIELD, x, __VA_ARGS__)                                     \
        break;
#include "gcspy/records.def"
#undef GS_RECORD
    default:
        /* The reader only returns types it decodes; keep the line anyway. */
        fprintf(f, "unknown type=0x%02x", r->type);
    }
    putc_unlocked('\n', f);
}

static void dump_usage(FILE *f)
{
    fprintf(f, "usage: gcspy dump FILE\n\n"
               "Prints every record of the trace FILE ('-': standard input) as one line\n"
               "of key=value text; the grammar is in docs/trace-format.md. Exit status 0\n"
               "for a clean trace, 2 when it is damaged (what precedes the damage is\n"
               "printed, then the offset of the damage on stderr).\n");
}

int gs_cmd_dump(int argc, char **argv)
{
    const char *path = NULL;
    int opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && strcmp(a, "--") == 0) {
            opts = 0;
        } else if (opts && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            dump_usage(stdout);
            return 0;
        } else if (opts && a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "gcspy dump: unknown option '%s' (see gcspy dump --help)\n", a);
            return 2;
        } else if (path) {
            fprintf(stderr, "gcspy dump: one trace file at a time ('%s' is extra)\n", a);
            return 2;
        } else {
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "gcspy dump: missing trace file (usage: gcspy dump FILE)\n");
        return 2;
    }

    char err[512];
    int stdin_ = strcmp(path, "-") == 0;
    const char *name = stdin_ ? "<stdin>" : path;
    struct gs_reader *r = stdin_ ? gs_reader_open_fd(STDIN_FILENO, name, err, sizeof err)
                                 : gs_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "gcspy dump: %s\n", err);
        return 2;
    }

    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    printf("trace version=%u.%u file=", gs_reader_major(r), gs_reader_minor(r));
    put_str(stdout, (struct gs_bytes){ (const uint8_t *)name, strlen(name) });
    putchar('\n');

    struct gs_record rec;
    uint64_t records = 0;
    int complete = 0, rc;
    while ((rc = gs_reader_next(r, &rec)) == GS_READ_OK) {
        print_record(stdout, &rec);
        records++;
        if (rec.type == GS_REC_TRACE_END)
            complete = 1;
    }
    printf("end chunks=%" PRIu64 " records=%" PRIu64 " complete=%s\n", gs_reader_chunks(r),
           records, complete ? "yes" : "no");
    int status = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gcspy dump: write error on standard output\n");
        status = 2;
    }
    if (rc == GS_READ_DAMAGED) {
        fprintf(stderr, "gcspy dump: %s: %s\n", name, gs_reader_error(r));
        status = 2;
    }
    gs_reader_close(r);
    return status;
}
