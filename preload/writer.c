/*
 * The byte sink: event buffers, the background writer thread and the trace
 * file. It frames what it is given (the file header, chunks, the TIMEBASE
 * that opens every buffer so its deltas decode alone) and knows nothing else
 * of records: the STOPPED record that ends a failed trace comes from the
 * encoder registered with gs_writer_set_stop_record (emit.c's), and what the
 * thread does between flushes is the tick registered with
 * gs_writer_set_tick (daemon.c's housekeeping).
 *
 * Events are appended to streams (one per table shard, plus the meta stream
 * for definitions) under the stream's lock; a stream's current buffer is
 * handed to the writer when it fills, or detached by the writer every
 * GCSPY_FLUSH_MS. The writer packs buffers into chunks, compresses them with
 * zstd and writes each chunk with one write(2), so a process killed at any
 * moment leaves a trace readable up to its last complete chunk.
 *
 * Compression is one zstd stream per trace (GS_FILE_F_ZSTD_STREAM): each
 * chunk is what ZSTD_e_flush gives for its records, so it ends on a block
 * boundary (everything before it decodes without it) while the window
 * carries across chunks, which short flush-round chunks need (a frame per
 * chunk started each from an empty window: about twice the bytes). A chunk
 * that must decode alone starts a new frame: the tail that `gcspy run` reads
 * by itself (gs_reader_seek_last_chunk), and the STOPPED chunk after a
 * compression failure (the stream is broken then). Level GS_ZSTD_LEVEL:
 * bench/zstd_levels measures the others on the writer's own inputs.
 *
 * Ordering, which the reader relies on (docs/trace-format.md):
 *  1. The records of one address are in event order: they are appended under
 *     one shard lock, and the buffers of one shard are written in the order
 *     they were started (each buffer gets a global sequence number).
 *  2. Definitions come before their uses. A flush round detaches every
 *     shard's current buffer, takes the queue of full buffers, detaches the
 *     meta buffer, then takes the queue again. It writes all meta buffers
 *     first, then the shard buffers from the detach and the first take; shard
 *     buffers of the second take wait for the next round. Every event written
 *     was appended before its buffer was detached or queued, hence before the
 *     meta detach, so every definition it uses is written in this round or
 *     an earlier one.
 *     Point 1 holds across rounds: a shard's buffers are queued in start
 *     order, so those of the second take started after every buffer of that
 *     shard written in this round, and before any written in the next.
 *  3. One flush round at a time: the writer mutex (also taken by the exit
 *     flush and across fork).
 *
 * The file's descriptor lives in the program's descriptor table, which the
 * program may rearrange at any time (close_range, a loop closing every
 * descriptor, dup2 onto any number, closing 0-2 and opening its own files).
 * So the descriptor is kept out of its way (never 0-2; above the soft
 * RLIMIT_NOFILE when the hard limit leaves room, where no open() of the
 * program can land and no dup2 can aim, else at the top of the range), and
 * every write makes sure first that it is still the trace (fstat: the
 * device and inode the file was made with); when it is not (closed, or the
 * program's file now), the file is opened again by its absolute path, and
 * written only if that is the same file (at the offset gcspy has reached);
 * otherwise tracing stops with one line. A descriptor that is no longer the
 * trace is never written to or closed: it is the program's. Writes never
 * pass RLIMIT_FSIZE either: the kernel answers one with SIGXFSZ to the
 * writing thread, which kills the process by default when that thread is
 * the program's (the flushes at exit and exec run there; the writer thread
 * blocks it), so a write that would exceed the limit is not made and
 * counts as failed (EFBIG), on whatever thread.
 *
 * Backpressure: when more than GS_PENDING_MAX bytes wait for the writer, a
 * thread starting a new buffer waits, with its stream lock released, until
 * the writer catches up. Tracing never drops events silently: if the file
 * cannot be written, tracing stops with one line on stderr.
 */
#define _GNU_SOURCE
#define ZSTD_STATIC_LINKING_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "mem.h"
#include "rank.h"
#include "table.h"
#include "writer.h"

#define GS_CHUNK_TARGET (1u << 20)
#define GS_ZSTD_LEVEL 1
#define GS_PENDING_MAX (256ull << 20)
#define GS_BUFS_PER_SLAB 4

struct gs_stream gs_meta;

static struct gs_buf *_Atomic full_queue; /* Treiber stack, LIFO */
static struct gs_buf *free_list;
static atomic_int pool_lock;
static atomic_uint_fast64_t buf_seq = 1;
static atomic_int_fast64_t pending_bytes;
static atomic_uint wake_word;   /* futex: bumped to wake the writer */
static atomic_uint drain_word;  /* futex: bumped when pending drops */
static atomic_int bp_waiters;   /* threads waiting in backpressure, lock let go */

static pthread_mutex_t writer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t writer_thread;
static atomic_int writer_ready;
static int writer_tid;
static int writer_running;
static atomic_int writer_stop;
static int fd = -1;
static dev_t file_dev;          /* the trace's identity: what fd must be */
static ino_t file_ino;
static uint64_t file_off;       /* bytes written: where the next write goes */
static uint32_t chunk_seq;
static char path[4096];
static char abs_path[4096 + 4096]; /* for opening it again ("" if unknown) */
static int fd_transient;        /* held only while writing (place_fd) */
static int have_file;           /* a trace file was made and not closed for good */
static struct gs_buf *deferred; /* shard buffers queued after a round's meta detach */
static ZSTD_CCtx *cctx;
static uint8_t *raw, *comp;
static size_t comp_cap;
static uint64_t last_flush_ns;
static atomic_int failed_once;
static int write_failed;       /* the file cannot be written: nothing more is */
static int chunk_lost;         /* a chunk could not be made: no more records */
static char stop_reason[320];  /* gs_fail's line, for the STOPPED record */
static uint64_t stop_t;
static uint8_t *(*stop_record)(uint8_t *p, uint64_t t, const char *why);
static void (*tick_run)(void);
static uint64_t (*tick_due_ns)(void);

static void futex_wake(atomic_uint *w)
{
    syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

static void futex_wait(atomic_uint *w, unsigned seen, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

void gs_fail_why(const char *what, const char *why)
{
    atomic_store(&gs_state, GS_STOPPED);
    if (!atomic_exchange(&failed_once, 1)) {
        stop_t = gs_now_fine();
        gs_fmt(stop_reason, sizeof stop_reason, "%s: %s", what, why);
        gs_log("%s; tracing stopped, the program runs on", stop_reason);
    }
    futex_wake(&drain_word);
    /* the writer ends the trace with a STOPPED record (writer_main) */
    atomic_fetch_add(&wake_word, 1);
    futex_wake(&wake_word);
}

void gs_fail(const char *what, int err)
{
    gs_fail_why(what, err ? strerror(err) : "internal error");
}

/* ---- buffer pool ---- */

static struct gs_buf *buf_get(void)
{
    gs_spin_lock(&pool_lock);
    struct gs_buf *b = free_list;
    if (!b) {
        struct gs_buf *slab = gs_pages_alloc(GS_BUFS_PER_SLAB * sizeof(struct gs_buf));
        if (!slab) {
            gs_spin_unlock(&pool_lock);
            return NULL;
        }
        for (int i = 0; i < GS_BUFS_PER_SLAB; i++) {
            slab[i].next = free_list;
            free_list = &slab[i];
        }
        b = free_list;
    }
    free_list = b->next;
    gs_spin_unlock(&pool_lock);
    b->next = NULL;
    b->len = 0;
    b->pad = 0;
    b->seq = atomic_fetch_add(&buf_seq, 1);
    return b;
}

static void buf_put(struct gs_buf *b)
{
    gs_spin_lock(&pool_lock);
    b->next = free_list;
    free_list = b;
    gs_spin_unlock(&pool_lock);
}

static void queue_push(struct gs_buf *b)
{
    atomic_fetch_add(&pending_bytes, (int64_t)b->len);
    struct gs_buf *head = atomic_load(&full_queue);
    do
        b->next = head;
    while (!atomic_compare_exchange_weak(&full_queue, &head, b));
    atomic_fetch_add(&wake_word, 1);
    futex_wake(&wake_word);
}

/* gs_stream_reserve's way when the current buffer is missing or full. */
uint8_t *gs_stream_reserve_slow(struct gs_stream *s, size_t need)
{
    struct gs_buf *b = s->cur;
    if (b && b->len + need <= GS_BUF_SIZE)
        return b->data + b->len;
    if (atomic_load_explicit(&gs_state, memory_order_relaxed) == GS_STOPPED)
        return NULL;
    if (b) {
        s->cur = NULL;
        queue_push(b);
    }
    /* Backpressure, with the stream lock released (the writer may need it). */
    while (atomic_load(&pending_bytes) > (int64_t)GS_PENDING_MAX && writer_running &&
           !pthread_equal(pthread_self(), writer_thread) &&
           atomic_load(&gs_state) == GS_ON) {
        unsigned seen = atomic_load(&drain_word);
        atomic_fetch_add(&bp_waiters, 1);
        gs_spin_unlock(&s->lock);
        futex_wait(&drain_word, seen, 10000000);
        gs_spin_lock(&s->lock);
        atomic_fetch_sub(&bp_waiters, 1);
    }
    /* The lock was let go while waiting: the exit may have stopped tracing
     * and taken its totals since; an event it did not count must not be
     * written. */
    if (atomic_load(&gs_state) == GS_STOPPED)
        return NULL;
    if (s->cur && s->cur->len + need <= GS_BUF_SIZE)
        return s->cur->data + s->cur->len;
    if (s->cur) {
        queue_push(s->cur);
        s->cur = NULL;
    }
    b = buf_get();
    if (!b) {
        gs_fail("out of memory for event buffers", ENOMEM);
        return NULL;
    }
    b->pad = s == &gs_meta; /* marks meta buffers for the flush round */
    b->len = (uint32_t)(gs_rec_timebase(b->data, &b->st, gs_now()) - b->data);
    s->cur = b;
    return b->data + b->len;
}

/* ---- the trace file ---- */

/* Returns 1 when s did not fit before end (the path would be cut). */
static int append_clean(char **o, char *end, const char *s, size_t n)
{
    /* Names from the environment or the executable become part of one
     * path component: nothing but [A-Za-z0-9._+-], no '/', and never a
     * leading '.', so no expansion can make a "." or ".." component, alone
     * or next to the pattern's own dots. */
    size_t i = 0;
    for (; i < n && s[i] && *o < end; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 (c == '.' && i > 0) || c == '_' || c == '-' || c == '+';
        *(*o)++ = ok ? c : '_';
    }
    return i < n && s[i];
}

/* The trace's path from GCSPY_OUTPUT into out (len bytes, 16 kept for a
 * ".N" suffix); -1 when it does not fit: a path cut short would name
 * another file than the one asked for, so the caller refuses it. */
static int expand_pattern(char *out, size_t len)
{
    char *o = out, *end = out + len - 16;
    int cut = 0;
    char exe[256] = "", host[256] = "", num[32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *base = exe;
    if (n > 0) {
        exe[n] = 0;
        const char *slash = strrchr(exe, '/');
        base = slash ? slash + 1 : exe;
    }
    if (gs_read_file("/proc/sys/kernel/hostname", host, sizeof host - 1) > 0)
        host[strcspn(host, "\n")] = 0;
    char rbuf[24];
    const char *rank = gs_rank_text(rbuf, sizeof rbuf);
    const char *p = gs_opt.output;
    for (; *p && o < end && !cut; p++) {
        if (*p != '%' || !p[1]) {
            *o++ = *p;
            continue;
        }
        switch (*++p) {
        case 'p':
            gs_fmt(num, sizeof num, "%d", (int)getpid());
            cut = append_clean(&o, end, num, sizeof num);
            break;
        case 'e':
            cut = append_clean(&o, end, base[0] ? base : "prog", strlen(base[0] ? base : "prog"));
            if (o > out && o[-1] == '.')
                o[-1] = '_'; /* nor a trailing one, before the pattern's own dots */
            break;
        case 'h':
            cut = append_clean(&o, end, host, strlen(host));
            break;
        case 'r':
            cut = append_clean(&o, end, rank, strlen(rank));
            break;
        case '%':
            *o++ = '%';
            break;
        default:
            *o++ = '%';
            if (o < end)
                *o++ = *p;
            else
                cut = 1;
        }
    }
    *o = 0;
    return cut || *p ? -1 : 0;
}

/* Moves a new descriptor of the trace out of the program's way (see the
 * top): returns the new number (the old one closed) or f itself when no
 * better one is free. Above the soft RLIMIT_NOFILE when the hard limit
 * allows: F_DUPFD needs the soft limit raised for that moment, which happens
 * at start or in a fork child, before the program's threads run (or while
 * they run: an open() of theirs then may only succeed where it would have
 * failed). Otherwise the highest free number below it, and below 4096
 * (the kernel sizes the descriptor table to the highest number: a soft
 * limit of a million would cost 8 MiB). When that limit is a small one
 * (below FD_SETSIZE, 1024: a program squeezed on purpose, prlimit
 * --nofile=4), every descriptor may be one the program needs, and when no
 * number from 3 up is free, 0-2 must not be kept: then the trace is held
 * only while it is written (fd_transient: closed after the header and each
 * flush round, opened again by reopen_trace for the next), at the cost of a
 * failed write, and tracing stopped with one line, when the program holds
 * every descriptor at that moment. Such a descriptor stays where open()
 * put it (unless that is 0-2): moving it would hold two descriptors for a
 * moment, and a program at its limit that opened a file then got EMFILE
 * (rel_fds' closerange under --nofile=5, once in a loaded CI run). */
static int place_fd(int f)
{
    struct rlimit rl;
    int to = -1, top = 4096;
    fd_transient = 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)top) {
        top = (int)rl.rlim_cur;
        if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur) {
            struct rlimit up = rl;
            up.rlim_cur = rl.rlim_cur + 1;
            if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
                to = fcntl(f, F_DUPFD_CLOEXEC, top);
                setrlimit(RLIMIT_NOFILE, &rl);
            }
        }
        fd_transient = to < 0 && top < 1024;
        if (fd_transient && f >= 3)
            return f;
    }
    for (int n = top - 1; to < 0 && n >= 3 && n >= top - 64; n--)
        to = fcntl(f, F_DUPFD_CLOEXEC, n);
    if (to < 0 && f < 3)
        to = fcntl(f, F_DUPFD_CLOEXEC, 3);
    if (to < 0) {
        fd_transient |= f < 3;
        return f;
    }
    close(f);
    return to;
}

/* fd still is the trace. */
static int fd_is_trace(void)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino;
}

/* The program closed the trace's descriptor (its number may be one of the
 * program's files now: it is left alone): open the file again by its path,
 * and take it only if it is the same file. 0, or -1 with errno set. */
static int reopen_trace(void)
{
    fd = -1;
    if (!abs_path[0]) {
        errno = EBADF;
        return -1;
    }
    int f = open(abs_path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (f < 0)
        return -1;
    struct stat st;
    if (fstat(f, &st) || st.st_dev != file_dev || st.st_ino != file_ino) {
        close(f);
        errno = ESTALE; /* another file has the name now */
        return -1;
    }
    fd = place_fd(f);
    return 0;
}

static int write_all(const void *p, size_t n)
{
    if (!fd_is_trace() && reopen_trace())
        return -1;
    /* The kernel answers a write past RLIMIT_FSIZE with SIGXFSZ to the
     * writing thread (it kills, by default, on a program thread): such a
     * write is never made. */
    struct rlimit fl;
    if (getrlimit(RLIMIT_FSIZE, &fl) == 0 && fl.rlim_cur != RLIM_INFINITY &&
        file_off + n > (uint64_t)fl.rlim_cur) {
        errno = EFBIG;
        return -1;
    }
    const uint8_t *c = p;
    while (n) {
        ssize_t w = pwrite(fd, c, n, (off_t)file_off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
        file_off += (uint64_t)w;
    }
    return 0;
}

/* Closes the trace's descriptor if it still is the trace. */
static void close_trace(void)
{
    if (fd_is_trace())
        close(fd);
    fd = -1;
}

/* The absolute path of the file just made, for reopen_trace: the program
 * may change directory. */
static void remember_path(void)
{
    abs_path[0] = 0;
    if (path[0] == '/') {
        gs_fmt(abs_path, sizeof abs_path, "%s", path);
        return;
    }
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd))
        gs_fmt(abs_path, sizeof abs_path, "%s/%s", cwd, path);
}

/* The pattern's directories may name ranks or hosts (out/%h/): create the
 * missing ones, private to the user (0700). */
static void make_parents(const char *p, size_t cap)
{
    char dir[4096];
    size_t n = strnlen(p, cap < sizeof dir ? cap : sizeof dir - 1);
    memcpy(dir, p, n);
    dir[n] = 0;
    for (char *s = dir + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(dir, 0700) && errno != EEXIST)
            return;
        *s = '/';
    }
}

int gs_writer_open(void)
{
    if (!cctx) {
        /* All the memory compression will ever use, taken now (and before
         * the file is made, so a failure leaves no empty file): a chunk
         * written while the program has exhausted memory (the STOPPED
         * record after an out-of-memory stop among them) needs none. */
        /* a stream's context: 1.3 MiB at level 1 (its window and buffers;
         * a context for one frame at a time was 0.57 MiB) */
        size_t wsz = ZSTD_estimateCStreamSize(GS_ZSTD_LEVEL);
        void *ws = gs_pages_alloc(wsz);
        cctx = ws ? ZSTD_initStaticCCtx(ws, wsz) : NULL;
        /* a flush's output: at most a frame's bound for its input */
        comp_cap = ZSTD_compressBound(GS_CHUNK_TARGET + GS_BUF_SIZE);
        raw = gs_pages_alloc(GS_CHUNK_TARGET + GS_BUF_SIZE);
        comp = gs_pages_alloc(comp_cap + GS_CHUNK_HDR_SIZE);
        if (!cctx || !raw || !comp) {
            gs_fail("setting up compression", ENOMEM); /* before any file exists */
            return -1;
        }
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, GS_ZSTD_LEVEL);
    }
    /* A new trace (a forked child's too) starts a new stream. */
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    char base[sizeof path - 16];
    if (expand_pattern(base, sizeof base)) {
        gs_fail("GCSPY_OUTPUT: the trace's path would be longer than the system allows", ENAMETOOLONG);
        return -1;
    }
    if (!base[0])
        gs_fmt(base, sizeof base, "gcspy-%d.trace", (int)getpid());
    /* Never overwrite, never follow a planted symlink: O_EXCL|O_NOFOLLOW.
     * Missing directories are made only when the first try says so. */
    for (int i = 0, made = 0; i < 1000; i++) {
        if (i)
            gs_fmt(path, sizeof path, "%s.%d", base, i);
        else
            gs_fmt(path, sizeof path, "%s", base);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == ENOENT && !made) {
            made = 1;
            make_parents(base, sizeof base);
            i--;
            continue;
        }
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        gs_fail(path[0] ? path : "opening the trace", errno);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st)) {
        gs_fail(path, errno);
        close(fd);
        fd = -1;
        return -1;
    }
    file_dev = st.st_dev;
    file_ino = st.st_ino;
    file_off = 0;
    fd = place_fd(fd);
    have_file = 1;
    remember_path();
    uint8_t hdr[GS_FILE_HDR_SIZE];
    gs_file_header(hdr, GS_FILE_F_ZSTD | GS_FILE_F_ZSTD_STREAM);
    chunk_seq = 0;
    if (write_all(hdr, sizeof hdr)) {
        write_failed = 1;
        gs_fail("writing the trace header", errno);
        return -1;
    }
    if (fd_transient)
        close_trace();
    return 0;
}

const char *gs_writer_path(void)
{
    return path;
}

/* Compresses raw's raw_len bytes into one chunk and writes it. alone: the
 * chunk starts a new frame and ends it, so it decodes without the chunks
 * before it; otherwise it continues the stream, flushed to a block
 * boundary. */
static int emit_chunk(size_t raw_len, int alone)
{
    if (!raw_len)
        return 0;
    if (alone)
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {raw, raw_len, 0};
    ZSTD_outBuffer out = {comp + GS_CHUNK_HDR_SIZE, comp_cap, 0};
    size_t left;
    do
        left = ZSTD_compressStream2(cctx, &out, &in, alone ? ZSTD_e_end : ZSTD_e_flush);
    while (!ZSTD_isError(left) && left && out.pos < out.size);
    size_t n = out.pos;
    if (ZSTD_isError(left) || left) {
        /* The chunk's records are lost: later ones could name its
         * definitions or its blocks, so none is written after it (but
         * STOPPED, in a frame of its own: the stream is broken). A flush
         * left unfinished cannot happen: comp_cap is the input's bound. */
        char why[160];
        gs_fmt(why, sizeof why, "zstd error: %s (%zu bytes of records lost)",
               ZSTD_isError(left) ? ZSTD_getErrorName(left) : "output full", raw_len);
        chunk_lost = 1;
        gs_fail_why("compressing a chunk", why);
        return -1;
    }
    gs_chunk_header(comp, chunk_seq, comp + GS_CHUNK_HDR_SIZE, (uint32_t)n, (uint32_t)raw_len);
    if (write_all(comp, GS_CHUNK_HDR_SIZE + n)) {
        char what[sizeof path + 32];
        gs_fmt(what, sizeof what, "writing trace %s failed", path);
        write_failed = 1;
        gs_fail(what, errno);
        return -1;
    }
    chunk_seq++;
    return 0;
}

/* Merge sort of a buffer list by seq (no allocation). */
static struct gs_buf *sort_by_seq(struct gs_buf *l)
{
    if (!l || !l->next)
        return l;
    struct gs_buf *a = l, *b = l->next;
    while (b && b->next) {
        l = l->next;
        b = b->next->next;
    }
    b = l->next;
    l->next = NULL;
    a = sort_by_seq(a);
    b = sort_by_seq(b);
    /* Merge through a pointer to the tail link (a dummy struct gs_buf
     * would put 64 KiB on the writer's small stack at every level). */
    struct gs_buf *head = NULL, **t = &head;
    while (a && b) {
        if (a->seq < b->seq) { *t = a; a = a->next; }
        else { *t = b; b = b->next; }
        t = &(*t)->next;
    }
    *t = a ? a : b;
    return head;
}

/* Packs the list into chunks, writes them, returns every buffer to the pool. */
static int write_list(struct gs_buf *l, size_t *fill)
{
    int rc = 0;
    while (l) {
        struct gs_buf *next = l->next;
        if (rc == 0 && have_file && !write_failed && !chunk_lost && l->len) {
            if (*fill + l->len > GS_CHUNK_TARGET) {
                rc = emit_chunk(*fill, 0);
                *fill = 0;
            }
            if (rc == 0) {
                memcpy(raw + *fill, l->data, l->len);
                *fill += l->len;
            }
        }
        atomic_fetch_sub(&pending_bytes, (int64_t)l->len);
        buf_put(l);
        l = next;
    }
    return rc;
}

static void detach(struct gs_stream *s, struct gs_buf **list)
{
    gs_spin_lock(&s->lock);
    struct gs_buf *b = s->cur;
    s->cur = NULL;
    gs_spin_unlock(&s->lock);
    if (b) {
        atomic_fetch_add(&pending_bytes, (int64_t)b->len);
        b->next = *list;
        *list = b;
    }
}

/* Moves the queued buffers of q onto *metas or *shards. */
static void split(struct gs_buf *q, struct gs_buf **metas, struct gs_buf **shards)
{
    while (q) {
        struct gs_buf *next = q->next;
        struct gs_buf **to = q->pad == 1 ? metas : shards;
        q->next = *to;
        *to = q;
        q = next;
    }
}

/* One flush round (see the ordering notes at the top). Caller holds writer_mu. */
static void flush_round(void)
{
    struct gs_buf *shards = deferred, *metas = NULL;
    deferred = NULL;
    for (int i = 0; i < GS_SHARDS; i++)
        detach(&gs_shards[i].s, &shards);
    split(atomic_exchange(&full_queue, NULL), &metas, &shards);
    detach(&gs_meta, &metas);
    split(atomic_exchange(&full_queue, NULL), &metas, &deferred);
    size_t fill = 0;
    write_list(sort_by_seq(metas), &fill);
    write_list(sort_by_seq(shards), &fill);
    if (have_file && !write_failed && !chunk_lost)
        emit_chunk(fill, 0);
    if (fd_transient)
        close_trace(); /* fd stays -1 for the next round's reopen_trace */
    atomic_fetch_add(&drain_word, 1);
    futex_wake(&drain_word);
}

void gs_writer_flush(void)
{
    pthread_mutex_lock(&writer_mu);
    flush_round();
    pthread_mutex_unlock(&writer_mu);
}

/* The exit, once tracing is stopped: wake the threads waiting for room and
 * wait until none is left waiting. Each re-takes its shard lock and sees the
 * stop; the exit's pass over the shard locks that follows waits for it to
 * finish (undoing what it had not recorded). */
void gs_writer_release_waiters(void)
{
    while (atomic_load(&bp_waiters)) {
        atomic_fetch_add(&drain_word, 1);
        futex_wake(&drain_word);
        sched_yield();
    }
}

void gs_writer_wake(void)
{
    atomic_fetch_add(&wake_word, 1);
    futex_wake(&wake_word);
}

/* The end of a trace whose tracing failed (gs_fail), when the file can
 * still be written: what is buffered (unless a chunk was lost: later
 * records could need what it held), then a chunk with a STOPPED record
 * naming the failure, then the file is closed. After a write failure
 * nothing is written: the file's end is wherever the failed write left it.
 * Caller holds writer_mu. */
static void end_stopped(void)
{
    if (!have_file)
        return;
    if (!write_failed && !chunk_lost) {
        flush_round();
        if (deferred)
            flush_round();
    }
    if (!write_failed && stop_record) {
        struct gs_enc_state st;
        uint8_t *e = stop_record(gs_rec_timebase(raw, &st, gs_now()), stop_t, stop_reason);
        emit_chunk((size_t)(e - raw), 1); /* may fail too: then nothing */
    }
    close_trace();
    have_file = 0;
}

static void *writer_main(void *arg)
{
    (void)arg;
    gs_tls.in_hook = 1; /* everything this thread does is gcspy's own */
    int here;
    writer_tid = gs_raw_gettid();
    gs_own_thread_add(writer_tid);
    gs_own_stack_hint[0] = (uintptr_t)&here;
    atomic_store(&writer_ready, 1);
    while (!atomic_load(&writer_stop) && gs_tracing()) {
        unsigned seen = atomic_load(&wake_word);
        /* Sleep until the next flush, or until the tick is due if sooner. */
        uint64_t sleep_ns = gs_opt.flush_ms * 1000000ull;
        uint64_t due_ns = tick_due_ns ? tick_due_ns() : UINT64_MAX;
        if (due_ns < sleep_ns)
            sleep_ns = due_ns;
        if (atomic_load(&full_queue) == NULL && sleep_ns)
            futex_wait(&wake_word, seen, sleep_ns);
        if (atomic_load(&writer_stop) || !gs_tracing())
            break;
        if (tick_run)
            tick_run(); /* it flushes, through gs_writer_flush_due */
        else
            gs_writer_flush_due(gs_now_fine());
    }
    if (atomic_load(&failed_once)) {
        pthread_mutex_lock(&writer_mu);
        end_stopped();
        pthread_mutex_unlock(&writer_mu);
    }
    return NULL;
}

/* At the program's end after tracing stopped on a failure: the writer
 * thread ends the trace with STOPPED (writer_main), but it may not get to
 * run before the process ends, which left a trace of nothing but its
 * header (rel_oom's mid case, about one run in six). The ending is written
 * here if it has not been: end_stopped is idempotent under writer_mu (the
 * thread that comes second finds the file closed). */
static int writer_is_thread(void);

void gs_writer_end_if_stopped(void)
{
    if (!atomic_load(&failed_once) || writer_is_thread())
        return;
    pthread_mutex_lock(&writer_mu);
    end_stopped();
    pthread_mutex_unlock(&writer_mu);
}

void gs_writer_set_tick(void (*run)(void), uint64_t (*due_ns)(void))
{
    tick_run = run;
    tick_due_ns = due_ns;
}

void gs_writer_set_stop_record(uint8_t *(*enc)(uint8_t *p, uint64_t t, const char *why))
{
    stop_record = enc;
}

/* The tick's flush: when the interval has passed, or full buffers wait. */
void gs_writer_flush_due(uint64_t now)
{
    if (gs_opt.flush_ms * 1000000ull <= now - last_flush_ns || atomic_load(&full_queue)) {
        last_flush_ns = now;
        gs_writer_flush();
    }
}

int gs_writer_stopping(void)
{
    return atomic_load(&writer_stop);
}

/* glibc's own pthread_join, past any interposer (life.c finds it and says
 * why: LeakSanitizer's interceptor, preloaded after gcspy, waited for ever
 * on a forked child's writer). pthread_join, the global one, until set. */
static int (*libc_join)(pthread_t, void **) = pthread_join;

void gs_writer_set_join(int (*join)(pthread_t, void **))
{
    if (join)
        libc_join = join;
}

int gs_writer_start(void)
{
    sigset_t all, old;
    sigfillset(&all);
    /* The writer blocks every signal: the program's handlers and the
     * scanner's stop signal are for the program's threads. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&writer_stop, 0);
    /* A small stack: the writer needs little, and under an address-space
     * limit (ulimit -v) every megabyte gcspy holds is one the program lacks. */
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        pthread_attr_setstacksize(&attr, 256u << 10);
        rc = pthread_create(&writer_thread, &attr, writer_main, NULL);
        pthread_attr_destroy(&attr);
    }
    /* A program with a large static TLS (CUDA's libraries) needs more than
     * that for any thread: then the default size. */
    if (rc)
        rc = pthread_create(&writer_thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        gs_fail("starting the writer thread", rc);
        pthread_mutex_lock(&writer_mu);
        end_stopped();
        pthread_mutex_unlock(&writer_mu);
        return -1;
    }
    /* A scan must know the writer's tid (it is never stopped): wait until
     * the thread has registered it. */
    while (!atomic_load(&writer_ready))
        sched_yield();
    writer_running = 1;
    return 0;
}

static int writer_is_thread(void)
{
    return writer_running && pthread_equal(pthread_self(), writer_thread);
}

static void stop_thread(void)
{
    atomic_store(&writer_stop, 1);
    atomic_fetch_add(&wake_word, 1);
    futex_wake(&wake_word);
    /* The writer exits within one round; joining is safe because it never
     * waits on anything the caller holds. */
    libc_join(writer_thread, NULL);
    writer_running = 0;
}

int gs_writer_park(void)
{
    if (!writer_running || writer_is_thread())
        return -1;
    int tid = writer_tid;
    stop_thread();
    atomic_store(&writer_ready, 0);
    gs_own_thread_remove(tid);
    /* pthread_join returns when the thread's stack is free, which the
     * kernel signals before the thread leaves the thread group (and drops
     * its share of the file-system context): wait for that, 100 ms at most. */
    char task[64];
    gs_fmt(task, sizeof task, "/proc/self/task/%d", tid);
    for (int i = 0; i < 2000 && syscall(SYS_faccessat, AT_FDCWD, task, F_OK, 0) == 0; i++) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int gs_writer_close(const uint8_t *tail, size_t tail_len)
{
    int rc = -1;
    if (writer_running && !writer_is_thread())
        stop_thread();
    pthread_mutex_lock(&writer_mu);
    flush_round();
    if (deferred) /* the second round writes what the first deferred */
        flush_round();
    if (atomic_load(&failed_once)) {
        /* it failed in these last rounds: the trace ends with STOPPED */
        end_stopped();
        pthread_mutex_unlock(&writer_mu);
        return -1;
    }
    /* The tail (PROCESS_EXIT, TRACE_END) goes last, in a chunk of its own. */
    if (have_file && !write_failed && tail_len <= GS_CHUNK_TARGET) {
        struct gs_enc_state st;
        size_t tb = (size_t)(gs_rec_timebase(raw, &st, gs_now()) - raw);
        memcpy(raw + tb, tail, tail_len);
        rc = emit_chunk(tb + tail_len, 1);
    }
    close_trace();
    have_file = 0;
    pthread_mutex_unlock(&writer_mu);
    return rc;
}

/* fork: the child must not inherit a half-written chunk or a lock held by a
 * thread that does not exist in it. The core takes, in order: writer mutex,
 * stack, meta, shards, threads, pool (gs_writer_atfork_lock/unlock bracket). */
void gs_writer_atfork_lock(int pool)
{
    if (pool)
        gs_spin_lock(&pool_lock);
    else
        pthread_mutex_lock(&writer_mu);
}

void gs_writer_atfork_unlock(int pool)
{
    if (pool)
        gs_spin_unlock(&pool_lock);
    else
        pthread_mutex_unlock(&writer_mu);
}

void gs_writer_atfork_child(void)
{
    atomic_store(&pool_lock, 0);
    atomic_store(&gs_meta.lock, 0);
    pthread_mutex_init(&writer_mu, NULL);
    /* The parent's pending events belong to the parent's trace. */
    struct gs_buf *q = atomic_exchange(&full_queue, NULL);
    while (q) {
        struct gs_buf *n = q->next;
        buf_put(q);
        q = n;
    }
    while (deferred) {
        struct gs_buf *n = deferred->next;
        buf_put(deferred);
        deferred = n;
    }
    for (int i = 0; i < GS_SHARDS; i++)
        if (gs_shards[i].s.cur) {
            buf_put(gs_shards[i].s.cur);
            gs_shards[i].s.cur = NULL;
        }
    if (gs_meta.cur) {
        buf_put(gs_meta.cur);
        gs_meta.cur = NULL;
    }
    atomic_store(&pending_bytes, 0);
    close_trace(); /* the parent's; unless the program made the number its own */
    have_file = 0;
    write_failed = 0;
    chunk_lost = 0;
    atomic_store(&failed_once, 0);
    writer_running = 0;
    atomic_store(&writer_ready, 0);
    path[0] = 0;
}
