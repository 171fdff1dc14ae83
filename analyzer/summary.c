/*
 * Per-process summaries (summary.h): made from a result (written as JSON
 * by reports/summary_json.c, a reporter), and read back by a small JSON
 * parser of our own (the document is ours and small: objects, arrays, strings, numbers,
 * true/false/null; nesting at most GS_SJ_DEPTH). Unknown keys are skipped,
 * so a later minor version's additions read; a string longer than its field
 * is cut (a field is a label, never a key to anything).
 */
#include "summary.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names.h"
#include "regfile.h"

#define GS_SJ_DEPTH 8
#define GS_SUMMARY_MAX (16u << 20)

/* ---- from a result ---- */

static void copy(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

/* The innermost frame: "function (file:line)", or module+0xoffset. */
static void where(const struct gs_stackv *st, char *out, size_t len)
{
    out[0] = 0;
    if (!st->n)
        return;
    const struct gs_frame *f = &st->f[0];
    const char *mod = f->module ? strrchr(f->module, '/') : NULL;
    mod = mod ? mod + 1 : f->module;
    if (f->function && f->file)
        snprintf(out, len, "%s (%s:%u)", f->function, f->file, f->line);
    else if (f->function)
        snprintf(out, len, "%s (%s)", f->function, mod ? mod : "?");
    else
        snprintf(out, len, "%s+0x%llx", mod ? mod : "?", (unsigned long long)f->offset);
}

static int site_cmp(const void *a, const void *b)
{
    const struct gs_psum_site *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->where, y->where);
}

void gs_psum_from_result(const struct gs_result *r, struct gs_psum *p)
{
    memset(p, 0, sizeof *p);
    copy(p->trace, sizeof p->trace, r->trace);
    copy(p->host, sizeof p->host, r->host);
    copy(p->exe, sizeof p->exe, r->exe);
    p->pid = r->pid;
    p->rank = r->rank;
    p->local_rank = r->local_rank;
    p->world_size = r->world_size;
    p->launcher = (r->flags & GS_PROC_F_LAUNCHER) != 0;
    p->complete = r->complete;
    p->duration_ns = r->duration_ns;
    p->peak_bytes = r->peak_total;
    p->rss_peak = r->rss_peak;
    /* every leak group, then the largest kept: sorted by bytes */
    struct gs_psum_site all[GS_PSUM_SITES + 1];
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->nleaks; i++) {
        const struct gs_leak *l = &r->leaks[i];
        if (l->suppressed || l->cls > GS_CLASS_POSSIBLE)
            continue;
        p->leaked_bytes[l->cls] += l->bytes;
        p->leaked_blocks[l->cls] += l->blocks;
        /* all[n] is the slot past the kept ones: sorted in, the smallest
         * of GS_PSUM_SITES + 1 falls out at the end */
        struct gs_psum_site *s = &all[n];
        copy(s->cls, sizeof s->cls, gs_class_name(l->cls));
        s->bytes = l->bytes;
        s->blocks = l->blocks;
        where(&l->st, s->where, sizeof s->where);
        qsort(all, n + 1, sizeof *all, site_cmp);
        if (n < GS_PSUM_SITES)
            n++;
    }
    memcpy(p->sites, all, n * sizeof *all);
    p->nsites = n;
    for (uint32_t i = 0; i < r->nsuspects && p->ngrowth < GS_PSUM_GROWTH; i++) {
        const struct gs_suspect *s = &r->suspects[i];
        if (s->suppressed)
            continue;
        struct gs_psum_growth *g = &p->growth[p->ngrowth++];
        copy(g->axis, sizeof g->axis, gs_axis_name(s->axis));
        g->rate = s->rate;
        g->confidence = s->confidence;
        g->peak_bytes = s->peak_bytes;
        where(&s->st, g->where, sizeof g->where);
    }
    p->pause_count = r->pauses.count;
    p->pause_total_ns = r->pauses.total_ns;
    p->pause_max_ns = r->pauses.pct_ns[GS_NPCT - 1];
    p->heap_free_bytes = r->heap.free_bytes;
    p->heap_largest_free = r->heap.largest_free;
    p->heap_ratio = r->heap.ratio;
}

uint64_t gs_psum_leaked(const struct gs_psum *p)
{
    return p->leaked_bytes[0] + p->leaked_bytes[1] + p->leaked_bytes[2];
}

double gs_psum_growth_rate(const struct gs_psum *p)
{
    return p->ngrowth ? p->growth[0].rate : 0;
}

const char *const gs_psum_classes[3] = {"definite", "indirect", "possible"};

/* ---- JSON in ---- */

struct sj {
    const char *p, *end;
    const char *err;
    int depth;
};

static void ws(struct sj *j)
{
    while (j->p < j->end && isspace((unsigned char)*j->p))
        j->p++;
}

static int expect(struct sj *j, char c)
{
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return 0;
    }
    j->err = "malformed JSON";
    return -1;
}

static void put_utf8(char **o, char *oend, unsigned u)
{
    char b[4];
    int n;
    if (u < 0x80) { b[0] = (char)u; n = 1; }
    else if (u < 0x800) { b[0] = (char)(0xc0 | u >> 6); b[1] = (char)(0x80 | (u & 63)); n = 2; }
    else { b[0] = (char)(0xe0 | u >> 12); b[1] = (char)(0x80 | ((u >> 6) & 63));
           b[2] = (char)(0x80 | (u & 63)); n = 3; }
    for (int i = 0; i < n && *o < oend; i++)
        *(*o)++ = b[i];
}

/* A string into out (len bytes, cut to fit; out may be NULL: skipped). */
static int str(struct sj *j, char *out, size_t len)
{
    if (expect(j, '"'))
        return -1;
    char *o = out, *oend = out ? out + len - 1 : NULL;
    while (j->p < j->end && *j->p != '"') {
        unsigned c = (unsigned char)*j->p++;
        if (c == '\\') {
            if (j->p >= j->end)
                break;
            c = (unsigned char)*j->p++;
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned u = 0;
                for (int k = 0; k < 4; k++, j->p++) {
                    if (j->p >= j->end || !isxdigit((unsigned char)*j->p)) {
                        j->err = "malformed JSON string";
                        return -1;
                    }
                    u = u * 16 + (unsigned)(isdigit((unsigned char)*j->p) ? *j->p - '0'
                                                  : (tolower((unsigned char)*j->p) - 'a' + 10));
                }
                if (out)
                    put_utf8(&o, oend, u);
                continue;
            }
            default: break; /* \" \\ \/ */
            }
        }
        if (out && o < oend)
            *o++ = (char)c;
    }
    if (out)
        *o = 0;
    if (j->p >= j->end) {
        j->err = "unterminated JSON string";
        return -1;
    }
    j->p++;
    return 0;
}

static int skip(struct sj *j);

/* Calls f(j, key, ctx) for each member of an object: f reads the value. */
typedef int (*member_fn)(struct sj *j, const char *key, void *ctx);
static int object(struct sj *j, member_fn f, void *ctx)
{
    if (expect(j, '{') || ++j->depth > GS_SJ_DEPTH)
        return j->err = j->err ? j->err : "JSON nested too deep", -1;
    ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        j->depth--;
        return 0;
    }
    for (;;) {
        char key[64];
        if (str(j, key, sizeof key) || expect(j, ':') || f(j, key, ctx))
            return -1;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (expect(j, '}'))
            return -1;
        j->depth--;
        return 0;
    }
}

/* Calls f(j, index, ctx) for each element of an array. */
typedef int (*elem_fn)(struct sj *j, uint32_t i, void *ctx);
static int array(struct sj *j, elem_fn f, void *ctx)
{
    if (expect(j, '[') || ++j->depth > GS_SJ_DEPTH)
        return j->err = j->err ? j->err : "JSON nested too deep", -1;
    ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        j->depth--;
        return 0;
    }
    for (uint32_t i = 0;; i++) {
        if (f(j, i, ctx))
            return -1;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (expect(j, ']'))
            return -1;
        j->depth--;
        return 0;
    }
}

static int skip_member(struct sj *j, const char *key, void *ctx)
{
    (void)key, (void)ctx;
    return skip(j);
}

static int skip_elem(struct sj *j, uint32_t i, void *ctx)
{
    (void)i, (void)ctx;
    return skip(j);
}

/* A number, or null (*null set, *v 0). */
static int num(struct sj *j, double *v, int *null)
{
    ws(j);
    *null = 0;
    if (j->end - j->p >= 4 && !memcmp(j->p, "null", 4)) {
        j->p += 4;
        *null = 1;
        *v = 0;
        return 0;
    }
    char buf[64];
    size_t n = 0;
    while (j->p + n < j->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", j->p[n]))
        n++;
    memcpy(buf, j->p, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    *v = strtod(buf, &e);
    if (!n || *e || errno) {
        j->err = "malformed JSON number";
        return -1;
    }
    j->p += n;
    return 0;
}

static int boolean(struct sj *j, int *v)
{
    ws(j);
    if (j->end - j->p >= 4 && !memcmp(j->p, "true", 4)) {
        j->p += 4;
        *v = 1;
    } else if (j->end - j->p >= 5 && !memcmp(j->p, "false", 5)) {
        j->p += 5;
        *v = 0;
    } else {
        j->err = "malformed JSON: true or false expected";
        return -1;
    }
    return 0;
}

static int skip(struct sj *j)
{
    ws(j);
    if (j->p >= j->end) {
        j->err = "JSON ends early";
        return -1;
    }
    double d;
    int b;
    switch (*j->p) {
    case '{': return object(j, skip_member, NULL);
    case '[': return array(j, skip_elem, NULL);
    case '"': return str(j, NULL, 0);
    case 't': case 'f': return boolean(j, &b);
    default: return num(j, &d, &b);
    }
}

static int u64v(struct sj *j, uint64_t *out)
{
    double d;
    int null;
    if (num(j, &d, &null))
        return -1;
    if (d < 0 || d > 1.8e19 || d != floor(d)) {
        j->err = "a count is not a whole number";
        return -1;
    }
    *out = (uint64_t)d;
    return 0;
}

static int rankv(struct sj *j, int64_t *out)
{
    double d;
    int null;
    if (num(j, &d, &null))
        return -1;
    *out = null || d < 0 ? -1 : (int64_t)d;
    return 0;
}

struct rd {
    struct gs_psum *p;
    uint64_t version;
    char format[32];
};

/* A table of an object's scalar members: key, kind, where in the struct. */
enum { F_U64, F_DBL, F_STR, F_RANK, F_BOOL };
struct field {
    const char *key;
    int kind;
    size_t off, len;            /* len: F_STR's buffer */
};
struct fields {
    const struct field *f;
    size_t n;
    void *base;
};
#define FIELD(t, k, kind, m) {k, kind, offsetof(t, m), sizeof((t *)0)->m}

/* A member of an object read through its table; unknown keys skipped. */
static int table_member(struct sj *j, const char *key, void *ctx)
{
    const struct fields *fs = ctx;
    for (size_t i = 0; i < fs->n; i++) {
        const struct field *f = &fs->f[i];
        void *at = (char *)fs->base + f->off;
        int null;
        if (strcmp(key, f->key))
            continue;
        switch (f->kind) {
        case F_U64: return u64v(j, at);
        case F_DBL: return num(j, at, &null);
        case F_STR: return str(j, at, f->len);
        case F_RANK: return rankv(j, at);
        default: return boolean(j, at);
        }
    }
    return skip(j);
}

static int table_object(struct sj *j, const struct field *f, size_t n, void *base)
{
    struct fields fs = {f, n, base};
    return object(j, table_member, &fs);
}

static const struct field cell_fields[] = {
    {"bytes", F_U64, 0, 0},
    {"blocks", F_U64, sizeof(uint64_t), 0},
};

static int leaked_member(struct sj *j, const char *key, void *ctx)
{
    struct gs_psum *p = ctx;
    for (int c = 0; c < 3; c++) {
        if (!strcmp(key, gs_psum_classes[c])) {
            uint64_t cell[2] = {0, 0};
            if (table_object(j, cell_fields, 2, cell))
                return -1;
            p->leaked_bytes[c] = cell[0];
            p->leaked_blocks[c] = cell[1];
            return 0;
        }
    }
    return skip(j);
}

static const struct field site_fields[] = {
    FIELD(struct gs_psum_site, "class", F_STR, cls),
    FIELD(struct gs_psum_site, "bytes", F_U64, bytes),
    FIELD(struct gs_psum_site, "blocks", F_U64, blocks),
    FIELD(struct gs_psum_site, "where", F_STR, where),
};

static int site_elem(struct sj *j, uint32_t i, void *ctx)
{
    struct gs_psum *p = ctx;
    struct gs_psum_site scratch;
    struct gs_psum_site *s = i < GS_PSUM_SITES ? &p->sites[p->nsites++] : &scratch;
    return table_object(j, site_fields, sizeof site_fields / sizeof *site_fields, s);
}

static const struct field growth_fields[] = {
    FIELD(struct gs_psum_growth, "axis", F_STR, axis),
    FIELD(struct gs_psum_growth, "rate", F_DBL, rate),
    FIELD(struct gs_psum_growth, "confidence", F_DBL, confidence),
    FIELD(struct gs_psum_growth, "peak_bytes", F_U64, peak_bytes),
    FIELD(struct gs_psum_growth, "where", F_STR, where),
};

static int growth_elem(struct sj *j, uint32_t i, void *ctx)
{
    struct gs_psum *p = ctx;
    struct gs_psum_growth scratch;
    struct gs_psum_growth *g = i < GS_PSUM_GROWTH ? &p->growth[p->ngrowth++] : &scratch;
    return table_object(j, growth_fields, sizeof growth_fields / sizeof *growth_fields, g);
}

static const struct field pause_fields[] = {
    FIELD(struct gs_psum, "count", F_U64, pause_count),
    FIELD(struct gs_psum, "total_ns", F_U64, pause_total_ns),
    FIELD(struct gs_psum, "max_ns", F_U64, pause_max_ns),
};
static const struct field frag_fields[] = {
    FIELD(struct gs_psum, "free_bytes", F_U64, heap_free_bytes),
    FIELD(struct gs_psum, "largest_free", F_U64, heap_largest_free),
    FIELD(struct gs_psum, "ratio", F_DBL, heap_ratio),
};
static const struct field top_fields[] = {
    FIELD(struct gs_psum, "trace", F_STR, trace),
    FIELD(struct gs_psum, "host", F_STR, host),
    FIELD(struct gs_psum, "exe", F_STR, exe),
    FIELD(struct gs_psum, "pid", F_U64, pid),
    FIELD(struct gs_psum, "duration_ns", F_U64, duration_ns),
    FIELD(struct gs_psum, "peak_bytes", F_U64, peak_bytes),
    FIELD(struct gs_psum, "rss_peak", F_U64, rss_peak),
    FIELD(struct gs_psum, "rank", F_RANK, rank),
    FIELD(struct gs_psum, "local_rank", F_RANK, local_rank),
    FIELD(struct gs_psum, "world_size", F_RANK, world_size),
    FIELD(struct gs_psum, "launcher", F_BOOL, launcher),
    FIELD(struct gs_psum, "complete", F_BOOL, complete),
};
#define N(t) (sizeof t / sizeof *t)

static int top_member(struct sj *j, const char *key, void *ctx)
{
    struct rd *r = ctx;
    struct gs_psum *p = r->p;
    if (!strcmp(key, "format"))
        return str(j, r->format, sizeof r->format);
    if (!strcmp(key, "version"))
        return u64v(j, &r->version);
    if (!strcmp(key, "leaked"))
        return object(j, leaked_member, p);
    if (!strcmp(key, "sites"))
        return array(j, site_elem, p);
    if (!strcmp(key, "growth"))
        return array(j, growth_elem, p);
    if (!strcmp(key, "pauses"))
        return table_object(j, pause_fields, N(pause_fields), p);
    if (!strcmp(key, "fragmentation"))
        return table_object(j, frag_fields, N(frag_fields), p);
    struct fields fs = {top_fields, N(top_fields), p};
    return table_member(j, key, &fs);
}

/* The whole file into a buffer (a regular file, at most GS_SUMMARY_MAX). */
static char *slurp(const char *path, size_t *n, char *err, size_t errlen)
{
    int fd = gs_open_regular(path);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, fd == GS_OPEN_NOT_REGULAR ? "not a regular file"
                                                                         : strerror(errno));
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) || st.st_size > GS_SUMMARY_MAX || !(buf = malloc((size_t)st.st_size + 1))) {
        snprintf(err, errlen, "%s: %s", path, buf || st.st_size <= GS_SUMMARY_MAX
                 ? "out of memory" : "too large for a summary");
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *n = got;
    return buf;
}

int gs_psum_is_summary(const char *path)
{
    int fd = gs_open_regular(path);
    if (fd < 0)
        return -1;
    char b[64];
    ssize_t n = read(fd, b, sizeof b);
    close(fd);
    for (ssize_t i = 0; i < n; i++)
        if (!isspace((unsigned char)b[i]))
            return b[i] == '{';
    return 0;
}

int gs_psum_read(const char *path, struct gs_psum *p, char *err, size_t errlen)
{
    size_t n;
    char *buf = slurp(path, &n, err, errlen);
    if (!buf)
        return -1;
    memset(p, 0, sizeof *p);
    p->rank = p->local_rank = p->world_size = -1;
    struct rd r = {.p = p};
    struct sj j = {buf, buf + n, NULL, 0};
    int rc = object(&j, top_member, &r);
    if (!rc) {
        ws(&j);
        if (j.p != j.end)
            j.err = "text after the JSON document", rc = -1;
    }
    if (rc)
        snprintf(err, errlen, "%s: not a gcspy summary: %s at byte %zu", path, j.err,
                 (size_t)(j.p - buf));
    else if (strcmp(r.format, "gcspy-summary"))
        snprintf(err, errlen, "%s: not a gcspy summary (format '%s')", path, r.format), rc = -1;
    else if (r.version != GS_SUMMARY_VERSION)
        snprintf(err, errlen, "%s: summary version %llu, this gcspy reads version %d", path,
                 (unsigned long long)r.version, GS_SUMMARY_VERSION), rc = -1;
    free(buf);
    return rc;
}
