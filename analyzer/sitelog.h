/*
 * Every site's live bytes at the growth checkpoints (growth.h), kept during
 * the replay so the HTML page can draw the growth of the suspects, which are
 * known only at the end: the very values the sites' fits took, so a chart
 * and its fitted line agree.
 *
 * The model reports each run of checkpoints [k0, k1) a site spent at one
 * value (where it flushes its fit); a site's log keeps the value at the
 * checkpoints k with k % stride == 0, and only where it changed, so a site
 * that allocated once costs one entry. When an axis's logs hold more than
 * GS_SITELOG_BUDGET entries in all, its stride doubles and the logs are
 * thinned to it: memory stays bounded by the budget and the number of
 * sites, never by the length of the trace. When thinning cannot bring the
 * logs under half the budget (more sites hold values than that), the axis
 * is dropped (off), so the work stays linear and the stride never wraps.
 * The time axis is dropped once the step axis has min_points checkpoints
 * (the report then uses steps, growth.h).
 *
 * Out of memory is sticky (failed): the model's hot path has no error
 * return there, and the analysis checks the flag at the end.
 */
#ifndef GCSPY_SITELOG_H
#define GCSPY_SITELOG_H

#include <stddef.h>
#include <stdint.h>

#include "growth.h"

#define GS_SITELOG_BUDGET (1u << 20)

struct gs_sitelog_ent {
    uint32_t k;             /* the first checkpoint at this value (k % stride == 0) */
    double y;
};

struct gs_sitelog_site {
    struct gs_sitelog_ent *v;
    uint32_t n, cap;
};

struct gs_sitelog_axis {
    struct gs_sitelog_site *site;   /* by site index */
    uint32_t nsite;
    uint32_t stride;                /* a power of two */
    uint64_t entries;
    int off;
};

struct gs_sitelog {
    struct gs_sitelog_axis ax[GS_AXIS__N];
    const struct gs_cps *steps;     /* the model's step checkpoints */
    uint32_t min_points;
    int failed;
};

void gs_sitelog_init(struct gs_sitelog *l, const struct gs_cps *steps, uint32_t min_points);
void gs_sitelog_free(struct gs_sitelog *l);
/* Site si (an index into the model's sites) held y at the checkpoints
 * [k0, k1) of axis a. */
void gs_sitelog_note(struct gs_sitelog *l, int a, uint32_t si, uint32_t k0, uint32_t k1,
                     double y);
/* Site si's values on axis a at checkpoints 0, stride, 2 stride, ... below
 * n: (n + stride - 1) / stride of them into out (0 before its first). */
void gs_sitelog_values(const struct gs_sitelog *l, int a, uint32_t si, uint32_t n, double *out);

#endif /* GCSPY_SITELOG_H */
