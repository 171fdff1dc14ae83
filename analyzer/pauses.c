/*
 * Pauses (analyze.h): which intervals are pauses (gs_pauses_gather), and
 * their impact for the result (gs_build_pauses, analyze_int.h): count,
 * total, share of wall time, percentiles, the longest ten, and minimum
 * mutator utilisation.
 *
 * MMU(w) is the smallest fraction of any window of length w inside the run
 * during which the program was not paused (Cheng and Blelloch). Pauses of
 * different kinds may overlap (a Python collection while another thread
 * waits in cudaFree), so the paused time is the union of the intervals. The
 * window that holds the most pause time starts at a pause's start or ends at
 * a pause's end, so only those 2n windows are tried, each costing a binary
 * search in the prefix sums of the merged intervals.
 */
#include "analyze_int.h"

#include <stdlib.h>
#include <string.h>

static const uint64_t mmu_windows[GS_NMMU] = {
    1000000ull, 2000000ull, 5000000ull, 10000000ull, 20000000ull, 50000000ull,
    100000000ull, 200000000ull, 500000000ull, 1000000000ull, 2000000000ull,
    5000000000ull, 10000000000ull,
};

static int by_start(const void *a, const void *b)
{
    const struct gs_pause *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return x->t1 < y->t1 ? -1 : x->t1 > y->t1;
}

static int by_dur_desc(const void *a, const void *b)
{
    const struct gs_pause *x = a, *y = b;
    uint64_t dx = x->t1 - x->t0, dy = y->t1 - y->t0;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Merged intervals with prefix sums of their lengths. */
struct merged {
    uint64_t *s, *e, *pre;  /* pre[i] = length of intervals 0..i-1 */
    size_t n;
};

/* Paused time inside [a, b). */
static uint64_t covered(const struct merged *m, uint64_t a, uint64_t b)
{
    /* first interval ending after a */
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->e[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;
    /* first interval starting at or after b */
    lo = i;
    hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->s[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t j = lo;
    if (j <= i)
        return 0;
    uint64_t sum = m->pre[j] - m->pre[i];
    if (m->s[i] < a)
        sum -= a - m->s[i];
    if (m->e[j - 1] > b)
        sum -= m->e[j - 1] - b;
    return sum;
}

int gs_pause_len_desc(const void *a, const void *b)
{
    const struct gs_pause *x = a, *y = b;
    uint64_t dx = x->t1 - x->t0, dy = y->t1 - y->t0;
    return (dx < dy) - (dx > dy);
}

struct gs_pause *gs_pauses_gather(const struct gs_model *m, size_t cuda_keep, size_t *n,
                                  unsigned *derived)
{
    int rec_scan = 0, rec_cuda = 0;
    for (size_t i = 0; i < m->pauses.n; i++) {
        rec_scan |= m->pauses.v[i].kind == GS_PAUSE_SCAN;
        rec_cuda |= m->pauses.v[i].kind == GS_PAUSE_CUDA_SYNC;
    }
    size_t cap = m->pauses.n + (rec_scan ? 0 : m->scan_pauses.n) + (rec_cuda ? 0 : m->cuda_calls.n);
    struct gs_pause *v = malloc((cap ? cap : 1) * sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0;
    *derived = 0;
    if (m->pauses.n)
        memcpy(v, m->pauses.v, m->pauses.n * sizeof *v);
    k += m->pauses.n;
    if (!rec_scan && m->scan_pauses.n) {
        memcpy(v + k, m->scan_pauses.v, m->scan_pauses.n * sizeof *v);
        k += m->scan_pauses.n;
        *derived |= 1u << GS_PAUSE_SCAN;
    }
    if (!rec_cuda && m->cuda_calls.n) {
        size_t nc = m->cuda_calls.n;
        memcpy(v + k, m->cuda_calls.v, nc * sizeof *v);
        if (cuda_keep < nc) {
            qsort(v + k, nc, sizeof *v, gs_pause_len_desc);
            nc = cuda_keep;
        }
        k += nc;
        *derived |= 1u << GS_PAUSE_CUDA_SYNC;
    }
    *n = k;
    return v;
}

int gs_pauses_compute(struct gs_pause *v, size_t n, uint64_t wall_ns,
                      struct gs_pause_stats *out)
{
    memset(out, 0, sizeof *out);
    out->wall_ns = wall_ns;
    for (int k = 0; k < GS_NMMU; k++) {
        out->mmu[k].window_ns = mmu_windows[k];
        out->mmu[k].mmu = 1.0;
        out->mmu[k].valid = mmu_windows[k] <= wall_ns;
    }
    if (!n)
        return 0;
    out->count = n;

    uint64_t *d = malloc(n * sizeof *d);
    struct merged m = { malloc(n * sizeof *m.s), malloc(n * sizeof *m.e),
                        malloc((n + 1) * sizeof *m.pre), 0 };
    if (!d || !m.s || !m.e || !m.pre) {
        free(d);
        free(m.s);
        free(m.e);
        free(m.pre);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t dur = v[i].t1 - v[i].t0;
        d[i] = dur;
        out->total_ns += dur;
        uint32_t k = v[i].kind < 3 ? v[i].kind : 0;
        out->by_kind[k].count++;
        out->by_kind[k].total_ns += dur;
        if (dur > out->by_kind[k].max_ns)
            out->by_kind[k].max_ns = dur;
    }
    qsort(d, n, sizeof *d, u64_cmp);
    static const double q[GS_NPCT] = { 0.50, 0.90, 0.99, 1.0 };
    for (int k = 0; k < GS_NPCT; k++) {
        /* nearest rank */
        size_t r = (size_t)(q[k] * (double)n + 0.999999);
        if (r < 1)
            r = 1;
        if (r > n)
            r = n;
        out->pct_ns[k] = d[r - 1];
    }
    free(d);

    qsort(v, n, sizeof *v, by_dur_desc);
    out->nlongest = n < GS_NLONGEST ? (uint32_t)n : GS_NLONGEST;
    memcpy(out->longest, v, out->nlongest * sizeof *v);

    qsort(v, n, sizeof *v, by_start);
    m.pre[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (m.n && v[i].t0 <= m.e[m.n - 1]) {
            if (v[i].t1 > m.e[m.n - 1])
                m.e[m.n - 1] = v[i].t1;
            continue;
        }
        m.s[m.n] = v[i].t0;
        m.e[m.n] = v[i].t1;
        m.n++;
    }
    for (size_t i = 0; i < m.n; i++)
        m.pre[i + 1] = m.pre[i] + (m.e[i] - m.s[i]);
    out->union_ns = m.pre[m.n];
    uint64_t wall = wall_ns > m.e[m.n - 1] ? wall_ns : m.e[m.n - 1];
    out->wall_ns = wall;
    out->share = wall ? (double)out->union_ns / (double)wall : 0;

    for (int k = 0; k < GS_NMMU; k++) {
        uint64_t w = mmu_windows[k];
        out->mmu[k].valid = w <= wall;
        if (!out->mmu[k].valid)
            continue;
        uint64_t worst = 0;
        for (size_t i = 0; i < m.n && worst < w; i++) {
            uint64_t a = m.s[i];
            if (a + w > wall)
                a = wall - w;
            uint64_t c = covered(&m, a, a + w);
            if (c > worst)
                worst = c;
            uint64_t b = m.e[i] >= w ? m.e[i] : w;
            c = covered(&m, b - w, b);
            if (c > worst)
                worst = c;
        }
        if (worst > w)
            worst = w;
        out->mmu[k].mmu = 1.0 - (double)worst / (double)w;
    }
    free(m.s);
    free(m.e);
    free(m.pre);
    return 0;
}

int gs_build_pauses(struct gs_actx *c)
{
    const struct gs_model *m = c->m;
    struct gs_result *r = c->r;
    size_t k;
    unsigned derived;
    struct gs_pause *v = gs_pauses_gather(m, SIZE_MAX, &k, &derived);
    if (!v)
        return -1;
    int rc = gs_pauses_compute(v, k, r->duration_ns, &r->pauses);
    free(v);
    /* say which records the pauses came from */
    char src[160] = "";
    if (m->pauses.n)
        snprintf(src, sizeof src, "PAUSE records");
    if (derived & 1u << GS_PAUSE_SCAN)
        snprintf(src + strlen(src), sizeof src - strlen(src), "%sscan timings",
                 src[0] ? ", " : "");
    if (derived & 1u << GS_PAUSE_CUDA_SYNC)
        snprintf(src + strlen(src), sizeof src - strlen(src), "%sCUDA calls >= %.3g ms",
                 src[0] ? ", " : "", (double)m->opts.cuda_pause_ns / 1e6);
    r->pauses.sources = gs_arena_strdup(&r->arena, src[0] ? src : "none");
    return rc;
}
