/*
 * `gcspy report --format collapsed`: folded stacks, the input of
 * flamegraph.pl, speedscope and inferno: one line per distinct stack,
 * "outermost;...;innermost VALUE", the value the one --value chose
 * (exports.h; leaked bytes by default), stacks whose value is 0 left out,
 * identical stacks (sites whose frames name the same lines) merged, lines
 * in byte order so that runs compare with diff(1). With several traces each
 * stack starts with a frame "pid N".
 *
 * The stacks are fmt.h's gs_stack_text, which `gcspy diff` matches on too:
 * frames named as in every other view, and since the format has no
 * escaping, a ';' inside a name made ':' so every line parses.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analyzer/grow.h"
#include "exports.h"

struct line {
    char *stack;
    uint64_t value;
};

static int by_stack(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

static int summary(struct gs_report_ctx *c, const struct gs_report_item *items, size_t n)
{
    struct line *v = NULL;
    size_t nv = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const struct gs_result *r = items[i].r;
        if (!r)
            continue;
        char pid[40];
        snprintf(pid, sizeof pid, "pid %" PRIu64, r->pid);
        for (uint32_t j = 0; j < r->nsitestats && !rc; j++) {
            uint64_t val = gs_sval_get(&r->sitestats[j], c->o->value);
            if (!val)
                continue;
            char *st = gs_stack_text(&r->sitestats[j], n > 1 ? pid : NULL);
            if (!st || GS_GROW(v, cap, nv + 1)) {
                free(st);
                rc = -1;
                break;
            }
            v[nv].stack = st;
            v[nv++].value = val;
        }
    }
    if (nv)
        qsort(v, nv, sizeof *v, by_stack);
    for (size_t i = 0; i < nv && !rc; i++) {
        uint64_t sum = v[i].value;
        while (i + 1 < nv && strcmp(v[i].stack, v[i + 1].stack) == 0)
            sum += v[++i].value;
        if (fprintf(c->out, "%s %" PRIu64 "\n", v[i].stack, sum) < 0)
            rc = -1;
    }
    for (size_t i = 0; i < nv; i++)
        free(v[i].stack);
    free(v);
    if (rc)
        c->err = 1;
    return rc;
}

const struct gs_reporter gs_reporter_collapsed = {
    .name = "collapsed",
    .summary = summary,
};
