/*
 * `gcspy report --format collapsed`: folded stacks, the input of
 * flamegraph.pl, speedscope and inferno: one line per distinct stack,
 * "outermost;...;innermost VALUE", the value the one --value chose
 * (exports.h; leaked bytes by default), stacks whose value is 0 left out,
 * identical stacks (sites whose frames name the same lines) merged, lines
 * in byte order so that runs compare with diff(1). With several traces each
 * stack starts with a frame "pid N".
 *
 * A frame is named as in every other view (gs_frame_label, which turns
 * control characters and bytes that are not UTF-8 into '?'). The format
 * has no escaping: a ';' in a name (trace text may hold one) becomes ':',
 * so every line parses.
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

static void clean(char *s)
{
    for (; *s; s++)
        if (*s == ';')
            *s = ':';
}

/* The folded stack of site s (pid prefix when given), malloc'd; NULL when
 * out of memory. */
static char *fold(const struct gs_sitestat *s, const char *prefix)
{
    size_t cap = 256, len = 0;
    char *out = malloc(cap), buf[1024];
    if (!out)
        return NULL;
    out[0] = 0;
    for (int64_t k = (int64_t)s->st.n; k >= -1; k--) {
        const char *name;
        if (k == (int64_t)s->st.n) {
            if (!prefix)
                continue;
            name = prefix;
        } else if (k == -1) {
            if (s->st.n)
                break;
            snprintf(buf, sizeof buf, "stack %" PRIu32, s->stack_id);
            name = buf;
        } else {
            name = gs_frame_label(&s->st.f[k], buf, sizeof buf, 0);
        }
        size_t nl = strlen(name);
        if (GS_GROW(out, cap, len + nl + 2)) {
            free(out);
            return NULL;
        }
        if (len)
            out[len++] = ';';
        memcpy(out + len, name, nl + 1);
        clean(out + len);
        len += nl;
    }
    return out;
}

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
        for (uint32_t j = 0; j < r->nsites && !rc; j++) {
            uint64_t val = gs_sval_get(&r->sites[j], c->o->value);
            if (!val)
                continue;
            char *st = fold(&r->sites[j], n > 1 ? pid : NULL);
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
