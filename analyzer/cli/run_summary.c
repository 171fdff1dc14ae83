/*
 * `gcspy run`'s exit summary: under `gcspy run` no traced process prints on
 * its own stderr (GCSPY_SUMMARY=none: a test that wants a child's stderr
 * empty, or a program that closed its stderr and opened a data file on
 * descriptor 2, must see nothing of gcspy), so `gcspy run` prints the
 * summaries itself once the program has ended, on its own stderr.
 *
 * Which traces: the files the output pattern can name (each %-specifier
 * read as '*', and the ".N" the shim appends to a name that is taken),
 * resolved against the directory `gcspy run` started in, modified since
 * the run began, whose process is `gcspy run`'s child or a descendant of it
 * (PROCESS_START's pid and ppid: the child's parent is `gcspy run`, a
 * forked or spawned child's parent a process already found; an exec'd
 * image keeps its pid). A process that changed its directory before its
 * shim opened the trace, with a relative pattern, is not found.
 *
 * What is read: PROCESS_START (the first chunk), then only the last chunk
 * (gs_reader_seek_last_chunk), where the exit writes TRACE_END in a chunk
 * of its own. A trace without one is read whole, once, to tell an exec (the
 * new image has its own summary: no line) from a kill (one line saying the
 * trace has no end and no scan), by the analyzer's rule (analyze.c): EXEC
 * with no allocation or free after it in time. A trace with TRACE_END is
 * then analysed (with the built-in suppressions, as `gcspy check` would),
 * for the verdict LeakSanitizer and valgrind print at exit: what the scan at
 * exit found lost, at how many sites, the largest at which frame of the
 * user's code; or that no scan ran.
 */
#define _GNU_SOURCE
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze.h"
#include "cmdutil.h"
#include "commands.h"
#include "findings.h"
#include "fmt.h"
#include "names.h"
#include "suppress.h"
#include "trace_reader.h"

struct found {
    char *path;
    uint64_t pid, ppid;
    int ours;
};

/* The pattern as a glob: %p %e %r %h (and any other %x) match anything,
 * %% is a percent sign, glob's own special characters are literal. */
static char *pattern_glob(const char *pat, const char *suffix)
{
    size_t n = strlen(pat), k = 0;
    char *g = malloc(2 * n + strlen(suffix) + 2);
    if (!g)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (pat[i] == '%' && pat[i + 1] == '%') {
            g[k++] = '%';
            i++;
        } else if (pat[i] == '%' && pat[i + 1]) {
            g[k++] = '*';
            i++;
        } else {
            if (strchr("*?[]\\", pat[i]))
                g[k++] = '\\';
            g[k++] = pat[i];
        }
    }
    strcpy(g + k, suffix);
    return g;
}

/* PROCESS_START's pid and ppid: 0, or -1 when the trace does not start
 * with one (not a trace, or written by no process of ours). */
static int first_record(const char *path, uint64_t *pid, uint64_t *ppid)
{
    char err[512];
    struct gs_reader *rd = gs_reader_open(path, err, sizeof err);
    if (!rd)
        return -1;
    struct gs_record rec;
    int rc = -1;
    while (gs_reader_next(rd, &rec) == GS_READ_OK) {
        if (rec.type == GS_REC_PROCESS_START) {
            *pid = rec.u.proc.pid;
            *ppid = rec.u.proc.ppid;
            rc = 0;
            break;
        }
        if (rec.type != GS_REC_TIMEBASE)
            break; /* PROCESS_START is a trace's first record */
    }
    gs_reader_close(rd);
    return rc;
}

struct ending {
    int have_end, have_exit, exec;
    int64_t status;
    uint64_t how;
    uint64_t allocs, bytes, live_blocks, live_bytes;
};

static void note(struct ending *e, const struct gs_record *rec)
{
    if (rec->type == GS_REC_TRACE_END) {
        e->have_end = 1;
        e->allocs = rec->u.end.allocs;
        e->bytes = rec->u.end.bytes_allocated;
        e->live_blocks = rec->u.end.live_blocks;
        e->live_bytes = rec->u.end.live_bytes;
    } else if (rec->type == GS_REC_PROCESS_EXIT) {
        e->have_exit = 1;
        e->status = rec->u.exit.status;
        e->how = rec->u.exit.how;
    }
}

/* How the trace ends: its last chunk, or, without TRACE_END there, the
 * whole trace. -1 when it cannot be read. */
static int ending(const char *path, struct ending *e)
{
    char err[512];
    memset(e, 0, sizeof *e);
    struct gs_reader *rd = gs_reader_open(path, err, sizeof err);
    if (!rd)
        return -1;
    struct gs_record rec;
    if (gs_reader_seek_last_chunk(rd) >= 0)
        while (gs_reader_next(rd, &rec) == GS_READ_OK)
            note(e, &rec);
    gs_reader_close(rd);
    if (e->have_end)
        return 0;
    rd = gs_reader_open(path, err, sizeof err);
    if (!rd)
        return -1;
    int seen_exec = 0;
    uint64_t t_exec = 0, t_event = 0;
    while (gs_reader_next(rd, &rec) == GS_READ_OK) {
        note(e, &rec);
        if (rec.type == GS_REC_EXEC) {
            seen_exec = 1;
            t_exec = rec.t;
        } else if (rec.type < GS_REC_LENGTHED && rec.type != GS_REC_STACK &&
                   rec.type != GS_REC_TIMEBASE && rec.t > t_event) {
            t_event = rec.t;
        }
    }
    gs_reader_close(rd);
    e->exec = !e->have_end && seen_exec && t_event <= t_exec;
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct found *)a)->path, ((const struct found *)b)->path);
}

/* The traces of the run: see the top of the file. */
static size_t find_traces(const char *pattern, long self, const struct timespec *start,
                          struct found **out)
{
    glob_t g;
    memset(&g, 0, sizeof g);
    char *g1 = pattern_glob(pattern, ""), *g2 = pattern_glob(pattern, ".[0-9]*");
    if (g1 && g2) {
        int rc = glob(g1, GLOB_NOSORT, NULL, &g);
        if (rc == 0 || rc == GLOB_NOMATCH)
            glob(g2, GLOB_NOSORT | (rc == 0 ? GLOB_APPEND : 0), NULL, &g);
    }
    free(g1);
    free(g2);
    struct found *v = calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; v && i < g.gl_pathc; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) || !S_ISREG(st.st_mode) ||
            st.st_mtim.tv_sec < start->tv_sec ||
            (st.st_mtim.tv_sec == start->tv_sec && st.st_mtim.tv_nsec < start->tv_nsec))
            continue;
        struct found f = { 0 };
        if (first_record(g.gl_pathv[i], &f.pid, &f.ppid) || !(f.path = strdup(g.gl_pathv[i])))
            continue;
        v[n++] = f;
    }
    globfree(&g);
    /* the descendants of `gcspy run`, to a fixed point */
    for (int grew = 1; grew;) {
        grew = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i].ours)
                continue;
            int parent = v[i].ppid == (uint64_t)self;
            for (size_t j = 0; j < n && !parent; j++)
                parent = v[j].ours && (v[j].pid == v[i].ppid || v[j].pid == v[i].pid);
            if (parent)
                v[i].ours = grew = 1;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].ours)
            v[k++] = v[i];
        else
            free(v[i].path);
    }
    if (k)
        qsort(v, k, sizeof *v, by_path);
    *out = v;
    return k;
}

/* The exit scan's verdict of the trace at path, in words: 0, or -1 when it
 * cannot be analysed (then the caller says what TRACE_END says). Counted as
 * `gcspy check` counts by default: the unsuppressed sites, not inherited,
 * whose worst class is definite or indirect, with all their lost bytes;
 * possible-only sites are named apart. */
static int scan_verdict(const char *path, struct gs_symbolizer *sym, const struct gs_supps *supps,
                        char *out, size_t len)
{
    struct gs_analyze_opts ao;
    gs_analyze_defaults(&ao);
    ao.max_groups = 1;
    struct gs_result *r = NULL;
    char err[512], b1[32], b2[32], fr[512];
    if (!sym || gs_analyze_file(path, &ao, sym, &r, err, sizeof err))
        return -1;
    gs_supp_apply(supps, r, ao.all_classes_mask);
    if (gs_findings_build(r, NULL) || r->leak_status != GS_LS_SCANNED) {
        int no_scan = r->leak_status == GS_LS_NO_SCAN;
        gs_result_free(r);
        if (!no_scan)
            return -1;
        snprintf(out, len, "no leak scan at exit (GCSPY_SCAN_AT_EXIT=0, or it was skipped): "
                 "no leak is known or ruled out");
        return 0;
    }
    struct gs_cell lost = { 0, 0 }, cls[GS_CLASS_REACHABLE], possible = { 0, 0 };
    memset(cls, 0, sizeof cls);
    uint32_t sites = 0;
    const struct gs_leaksite *top = NULL;
    for (uint32_t i = 0; i < r->nsites; i++) {
        const struct gs_leaksite *s = &r->sites[i];
        struct gs_cell l = gs_site_lost(s);
        if (s->suppressed || s->inherited || !l.blocks)
            continue;
        if (s->worst > GS_CLASS_INDIRECT) {
            possible.bytes += l.bytes;
            possible.blocks += l.blocks;
            continue;
        }
        sites++;
        lost.bytes += l.bytes;
        lost.blocks += l.blocks;
        for (int k = 0; k < GS_CLASS_REACHABLE; k++)
            cls[k].blocks += s->cls[k].blocks;
        if (!top)
            top = s; /* the sites are ordered by lost bytes */
    }
    int n;
    if (!sites) {
        n = snprintf(out, len, "no leak: the scan at exit found no block definitely or "
                     "indirectly lost");
    } else {
        const struct gs_frame *f = top->user >= 0 ? &top->st.f[top->user] : NULL;
        n = snprintf(out, len, "LEAKED %s in %" PRIu64 " block%s at %u site%s (definite %" PRIu64
                     ", indirect %" PRIu64 ", possible %" PRIu64 "), the largest at %s",
                     gs_fmt_bytes(b1, lost.bytes), lost.blocks, lost.blocks == 1 ? "" : "s", sites,
                     sites == 1 ? "" : "s", cls[GS_CLASS_DEFINITE].blocks,
                     cls[GS_CLASS_INDIRECT].blocks, cls[GS_CLASS_POSSIBLE].blocks,
                     f ? gs_fmt_frame(fr, sizeof fr, f) : "a stack with no frame of the user's code");
    }
    if (possible.blocks && n > 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, "; %s in %" PRIu64 " block%s possibly lost",
                      gs_fmt_bytes(b2, possible.bytes), possible.blocks,
                      possible.blocks == 1 ? "" : "s");
    uint64_t sup = 0;
    for (int k = 0; k < GS_CLASS_REACHABLE; k++)
        sup += r->suppressed[k].blocks;
    if (sup && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, "; %" PRIu64 " block%s suppressed", sup,
                 sup == 1 ? "" : "s");
    gs_result_free(r);
    return 0;
}

void gs_run_summary(const char *pattern, long self, const struct timespec *start)
{
    struct found *v = NULL;
    size_t n = find_traces(pattern, self, start, &v);
    struct gs_symbolizer *sym = n ? gs_sym_new(1) : NULL;
    struct gs_supps supps;
    memset(&supps, 0, sizeof supps);
    if (n)
        gs_supp_add_defaults(&supps); /* without them: the verdict counts more, never less */
    for (size_t i = 0; i < n; i++) {
        struct ending e;
        char b1[32], b2[32];
        if (ending(v[i].path, &e))
            continue;
        if (e.have_end) {
            char verdict[1024];
            if (scan_verdict(v[i].path, sym, &supps, verdict, sizeof verdict))
                snprintf(verdict, sizeof verdict, "%" PRIu64 " blocks (%s) not freed at exit",
                         e.live_blocks, gs_fmt_bytes(b2, e.live_bytes));
            fprintf(stderr, "gcspy: pid %" PRIu64 ": %" PRIu64 " allocations (%s); %s; trace %s\n",
                    v[i].pid, e.allocs, gs_fmt_bytes(b1, e.bytes), verdict, v[i].path);
        } else if (!e.exec)
            fprintf(stderr, "gcspy: pid %" PRIu64 ": the trace has no end (killed, _exit, or "
                            "still running), so no leak scan; trace %s\n", v[i].pid, v[i].path);
        /* an exec: the new image's trace has the summary */
    }
    if (n == 1) {
        fprintf(stderr, "gcspy: report: gcspy report %s\n", v[0].path);
    } else if (n > 1) {
        fprintf(stderr, "gcspy: report (%zu traces): gcspy report", n);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %s", v[i].path);
        fputc('\n', stderr);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
    gs_supp_free(&supps);
    gs_sym_free(sym);
}

int gs_run_summaries(const char *pattern, long self, const struct timespec *start, const char *dir)
{
    struct found *v = NULL;
    size_t n = find_traces(pattern, self, start, &v);
    struct gs_common c;
    int rc = 2;
    if (gs_common_init(&c, (int)n) == 0) {
        for (size_t i = 0; i < n; i++)
            c.paths[c.npaths++] = v[i].path;
        c.quiet = 1;
        if (gs_supp_add_defaults(&c.supps) == 0)
            rc = n ? gs_report_job(&c, NULL, 0, 1, dir) : 0;
        else
            fprintf(stderr, "gcspy run: out of memory\n");
        gs_common_free(&c);
    } else {
        fprintf(stderr, "gcspy run: out of memory\n");
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].path);
    free(v);
    return rc;
}
