/*
 * `gcspy report` over a job (report_cmd.c hands over when --job,
 * --summary-out or a summary among the inputs asks for it): each trace is
 * analysed into a per-process summary (summary.h) and freed before the
 * next, so a job of any size needs one trace's memory at a time; summary
 * files given are read as they are. Then either the summaries are written
 * one file per trace (--summary-out DIR: the step run where the traces
 * are), or the job report is (reports/job.h).
 *
 * -j N: N processes, forked, analyse every N-th trace each and send their
 * summaries back over a pipe as the fixed-size struct (the same binary on
 * both ends); each has its own symbolizer (the cache is per process). The
 * order of the rows does not depend on N: the report sorts them.
 */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmdutil.h"
#include "commands.h"
#include "../../reports/job.h"
#include "../../reports/summary_json.h"
#include "summary.h"
#include "symbols.h"

/* Trace or summary paths[i] into *p; 0, or -1 with the error printed. */
static int one(const struct gs_common *c, struct gs_symbolizer *sym, const char *path,
               struct gs_psum *p)
{
    char err[1200];
    int is = gs_psum_is_summary(path);
    if (is > 0) {
        if (gs_psum_read(path, p, err, sizeof err)) {
            fprintf(stderr, "gcspy report: %s\n", err);
            return -1;
        }
        return 0;
    }
    struct gs_result *r = NULL;
    if (gs_analyze_file(path, &c->ao, sym, &r, err, sizeof err)) {
        fprintf(stderr, "gcspy report: %s\n", err);
        return -1;
    }
    if (c->supps.n)
        gs_supp_apply(&c->supps, r, c->ao.all_classes_mask);
    if (r->malformed)
        fprintf(stderr, "gcspy report: %s: malformed trace: %s\n", path, r->problem);
    else if (!r->complete && !c->quiet)
        fprintf(stderr, "gcspy report: warning: %s is incomplete: %s\n", path, r->damage);
    gs_psum_from_result(r, p);
    int bad = r->malformed;
    gs_result_free(r);
    return bad ? -1 : 0;
}

static struct gs_symbolizer *new_sym(const struct gs_common *c)
{
    struct gs_symbolizer *s = gs_sym_new(c->symbols);
    if (s && c->sysroot && gs_sym_sysroot(s, c->sysroot)) {
        gs_sym_free(s);
        s = NULL;
    }
    if (!s)
        fprintf(stderr, "gcspy report: out of memory\n");
    return s;
}

/* Every k-th input from `first` into ps; the number that failed. */
static size_t run_share(const struct gs_common *c, struct gs_psum *ps, size_t first, size_t k,
                        int fd)
{
    struct gs_symbolizer *sym = new_sym(c);
    size_t bad = 0;
    for (size_t i = first; i < c->npaths; i += k) {
        int rc = sym ? one(c, sym, c->paths[i], &ps[i]) : -1;
        bad += rc != 0;
        if (fd >= 0) {
            struct { uint64_t i; int32_t rc; } h = {i, rc};
            if (write(fd, &h, sizeof h) != sizeof h ||
                (!rc && write(fd, &ps[i], sizeof ps[i]) != (ssize_t)sizeof ps[i]))
                bad++;
        }
    }
    gs_sym_free(sym);
    return bad;
}

static int read_full(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* All inputs into ps with `jobs` processes; the number that failed. */
static size_t analyse(const struct gs_common *c, struct gs_psum *ps, unsigned jobs)
{
    if (jobs <= 1 || c->npaths <= 1)
        return run_share(c, ps, 0, 1, -1);
    if (jobs > c->npaths)
        jobs = (unsigned)c->npaths;
    size_t bad = 0;
    int fds[64];
    pid_t pids[64];
    for (unsigned w = 0; w < jobs; w++) {
        int pfd[2];
        fflush(NULL);
        if (pipe(pfd) || (pids[w] = fork()) < 0) {
            fprintf(stderr, "gcspy report: -j: cannot start a worker: %s\n", strerror(errno));
            jobs = w;
            bad++;
            break;
        }
        if (!pids[w]) {
            close(pfd[0]);
            for (unsigned o = 0; o < w; o++)
                close(fds[o]);
            _exit(run_share(c, ps, w, jobs, pfd[1]) ? 1 : 0);
        }
        close(pfd[1]);
        fds[w] = pfd[0];
    }
    for (unsigned w = 0; w < jobs; w++) {
        struct { uint64_t i; int32_t rc; } h;
        size_t want = 0;
        for (size_t i = w; i < c->npaths; i += jobs)
            want++;
        for (; want && !read_full(fds[w], &h, sizeof h); want--) {
            if (h.i >= c->npaths || (!h.rc && read_full(fds[w], &ps[h.i], sizeof ps[h.i]))) {
                want = 1;
                break;
            }
            bad += h.rc != 0;
        }
        bad += want; /* a worker that died: its remaining inputs failed */
        close(fds[w]);
        int st;
        while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR)
            ;
    }
    return bad;
}

/* DIR/<trace's name>.summary.json for each input; 0 or -1. */
static int write_summaries(const struct gs_common *c, const struct gs_psum *ps, const char *dir)
{
    for (size_t i = 0; i < c->npaths; i++) {
        char path[4096], tmp[4096];
        snprintf(tmp, sizeof tmp, "%s", c->paths[i]);
        snprintf(path, sizeof path, "%s/%s.summary.json", dir, basename(tmp));
        FILE *f = gs_open_report("report", path);
        if (!f)
            return -1;
        gs_psum_write(f, &ps[i]);
        if (fclose(f)) {
            fprintf(stderr, "gcspy report: writing %s failed\n", path);
            return -1;
        }
    }
    return 0;
}

int gs_report_job(const struct gs_common *c, const char *output, int json, unsigned jobs,
                  const char *summary_out)
{
    struct gs_psum *ps = calloc(c->npaths ? c->npaths : 1, sizeof *ps);
    if (!ps) {
        fprintf(stderr, "gcspy report: out of memory\n");
        return 2;
    }
    int rc = 2;
    if (analyse(c, ps, jobs))
        goto out;
    if (summary_out) {
        rc = write_summaries(c, ps, summary_out) ? 2 : 0;
        goto out;
    }
    FILE *f = stdout;
    if (output && strcmp(output, "-") != 0 && !(f = gs_open_report("report", output)))
        goto out;
    int wr = gs_job_write(f, ps, c->npaths, json);
    if (f != stdout ? fclose(f) != 0 : fflush(stdout) != 0)
        wr = -1;
    if (wr)
        fprintf(stderr, "gcspy report: writing the job report to %s failed\n",
                output ? output : "standard output");
    else
        rc = 0;
out:
    free(ps);
    return rc;
}
