/*
 * Growth detection (growth.h): checkpoint bookkeeping, the least-squares
 * fit and the verdict.
 *
 * The verdict fits the points up to the last checkpoint where the site was
 * at its peak, not all of them: a list of loss tensors that grows for the
 * whole run and is released when the interpreter shuts down is growth, and
 * the teardown's drop must not hide it. To keep a transient from passing as
 * growth, the peak must lie near the end of the site's life (at most a fifth
 * of its checkpoints, or two, after it).
 */
#include "growth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* The four arrays share one capacity (px and pxx hold n + 1 sums); grown
 * zeroed, so px[0] = pxx[0] = 0 from the start. */
static int cps_grow(struct gs_cps *c, size_t need)
{
    uint32_t k = c->cap;
    if (GS_GROW(c->t, k, need))
        return -1;
    k = c->cap;
    if (GS_GROW(c->x, k, need))
        return -1;
    k = c->cap;
    if (GS_GROW(c->px, k, need))
        return -1;
    k = c->cap;
    if (GS_GROW(c->pxx, k, need))
        return -1;
    c->cap = k;
    return 0;
}

int gs_cps_add(struct gs_cps *c, uint64_t t, double x)
{
    if (c->n + 2 > c->cap && cps_grow(c, (size_t)c->n + 2))
        return -1;
    if (c->n && t < c->t[c->n - 1])
        t = c->t[c->n - 1];
    c->t[c->n] = t;
    c->x[c->n] = x;
    c->px[c->n + 1] = c->px[c->n] + x;
    c->pxx[c->n + 1] = c->pxx[c->n] + x * x;
    c->n++;
    return 0;
}

void gs_cps_free(struct gs_cps *c)
{
    free(c->t);
    free(c->x);
    free(c->px);
    free(c->pxx);
    memset(c, 0, sizeof *c);
}

int gs_fit_line(const struct gs_fit *f, const struct gs_cps *c, uint32_t first_cp,
                struct gs_line *out)
{
    memset(out, 0, sizeof *out);
    if (f->n < 2 || first_cp >= c->n)
        return -1;
    double n = f->n;
    double sxx = f->sxx - f->sx * f->sx / n;
    double sxy = f->sxy - f->sx * f->sy / n;
    double syy = f->syy - f->sy * f->sy / n;
    uint32_t last = first_cp + (uint32_t)n - 1;
    if (last >= c->n)
        last = c->n - 1;
    out->n = n;
    out->x0 = c->x[first_cp];
    out->x1 = c->x[last];
    /* relative guards: the sums are differences of large numbers */
    if (!(sxx > 1e-12 * (fabs(f->sxx) + 1)))
        return -1;
    out->slope = sxy / sxx;
    if (syy > 1e-9 * (fabs(f->syy) + 1))
        out->r2 = sxy * sxy / (sxx * syy);
    else
        out->r2 = 0;
    if (out->r2 > 1)
        out->r2 = 1;
    return 0;
}

int gs_growth_judge(const struct gs_axis *ax, const struct gs_cps *c,
                    const struct gs_growth_opts *o, struct gs_line *line)
{
    memset(line, 0, sizeof *line);
    if (!ax->started || ax->ymax <= ax->yfirst)
        return 0;
    double total = ax->sum.n, upto = ax->at_max.n;
    if (upto < o->min_points)
        return 0;
    double after = total - upto;
    if (after > 2 && after > 0.2 * total)
        return 0;
    if (gs_fit_line(&ax->at_max, c, ax->first_cp, line))
        return 0;
    if (!(line->slope > 0) || line->r2 < o->min_r2)
        return 0;
    return line->slope * (line->x1 - line->x0) >= o->min_bytes;
}
