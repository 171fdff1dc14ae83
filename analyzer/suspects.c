/*
 * Growth suspects (analyze_int.h): the sites whose fit on the run's axis
 * (steps when the trace has enough step checkpoints, else time) passes the
 * verdict (growth.h), the largest rises first, max_suspects of them, each
 * with its stack symbolized.
 */
#include "analyze_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static int suspect_cmp(const void *a, const void *b)
{
    const struct gs_suspect *x = a, *y = b;
    double rx = x->rate * (x->x1 - x->x0), ry = y->rate * (y->x1 - y->x0);
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

int gs_build_suspects(struct gs_actx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    int axis = m->cps[GS_AXIS_STEP].n >= c->o->growth.min_points ? GS_AXIS_STEP : GS_AXIS_TIME;
    r->growth_axis = axis;
    r->growth_checkpoints = m->cps[axis].n;
    r->steps = m->nsteps;
    size_t n = 0, cap = 0;
    struct gs_suspect *v = NULL;
    for (uint32_t i = 0; i < m->nsites; i++) {
        const struct gs_site *s = &m->sites[i];
        const struct gs_axis *ax = &m->site_ax[(size_t)i * GS_AXIS__N + axis];
        struct gs_line line;
        if (!gs_growth_judge(ax, &m->cps[axis], &c->o->growth, &line))
            continue;
        if (GS_GROW(v, cap, n + 1)) {
            free(v);
            return -1;
        }
        struct gs_suspect *g = &v[n++];
        memset(g, 0, sizeof *g);
        g->stack_id = s->stack;
        g->mem = s->memcat;
        g->axis = axis;
        g->rate = line.slope;
        g->confidence = line.r2;
        g->points = line.n;
        g->x0 = line.x0;
        g->x1 = line.x1;
        g->start_bytes = (uint64_t)ax->yfirst;
        g->peak_bytes = (uint64_t)ax->ymax;
        g->end_bytes = s->live_bytes > 0 ? (uint64_t)s->live_bytes : 0;
        g->live_blocks = s->live_blocks;
        g->allocs = s->allocs;
    }
    if (n)
        qsort(v, n, sizeof *v, suspect_cmp);
    if (n > c->o->max_suspects)
        n = c->o->max_suspects;
    r->suspects = gs_arena_calloc(&r->arena, n ? n : 1, sizeof *r->suspects);
    if (!r->suspects) {
        free(v);
        return -1;
    }
    if (n)
        memcpy(r->suspects, v, n * sizeof *v);
    r->nsuspects = (uint32_t)n;
    free(v);
    for (uint32_t i = 0; i < r->nsuspects; i++)
        if (gs_stacks_get(&c->stacks, r->suspects[i].stack_id, &r->suspects[i].st))
            return -1;
    return 0;
}
