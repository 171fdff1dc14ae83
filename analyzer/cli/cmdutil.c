/*
 * Shared command plumbing (cmdutil.h): the CLI's argument helpers and
 * number parsing, the options report and check share, and loading the
 * traces into results (a malformed trace named on stderr, quiet or not).
 */
#include "cmdutil.h"
#include "findings.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "regfile.h"

int gs_arg_val(struct gs_args *a, const char *name, const char **val)
{
    const char *s = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(s, name, n) != 0)
        return 0;
    if (s[n] == '=') {
        *val = s + n + 1;
        a->i++;
        return 1;
    }
    if (s[n] != 0)
        return 0;
    if (a->i + 1 >= a->argc) {
        fprintf(stderr, "gcspy %s: option '%s' needs a value\n", a->cmd, name);
        a->bad = 1;
        a->i++;
        return 1;
    }
    *val = a->argv[a->i + 1];
    a->i += 2;
    return 1;
}

int gs_arg_flag(struct gs_args *a, const char *name)
{
    if (strcmp(a->argv[a->i], name) != 0)
        return 0;
    a->i++;
    return 1;
}

int gs_parse_num(struct gs_args *a, const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || v < 0) {
        fprintf(stderr, "gcspy %s: %s: '%s' is not a non-negative number\n", a->cmd, opt, s);
        a->bad = 1;
        return -1;
    }
    *out = v;
    return 0;
}

int gs_parse_size(struct gs_args *a, const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mul = 1;
    if (end != s && *end) {
        switch (*end) {
        case 'k': case 'K': mul = 1024.0; break;
        case 'm': case 'M': mul = 1024.0 * 1024; break;
        case 'g': case 'G': mul = 1024.0 * 1024 * 1024; break;
        case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; break;
        default: mul = 0;
        }
        if (mul && end[1] && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)
            mul = 0;
    }
    if (end == s || errno || !isfinite(v) || v < 0 || mul == 0 || v * mul > 1.8e19) {
        fprintf(stderr, "gcspy %s: %s: '%s' is not a size (a number, optionally with K, M or G)\n",
                a->cmd, opt, s);
        a->bad = 1;
        return -1;
    }
    *out = (uint64_t)(v * mul + 0.5);
    return 0;
}

int gs_parse_count(struct gs_args *a, const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *s == '-' || *s == '+' || *end || errno) {
        fprintf(stderr, "gcspy %s: %s: '%s' is not a count (a whole number, 0 or more)\n",
                a->cmd, opt, s);
        a->bad = 1;
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- N traces at a time ---- */

struct pfor {
    size_t n;
    void (*fn)(void *arg, size_t i, struct gs_turn *turn);
    void *arg;
    struct gs_turn turn;
    pthread_mutex_t mu;
    size_t next;                /* handed out in increasing order (turn.h) */
};

static void *pfor_worker(void *arg)
{
    struct pfor *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n)
            return NULL;
        p->fn(p->arg, i, &p->turn);
        gs_turn_skip(&p->turn, i);
    }
}

int gs_each_parallel(size_t n, unsigned jobs,
                     void (*fn)(void *arg, size_t i, struct gs_turn *turn), void *arg)
{
    if (jobs > n)
        jobs = (unsigned)n;
    if (jobs <= 1) {
        for (size_t i = 0; i < n; i++)
            fn(arg, i, NULL);
        return 0;
    }
    pthread_t *th = calloc(jobs, sizeof *th);
    if (!th)
        return -1;
    struct pfor p = { .n = n, .fn = fn, .arg = arg };
    gs_turn_init(&p.turn);
    pthread_mutex_init(&p.mu, NULL);
    unsigned started = 0;
    for (; started + 1 < jobs; started++)
        if (pthread_create(&th[started], NULL, pfor_worker, &p))
            break; /* fewer threads: the others take up the work */
    pfor_worker(&p); /* this thread is one of them */
    for (unsigned k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    pthread_mutex_destroy(&p.mu);
    gs_turn_destroy(&p.turn);
    free(th);
    return 0;
}

/* ---- loading traces ---- */

/* What gs_load_traces's threads share: the inputs and where each result
 * goes. */
struct loader {
    char **paths;
    const struct gs_analyze_opts *o;
    struct gs_symbolizer *sym;
    int *rc;                    /* per trace: gs_analyze_file's */
    char (*err)[1024];          /* per trace: its message when rc != 0 */
    struct gs_result **results;
    int pipeline;               /* threads to spare: each trace read on one more */
};

/* Analyses trace i, symbolizing in its turn when threads share sym. */
static void load_one(void *arg, size_t i, struct gs_turn *turn)
{
    struct loader *l = arg;
    struct gs_analyze_opts o = *l->o;
    o.turn = turn;
    o.turn_index = i;
    o.pipeline = l->pipeline;
    l->rc[i] = gs_analyze_file(l->paths[i], &o, l->sym, &l->results[i], l->err[i],
                               sizeof l->err[i]);
}

int gs_load_traces(const char *cmd, char **paths, size_t n, const struct gs_analyze_opts *o,
                   int symbols, const char *sysroot, const struct gs_supps *supps, int quiet,
                   unsigned jobs, struct gs_loaded *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->items = calloc(n ? n : 1, sizeof *out->items);
    out->results = calloc(n ? n : 1, sizeof *out->results);
    out->errors = calloc(n ? n : 1, sizeof *out->errors);
    out->sym = gs_sym_new(symbols);
    if (!out->items || !out->results || !out->errors || !out->sym ||
        (sysroot && gs_sym_sysroot(out->sym, sysroot)))
        return -1;
    /* twice as many threads as traces: each trace's reading gets one */
    struct loader l = { .paths = paths, .o = o, .sym = out->sym, .results = out->results,
                        .pipeline = n && jobs >= 2 * n };
    l.rc = calloc(n ? n : 1, sizeof *l.rc);
    l.err = calloc(n ? n : 1, sizeof *l.err);
    int rc = !l.rc || !l.err || gs_each_parallel(n, jobs, load_one, &l) ? -1 : 0;
    /* then in trace order, whatever the threads' order was: the same
     * messages in the same order as with one thread */
    for (size_t i = 0; i < n && !rc; i++) {
        struct gs_report_item *it = &out->items[i];
        it->trace = paths[i];
        if (l.rc[i]) {
            out->errors[i] = strdup(l.err[i]);
            if (!out->errors[i]) {
                rc = -1;
                break;
            }
            it->error = out->errors[i];
            out->unreadable++;
            continue;
        }
        struct gs_result *r = out->results[i];
        /* the sites and findings again, now that suppressions set some apart */
        if (supps)
            gs_supp_apply(supps, r, o->all_classes_mask);
        if (gs_findings_build(r, o->userframe)) {
            rc = -1;
            break;
        }
        it->r = r;
        if (r->malformed) {
            /* an error, quiet or not: the caller exits 2 */
            out->malformed++;
            fprintf(stderr, "gcspy %s: %s: malformed trace: %s", cmd, paths[i], r->problem);
            if (r->problems > 1)
                fprintf(stderr, " (and %" PRIu64 " more problem%s)", r->problems - 1,
                        r->problems == 2 ? "" : "s");
            fputc('\n', stderr);
        } else if (!r->complete && !quiet) {
            fprintf(stderr, "gcspy %s: warning: %s is incomplete: %s\n", cmd, paths[i], r->damage);
        }
    }
    free(l.rc);
    free(l.err);
    if (rc)
        return -1;
    uint32_t np = 0;
    while (gs_sym_problem(out->sym, np))
        np++;
    out->problems = calloc(np + 1, sizeof *out->problems);
    if (!out->problems)
        return -1;
    for (uint32_t k = 0; k < np; k++)
        out->problems[k] = gs_sym_problem(out->sym, k);
    return 0;
}

int gs_load_common(const char *cmd, const struct gs_common *c, struct gs_loaded *out)
{
    int rc = gs_load_traces(cmd, c->paths, c->npaths, &c->ao, c->symbols, c->sysroot,
                            c->supps.n ? &c->supps : NULL, c->quiet, c->jobs, out);
    if (rc)
        fprintf(stderr, "gcspy %s: out of memory\n", cmd);
    return rc;
}

int gs_load_readable(const char *cmd, const struct gs_common *c, struct gs_loaded *out)
{
    if (gs_load_common(cmd, c, out))
        return -1;
    for (size_t i = 0; i < out->n; i++)
        if (out->items[i].error)
            fprintf(stderr, "gcspy %s: %s\n", cmd, out->items[i].error);
    return out->unreadable ? -1 : 0;
}

void gs_loaded_free(struct gs_loaded *l)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->results)
            gs_result_free(l->results[i]);
        if (l->errors)
            free(l->errors[i]);
    }
    free(l->items);
    free(l->results);
    free(l->errors);
    free(l->problems);
    gs_sym_free(l->sym);
    memset(l, 0, sizeof *l);
}

/* ---- the options report and check share ---- */

int gs_common_init(struct gs_common *c, int argc)
{
    memset(c, 0, sizeof *c);
    gs_analyze_defaults(&c->ao);
    c->symbols = 1;
    c->paths = calloc((size_t)argc + 1, sizeof *c->paths);
    return c->paths ? 0 : -1;
}

int gs_common_arg(struct gs_args *a, struct gs_common *c)
{
    const char *s = a->argv[a->i], *v;
    uint64_t u;
    double d;
    if (c->dashdash || s[0] != '-' || strcmp(s, "-") == 0) {
        c->paths[c->npaths++] = a->argv[a->i++];
    } else if (strcmp(s, "--") == 0) {
        c->dashdash = 1;
        a->i++;
    } else if (gs_arg_flag(a, "--no-default-suppressions")) {
        c->no_defaults = 1;
    } else if (gs_arg_val(a, "--suppressions", &v)) {
        char err[1024];
        if (!a->bad && gs_supp_load(&c->supps, v, err, sizeof err)) {
            fprintf(stderr, "gcspy %s: %s\n", a->cmd, err);
            a->bad = 1;
        }
    } else if (gs_arg_flag(a, "--no-symbols")) {
        c->symbols = 0;
    } else if (gs_arg_val(a, "--sysroot", &v)) {
        struct stat st;
        if (!a->bad && (stat(v, &st) || !S_ISDIR(st.st_mode))) {
            fprintf(stderr, "gcspy %s: --sysroot: '%s' is not a directory\n", a->cmd, v);
            a->bad = 1;
        }
        c->sysroot = v;
    } else if (gs_arg_val(a, "--cuda-pause-ms", &v)) {
        if (!a->bad && gs_parse_num(a, "--cuda-pause-ms", v, &d) == 0)
            c->ao.model.cuda_pause_ns = (uint64_t)(d * 1e6);
    } else if (gs_arg_val(a, "--growth-min-bytes", &v)) {
        if (!a->bad && gs_parse_size(a, "--growth-min-bytes", v, &u) == 0)
            c->ao.growth.min_bytes = (double)u;
    } else if (gs_arg_val(a, "--growth-min-r2", &v)) {
        if (!a->bad && gs_parse_num(a, "--growth-min-r2", v, &d) == 0)
            c->ao.growth.min_r2 = d;
    } else if (gs_arg_val(a, "--user-code", &v) || gs_arg_val(a, "--not-user-code", &v)) {
        int user = strcmp(s, "--user-code") == 0 || strncmp(s, "--user-code=", 12) == 0;
        if (!a->bad && gs_userframe_add(&c->uf, user, v)) {
            fprintf(stderr, "gcspy %s: %s: '%s' is not a list of at most %d non-empty globs\n",
                    a->cmd, user ? "--user-code" : "--not-user-code", v, GS_UF_MAXPAT);
            a->bad = 1;
        }
        c->ao.userframe = &c->uf;
    } else if (gs_arg_val(a, "-j", &v) || gs_arg_val(a, "--jobs", &v)) {
        if (!a->bad && gs_parse_count(a, "-j", v, &u) == 0)
            c->jobs = u > 64 ? 64 : (u ? (unsigned)u : 1);
    } else if (gs_arg_flag(a, "-q") || gs_arg_flag(a, "--quiet")) {
        c->quiet = 1;
    } else {
        return 0;
    }
    return 1;
}

int gs_common_finish(struct gs_args *a, struct gs_common *c)
{
    if (!c->no_defaults && gs_supp_add_defaults(&c->supps)) {
        fprintf(stderr, "gcspy %s: out of memory\n", a->cmd);
        return -1;
    }
    if (!c->npaths) {
        fprintf(stderr, "gcspy %s: no trace given (see gcspy %s --help)\n", a->cmd, a->cmd);
        return -1;
    }
    return 0;
}

void gs_common_free(struct gs_common *c)
{
    gs_supp_free(&c->supps);
    free(c->paths);
    c->paths = NULL;
}

FILE *gs_open_report(const char *cmd, const char *path)
{
    int fd = gs_open_output(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "gcspy %s: cannot write %s: %s\n", cmd, path,
                fd >= 0 ? strerror(errno) : gs_open_why(fd));
        if (fd >= 0)
            close(fd);
    }
    return f;
}
