/*
 * Sites of two runs compared (diff.h).
 */
#include "diff.h"

#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "grow.h"

struct ent {
    char *key;
    const struct gs_sitestat *site;
    uint64_t v;
    int side;                       /* 0: A, 1: B */
};

static int by_key(const void *x, const void *y)
{
    const struct ent *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : a->side - b->side;
}

static int by_change(const void *x, const void *y)
{
    const struct gs_diff_row *a = x, *b = y;
    int64_t da = (int64_t)(a->b - a->a), db = (int64_t)(b->b - b->a);
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* Every site of r with a value into *v. */
static int collect(const struct gs_result *r, int side, gs_diff_value_fn get, int which,
                   struct ent **v, size_t *n, size_t *cap)
{
    for (uint32_t i = 0; r && i < r->nsitestats; i++) {
        uint64_t val = get(&r->sitestats[i], which);
        if (!val)
            continue;
        char *k = gs_stack_text(&r->sitestats[i], NULL);
        if (!k || GS_GROW(*v, *cap, *n + 1)) {
            free(k);
            return -1;
        }
        (*v)[(*n)++] = (struct ent){ k, &r->sitestats[i], val, side };
    }
    return 0;
}

int gs_diff_sites(const struct gs_result *a, const struct gs_result *b, gs_diff_value_fn get,
                  int which, struct gs_diff *out)
{
    memset(out, 0, sizeof *out);
    struct ent *v = NULL;
    size_t n = 0, cap = 0, rcap = 0;
    int rc = collect(a, 0, get, which, &v, &n, &cap) || collect(b, 1, get, which, &v, &n, &cap)
                 ? -1
                 : 0;
    if (n)
        qsort(v, n, sizeof *v, by_key);
    for (size_t i = 0; i < n && !rc;) {
        struct gs_diff_row row = { v[i].key, v[i].site, 0, 0, 0 };
        size_t j = i;
        for (; j < n && strcmp(v[j].key, row.key) == 0; j++) {
            if (v[j].side) {
                row.b += v[j].v;
                row.site = v[j].site;
            } else {
                row.a += v[j].v;
            }
        }
        out->total_a += row.a;
        out->total_b += row.b;
        if (row.a != row.b) {
            row.status = !row.a ? GS_DIFF_NEW : !row.b ? GS_DIFF_GONE
                         : row.b > row.a ? GS_DIFF_GROWN : GS_DIFF_SHRUNK;
            out->count[row.status]++;
            if (row.b > row.a)
                out->rise += row.b - row.a;
            row.key = strdup(row.key);
            if (!row.key || GS_GROW(out->v, rcap, out->n + 1)) {
                free(row.key);
                rc = -1;
                break;
            }
            out->v[out->n++] = row;
        }
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, by_change);
    if (rc)
        gs_diff_free(out);
    return rc;
}

void gs_diff_free(struct gs_diff *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i].key);
    free(d->v);
    memset(d, 0, sizeof *d);
}

const char *gs_diff_status_name(int status)
{
    static const char *const names[] = { "new", "gone", "grown", "shrunk" };
    return status >= 0 && status < 4 ? names[status] : "?";
}
