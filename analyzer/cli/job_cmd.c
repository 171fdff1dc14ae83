/*
 * `gcspy report` over a job (report_cmd.c hands over when --job,
 * --summary-out or a summary among the inputs asks for it): each trace is
 * analysed into a per-process summary (summary.h) and freed before the
 * next, so a job of any size needs one trace's memory at a time (N with
 * -j N); summary
 * files given are read as they are. Then either the summaries are written
 * one file per trace (--summary-out DIR: the step run where the traces
 * are), or the job report is (reports/job.h).
 *
 * -j N: N threads analyse the traces (cmdutil.h's gs_each_parallel), with
 * one symbolizer between them, taken in input order (turn.h), so a frame
 * the ranks share is resolved once for the whole job. Messages about the
 * inputs are printed after, in input order. The order of the rows does not
 * depend on N: the report sorts them.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmdutil.h"
#include "commands.h"
#include "../../reports/job.h"
#include "../../reports/summary_json.h"
#include "summary.h"
#include "symbols.h"

/* What the analysing threads share, and what each input gave. */
struct jobwork {
    const struct gs_common *c;
    struct gs_symbolizer *sym;
    struct gs_psum *ps;
    int *bad;                   /* per input: 1 when it failed */
    char (*msg)[1400];          /* per input: its message for stderr, or "" */
};

/* Input i (a trace or a summary) into ps[i]; a failure or a warning into
 * msg[i], printed later in input order (the same whatever -j is). */
static void one(void *arg, size_t i, struct gs_turn *turn)
{
    struct jobwork *w = arg;
    const struct gs_common *c = w->c;
    const char *path = c->paths[i];
    char err[1200];
    w->bad[i] = 1;
    if (gs_psum_is_summary(path) > 0) {
        if (gs_psum_read(path, &w->ps[i], err, sizeof err))
            snprintf(w->msg[i], sizeof w->msg[i], "gcspy report: %s\n", err);
        else
            w->bad[i] = 0;
        return;
    }
    struct gs_analyze_opts o = c->ao;
    o.turn = turn;
    o.turn_index = i;
    struct gs_result *r = NULL;
    if (!w->sym || gs_analyze_file(path, &o, w->sym, &r, err, sizeof err)) {
        snprintf(w->msg[i], sizeof w->msg[i], "gcspy report: %s\n",
                 w->sym ? err : "out of memory");
        return;
    }
    if (c->supps.n)
        gs_supp_apply(&c->supps, r, c->ao.all_classes_mask);
    if (r->malformed)
        snprintf(w->msg[i], sizeof w->msg[i], "gcspy report: %s: malformed trace: %s\n", path,
                 r->problem);
    else if (!r->complete && !c->quiet)
        snprintf(w->msg[i], sizeof w->msg[i], "gcspy report: warning: %s is incomplete: %s\n",
                 path, r->damage);
    gs_psum_from_result(r, &w->ps[i]);
    w->bad[i] = r->malformed;
    gs_result_free(r);
}

static struct gs_symbolizer *new_sym(const struct gs_common *c)
{
    struct gs_symbolizer *s = gs_sym_new(c->symbols);
    if (s && c->sysroot && gs_sym_sysroot(s, c->sysroot)) {
        gs_sym_free(s);
        s = NULL;
    }
    return s;
}

/* All inputs into ps, `jobs` threads at a time sharing one symbolizer;
 * the number that failed. */
static size_t analyse(const struct gs_common *c, struct gs_psum *ps, unsigned jobs)
{
    size_t n = c->npaths;
    struct jobwork w = { c, new_sym(c), ps, calloc(n ? n : 1, sizeof *w.bad),
                         calloc(n ? n : 1, sizeof *w.msg) };
    size_t bad = 0;
    if (!w.bad || !w.msg || gs_each_parallel(n, jobs, one, &w)) {
        fprintf(stderr, "gcspy report: out of memory\n");
        bad = n ? n : 1;
    } else {
        for (size_t i = 0; i < n; i++) {
            fputs(w.msg[i], stderr);
            bad += w.bad[i] != 0;
        }
    }
    free(w.bad);
    free(w.msg);
    gs_sym_free(w.sym);
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
