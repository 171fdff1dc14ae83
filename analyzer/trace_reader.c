/*
 * The streaming trace reader (API in trace_reader.h). It holds one chunk at
 * a time: the chunk header is read and checked (magic, header CRC, sequence,
 * size limits), then the payload is read with read(2), its CRC checked and
 * decompressed into a buffer of exactly raw_len bytes; records are decoded
 * from that buffer one per gs_reader_next call, by cases generated from
 * include/gcspy/records.def (straight-line code per record type). Memory is
 * therefore bounded by GS_CHUNK_RAW_MAX plus its compressed bound (and a
 * stream's window, GS_ZSTD_WINDOW_LOG_MAX), whatever
 * the file size.
 *
 * Damage is sticky: the first problem found sets the error text and every
 * later call returns GS_READ_DAMAGED again. Because records are decoded
 * lazily, every record before the damaged one has already been returned when
 * the damage is reported. A chunk is only entered after its header and
 * payload checks pass, so chunk-level damage never yields half a chunk.
 *
 * A stream trace (GS_FILE_F_ZSTD_STREAM, 2.0) is one zstd stream cut into
 * chunks at flush points: one decompression context lives across chunks
 * (its window is what later chunks refer to), reset where a payload starts
 * a new frame. Damage anywhere stops the reader there, so a chunk is never
 * decoded against a window that misses a chunk.
 */
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "gcspy/codec.h"
#include "gcspy/pp.h"
#include "regfile.h"

/* A header larger than ours comes from a newer minor version that appended
 * fields; they are skipped. Anything larger than this is not a header. */
#define GS_FILE_HDR_MAX 4096u

struct gs_reader {
    int fd;                 /* -1: reading from mem */
    int own_fd;
    const uint8_t *mem;
    size_t mem_len;

    uint16_t major, minor;
    uint64_t flags;

    uint64_t off;           /* input bytes consumed (end of the last whole chunk) */
    uint64_t chunks;        /* chunks fully read and verified */
    uint64_t skipped;
    uint32_t next_seq;

    /* The current chunk. */
    uint64_t chunk_off;
    uint32_t chunk_seq;
    uint8_t *comp;          /* compressed payload (fd input only) */
    size_t comp_cap;
    uint8_t *raw;           /* decompressed payload */
    size_t raw_cap, raw_len, pos;
    int in_chunk;
    uint64_t t, a, sid;     /* delta-coding state, reset by TIMEBASE */

    int keep;               /* gs_reader_keep_chunks */
    uint8_t *spent;         /* the buffer a new chunk replaced (keep mode) */

    ZSTD_DCtx *dctx;
    int state;              /* GS_READ_OK, or the sticky EOF/DAMAGED */
    int cut;                /* the damage: the file ends inside a chunk */
    char err[256];
};

__attribute__((format(printf, 2, 3)))
static int damaged(struct gs_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->state = GS_READ_DAMAGED;
    return GS_READ_DAMAGED;
}

/* Reads up to n bytes at the current input position. From a file, into dst
 * (a short count only at end of file); from memory, *out points into the
 * caller's buffer. Returns the count, or -1 on a read error (errno set). */
static ssize_t input(struct gs_reader *r, uint8_t *dst, size_t n, const uint8_t **out)
{
    if (r->fd < 0) {
        size_t left = r->off < r->mem_len ? r->mem_len - (size_t)r->off : 0;
        *out = r->mem + (r->off < r->mem_len ? r->off : r->mem_len);
        return (ssize_t)(n < left ? n : left);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(r->fd, dst + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    *out = dst;
    return (ssize_t)got;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (*cap >= need && *buf)
        return 0;
    size_t c = *cap ? *cap : 65536;
    while (c < need)
        c *= 2;
    uint8_t *p = realloc(*buf, c);
    if (!p)
        return -1;
    *buf = p;
    *cap = c;
    return 0;
}

static struct gs_reader *open_common(struct gs_reader *r, const char *name,
                                     char *err, size_t errlen)
{
    uint8_t hbuf[GS_FILE_HDR_SIZE];
    const uint8_t *h;
    ssize_t n = input(r, hbuf, GS_FILE_HDR_SIZE, &h);
    if (n < 0) {
        snprintf(err, errlen, "%s: read error: %s", name, strerror(errno));
        goto fail;
    }
    size_t m = (size_t)n < GS_TRACE_MAGIC_LEN ? (size_t)n : GS_TRACE_MAGIC_LEN;
    if (n == 0) {
        snprintf(err, errlen, "%s: offset 0: empty file, not a gcspy trace", name);
        goto fail;
    }
    if (memcmp(h, GS_TRACE_MAGIC, m) != 0) {
        snprintf(err, errlen, "%s: offset 0: not a gcspy trace (bad magic)", name);
        goto fail;
    }
    if ((size_t)n < GS_FILE_HDR_SIZE) {
        snprintf(err, errlen, "%s: offset %zd: truncated file header (%zd of %u bytes)",
                 name, n, n, GS_FILE_HDR_SIZE);
        goto fail;
    }
    r->major = (uint16_t)(h[8] | h[9] << 8);
    r->minor = (uint16_t)(h[10] | h[11] << 8);
    uint32_t hsize = gs_le32(h + 12);
    r->flags = gs_le64(h + 16);
    if (r->major > GS_TRACE_MAJOR) {
        snprintf(err, errlen,
                 "%s: offset 8: trace format version %u.%u is newer than this gcspy reads "
                 "(%u.x to %u.x); upgrade gcspy", name, r->major, r->minor,
                 GS_TRACE_MAJOR_OLDEST, GS_TRACE_MAJOR);
        goto fail;
    }
    if (r->major < GS_TRACE_MAJOR_OLDEST) {
        snprintf(err, errlen,
                 "%s: offset 8: trace format version %u.%u is not one this gcspy reads "
                 "(%u.x to %u.x)", name, r->major, r->minor, GS_TRACE_MAJOR_OLDEST,
                 GS_TRACE_MAJOR);
        goto fail;
    }
    /* Major 1 knows only frames per chunk: no 1.x writer sets the stream
     * flag, since a 1.x reader could not read what it wrote. */
    uint64_t known = r->major == 1 ? GS_FILE_F_KNOWN_1 : GS_FILE_F_KNOWN;
    if (r->flags & ~known) {
        snprintf(err, errlen,
                 "%s: offset 16: unknown file flags 0x%" PRIx64 " (trace format %u.%u); "
                 "upgrade gcspy", name, r->flags & ~known, r->major, r->minor);
        goto fail;
    }
    if ((r->flags & GS_FILE_F_ZSTD_STREAM) && !(r->flags & GS_FILE_F_ZSTD)) {
        snprintf(err, errlen, "%s: offset 16: file flags 0x%" PRIx64 ": a zstd stream "
                 "without zstd", name, r->flags);
        goto fail;
    }
    if (hsize < GS_FILE_HDR_SIZE || hsize > GS_FILE_HDR_MAX) {
        snprintf(err, errlen, "%s: offset 12: bad file header size %" PRIu32, name, hsize);
        goto fail;
    }
    r->off = GS_FILE_HDR_SIZE;
    if (hsize > GS_FILE_HDR_SIZE) {
        size_t extra = hsize - GS_FILE_HDR_SIZE;
        uint8_t skip[GS_FILE_HDR_MAX];
        n = input(r, skip, extra, &h);
        if (n < 0 || (size_t)n < extra) {
            snprintf(err, errlen, "%s: offset %" PRIu64 ": truncated file header",
                     name, r->off + (n > 0 ? (uint64_t)n : 0));
            goto fail;
        }
        r->off += extra;
    }
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        snprintf(err, errlen, "%s: out of memory", name);
        goto fail;
    }
    /* A stream's window is memory the reader holds for the whole trace:
     * bounded like a chunk (the shim's level 1 asks 512 KiB). */
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, GS_ZSTD_WINDOW_LOG_MAX);
    return r;
fail:
    if (r->own_fd)
        close(r->fd);
    free(r);
    return NULL;
}

struct gs_reader *gs_reader_open_fd(int fd, const char *name, char *err, size_t errlen)
{
    struct gs_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    r->fd = fd;
    return open_common(r, name, err, errlen);
}

struct gs_reader *gs_reader_open(const char *path, char *err, size_t errlen)
{
    /* a regular file only: a FIFO or a terminal named as a trace would
     * make the first read wait forever (regfile.h) */
    int fd = gs_open_regular(path);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, gs_open_why(fd));
        return NULL;
    }
    struct gs_reader *r = calloc(1, sizeof *r);
    if (!r) {
        close(fd);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    r->fd = fd;
    r->own_fd = 1;
    return open_common(r, path, err, errlen);
}

struct gs_reader *gs_reader_open_mem(const void *data, size_t len, char *err, size_t errlen)
{
    struct gs_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "<memory>: out of memory");
        return NULL;
    }
    r->fd = -1;
    r->mem = data;
    r->mem_len = len;
    return open_common(r, "<memory>", err, errlen);
}

void gs_reader_close(struct gs_reader *r)
{
    if (!r)
        return;
    if (r->own_fd)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    free(r->spent);
    free(r->comp);
    free(r->raw);
    free(r);
}

const char *gs_reader_error(const struct gs_reader *r) { return r->err; }
int gs_reader_cut(const struct gs_reader *r) { return r->state == GS_READ_DAMAGED && r->cut; }
uint16_t gs_reader_major(const struct gs_reader *r) { return r->major; }
uint16_t gs_reader_minor(const struct gs_reader *r) { return r->minor; }
uint64_t gs_reader_flags(const struct gs_reader *r) { return r->flags; }
uint64_t gs_reader_chunks(const struct gs_reader *r) { return r->chunks; }
uint64_t gs_reader_offset(const struct gs_reader *r) { return r->off; }
uint64_t gs_reader_skipped(const struct gs_reader *r) { return r->skipped; }

int gs_reader_seek_last_chunk(struct gs_reader *r)
{
    if (r->fd < 0 || r->state != GS_READ_OK)
        return 0;
    struct stat st;
    if (fstat(r->fd, &st))
        return -1;
    if (!S_ISREG(st.st_mode))
        return 0;
    uint64_t off = r->off, size = (uint64_t)st.st_size, last = UINT64_MAX;
    uint32_t seq = r->next_seq, last_seq = 0;
    for (;;) {
        uint8_t h[GS_CHUNK_HDR_SIZE];
        ssize_t n = pread(r->fd, h, sizeof h, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if ((size_t)n < sizeof h || gs_le32(h) != GS_CHUNK_MAGIC ||
            gs_crc32c(h, 20) != gs_le32(h + 20) || gs_le32(h + 4) != seq ||
            off + GS_CHUNK_HDR_SIZE + gs_le32(h + 8) > size)
            break;
        /* In a stream trace only a chunk that starts a frame decodes
         * alone: the last of those (the exit's tail is one). */
        uint8_t m[4];
        if (!(r->flags & GS_FILE_F_ZSTD_STREAM) ||
            (pread(r->fd, m, 4, (off_t)(off + GS_CHUNK_HDR_SIZE)) == 4 &&
             gs_le32(m) == GS_ZSTD_MAGIC)) {
            last = off;
            last_seq = seq;
        }
        seq++;
        off += GS_CHUNK_HDR_SIZE + gs_le32(h + 8);
    }
    if (last == UINT64_MAX || (last == r->off && !r->in_chunk))
        return 0; /* no whole chunk after this one, or there already */
    if (lseek(r->fd, (off_t)last, SEEK_SET) < 0)
        return -1;
    r->off = last;
    r->next_seq = last_seq;
    r->in_chunk = 0;
    if (r->flags & GS_FILE_F_ZSTD_STREAM)
        ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    return 1;
}

/* Decompresses a stream trace's chunk payload into r->raw (raw_len + 1
 * bytes of room: a byte more than the header says is a mismatch). */
static int stream_piece(struct gs_reader *r, const uint8_t *payload, uint32_t comp_len,
                        uint32_t raw_len, uint64_t at, uint32_t k)
{
    if (comp_len >= 4 && gs_le32(payload) == GS_ZSTD_MAGIC)
        ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {payload, comp_len, 0};
    ZSTD_outBuffer out = {r->raw, (size_t)raw_len + 1, 0};
    for (;;) {
        size_t in0 = in.pos, out0 = out.pos;
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        if (ZSTD_isError(ret))
            return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": bad zstd data (%s)",
                           at, k, ZSTD_getErrorName(ret));
        if (out.pos > raw_len)
            return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": raw size mismatch "
                           "(header says %" PRIu32 " bytes, payload decompresses to more)",
                           at, k, raw_len);
        if (in.pos == in.size || (in.pos == in0 && out.pos == out0))
            break;
    }
    if (in.pos != in.size || out.pos != raw_len)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": raw size mismatch "
                       "(header says %" PRIu32 " bytes, payload decompresses to %zu)",
                       at, k, raw_len, out.pos);
    return GS_READ_OK;
}

/* Reads, checks and decompresses the next chunk. Returns GS_READ_OK with the
 * chunk entered, GS_READ_EOF at a clean end, or GS_READ_DAMAGED. */
static int load_chunk(struct gs_reader *r)
{
    uint8_t hbuf[GS_CHUNK_HDR_SIZE];
    const uint8_t *h;
    uint64_t at = r->off;
    uint32_t k = r->next_seq;

    r->in_chunk = 0;
    ssize_t n = input(r, hbuf, GS_CHUNK_HDR_SIZE, &h);
    if (n < 0)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": read error: %s",
                       at, k, strerror(errno));
    if (n == 0)
        return r->state = GS_READ_EOF;
    if ((size_t)n < GS_CHUNK_HDR_SIZE) {
        r->cut = 1;
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32
                       ": truncated chunk (header has %zd of %u bytes)",
                       at, k, n, GS_CHUNK_HDR_SIZE);
    }
    if (gs_le32(h) != GS_CHUNK_MAGIC)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": bad chunk magic 0x%08" PRIx32,
                       at, k, gs_le32(h));
    if (gs_crc32c(h, 20) != gs_le32(h + 20))
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": chunk header CRC mismatch",
                       at, k);
    uint32_t seq = gs_le32(h + 4), comp_len = gs_le32(h + 8);
    uint32_t raw_len = gs_le32(h + 12), crc = gs_le32(h + 16);
    if (seq != k)
        return damaged(r, "offset %" PRIu64 ": chunks out of order (seq %" PRIu32
                       " where %" PRIu32 " was expected)", at, seq, k);
    if (raw_len > GS_CHUNK_RAW_MAX)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": raw size %" PRIu32
                       " exceeds the limit of %u bytes", at, k, raw_len, GS_CHUNK_RAW_MAX);
    int zstd = (r->flags & GS_FILE_F_ZSTD) != 0;
    size_t comp_max = zstd ? ZSTD_compressBound(GS_CHUNK_RAW_MAX) : GS_CHUNK_RAW_MAX;
    if (comp_len > comp_max)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": compressed size %" PRIu32
                       " exceeds the limit of %zu bytes", at, k, comp_len, comp_max);
    r->off += GS_CHUNK_HDR_SIZE;

    if (r->fd >= 0 && grow(&r->comp, &r->comp_cap, comp_len))
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": out of memory", at, k);
    const uint8_t *payload;
    n = input(r, r->comp, comp_len, &payload);
    if (n < 0)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": read error: %s",
                       at, k, strerror(errno));
    if ((size_t)n < comp_len) {
        /* A write cut short leaves a prefix of the payload, whose CRC is
         * not the header's (but for a 2^-32 chance); a whole payload under
         * a length that is too large matches it. */
        if (gs_crc32c(payload, (size_t)n) == crc)
            return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": chunk length %" PRIu32
                           " runs past the end of the file (the %zd bytes there are the whole "
                           "payload: they match its CRC)", at, k, comp_len, n);
        r->cut = 1;
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32
                       ": truncated chunk (payload has %zd of %" PRIu32 " bytes)",
                       at, k, n, comp_len);
    }
    r->off += comp_len;
    if (gs_crc32c(payload, comp_len) != crc)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": payload CRC mismatch", at, k);

    if (r->keep && r->raw && !r->spent) {
        /* records of the chunk before still point into its buffer: it
         * goes to the caller, this chunk gets a new one. (With one spent
         * already, the chunk before was loaded in this same call and
         * returned no record: its buffer is reused.) */
        free(r->spent);
        r->spent = r->raw;
        r->raw = NULL;
        r->raw_cap = 0;
    }
    if (grow(&r->raw, &r->raw_cap, (size_t)raw_len + 1))
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": out of memory", at, k);
    if (zstd && (r->flags & GS_FILE_F_ZSTD_STREAM)) {
        int rc = stream_piece(r, payload, comp_len, raw_len, at, k);
        if (rc != GS_READ_OK)
            return rc;
    } else if (zstd) {
        size_t got = ZSTD_decompressDCtx(r->dctx, r->raw, raw_len, payload, comp_len);
        if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall)
            return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": raw size mismatch "
                           "(header says %" PRIu32 " bytes, payload decompresses to more)",
                           at, k, raw_len);
        if (ZSTD_isError(got))
            return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": bad zstd data (%s)",
                           at, k, ZSTD_getErrorName(got));
        if (got != raw_len)
            return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": raw size mismatch "
                           "(header says %" PRIu32 " bytes, payload decompresses to %zu)",
                           at, k, raw_len, got);
    } else {
        if (comp_len != raw_len)
            return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ": raw size mismatch "
                           "(header says %" PRIu32 " bytes, stored payload has %" PRIu32 ")",
                           at, k, raw_len, comp_len);
        memcpy(r->raw, payload, raw_len);
    }

    r->chunk_off = at;
    r->chunk_seq = k;
    r->next_seq = k + 1;
    r->chunks++;
    r->raw_len = raw_len;
    r->pos = 0;
    r->t = r->a = r->sid = 0;
    r->in_chunk = 1;
    if (raw_len > 0 && r->raw[0] != GS_REC_TIMEBASE)
        return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ", record at payload offset 0: "
                       "payload does not start with TIMEBASE (type 0x%02x)", at, k, r->raw[0]);
    return GS_READ_OK;
}

/* Why a varint at p could not be read: it ran out of bytes, or it is longer
 * than any 64-bit value's encoding. */
static const char *varint_problem(const uint8_t *p, const uint8_t *end)
{
    for (int i = 0; i < GS_VARINT_MAX; i++) {
        if (p + i >= end)
            return NULL;
        if (!(p[i] & 0x80))
            return NULL;
    }
    return "varint longer than 10 bytes";
}

static int rec_damaged(struct gs_reader *r, size_t at, uint8_t type, const char *what)
{
    return damaged(r, "offset %" PRIu64 ": chunk %" PRIu32 ", record at payload offset %zu: "
                   "%s (type 0x%02x)", r->chunk_off, r->chunk_seq, at, what, type);
}

#define SKIP_RECORD 3

/* Field readers for decode(): on failure they jump to the function's
 * `bad_field` label with p left at the field that failed. */
#define GU(v) do { if (gs_get_u(&p, e, &(v))) goto bad_field; } while (0)
#define GS(v) do { if (gs_get_s(&p, e, &(v))) goto bad_field; } while (0)
#define GB(v) do { const uint8_t *f_ = p;                                 \
                   if (gs_get_bytes(&p, e, &(v).p, &(v).n)) { p = f_; goto bad_field; } \
               } while (0)

/* One field of records.def, by encoding, into rec (x: the record's union
 * member). Deltas are undone as they are read: a record that fails later
 * leaves the reader damaged, so the running state is never used again. */
#define DEC_FIELD(x, enc, m, key, print, en, check) DEC_##enc(x, m)
#define DEC_U(x, m) GU(rec->u.x.m);
#define DEC_S(x, m) GS(rec->u.x.m);
#define DEC_T(x, m) GU(rec->t);
#define DEC_UT(x, m) GU(rec->u.x.m); rec->t = rec->u.x.m;
#define DEC_U1(x, m) if (p < e) GU(rec->u.x.m); /* 0 in older minors */
#define DEC_U2 DEC_U1
#define DEC_U3 DEC_U1 /* 2.1 */
#define DEC_DT(x, m) { uint64_t d_; GU(d_); r->t += d_; rec->t = r->t; }
#define DEC_DA(x, m) { int64_t d_; GS(d_); r->a += (uint64_t)d_; rec->u.x.m = r->a; }
#define DEC_TB(x, m) GU(rec->t); r->t = rec->t; r->a = 0; r->sid = 0;
/* STACK's id and parent: deltas since 2.0, plain u in 1.x. */
#define DEC_DI(x, m) if (r->major >= 2) { int64_t d_; GS(d_); r->sid += 1 + (uint64_t)d_; \
                         rec->u.x.m = r->sid; } else GU(rec->u.x.m);
#define DEC_DP(x, m) if (r->major >= 2) { int64_t d_; GS(d_); rec->u.x.m = rec->u.x.id - (uint64_t)d_; } \
                     else GU(rec->u.x.m);
#define DEC_STR(x, m) GB(rec->u.x.m);
#define DEC_BYTES(x, m) GB(rec->u.x.m);
/* Segments past GS_MAX_SEGS are read (to check them) but not kept. */
#define DEC_SEGS(x, m) {                                                  \
        uint64_t n_;                                                      \
        GU(n_);                                                           \
        for (uint64_t i_ = 0; i_ < n_; i_++) {                            \
            uint64_t v_, s_, f_;                                          \
            GU(v_); GU(s_); GU(f_);                                       \
            if (i_ < GS_MAX_SEGS)                                         \
                rec->u.x.m[i_] = (__typeof__(rec->u.x.m[0])){ v_, s_, f_ }; \
        }                                                                 \
        rec->u.x.n##m = n_ < GS_MAX_SEGS ? n_ : GS_MAX_SEGS;              \
    }
#define DEC_CLASSES(x, m)                                                 \
    for (int c_ = 0; c_ < GS_CLASS_WIRE_N; c_++) {                        \
        GU(rec->u.x.m##_blocks[c_]);                                      \
        GU(rec->u.x.m##_bytes[c_]);                                       \
    }

/* A case of decode's hot switch (IF_HOT) or of its lengthed one (IF_LEN). */
#define IF_HOT_DELTA(...) __VA_ARGS__
#define IF_HOT_HOT(...) __VA_ARGS__
#define IF_HOT_LEN(...)
#define IF_LEN_DELTA(...)
#define IF_LEN_HOT(...)
#define IF_LEN_LEN(...) __VA_ARGS__
#define DEC_CASE(NAME, x, ...)                                            \
    case GS_REC_##NAME: GS_PP_EACH(DEC_FIELD, x, __VA_ARGS__) break;

static int decode(struct gs_reader *r, struct gs_record *rec)
{
    const uint8_t *p = r->raw + r->pos;
    const uint8_t *e = r->raw + r->raw_len;
    size_t at = r->pos;
    uint8_t type = *p++;
    int lengthed = type >= GS_REC_LENGTHED;
    uint64_t len = 0;
    const uint8_t *body_end = e;

    /* Clear only what this record can fill: hot records (most of a trace)
     * use at most the alloc member; clearing the whole ~460-byte record for
     * each was a visible share of the analyzer's time. */
    rec->t = 0;
    if (lengthed)
        memset(&rec->u, 0, sizeof rec->u);
    else
        memset(&rec->u, 0, sizeof rec->u.alloc);
    rec->type = type;
    rec->file_offset = r->chunk_off;
    rec->payload_offset = at;
    rec->chunk = r->chunk_seq;

    if (!lengthed) {
        switch (type) {
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...) \
            IF_HOT_##cls(DEC_CASE(NAME, x, __VA_ARGS__))
#include "gcspy/records.def"
#undef GS_RECORD
        default:
            return rec_damaged(r, at, type, "unknown hot record type");
        }
        r->pos = (size_t)(p - r->raw);
        return GS_READ_OK;
    }

    if (gs_get_u(&p, e, &len)) {
        const char *why = varint_problem(p, e);
        return rec_damaged(r, at, type, why ? why : "record runs past payload end");
    }
    if (len > (uint64_t)(e - p)) {
        char what[96];
        snprintf(what, sizeof what, "record length %" PRIu64 " runs past payload end "
                 "(%zu bytes left)", len, (size_t)(e - p));
        return rec_damaged(r, at, type, what);
    }
    e = p + len;           /* fields are read within the body only */
    body_end = e;

    switch (type) {
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...) \
        IF_LEN_##cls(DEC_CASE(NAME, x, __VA_ARGS__))
#include "gcspy/records.def"
#undef GS_RECORD
    default:
        /* A type from a newer minor version: skipped whole. */
        r->pos = (size_t)(body_end - r->raw);
        r->skipped++;
        return SKIP_RECORD;
    }
    /* Fields a newer minor version appended are skipped with the body. */
    r->pos = (size_t)(body_end - r->raw);
    return GS_READ_OK;

bad_field: {
        const char *why = varint_problem(p, e);
        if (why)
            return rec_damaged(r, at, type, why);
        if (!lengthed)
            return rec_damaged(r, at, type, "record runs past payload end");
        char what[96];
        snprintf(what, sizeof what, "field at body offset %zu runs past the end of "
                 "the %" PRIu64 "-byte record body", (size_t)(p - (body_end - len)), len);
        return rec_damaged(r, at, type, what);
    }
}

int gs_reader_next(struct gs_reader *r, struct gs_record *rec)
{
    for (;;) {
        if (r->state != GS_READ_OK)
            return r->state;
        if (!r->in_chunk || r->pos >= r->raw_len) {
            int rc = load_chunk(r);
            if (rc != GS_READ_OK)
                return rc;
            continue;
        }
        int rc = decode(r, rec);
        if (rc != SKIP_RECORD)
            return rc;
    }
}

int gs_reader_next_chunk(struct gs_reader *r, const uint8_t **raw, size_t *len)
{
    if (r->state != GS_READ_OK)
        return r->state;
    int rc = load_chunk(r);
    if (rc != GS_READ_OK)
        return rc;
    *raw = r->raw;
    *len = r->raw_len;
    r->pos = r->raw_len; /* the chunk is the caller's: no record of it is decoded */
    return GS_READ_OK;
}

void gs_reader_keep_chunks(struct gs_reader *r)
{
    r->keep = 1;
}

void *gs_reader_take_spent(struct gs_reader *r)
{
    void *p = r->spent;
    r->spent = NULL;
    return p;
}
