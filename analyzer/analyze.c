/*
 * From trace to result (analyze.h): one pass of the reader over the trace,
 * each record checked against the format's promises (validate.h) and fed to
 * the replay model; then the result built from the model's end state, part
 * by part (analyze_int.h lists the files). When the HTML page's history is
 * asked for, the snapshots of the live set and the sites' values at the
 * growth checkpoints are gathered during the same pass (snapshots.h,
 * sitelog.h): a trace is read once, so a pipe serves as well as a file.
 *
 * What stays true: every record reaches the model in file order; a snapshot
 * is taken before the hot record whose time passes its slot, never after it.
 */
#include "analyze_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "siteext.h"
#include "findings.h"
#include "sitelog.h"
#include "snapshots.h"
#include "validate.h"

void gs_analyze_defaults(struct gs_analyze_opts *o)
{
    memset(o, 0, sizeof *o);
    o->model.cuda_pause_ns = 1000000;       /* 1 ms */
    o->growth.min_points = 5;
    o->growth.min_r2 = 0.8;
    o->growth.min_bytes = 64 * 1024;
    o->max_groups = 200;
    o->all_classes_mask = (1u << GS_CLASS_DEFINITE) | (1u << GS_CLASS_INDIRECT) |
                          (1u << GS_CLASS_POSSIBLE);
    o->max_suspects = 100;
    o->max_frames = 256;
}

/* One replay: the model, the checks, and what the history gathers. */
struct pass {
    struct gs_model m;
    struct gs_validate val;
    struct gs_snaps *snaps;         /* NULL: no history */
    struct gs_sitelog log;
    struct gs_siteext ext;          /* kept when o->sites */
    uint64_t due;                   /* snaps->due, kept at hand */
    uint64_t t_event;               /* the latest allocation or free event */
};

/* One record: checked, then (unless it cannot be applied) replayed. */
static int feed(struct pass *p, const struct gs_record *rec)
{
    int apply = gs_validate_pre(&p->val, &p->m, rec);
    if (apply < 0)
        return -1;
    if (!apply)
        return 0;
    /* only allocation and free events move the snapshots' clock */
    if (rec->t >= p->due && rec->type < GS_REC_LENGTHED) {
        if (gs_snaps_clock(p->snaps, &p->m, rec->t))
            return -1;
        p->due = p->snaps->due;
    }
    if (gs_model_feed(&p->m, rec))
        return -1;
    if (rec->type < GS_REC_LENGTHED && rec->type != GS_REC_STACK &&
        rec->type != GS_REC_TIMEBASE && rec->t > p->t_event)
        p->t_event = rec->t;
    if (rec->type == GS_REC_FREE || rec->type == GS_REC_FREE_EX)
        gs_validate_post(&p->val, &p->m, rec);
    return 0;
}

/* Every record of rd. Hot records are fed AHEAD records after they are
 * read, with their cache lines prefetched meanwhile (the live set and the
 * sites are too big for the cache; the records of one trace are not).
 * Lengthed records point into the reader's chunk, valid only until the next
 * read: the ring is drained and they are fed at once. Returns the reader's
 * last status, or -1 when out of memory. */
static int read_all(struct gs_reader *rd, struct pass *p)
{
    enum { AHEAD = 32 };
    struct gs_record *ring = malloc(AHEAD * sizeof *ring);
    if (!ring)
        return -1;
    unsigned head = 0, pending = 0;
    int st;
    for (;;) {
        struct gs_record *rec = &ring[(head + pending) % AHEAD];
        st = gs_reader_next(rd, rec);
        if (st != GS_READ_OK)
            break;
        if (rec->type < GS_REC_LENGTHED) {
            gs_model_prefetch(&p->m, rec, 0);
            pending++;
            if (pending > AHEAD / 2)
                gs_model_prefetch(&p->m, &ring[(head + pending - 1 - AHEAD / 2) % AHEAD], 1);
            if (pending < AHEAD)
                continue;
        }
        /* feed the oldest (and, for a lengthed record, everything) */
        unsigned n = rec->type < GS_REC_LENGTHED ? 1 : pending;
        for (unsigned k = 0; k < n; k++, head = (head + 1) % AHEAD, pending--)
            if (feed(p, &ring[head]))
                goto oom;
        if (rec->type >= GS_REC_LENGTHED && feed(p, rec))
            goto oom;
    }
    for (; pending; head = (head + 1) % AHEAD, pending--)
        if (feed(p, &ring[head]))
            goto oom;
    free(ring);
    return st;
oom:
    free(ring);
    return -1;
}

/* ---- the pipeline: reading on one thread, replaying on this one ----
 *
 * With o->pipeline, a second thread reads, checks, decompresses and
 * decodes the trace into batches of records, handed over in file order
 * through a queue of QDEPTH; this thread replays them (feed), exactly as
 * read_all would, prefetching ahead within a batch. Records of lengthed
 * types point into their chunk's buffer: the reader keeps every chunk in a
 * buffer of its own (gs_reader_keep_chunks), which travels with the last
 * batch that uses it and is freed after that batch is replayed. A batch
 * never spans two chunks. */
enum { BATCH = 4096, QDEPTH = 4 };

struct batch {
    struct gs_record rec[BATCH];
    unsigned n;
    void *chunk;                /* a spent chunk buffer to free after, or NULL */
};

struct pipe {
    struct gs_reader *rd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct batch *slot[QDEPTH + 2];
    struct batch *full[QDEPTH], *free_[QDEPTH + 2];
    unsigned nfull, head, nfree;
    int done, stop;             /* the reader has finished; the replay gave up */
    int st;                     /* the reader's last status, or -1: out of memory */
};

/* The reader thread: batches in file order until the end or a stop. */
static void *pipe_reader(void *arg)
{
    struct pipe *q = arg;
    struct batch *b = NULL;
    int st = GS_READ_OK;
    for (;;) {
        if (!b) {
            pthread_mutex_lock(&q->mu);
            while (!q->nfree && !q->stop)
                pthread_cond_wait(&q->cv, &q->mu);
            b = q->stop ? NULL : q->free_[--q->nfree];
            pthread_mutex_unlock(&q->mu);
            if (!b)
                break;
            b->n = 0;
            b->chunk = NULL;
        }
        st = gs_reader_next(q->rd, &b->rec[b->n]);
        void *spent = gs_reader_take_spent(q->rd);
        int more = st == GS_READ_OK;
        struct batch *next_b = NULL;
        unsigned publish = 0;
        if (spent) {
            /* rec[n] opened a new chunk: the records before it, of the old
             * chunk, go with its buffer */
            b->chunk = spent;
            publish = 1;
        } else if (more && ++b->n == BATCH) {
            publish = 2;
        }
        if (!more)
            publish = 1;
        if (!publish)
            continue;
        pthread_mutex_lock(&q->mu);
        if (publish == 1 && more) {
            /* the new chunk's first record moves to a new batch */
            while (!q->nfree && !q->stop)
                pthread_cond_wait(&q->cv, &q->mu);
            if (!q->stop) {
                next_b = q->free_[--q->nfree];
                next_b->rec[0] = b->rec[b->n];
                next_b->n = 1;
                next_b->chunk = NULL;
            }
        }
        q->full[(q->head + q->nfull) % QDEPTH] = b;
        q->nfull++;
        pthread_cond_broadcast(&q->cv);
        int stop = q->stop;
        pthread_mutex_unlock(&q->mu);
        b = next_b;
        if (!more || stop)
            break;
    }
    pthread_mutex_lock(&q->mu);
    if (b) /* unpublished (a stop): back to the free list */
        q->free_[q->nfree++] = b;
    q->st = st;
    q->done = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* read_all with the reading on its own thread; the same records fed in the
 * same order, the same return. */
static int read_piped(struct gs_reader *rd, struct pass *p)
{
    struct pipe q;
    memset(&q, 0, sizeof q);
    q.rd = rd;
    for (unsigned k = 0; k < QDEPTH; k++) {
        if (!(q.slot[k] = malloc(sizeof *q.slot[k]))) {
            for (unsigned j = 0; j < k; j++)
                free(q.slot[j]);
            return read_all(rd, p);
        }
        q.free_[q.nfree++] = q.slot[k];
    }
    gs_reader_keep_chunks(rd);
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    pthread_t th;
    int rc = 0;
    if (pthread_create(&th, NULL, pipe_reader, &q)) {
        rc = read_all(rd, p); /* keep mode changes nothing for it */
        goto out;
    }
    enum { AHEAD = 32 };
    for (;;) {
        pthread_mutex_lock(&q.mu);
        while (!q.nfull && !q.done)
            pthread_cond_wait(&q.cv, &q.mu);
        if (!q.nfull) {
            pthread_mutex_unlock(&q.mu);
            break;
        }
        struct batch *b = q.full[q.head];
        q.head = (q.head + 1) % QDEPTH;
        q.nfull--;
        pthread_mutex_unlock(&q.mu);
        if (!rc) {
            struct gs_record *v = b->rec;
            unsigned n = b->n;
            for (unsigned i = 0; i < n && i < AHEAD; i++)
                gs_model_prefetch(&p->m, &v[i], 0);
            for (unsigned i = 0; i < n; i++) {
                if (i + AHEAD < n)
                    gs_model_prefetch(&p->m, &v[i + AHEAD], 0);
                if (i + AHEAD / 2 < n)
                    gs_model_prefetch(&p->m, &v[i + AHEAD / 2], 1);
                if (feed(p, &v[i])) {
                    rc = -1;
                    break;
                }
            }
        }
        free(b->chunk);
        b->chunk = NULL;
        pthread_mutex_lock(&q.mu);
        q.free_[q.nfree++] = b;
        if (rc)
            q.stop = 1;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
    }
    pthread_join(th, NULL);
    if (!rc)
        rc = q.st;
out:
    pthread_cond_destroy(&q.cv);
    pthread_mutex_destroy(&q.mu);
    for (unsigned k = 0; k < QDEPTH; k++)
        free(q.slot[k]);
    return rc;
}

/* Whether the trace is whole, and if not, why: the reader's damage (a cut
 * at the end of the file is incomplete, any other damage malformed too),
 * or a trace that ends without TRACE_END.
 *
 * A trace that ends at an exec is whole: the old image writes EXEC and
 * flushes, and the exec leaves nothing more to write. An exec that failed
 * lets the program run on, so EXEC counts as the end only when no
 * allocation or free came after it in time (a killed process that had
 * allocated after a failed exec stays incomplete). Samples are not events
 * here: the writer thread may take one between EXEC and the exec. */
static int note_completeness(struct gs_reader *rd, int st, struct pass *p, struct gs_result *r)
{
    const struct gs_model *m = &p->m;
    r->chunks = gs_reader_chunks(rd);
    r->bytes_read = gs_reader_offset(rd);
    if (st == GS_READ_DAMAGED) {
        r->damage = gs_arena_strdup(&r->arena, gs_reader_error(rd));
        if (!gs_reader_cut(rd))
            gs_validate_problem(&p->val, NULL, "%s", gs_reader_error(rd));
    } else if (!m->have_end && m->have_stopped) {
        r->damage = gs_arena_printf(&r->arena,
                                    "offset %" PRIu64 ": the trace ends after %" PRIu64
                                    " chunks at STOPPED: tracing stopped on a failure (%s)",
                                    r->bytes_read, r->chunks,
                                    m->stopped_reason ? m->stopped_reason : "");
    } else if (!m->have_end && m->exec_path && p->t_event <= m->t_exec) {
        r->ended_by_exec = 1;
    } else if (!m->have_end) {
        r->damage = gs_arena_printf(&r->arena,
                                    "offset %" PRIu64 ": the trace ends after %" PRIu64
                                    " chunks without TRACE_END (the process was killed, "
                                    "or is still running)", r->bytes_read, r->chunks);
    }
    r->problems = p->val.problems;
    if (r->problems) {
        r->malformed = 1;
        r->problem = gs_arena_strdup(&r->arena, p->val.first);
        if (!r->problem)
            return -1;
    }
    r->complete = r->damage == NULL;
    return !r->complete && !r->damage ? -1 : 0;
}

/* The result's parts, from the model's end state. */
static int build(struct pass *p, const char *name, const struct gs_analyze_opts *o,
                 struct gs_symbolizer *sym, struct gs_result *r)
{
    struct gs_actx c = { &p->m, r, o, { 0 } };
    gs_stacks_init(&c.stacks, &p->m, sym, &r->arena, o->max_frames);
    r->trace = gs_arena_strdup(&r->arena, name);
    int rc = !r->trace || gs_build_process(&c) || gs_build_leaks(&c) ||
                     gs_build_suspects(&c) || gs_build_pauses(&c) || gs_build_timeline(&c) ||
                     (p->m.ext && gs_build_sites(&c, p->m.ext)) ||
                     gs_findings_build(r, o->userframe)
                 ? -1
                 : 0;
    if (!rc && p->snaps)
        rc = p->log.failed || gs_snaps_end(p->snaps, &p->m, r->duration_ns) ||
                     gs_build_history(&c, p->snaps, &p->log)
                 ? -1
                 : 0;
    gs_stacks_free(&c.stacks);
    return rc || r->arena.failed ? -1 : 0;
}

static void pass_free(struct pass *p)
{
    gs_validate_free(&p->val);
    gs_model_free(&p->m);
    gs_snaps_free(p->snaps);
    gs_sitelog_free(&p->log);
    gs_siteext_free(&p->ext);
    free(p);
}

static int analyze(struct gs_reader *rd, const char *name, const struct gs_analyze_opts *o,
                   struct gs_symbolizer *sym, struct gs_result **out, char *err,
                   size_t errlen)
{
    struct gs_analyze_opts defaults;
    if (!o) {
        gs_analyze_defaults(&defaults);
        o = &defaults;
    }
    struct pass *p = calloc(1, sizeof *p);
    struct gs_result *r = calloc(1, sizeof *r);
    int ok = p && r && gs_model_init(&p->m, &o->model) == 0;
    if (ok)
        p->m.pool_events_delta = gs_reader_major(rd) >= 2;
    if (p) {
        gs_validate_init(&p->val);
        p->due = UINT64_MAX;
        if (ok && o->sites) {
            ok = gs_siteext_init(&p->ext, o->sites_pass2 ? o->sites_peak_t : UINT64_MAX,
                                 o->temp_threshold_ns ? o->temp_threshold_ns : 1000000) == 0;
            p->m.ext = &p->ext;
            p->m.peak_only = o->sites_pass1;
        }
        if (ok && o->history) {
            p->snaps = gs_snaps_new();
            gs_sitelog_init(&p->log, &p->m.cps[GS_AXIS_STEP], o->growth.min_points);
            p->m.sitelog = &p->log;
            ok = p->snaps != NULL;
            p->due = ok ? p->snaps->due : UINT64_MAX;
        }
    }
    int st = !ok ? -1 : o->pipeline ? read_piped(rd, p) : read_all(rd, p);
    ok = st >= 0 && note_completeness(rd, st, p, r) == 0 && gs_model_finish(&p->m) == 0;
    if (ok && o->sites_pass1) {
        gs_siteext_peak(&p->ext, &r->peak_t, &r->peak_live);
    } else if (ok) {
        /* the shared symbolizer is this trace's only in its turn (turn.h) */
        if (sym && o->turn)
            gs_turn_take(o->turn, o->turn_index);
        ok = build(p, name, o, sym, r) == 0;
        if (sym && o->turn)
            gs_turn_give(o->turn, o->turn_index);
    }
    gs_reader_close(rd);
    if (p)
        pass_free(p);
    if (!ok) {
        gs_result_free(r);
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    *out = r;
    return 0;
}

/* A trace to read twice: a file by path, bytes in memory (data set), or
 * a spooled copy of standard input (fd >= 0). */
struct source {
    const char *path;
    const void *data;
    size_t len;
    int fd;
};

static struct gs_reader *source_open(const struct source *src, char *err, size_t errlen)
{
    if (src->fd >= 0) {
        if (lseek(src->fd, 0, SEEK_SET) != 0) {
            snprintf(err, errlen, "standard input: cannot read its copy again: %s",
                     strerror(errno));
            return NULL;
        }
        return gs_reader_open_fd(src->fd, "standard input", err, errlen);
    }
    return src->data ? gs_reader_open_mem(src->data, src->len, err, errlen)
                     : gs_reader_open(src->path, err, errlen);
}

/* Standard input copied to an unlinked temporary file, so the sites' two
 * reads see it twice (it costs the trace's size in temporary disk space, not
 * memory); the file, or NULL with err set. */
static FILE *spool_stdin(char *err, size_t errlen)
{
    FILE *t = tmpfile();
    if (!t) {
        snprintf(err, errlen, "standard input: cannot make a temporary copy: %s",
                 strerror(errno));
        return NULL;
    }
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && fwrite(buf, 1, (size_t)n, t) != (size_t)n)) {
            snprintf(err, errlen, "standard input: cannot copy it: %s", strerror(errno));
            fclose(t);
            return NULL;
        }
        if (n == 0)
            break;
    }
    if (fflush(t)) {
        snprintf(err, errlen, "standard input: cannot copy it: %s", strerror(errno));
        fclose(t);
        return NULL;
    }
    return t;
}

/* The sites' peak needs the peak time before the replay that sums the
 * sites at it (siteext.h): a first read, unsymbolized, finds it. */
static int analyze_sites(const struct source *src, const char *name,
                         const struct gs_analyze_opts *o, struct gs_symbolizer *sym,
                         struct gs_result **out, char *err, size_t errlen)
{
    struct gs_result *r1;
    /* the first read wants the peak's time only: not the page's history */
    struct gs_analyze_opts o1 = *o;
    o1.history = 0;
    o1.sites_pass1 = 1; /* no sites, no result but the peak (0.8 of a full read
                         * on the analyzer bench: decoding and the live set
                         * remain) */
    struct gs_reader *rd = source_open(src, err, errlen);
    if (!rd || analyze(rd, name, &o1, NULL, &r1, err, errlen))
        return -1;
    struct gs_analyze_opts o2 = *o;
    o2.sites_pass2 = 1;
    o2.sites_peak_t = r1->peak_t;
    uint64_t live = r1->peak_live;
    gs_result_free(r1);
    rd = source_open(src, err, errlen);
    if (!rd || analyze(rd, name, &o2, sym, out, err, errlen))
        return -1;
    (*out)->peak_live = live;
    return 0;
}

int gs_analyze_file(const char *path, const struct gs_analyze_opts *o,
                    struct gs_symbolizer *sym, struct gs_result **out,
                    char *err, size_t errlen)
{
    if (o && o->sites && !o->sites_pass2) {
        if (strcmp(path, "-") != 0) {
            struct source src = { path, NULL, 0, -1 };
            return analyze_sites(&src, path, o, sym, out, err, errlen);
        }
        FILE *t = spool_stdin(err, errlen);
        if (!t)
            return -1;
        struct source src = { path, NULL, 0, fileno(t) };
        int rc = analyze_sites(&src, path, o, sym, out, err, errlen);
        fclose(t);
        return rc;
    }
    struct gs_reader *rd = strcmp(path, "-") == 0
                               ? gs_reader_open_fd(0, "standard input", err, errlen)
                               : gs_reader_open(path, err, errlen);
    if (!rd)
        return -1;
    return analyze(rd, path, o, sym, out, err, errlen);
}

int gs_analyze_mem(const void *data, size_t len, const char *name,
                   const struct gs_analyze_opts *o, struct gs_symbolizer *sym,
                   struct gs_result **out, char *err, size_t errlen)
{
    if (o && o->sites && !o->sites_pass2) {
        struct source src = { name, data, len, -1 };
        return analyze_sites(&src, name, o, sym, out, err, errlen);
    }
    struct gs_reader *rd = gs_reader_open_mem(data, len, err, errlen);
    if (!rd)
        return -1;
    return analyze(rd, name, o, sym, out, err, errlen);
}

void gs_result_free(struct gs_result *r)
{
    if (!r)
        return;
    gs_arena_free(&r->arena);
    free(r);
}
