/*
 * Trace builder for tests (see trace_builder.h): records are encoded with the
 * shim's own encoders (include/gcspy/record.h, generated from records.def)
 * into a raw payload buffer; closing a chunk compresses that payload with
 * zstd and appends the framed chunk to a growing file image that starts with
 * the file header. The
 * encoder state (running t and a) lives for the whole buffer and is reset by
 * each TIMEBASE, exactly as in the shim's writer.
 */
#include "trace_builder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "gcspy/record.h"

struct gs_buf {
    uint8_t *p;
    size_t len, cap;
};

struct gs_tb {
    struct gs_buf file;    /* file header + closed chunks */
    struct gs_buf raw;     /* payload of the open chunk */
    struct gs_buf offs;    /* chunk header offsets (size_t each) */
    struct gs_enc_state st;
    uint32_t seq;
    uint32_t last_chunk;   /* where the last record went: chunk seq, */
    size_t last_at;        /* offset in that chunk's payload */
    size_t chunk_limit;
    int level;
    int failed;
};

static int buf_reserve(struct gs_buf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

struct gs_tb *gs_tb_new(void)
{
    struct gs_tb *tb = calloc(1, sizeof *tb);
    if (!tb)
        return NULL;
    tb->chunk_limit = 1u << 20;
    tb->level = 1;
    if (buf_reserve(&tb->file, GS_FILE_HDR_SIZE)) {
        free(tb);
        return NULL;
    }
    gs_file_header(tb->file.p, GS_FILE_F_ZSTD);
    tb->file.len = GS_FILE_HDR_SIZE;
    return tb;
}

void gs_tb_free(struct gs_tb *tb)
{
    if (!tb)
        return;
    free(tb->file.p);
    free(tb->raw.p);
    free(tb->offs.p);
    free(tb);
}

void gs_tb_set_chunk_limit(struct gs_tb *tb, size_t raw_bytes)
{
    tb->chunk_limit = raw_bytes;
}

void gs_tb_set_level(struct gs_tb *tb, int level)
{
    tb->level = level;
}

/* Makes room for one record of at most `need` bytes, opening the payload
 * with a TIMEBASE at the running time when it is empty. Returns where the
 * record goes, or NULL (and marks the builder failed). */
static uint8_t *begin(struct gs_tb *tb, size_t need)
{
    if (buf_reserve(&tb->raw, need + GS_REC_HOT_MAX)) {
        tb->failed = 1;
        return NULL;
    }
    uint8_t *p = tb->raw.p + tb->raw.len;
    if (tb->raw.len == 0)
        p = gs_rec_timebase(p, &tb->st, tb->st.t);
    tb->last_chunk = tb->seq;
    tb->last_at = (size_t)(p - tb->raw.p);
    return p;
}

void gs_tb_last_record(const struct gs_tb *tb, uint32_t *chunk, size_t *payload_offset)
{
    *chunk = tb->last_chunk;
    *payload_offset = tb->last_at;
}

static int finish(struct gs_tb *tb, uint8_t *end)
{
    tb->raw.len = (size_t)(end - tb->raw.p);
    if (tb->raw.len >= tb->chunk_limit)
        return gs_tb_flush_chunk(tb);
    return 0;
}

int gs_tb_timebase(struct gs_tb *tb, uint64_t t)
{
    if (buf_reserve(&tb->raw, GS_REC_HOT_MAX)) {
        tb->failed = 1;
        return -1;
    }
    tb->last_chunk = tb->seq;
    tb->last_at = tb->raw.len;
    return finish(tb, gs_rec_timebase(tb->raw.p + tb->raw.len, &tb->st, t));
}

int gs_tb_alloc(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                uint64_t size, uint64_t stack)
{
    uint8_t *p = begin(tb, GS_REC_HOT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_alloc(p, &tb->st, t, thread, addr, size, stack));
}

int gs_tb_free_rec(struct gs_tb *tb, uint64_t t, uint64_t addr)
{
    uint8_t *p = begin(tb, GS_REC_HOT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_free(p, &tb->st, t, addr));
}

int gs_tb_realloc(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                  uint64_t new_size, uint64_t stack)
{
    uint8_t *p = begin(tb, GS_REC_HOT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_realloc(p, &tb->st, t, thread, addr, new_size, stack));
}

int gs_tb_alloc_ex(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                   uint64_t size, uint64_t stack, uint64_t kind, uint64_t fn,
                   uint64_t device, uint64_t stream, uint64_t dur_ns)
{
    uint8_t *p = begin(tb, GS_REC_HOT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_alloc_ex(p, &tb->st, t, thread, addr, size, stack,
                                      kind, fn, device, stream, dur_ns));
}

int gs_tb_free_ex(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t addr,
                  uint64_t kind, uint64_t fn, uint64_t dur_ns)
{
    uint8_t *p = begin(tb, GS_REC_HOT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_free_ex(p, &tb->st, t, thread, addr, kind, fn, dur_ns));
}

int gs_tb_stack(struct gs_tb *tb, uint64_t id, uint64_t parent, uint64_t ip)
{
    uint8_t *p = begin(tb, GS_REC_HOT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_stack(p, &tb->st, id, parent, ip));
}

/* Room for a lengthed record of at most `max` bytes (its
 * GS_REC_<NAME>_MAX plus its strings). */
static uint8_t *begin_len(struct gs_tb *tb, size_t max)
{
    if (max - 4 > GS_REC_BODY_MAX) {
        tb->failed = 1;
        return NULL;
    }
    return begin(tb, max);
}

static size_t slen(const char *s)
{
    return s ? strlen(s) : 0;
}

/* A C string as an encoder's (bytes, length) pair; NULL is empty. */
#define STR(s) (s), slen(s)

int gs_tb_process_start(struct gs_tb *tb, const struct gs_tb_proc *pr)
{
    size_t argv_len = pr->argv ? pr->argv_len : 0;
    uint8_t *p = begin_len(tb, GS_REC_PROCESS_START_MAX + slen(pr->exe) + argv_len +
                                   slen(pr->host) + slen(pr->version));
    if (!p)
        return -1;
    return finish(tb, gs_rec_process_start(p, pr->pid, pr->ppid, pr->wall_ns, STR(pr->exe),
                                           pr->argv, argv_len, STR(pr->host), pr->rank1,
                                           pr->local_rank1, pr->world_size1, pr->flags,
                                           STR(pr->version), pr->unwinder, pr->depth,
                                           pr->page_size));
}

int gs_tb_process_exit(struct gs_tb *tb, uint64_t t, int64_t status, uint64_t how)
{
    uint8_t *p = begin_len(tb, GS_REC_PROCESS_EXIT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_process_exit(p, t, status, how));
}

int gs_tb_module(struct gs_tb *tb, uint64_t id, uint64_t t, uint64_t base,
                 const char *path, const void *build_id, size_t build_id_len,
                 size_t nseg, const struct gs_tb_seg *segs)
{
    struct gs_seg *seg = nseg ? malloc(nseg * sizeof *seg) : NULL;
    uint8_t *p = nseg && !seg ? NULL
                              : begin_len(tb, GS_REC_MODULE_MAX + slen(path) + build_id_len +
                                                  3 * GS_VARINT_MAX * nseg);
    if (!p) {
        tb->failed = 1;
        free(seg);
        return -1;
    }
    for (size_t i = 0; i < nseg; i++)
        seg[i] = (struct gs_seg){ segs[i].vaddr, segs[i].memsz, segs[i].flags };
    p = gs_rec_module(p, id, t, base, STR(path), build_id, build_id_len, nseg, seg);
    free(seg);
    return finish(tb, p);
}

int gs_tb_module_unload(struct gs_tb *tb, uint64_t id, uint64_t t)
{
    uint8_t *p = begin_len(tb, GS_REC_MODULE_UNLOAD_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_module_unload(p, id, t));
}

int gs_tb_thread_start(struct gs_tb *tb, uint64_t index, uint64_t tid, uint64_t t)
{
    uint8_t *p = begin_len(tb, GS_REC_THREAD_START_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_thread_start(p, index, tid, t));
}

int gs_tb_thread_exit(struct gs_tb *tb, uint64_t index, uint64_t t)
{
    uint8_t *p = begin_len(tb, GS_REC_THREAD_EXIT_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_thread_exit(p, index, t));
}

int gs_tb_sample(struct gs_tb *tb, uint64_t t, uint64_t rss, uint64_t arena,
                 uint64_t ordblks, uint64_t hblks, uint64_t hblkhd,
                 uint64_t uordblks, uint64_t fordblks, uint64_t keepcost)
{
    uint8_t *p = begin_len(tb, GS_REC_SAMPLE_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_sample(p, t, rss, arena, ordblks, hblks, hblkhd, uordblks,
                                    fordblks, keepcost));
}

int gs_tb_marker(struct gs_tb *tb, uint64_t t, uint64_t thread, uint64_t kind,
                 const char *label)
{
    uint8_t *p = begin_len(tb, GS_REC_MARKER_MAX + slen(label));
    if (!p)
        return -1;
    return finish(tb, gs_rec_marker(p, t, thread, kind, STR(label)));
}

int gs_tb_pause(struct gs_tb *tb, uint64_t t_start, uint64_t t_end, uint64_t kind,
                uint64_t thread, uint64_t a, uint64_t b)
{
    uint8_t *p = begin_len(tb, GS_REC_PAUSE_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_pause(p, t_start, t_end, kind, thread, a, b));
}

int gs_tb_exec(struct gs_tb *tb, uint64_t t, const char *path)
{
    uint8_t *p = begin_len(tb, GS_REC_EXEC_MAX + slen(path));
    if (!p)
        return -1;
    return finish(tb, gs_rec_exec(p, t, STR(path)));
}

int gs_tb_stopped(struct gs_tb *tb, uint64_t t, uint64_t dropped, const char *reason)
{
    uint8_t *p = begin_len(tb, GS_REC_STOPPED_MAX + slen(reason));
    if (!p)
        return -1;
    return finish(tb, gs_rec_stopped(p, t, dropped, STR(reason)));
}

int gs_tb_scan_begin(struct gs_tb *tb, uint64_t scan_id, uint64_t t,
                     uint64_t trigger, uint64_t mode)
{
    uint8_t *p = begin_len(tb, GS_REC_SCAN_BEGIN_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_scan_begin(p, scan_id, t, trigger, mode));
}

int gs_tb_scan_block(struct gs_tb *tb, uint64_t scan_id, uint64_t addr,
                     uint64_t size, uint64_t stack, uint64_t kind, uint64_t cls)
{
    uint8_t *p = begin_len(tb, GS_REC_SCAN_BLOCK_MAX);
    if (!p)
        return -1;
    /* The 1.0 form, as the builder always wrote it: without the trailing
     * fn, which readers take as 0 (so the reader's minor-0 path is what the
     * tests exercise, and hand-built traces keep their bytes). fn 0 is one
     * byte, the last of the body. */
    uint8_t *e = gs_rec_scan_block(p, scan_id, addr, size, stack, kind, cls, 0);
    return finish(tb, gs_rec_close(p + 4, e - 1));
}

int gs_tb_scan_end(struct gs_tb *tb, const struct gs_tb_scan_end *e)
{
    uint8_t *p = begin_len(tb, GS_REC_SCAN_END_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_scan_end(p, e->scan_id, e->t_start, e->t_stopped, e->t_marked,
                                      e->t_end, e->threads, e->bytes_scanned,
                                      e->blocks_visited, e->live_blocks, e->live_bytes,
                                      e->cls_blocks, e->cls_bytes, e->unreadable,
                                      e->cls_blocks[GS_CLASS_RUNTIME], e->cls_bytes[GS_CLASS_RUNTIME]));
}

int gs_tb_pycode(struct gs_tb *tb, uint64_t id, const char *file,
                 const char *function, uint64_t firstline)
{
    uint8_t *p = begin_len(tb, GS_REC_PYCODE_MAX + slen(file) + slen(function));
    if (!p)
        return -1;
    return finish(tb, gs_rec_pycode(p, id, STR(file), STR(function), firstline));
}

int gs_tb_trace_end(struct gs_tb *tb, uint64_t t, uint64_t allocs, uint64_t frees,
                    uint64_t bytes_allocated, uint64_t live_blocks,
                    uint64_t live_bytes)
{
    uint8_t *p = begin_len(tb, GS_REC_TRACE_END_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_trace_end(p, t, allocs, frees, bytes_allocated, live_blocks,
                                       live_bytes));
}

int gs_tb_device_sample(struct gs_tb *tb, uint64_t t, uint64_t device, uint64_t kind,
                        uint64_t reserved, uint64_t in_use, uint64_t segments,
                        uint64_t largest_free)
{
    uint8_t *p = begin_len(tb, GS_REC_DEVICE_SAMPLE_MAX);
    if (!p)
        return -1;
    return finish(tb, gs_rec_device_sample(p, t, device, kind, reserved, in_use, segments,
                                           largest_free));
}

int gs_tb_lengthed(struct gs_tb *tb, uint8_t type, const void *body_bytes, size_t n)
{
    uint8_t *p = begin_len(tb, 4 + n);
    if (!p)
        return -1;
    uint8_t *body = gs_rec_open(p, type);
    if (n)
        memcpy(body, body_bytes, n);
    return finish(tb, gs_rec_close(body, body + n));
}

int gs_tb_raw(struct gs_tb *tb, const void *bytes, size_t n)
{
    if (buf_reserve(&tb->raw, n)) {
        tb->failed = 1;
        return -1;
    }
    if (n)
        memcpy(tb->raw.p + tb->raw.len, bytes, n);
    tb->raw.len += n;
    return 0;
}

int gs_tb_flush_chunk(struct gs_tb *tb)
{
    if (tb->raw.len == 0)
        return 0;
    size_t bound = ZSTD_compressBound(tb->raw.len);
    size_t off = tb->file.len;
    if (buf_reserve(&tb->file, GS_CHUNK_HDR_SIZE + bound) ||
        buf_reserve(&tb->offs, sizeof off)) {
        tb->failed = 1;
        return -1;
    }
    uint8_t *payload = tb->file.p + off + GS_CHUNK_HDR_SIZE;
    size_t comp = ZSTD_compress(payload, bound, tb->raw.p, tb->raw.len, tb->level);
    if (ZSTD_isError(comp)) {
        tb->failed = 1;
        return -1;
    }
    gs_chunk_header(tb->file.p + off, tb->seq++, payload, (uint32_t)comp,
                    (uint32_t)tb->raw.len);
    tb->file.len = off + GS_CHUNK_HDR_SIZE + comp;
    memcpy(tb->offs.p + tb->offs.len, &off, sizeof off);
    tb->offs.len += sizeof off;
    /* The next buffer starts afresh, as a new shim buffer does. */
    tb->raw.len = 0;
    return 0;
}

uint8_t *gs_tb_data(struct gs_tb *tb, size_t *len)
{
    if (gs_tb_flush_chunk(tb) || tb->failed)
        return NULL;
    *len = tb->file.len;
    return tb->file.p;
}

int gs_tb_write_file(struct gs_tb *tb, const char *path)
{
    size_t len;
    const uint8_t *p = gs_tb_data(tb, &len);
    if (!p)
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return close(fd);
}

size_t gs_tb_chunks(const struct gs_tb *tb)
{
    return tb->offs.len / sizeof(size_t);
}

long gs_tb_chunk_offset(const struct gs_tb *tb, size_t k)
{
    if (k >= gs_tb_chunks(tb))
        return -1;
    size_t off;
    memcpy(&off, tb->offs.p + k * sizeof off, sizeof off);
    return (long)off;
}

void gs_tb_reseal_chunk(uint8_t *hdr)
{
    uint32_t comp = gs_le32(hdr + 8);
    gs_st32(hdr + 16, gs_crc32c(hdr + GS_CHUNK_HDR_SIZE, comp));
    gs_st32(hdr + 20, gs_crc32c(hdr, 20));
}
