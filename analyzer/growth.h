/*
 * Growth detection: the leak a reachability scan cannot see, memory that is
 * still referenced but piles up (a training loop that keeps every step's loss
 * tensor in a list). For every allocation site (stack id) the live bytes are
 * sampled at checkpoints, and a least-squares line is fitted through
 * (x = checkpoint position, y = live bytes) in O(1) memory per site.
 *
 * Two axes are kept at once, because which one the report uses is known only
 * at the end: steps (x = ordinal of the MARKER step record; a checkpoint at
 * each, thinned once there are many) and time (x = seconds; a checkpoint
 * whenever the trace's clock passes the next tick, ticks 10 ms apart at first
 * and growing with elapsed time so a long trace has a few thousand).
 *
 * Sampling is lazy: a site's value changes only at its own events, so at
 * an event of time t the checkpoints at or before t that passed since the
 * site's previous event all saw the previous value, and their contribution
 * to the sums is added in closed form from prefix sums of the checkpoint x
 * values. A site costs nothing at checkpoints where it has no event.
 *
 * Checkpoints are placed by time, not by file position: records of
 * different addresses may be out of time order by a flush interval, and a
 * checkpoint must see every event before its time whatever the order they
 * were written in. An event whose time is before a checkpoint that already
 * exists simply does not account it yet; only a checkpoint read after a
 * later event of the same site (a marker written late) is seen one event
 * late, an error bounded by the flush interval.
 *
 * What stays true: checkpoint times never decrease (cps->t); a site's
 * last_cp <= cps->n; the sums of a site cover exactly [first_cp, last_cp).
 */
#ifndef GCSPY_GROWTH_H
#define GCSPY_GROWTH_H

#include <stddef.h>
#include <stdint.h>

enum { GS_AXIS_STEP = 0, GS_AXIS_TIME = 1, GS_AXIS__N };

/* Checkpoints of one axis: times, x values and their prefix sums. */
struct gs_cps {
    uint64_t *t;    /* t[k]: time of checkpoint k, non-decreasing */
    double *x;      /* x[k] of checkpoint k */
    double *px;     /* px[k] = x[0] + ... + x[k-1]; px[0] = 0 */
    double *pxx;    /* the same for x^2 */
    uint32_t n, cap;
};

/* Least-squares sums over a site's checkpoints. */
struct gs_fit {
    double n, sx, sy, sxx, sxy, syy;
};

struct gs_axis {
    struct gs_fit sum;      /* every checkpoint since the site's first event */
    struct gs_fit at_max;   /* the sums up to the last checkpoint at the peak */
    double ymax;            /* highest value at a checkpoint */
    double yfirst, yprev;
    uint32_t first_cp, last_cp;
    uint32_t max_cp;        /* at_max covers [first_cp, max_cp) */
    uint32_t ups, downs;    /* value changes between consecutive checkpoints */
    uint32_t started;
};

/* Appends a checkpoint at time t (raised to the last one's if earlier). */
int gs_cps_add(struct gs_cps *c, uint64_t t, double x);
void gs_cps_free(struct gs_cps *c);

/* How many checkpoints are at or before time t. */
static inline uint32_t gs_cps_upto(const struct gs_cps *c, uint64_t t)
{
    uint32_t n = c->n;
    if (!n || c->t[n - 1] <= t)
        return n;
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (c->t[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Accounts checkpoints [ax->last_cp, k1) at value y. */
static inline void gs_axis_flush(struct gs_axis *ax, const struct gs_cps *c, uint32_t k1,
                                 double y)
{
    uint32_t k0 = ax->last_cp;
    if (k1 <= k0)
        return;
    double k = (double)(k1 - k0);
    double sx = c->px[k1] - c->px[k0];
    double sxx = c->pxx[k1] - c->pxx[k0];
    struct gs_fit *f = &ax->sum;
    f->n += k;
    f->sx += sx;
    f->sxx += sxx;
    f->sy += y * k;
    f->sxy += y * sx;
    f->syy += y * y * k;
    if (!ax->started) {
        ax->started = 1;
        ax->first_cp = k0;
        ax->yfirst = y;
        ax->ymax = y;
        ax->at_max = *f;
        ax->max_cp = k1;
    } else {
        if (y > ax->yprev)
            ax->ups++;
        else if (y < ax->yprev)
            ax->downs++;
        if (y >= ax->ymax) {
            ax->ymax = y;
            ax->at_max = *f;
            ax->max_cp = k1;
        }
    }
    ax->yprev = y;
    ax->last_cp = k1;
}

/* A fitted line. */
struct gs_line {
    double slope, r2;
    double n, x0, x1;   /* points and x range of the fit */
};

/* Fits f; returns 0, or -1 when fewer than 2 points or no x spread. */
int gs_fit_line(const struct gs_fit *f, const struct gs_cps *c, uint32_t first_cp,
                struct gs_line *out);

/* Parameters of the verdict (docs/report-json.md, "growth"). */
struct gs_growth_opts {
    uint32_t min_points;      /* checkpoints in the fit (default 5) */
    double min_r2;            /* goodness of fit (default 0.8) */
    double min_bytes;         /* fitted rise over the fit window (default 64 KiB) */
};

/* The verdict for one site on one axis: 1 = suspect, with *line filled. */
int gs_growth_judge(const struct gs_axis *ax, const struct gs_cps *c,
                    const struct gs_growth_opts *o, struct gs_line *line);

#endif /* GCSPY_GROWTH_H */
