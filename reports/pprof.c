/*
 * `gcspy report --format pprof`: the sites of every trace as one profile in
 * pprof's format (profile.proto, reports/proto/), gzip-compressed as pprof
 * and the tools that read it expect. One sample per allocation site and
 * process, its values the site's figures (exports.h) in the order of
 * sample_types below; leaked bytes are the default sample type. Frames
 * become functions (name, file) and locations (one per distinct frame and
 * line); a frame with no symbol is named as in the text report
 * ("module+0xoffset"), its address kept in the location.
 *
 * The message is built with protoc-c's generated structs in an arena and
 * packed once; zlib writes the gzip stream. Nothing is hand-encoded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../analyzer/arena.h"
#include "../analyzer/grow.h"
#include "exports.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* The sample types, in the order of a sample's values (enum gs_siteval's
 * order, pprof's names: *_objects counts, *_space bytes). */
static const char *const types[GS_SV__N][2] = {
    { "leaked_space", "bytes" },    { "leaked_objects", "count" },
    { "peak_space", "bytes" },      { "peak_objects", "count" },
    { "alloc_objects", "count" },   { "alloc_space", "bytes" },
    { "temporary_objects", "count" }, { "temporary_space", "bytes" },
};

/* Interned keys -> 1-based ids: the string table (id - 1 is the index),
 * the functions and the locations each have one. Open addressing over
 * arena copies of the keys. */
struct intern {
    struct { const char *key; uint64_t id; } *slot;
    size_t cap, n;
};

struct pp {
    struct gs_arena a;
    struct intern strs, funcs, locs;
    char **strv;
    Function **fv;
    Location **lv;
    Sample **sv;
    size_t nstr, capstr, nf, capf, nl, capl, ns, caps;
    int failed;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* key's id in t, or 0 with *slot the empty place for it; -1 when t cannot
 * grow. */
static int lookup(struct intern *t, const char *key, uint64_t *id, size_t *slot)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        void *ns = calloc(cap, sizeof *t->slot);
        if (!ns)
            return -1;
        struct intern nt = { ns, cap, 0 };
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slot[i].key)
                continue;
            size_t j = hash_str(t->slot[i].key) & (cap - 1);
            while (nt.slot[j].key)
                j = (j + 1) & (cap - 1);
            nt.slot[j] = t->slot[i];
            nt.n++;
        }
        free(t->slot);
        *t = nt;
    }
    size_t j = hash_str(key) & (t->cap - 1);
    while (t->slot[j].key && strcmp(t->slot[j].key, key) != 0)
        j = (j + 1) & (t->cap - 1);
    *id = t->slot[j].key ? t->slot[j].id : 0;
    *slot = j;
    return 0;
}

static int64_t str_id(struct pp *p, const char *s)
{
    uint64_t id;
    size_t j;
    if (lookup(&p->strs, s, &id, &j))
        goto oom;
    if (id)
        return (int64_t)id - 1;
    char *k = gs_arena_strdup(&p->a, s);
    if (!k || GS_GROW(p->strv, p->capstr, p->nstr + 1))
        goto oom;
    p->strv[p->nstr++] = k;
    p->strs.slot[j].key = k;
    p->strs.slot[j].id = p->nstr;
    p->strs.n++;
    return (int64_t)p->nstr - 1;
oom:
    p->failed = 1;
    return 0;
}

static uint64_t func_id(struct pp *p, const struct gs_frame *f)
{
    char name[512], file[512], key[1040];
    gs_frame_label(f, name, sizeof name, 1);
    snprintf(file, sizeof file, "%s", f->file ? f->file : (f->module ? f->module : ""));
    gs_fmt_clean(file);     /* protobuf strings are UTF-8 */
    snprintf(key, sizeof key, "%s\x1f%s", name, file);
    uint64_t id;
    size_t j;
    if (lookup(&p->funcs, key, &id, &j))
        goto oom;
    if (id)
        return id;
    Function *fn = gs_arena_alloc(&p->a, sizeof *fn);
    char *k = gs_arena_strdup(&p->a, key);
    if (!fn || !k || GS_GROW(p->fv, p->capf, p->nf + 1))
        goto oom;
    perftools__profiles__function__init(fn);
    fn->id = p->nf + 1;
    fn->name = fn->system_name = str_id(p, name);
    fn->filename = str_id(p, file);
    p->fv[p->nf++] = fn;
    p->funcs.slot[j].key = k;
    p->funcs.slot[j].id = fn->id;
    p->funcs.n++;
    return fn->id;
oom:
    p->failed = 1;
    return 0;
}

static uint64_t loc_id(struct pp *p, const struct gs_frame *f)
{
    uint64_t fid = func_id(p, f);
    char key[128];
    snprintf(key, sizeof key, "%" PRIu64 ":%" PRIu32 ":%" PRIx64, fid, f->line,
             f->python ? 0 : f->ip);
    uint64_t id;
    size_t j;
    if (!fid || lookup(&p->locs, key, &id, &j))
        goto oom;
    if (id)
        return id;
    Location *l = gs_arena_alloc(&p->a, sizeof *l);
    Line *ln = gs_arena_alloc(&p->a, sizeof *ln);
    Line **lines = gs_arena_alloc(&p->a, sizeof *lines);
    char *k = gs_arena_strdup(&p->a, key);
    if (!l || !ln || !lines || !k || GS_GROW(p->lv, p->capl, p->nl + 1))
        goto oom;
    perftools__profiles__location__init(l);
    perftools__profiles__line__init(ln);
    ln->function_id = fid;
    ln->line = f->line;
    lines[0] = ln;
    l->id = p->nl + 1;
    l->address = f->python ? 0 : f->ip;
    l->n_line = 1;
    l->line = lines;
    p->lv[p->nl++] = l;
    p->locs.slot[j].key = k;
    p->locs.slot[j].id = l->id;
    p->locs.n++;
    return l->id;
oom:
    p->failed = 1;
    return 0;
}

/* One site's sample, labelled with its process; skipped when every value
 * is 0. */
static void add_sample(struct pp *p, const struct gs_result *r, const struct gs_sitestat *s)
{
    int any = 0;
    for (int v = 0; v < GS_SV__N; v++)
        any |= gs_sval_get(s, v) != 0;
    if (!any)
        return;
    Sample *sm = gs_arena_alloc(&p->a, sizeof *sm);
    int64_t *val = gs_arena_calloc(&p->a, GS_SV__N, sizeof *val);
    uint64_t *locs = gs_arena_calloc(&p->a, s->st.n ? s->st.n : 1, sizeof *locs);
    Label *lb = gs_arena_alloc(&p->a, sizeof *lb);
    Label **lbs = gs_arena_alloc(&p->a, sizeof *lbs);
    if (!sm || !val || !locs || !lb || !lbs || GS_GROW(p->sv, p->caps, p->ns + 1)) {
        p->failed = 1;
        return;
    }
    perftools__profiles__sample__init(sm);
    perftools__profiles__label__init(lb);
    for (int v = 0; v < GS_SV__N; v++)
        val[v] = (int64_t)gs_sval_get(s, v);
    for (uint32_t k = 0; k < s->st.n; k++)
        locs[k] = loc_id(p, &s->st.f[k]);
    if (!s->st.n) { /* unsymbolized or unknown: one frame naming the stack */
        char name[32];
        struct gs_frame f = { .function = name };
        snprintf(name, sizeof name, "stack %" PRIu32, s->stack_id);
        locs[0] = loc_id(p, &f);
    }
    lb->key = str_id(p, "pid");
    lb->num = (int64_t)r->pid;
    lbs[0] = lb;
    sm->n_value = GS_SV__N;
    sm->value = val;
    sm->n_location_id = s->st.n ? s->st.n : 1;
    sm->location_id = locs;
    sm->n_label = 1;
    sm->label = lbs;
    p->sv[p->ns++] = sm;
}

/* The packed profile through zlib's gzip writer; 0 or -1. */
static int write_gz(FILE *out, const uint8_t *buf, size_t len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* 15 + 16: a gzip header and trailer around the deflate stream */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    unsigned char obuf[16384];
    z.next_in = (Bytef *)buf;
    z.avail_in = (uInt)len;
    int st, rc = 0;
    do {
        z.next_out = obuf;
        z.avail_out = sizeof obuf;
        st = deflate(&z, Z_FINISH);
        size_t got = sizeof obuf - z.avail_out;
        if (st == Z_STREAM_ERROR || fwrite(obuf, 1, got, out) != got)
            rc = -1;
    } while (st == Z_OK && !rc);
    deflateEnd(&z);
    return rc || st != Z_STREAM_END ? -1 : 0;
}

static int pack_and_write(struct pp *p, FILE *out, const struct gs_report_item *items, size_t n)
{
    Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
    ValueType vt[GS_SV__N], *vtp[GS_SV__N];
    for (int v = 0; v < GS_SV__N; v++) {
        perftools__profiles__value_type__init(&vt[v]);
        vt[v].type = str_id(p, types[v][0]);
        vt[v].unit = str_id(p, types[v][1]);
        vtp[v] = &vt[v];
    }
    ValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    period.type = vt[GS_SV_ALLOC_BYTES].type;
    period.unit = vt[GS_SV_ALLOC_BYTES].unit;
    uint64_t dur = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gs_result *r = items[i].r;
        if (!r)
            continue;
        if (!prof.time_nanos)
            prof.time_nanos = (int64_t)r->wall_ns;
        if (r->duration_ns > dur)
            dur = r->duration_ns;
        for (uint32_t j = 0; j < r->nsitestats; j++)
            add_sample(p, r, &r->sitestats[j]);
    }
    prof.default_sample_type = vt[GS_SV_LEAKED].type;
    if (p->failed)
        return -1;
    prof.n_sample_type = GS_SV__N;
    prof.sample_type = vtp;
    prof.n_sample = p->ns;
    prof.sample = p->sv;
    prof.n_location = p->nl;
    prof.location = p->lv;
    prof.n_function = p->nf;
    prof.function = p->fv;
    prof.n_string_table = p->nstr;
    prof.string_table = p->strv;
    prof.duration_nanos = (int64_t)dur;
    prof.period_type = &period;
    prof.period = 1;
    size_t len = perftools__profiles__profile__get_packed_size(&prof);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -1;
    perftools__profiles__profile__pack(&prof, buf);
    int rc = write_gz(out, buf, len);
    free(buf);
    return rc;
}

static int summary(struct gs_report_ctx *c, const struct gs_report_item *items, size_t n)
{
    struct pp *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    str_id(p, "");  /* string_table[0] must be "" */
    int rc = pack_and_write(p, c->out, items, n);
    free(p->strs.slot);
    free(p->funcs.slot);
    free(p->locs.slot);
    free(p->strv);
    free(p->fv);
    free(p->lv);
    free(p->sv);
    gs_arena_free(&p->a);
    free(p);
    if (rc)
        c->err = 1;
    return rc;
}

const struct gs_reporter gs_reporter_pprof = {
    .name = "pprof",
    .summary = summary,
};
