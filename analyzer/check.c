/*
 * The CI gate's judgement (check.h): which leaks count against which limit,
 * the one-line verdict, and the detail behind a failure (the exceeded
 * limits, then the largest offending leaks and growth suspects with their
 * first frames) that JUnit failure bodies carry.
 */
#include "check.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "findings.h"
#include "fmt.h"
#include "names.h"
#include "utf8.h"

void gs_check_defaults(struct gs_check_limits *l)
{
    memset(l, 0, sizeof *l);
    l->fail_on = (1u << GS_CLASS_DEFINITE) | (1u << GS_CLASS_INDIRECT);
}

int gs_check_parse_fail_on(const char *s, uint32_t *mask, char *bad, size_t badlen)
{
    uint32_t m = 0;
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",");
        char word[64];
        if (n == 0 || n >= sizeof word) {
            snprintf(bad, badlen, "%.*s", (int)(n < 60 ? n : 60), p);
            return -1;
        }
        memcpy(word, p, n);
        word[n] = 0;
        int c = gs_class_parse(word);
        if (c >= 0)
            m |= 1u << c;
        else if (strcmp(word, "growth") == 0)
            m |= GS_CHECK_GROWTH;
        else if (strcmp(word, "all") == 0)
            m |= ((1u << GS_RC__N) - 1) | GS_CHECK_GROWTH;
        else {
            snprintf(bad, badlen, "%s", word);
            return -1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    if (!m) {
        snprintf(bad, badlen, "%s", s);
        return -1;
    }
    *mask = m;
    return 0;
}

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
}

static void classes(char *buf, size_t len, uint32_t mask)
{
    buf[0] = 0;
    for (int c = 0; c < GS_RC__N; c++)
        if (mask & (1u << c))
            append(buf, len, "%s%s", buf[0] ? "," : "", gs_class_name(c));
    if (mask & GS_CHECK_GROWTH)
        append(buf, len, "%s%s", buf[0] ? "," : "", "growth");
}

static void frame_line(char *buf, size_t len, const struct gs_frame *f)
{
    const char *mod = f->module ? strrchr(f->module, '/') : NULL;
    mod = mod ? mod + 1 : f->module;
    if (f->function)
        append(buf, len, "%s", f->function);
    else if (mod)
        append(buf, len, "%s+0x%" PRIx64, mod, f->offset);
    else
        append(buf, len, "0x%" PRIx64, f->ip);
    if (f->file && f->line)
        append(buf, len, " %s:%u", f->file, f->line);
    else if (f->file)
        append(buf, len, " %s", f->file);
}

/* The classes of a counted site that count: the lost ones and any other
 * class asked for. */
static uint32_t site_classes(const struct gs_check_limits *l)
{
    return (l->fail_on & ((1u << GS_RC__N) - 1)) | ((1u << GS_CLASS_REACHABLE) - 1);
}

/* Whether site s counts against the limits. */
static int site_counts(const struct gs_check_limits *l, const struct gs_leaksite *s)
{
    return (l->fail_on & (1u << s->worst)) && !s->suppressed && !s->inherited;
}

/* The leaks and suspects that count against the limits, into v. */
static void count(const struct gs_check_limits *l, const struct gs_result *r,
                  struct gs_verdict *v)
{
    for (uint32_t i = 0; l->per_class && i < r->nleaks; i++) {
        const struct gs_leak *g = &r->leaks[i];
        if (!(l->fail_on & (1u << g->cls)) || g->suppressed || g->inherited)
            continue;
        if (g->mem == GS_MC_DEVICE) {
            v->device_bytes += g->bytes;
        } else {
            v->leak_bytes += g->bytes;
            v->leak_blocks += g->blocks;
        }
    }
    for (uint32_t i = 0; !l->per_class && i < r->nsites; i++) {
        const struct gs_leaksite *s = &r->sites[i];
        if (!site_counts(l, s))
            continue;
        for (int k = 0; k < GS_RC__N; k++) {
            if (!(site_classes(l) & (1u << k)))
                continue;
            if (s->mem == GS_MC_DEVICE) {
                v->device_bytes += s->cls[k].bytes;
            } else {
                v->leak_bytes += s->cls[k].bytes;
                v->leak_blocks += s->cls[k].blocks;
            }
        }
    }
    if (l->fail_on & GS_CHECK_GROWTH)
        for (uint32_t i = 0; i < r->nsuspects; i++)
            v->suspects += !r->suspects[i].suppressed;
}

/* A trace that is an error whatever its leaks: malformed, or incomplete
 * when that was asked to fail. 1 with the verdict written, else 0. */
static int error_verdict(const struct gs_check_limits *l, const struct gs_result *r,
                         const char *who, struct gs_verdict *v)
{
    if (r->malformed) {
        v->status = 2;
        snprintf(v->line, sizeof v->line, "ERROR %s: malformed trace: %s", who, r->problem);
        if (r->problems > 1)
            append(v->line, sizeof v->line, " (and %" PRIu64 " more problem%s)", r->problems - 1,
                   r->problems == 2 ? "" : "s");
        snprintf(v->detail, sizeof v->detail, "%s", r->problem);
        return 1;
    }
    if (!r->complete && l->require_complete) {
        v->status = 2;
        snprintf(v->line, sizeof v->line, "ERROR %s: incomplete trace: %s", who, r->damage);
        snprintf(v->detail, sizeof v->detail, "%s", r->damage);
        return 1;
    }
    return 0;
}

struct over {
    int bytes, blocks, dev, growth, noscan;
};

/* The one-line verdict: PASS or FAIL, what leaked, what was exceeded. */
static void verdict_line(const struct gs_check_limits *l, const struct gs_result *r,
                         const char *who, const char *cl, const struct over *o,
                         struct gs_verdict *v)
{
    char b1[32], b2[32];
    snprintf(v->line, sizeof v->line, "%s %s: %s in %" PRIu64 " block%s leaked (%s)",
             v->status ? "FAIL" : "PASS", who, gs_fmt_bytes(b1, v->leak_bytes), v->leak_blocks,
             v->leak_blocks == 1 ? "" : "s", cl[0] ? cl : "no classes");
    if (v->device_bytes || l->max_device_bytes != UINT64_MAX)
        append(v->line, sizeof v->line, ", %s device", gs_fmt_bytes(b1, v->device_bytes));
    /* CUDA blocks only the CUDA runtime's memory reaches: said, never a
     * failure (gpu.md, "Held by the CUDA runtime") */
    uint64_t held = 0, nheld = 0;
    for (int mc = 0; mc < GS_MC__N; mc++) {
        held += r->summary[GS_CLASS_RUNTIME][mc].bytes;
        nheld += r->summary[GS_CLASS_RUNTIME][mc].blocks;
    }
    if (nheld)
        append(v->line, sizeof v->line, ", %s in %" PRIu64 " block%s held by the CUDA runtime",
               gs_fmt_bytes(b2, held), nheld, nheld == 1 ? "" : "s");
    if (l->fail_on & GS_CHECK_GROWTH)
        append(v->line, sizeof v->line, ", %" PRIu64 " growth suspect%s", v->suspects,
               v->suspects == 1 ? "" : "s");
    uint64_t sup = 0;
    for (int c = 0; c < GS_RC__N; c++)
        if (l->fail_on & (1u << c))
            sup += r->suppressed[c].blocks;
    if (sup)
        append(v->line, sizeof v->line, "; %" PRIu64 " block%s suppressed", sup, sup == 1 ? "" : "s");
    if (o->bytes)
        append(v->line, sizeof v->line, "; bytes > %s allowed", gs_fmt_bytes(b2, l->max_bytes));
    if (o->blocks)
        append(v->line, sizeof v->line, "; blocks > %" PRIu64 " allowed", l->max_blocks);
    if (o->dev)
        append(v->line, sizeof v->line, "; device bytes > %s allowed",
               gs_fmt_bytes(b2, l->max_device_bytes));
    if (r->leak_status == GS_LS_NO_SCAN)
        append(v->line, sizeof v->line, "; no leak scan in the trace%s",
               o->noscan ? " (--allow-no-scan accepts it)" : ", allowed");
    else if (r->leak_status == GS_LS_EXEC)
        append(v->line, sizeof v->line, "; ended by exec (a clean end, no scan needed)");
    if (!r->complete)
        append(v->line, sizeof v->line, " [incomplete trace: %s]", r->damage);
}

static void stack_lines(char *d, size_t dl, const struct gs_stackv *st)
{
    for (uint32_t k = 0; k < st->n && k < 8; k++) {
        append(d, dl, "  #%u ", k);
        frame_line(d, dl, &st->f[k]);
        append(d, dl, "\n");
    }
}

/* The detail: every exceeded limit, then the leaks and suspects behind it. */
static void verdict_detail(const struct gs_check_limits *l, const struct gs_result *r,
                           const char *cl, const struct over *o, struct gs_verdict *v)
{
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    if (o->bytes)
        append(d, dl, "leaked %" PRIu64 " bytes (%s), limit %" PRIu64 "\n", v->leak_bytes, cl,
               l->max_bytes);
    if (o->blocks)
        append(d, dl, "leaked %" PRIu64 " blocks (%s), limit %" PRIu64 "\n", v->leak_blocks, cl,
               l->max_blocks);
    if (o->dev)
        append(d, dl, "leaked %" PRIu64 " device bytes (%s), limit %" PRIu64 "\n", v->device_bytes,
               cl, l->max_device_bytes);
    if (o->growth)
        append(d, dl, "%" PRIu64 " allocation site%s grow steadily\n", v->suspects,
               v->suspects == 1 ? "" : "s");
    if (o->noscan)
        append(d, dl, "no leak scan in the trace: the process ended without one (killed, "
                      "_exit, or the scan was skipped or off), so no leak is known or ruled "
                      "out\n");
    uint32_t shown = 0;
    for (uint32_t i = 0; !l->per_class && i < r->nsites && shown < 10 &&
                         (o->bytes || o->blocks || o->dev); i++) {
        const struct gs_leaksite *s = &r->sites[i];
        if (!site_counts(l, s))
            continue;
        shown++;
        uint64_t by = 0, bl = 0;
        for (int k = 0; k < GS_RC__N; k++)
            if (site_classes(l) & (1u << k)) {
                by += s->cls[k].bytes;
                bl += s->cls[k].blocks;
            }
        append(d, dl, "\n%" PRIu64 " bytes in %" PRIu64 " blocks, %s site (", by, bl,
               gs_class_name(s->worst));
        for (int k = 0, first = 1; k < GS_RC__N; k++)
            if ((site_classes(l) & (1u << k)) && s->cls[k].blocks) {
                append(d, dl, "%s%s %" PRIu64 "/%" PRIu64, first ? "" : ", ", gs_class_name(k),
                       s->cls[k].bytes, s->cls[k].blocks);
                first = 0;
            }
        append(d, dl, "), %s%s\n", gs_memcat_name(s->mem),
               s->torch ? ", tensor (caching allocator block)" : "");
        stack_lines(d, dl, &s->st);
    }
    for (uint32_t i = 0; l->per_class && i < r->nleaks && shown < 10 &&
                         (o->bytes || o->blocks || o->dev); i++) {
        const struct gs_leak *g = &r->leaks[i];
        if (!(l->fail_on & (1u << g->cls)) || g->suppressed || g->inherited)
            continue;
        shown++;
        append(d, dl, "\n%" PRIu64 " bytes in %" PRIu64 " blocks, %s, %s%s\n", g->bytes, g->blocks,
               gs_class_name(g->cls), gs_memcat_name(g->mem),
               g->torch ? ", tensor (caching allocator block)" : "");
        stack_lines(d, dl, &g->st);
    }
    for (uint32_t i = 0, s = 0; o->growth && i < r->nsuspects && s < 5; i++) {
        const struct gs_suspect *g = &r->suspects[i];
        if (g->suppressed)
            continue;
        s++;
        append(d, dl, "\ngrowth: +%.0f %s (confidence %.2f), %s\n", g->rate,
               g->axis == GS_AXIS_STEP ? "bytes/step" : "bytes/s", g->confidence,
               gs_memcat_name(g->mem));
        stack_lines(d, dl, &g->st);
    }
}

void gs_check_eval(const struct gs_check_limits *l, const char *trace,
                   const struct gs_result *r, const char *error, struct gs_verdict *v)
{
    char cl[128];
    memset(v, 0, sizeof *v);
    if (!r) {
        /* the reader's messages name the trace already */
        v->status = 2;
        if (error)
            snprintf(v->line, sizeof v->line, "ERROR %s", error);
        else
            snprintf(v->line, sizeof v->line, "ERROR %s: not readable", trace);
        snprintf(v->detail, sizeof v->detail, "%s", error ? error : "not readable");
        return;
    }
    count(l, r, v);
    struct over o = { v->leak_bytes > l->max_bytes, v->leak_blocks > l->max_blocks,
                      v->device_bytes > l->max_device_bytes, v->suspects > 0,
                      r->leak_status == GS_LS_NO_SCAN && !l->allow_no_scan };
    classes(cl, sizeof cl, l->fail_on & ~GS_CHECK_GROWTH);
    /* the verdict line goes to a terminal: the program's command line is
     * shown without controls (C1 included) or bytes that are not UTF-8,
     * cut at 200 bytes on a character's boundary */
    char who[600], cmd[204];
    snprintf(who, sizeof who, "%s (pid %" PRIu64 " %s)", trace, r->pid,
             gs_utf8_clean(cmd, sizeof cmd, r->command ? r->command : ""));
    if (error_verdict(l, r, who, v))
        return;
    v->status = o.bytes || o.blocks || o.dev || o.growth || o.noscan;
    v->no_scan = o.noscan;
    verdict_line(l, r, who, cl, &o, v);
    verdict_detail(l, r, cl, &o, v);
}

