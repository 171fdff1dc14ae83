/*
 * The job report over per-process summaries (job.h).
 *
 * Outliers: a process is an outlier in a metric (leaked bytes, growth rate,
 * pause time) when its value exceeds twice the median of the OTHER
 * processes' values by at least the metric's floor (64 KiB leaked, 64 KiB
 * per second or step of growth, 100 ms of pauses). The median of the others
 * rather than of all: in a job of two ranks, one leaking, the median of all
 * is half the leak and nothing would stand out. Launchers are rows but take
 * no part in outliers (their memory is not the training's). From one sorted
 * copy of the values the median without element i is found in constant time,
 * so 10,000 ranks cost a sort per metric.
 */
#include "job.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "jsonw.h"
#include "summary_json.h"

struct metric {
    const char *name;
    double (*get)(const struct gs_psum *p);
    double floor;
};

static double m_leaked(const struct gs_psum *p) { return (double)gs_psum_leaked(p); }
static double m_growth(const struct gs_psum *p) { return gs_psum_growth_rate(p); }
static double m_pauses(const struct gs_psum *p) { return (double)p->pause_total_ns; }

static const struct metric metrics[] = {
    {"leaked bytes", m_leaked, 64.0 * 1024},
    {"growth rate", m_growth, 64.0 * 1024},
    {"pause time", m_pauses, 100e6},
};
#define NMETRIC (sizeof metrics / sizeof *metrics)

static int by_rank(const void *a, const void *b)
{
    const struct gs_psum *x = a, *y = b;
    int xr = x->rank >= 0, yr = y->rank >= 0;
    if (xr != yr)
        return yr - xr; /* ranks first */
    if (xr && x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    int h = strcmp(x->host, y->host);
    if (h)
        return h;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of sorted[0..n) without one element of value v (n >= 2). */
static double median_without(const double *sorted, size_t n, double v)
{
    /* the position of one copy of v; removing it shifts what follows */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t m = n - 1;
#define AT(k) sorted[(k) < lo ? (k) : (k) + 1]
    return m % 2 ? AT(m / 2) : (AT(m / 2 - 1) + AT(m / 2)) / 2;
#undef AT
}

/* out[i * NMETRIC + k]: the median of the others when process i is an
 * outlier in metric k, else -1. Launchers never are. */
static int outliers(const struct gs_psum *ps, size_t n, double *out)
{
    size_t nw = 0;
    for (size_t i = 0; i < n; i++)
        nw += !ps[i].launcher;
    double *v = malloc((nw ? nw : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t k = 0; k < NMETRIC; k++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!ps[i].launcher)
                v[m++] = metrics[k].get(&ps[i]);
        qsort(v, m, sizeof *v, dbl_cmp);
        for (size_t i = 0; i < n; i++) {
            double x = metrics[k].get(&ps[i]), med = m >= 2 ? median_without(v, m, x) : 0;
            int out_ = !ps[i].launcher && m >= 2 && x > 2 * med && x - med >= metrics[k].floor;
            out[i * NMETRIC + k] = out_ ? med : -1;
        }
    }
    free(v);
    return 0;
}

static void who(const struct gs_psum *p, char *buf, size_t len)
{
    if (p->rank >= 0)
        snprintf(buf, len, "rank %" PRId64, p->rank);
    else
        snprintf(buf, len, "%s pid %" PRIu64, p->launcher ? "launcher" : "process", p->pid);
}

static const char *rate_unit(const struct gs_psum *p)
{
    return p->ngrowth && !strcmp(p->growth[0].axis, "step") ? "step" : "s";
}

/* Metric k's value x in its unit (growth: per step or second, as p's fit). */
static void value(size_t k, double x, const struct gs_psum *p, char *buf, size_t len)
{
    char t[32];
    if (k == 2)
        snprintf(buf, len, "%s", gs_fmt_ns(t, (uint64_t)x));
    else if (k == 1)
        snprintf(buf, len, "%s/%s", gs_fmt_bytes(t, (uint64_t)(x > 0 ? x : 0)), rate_unit(p));
    else
        snprintf(buf, len, "%s", gs_fmt_bytes(t, (uint64_t)x));
}

static void text(FILE *f, const struct gs_psum *ps, size_t n, const double *out)
{
    size_t ranks = 0, launchers = 0;
    uint64_t leaked[3] = {0, 0, 0}, blocks[3] = {0, 0, 0}, pauses = 0, peak = 0;
    for (size_t i = 0; i < n; i++) {
        ranks += ps[i].rank >= 0;
        launchers += ps[i].launcher;
        for (int c = 0; c < 3; c++) {
            leaked[c] += ps[i].leaked_bytes[c];
            blocks[c] += ps[i].leaked_blocks[c];
        }
        pauses += ps[i].pause_total_ns;
        peak += ps[i].peak_bytes;
    }
    char a[32], b[32], c[32], d[32];
    fprintf(f, "gcspy job report: %zu process%s (%zu rank%s, %zu launcher%s)\n\n", n,
            n == 1 ? "" : "es", ranks, ranks == 1 ? "" : "s", launchers, launchers == 1 ? "" : "s");
    fprintf(f, "  %-18s %-5s %-12s %8s %12s %16s %12s %12s  %s\n", "who", "local", "host", "pid",
            "leaked", "growth", "pauses", "peak", "trace");
    for (size_t i = 0; i < n; i++) {
        const struct gs_psum *p = &ps[i];
        char w[64], lr[16], g[48];
        who(p, w, sizeof w);
        if (p->rank >= 0 && p->world_size >= 0)
            snprintf(w + strlen(w), sizeof w - strlen(w), "/%" PRId64, p->world_size);
        snprintf(lr, sizeof lr, p->local_rank >= 0 ? "%" PRId64 : "-", p->local_rank);
        if (p->ngrowth)
            snprintf(g, sizeof g, "%s/%s", gs_fmt_bytes(a, (uint64_t)(p->growth[0].rate > 0 ?
                     p->growth[0].rate : 0)), rate_unit(p));
        else
            snprintf(g, sizeof g, "-");
        fprintf(f, "  %-18s %-5s %-12.12s %8" PRIu64 " %12s %16s %12s %12s  %s%s\n", w, lr, p->host,
                p->pid, gs_fmt_bytes(b, gs_psum_leaked(p)), g, gs_fmt_ns(c, p->pause_total_ns),
                gs_fmt_bytes(d, p->peak_bytes), p->trace, p->complete ? "" : " (incomplete)");
    }
    fputs("\nOUTLIERS (more than twice the others' median)\n", f);
    size_t nout = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < NMETRIC; k++) {
            double med = out[i * NMETRIC + k];
            if (med < 0)
                continue;
            char w[64], x[48], y[48];
            who(&ps[i], w, sizeof w);
            value(k, metrics[k].get(&ps[i]), &ps[i], x, sizeof x);
            value(k, med, &ps[i], y, sizeof y);
            fprintf(f, "  %s: %s %s (others' median %s)", w, metrics[k].name, x, y);
            if (k == 0 && ps[i].nsites)
                fprintf(f, "; largest: %s %s at %s", gs_fmt_bytes(a, ps[i].sites[0].bytes),
                        ps[i].sites[0].cls, ps[i].sites[0].where);
            if (k == 1 && ps[i].ngrowth)
                fprintf(f, "; from %s", ps[i].growth[0].where);
            fputc('\n', f);
            nout++;
        }
    }
    if (!nout)
        fputs("  none: every process is within twice the others' median\n", f);
    fprintf(f, "\nJOB TOTALS\n  leaked %s in %" PRIu64 " blocks (definite %s, indirect %s, "
            "possible %s)\n", gs_fmt_bytes(a, leaked[0] + leaked[1] + leaked[2]),
            blocks[0] + blocks[1] + blocks[2], gs_fmt_bytes(b, leaked[0]),
            gs_fmt_bytes(c, leaked[1]), gs_fmt_bytes(d, leaked[2]));
    fprintf(f, "  pauses %s in all; peaks summed %s\n", gs_fmt_ns(a, pauses), gs_fmt_bytes(b, peak));
}

static void json(FILE *f, const struct gs_psum *ps, size_t n, const double *out)
{
    struct gs_jw w;
    gs_jw_init(&w, f);
    gs_jw_obj(&w, NULL);
    gs_jw_str(&w, "format", "gcspy-job");
    gs_jw_u64(&w, "version", 1);
    gs_jw_arr(&w, "processes", 0);
    for (size_t i = 0; i < n; i++)
        gs_psum_json(&w, &ps[i]);
    gs_jw_end_arr(&w);
    gs_jw_arr(&w, "outliers", 0);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < NMETRIC; k++) {
            if (out[i * NMETRIC + k] < 0)
                continue;
            gs_jw_obj_compact(&w, NULL);
            gs_jw_u64(&w, "process", i);
            if (ps[i].rank >= 0)
                gs_jw_i64(&w, "rank", ps[i].rank);
            else
                gs_jw_null(&w, "rank");
            gs_jw_str(&w, "metric", metrics[k].name);
            gs_jw_dbl(&w, "value", metrics[k].get(&ps[i]));
            gs_jw_dbl(&w, "others_median", out[i * NMETRIC + k]);
            gs_jw_end_obj(&w);
        }
    gs_jw_end_arr(&w);
    gs_jw_end_obj(&w);
    fputc('\n', f);
}

int gs_job_write(FILE *f, struct gs_psum *ps, size_t n, int as_json)
{
    qsort(ps, n, sizeof *ps, by_rank);
    double *out = malloc((n ? n : 1) * NMETRIC * sizeof *out);
    if (!out || outliers(ps, n, out)) {
        free(out);
        return -1;
    }
    if (as_json)
        json(f, ps, n, out);
    else
        text(f, ps, n, out);
    free(out);
    return 0;
}
