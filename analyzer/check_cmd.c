/*
 * `gcspy check TRACE... [limits] [--suppressions FILE] [--junit FILE]`: the
 * CI gate. One verdict line per trace on standard output; exit status 0 when
 * every trace is within its limits, 1 when a limit is exceeded, 2 on any
 * error (unreadable trace, bad option, a write that failed).
 *
 * Defaults follow LeakSanitizer: without limits any definite or indirect
 * leak fails. Giving --max-leak-bytes alone leaves the block count
 * unlimited, and the other way round, so one limit means what it says.
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmdutil.h"
#include "commands.h"

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
            m |= (1u << GS_CLASS_DEFINITE) | (1u << GS_CLASS_INDIRECT) |
                 (1u << GS_CLASS_POSSIBLE) | GS_CHECK_GROWTH;
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

void gs_check_eval(const struct gs_check_limits *l, const char *trace,
                   const struct gs_result *r, const char *error, struct gs_verdict *v)
{
    char b1[32], b2[32], cl[128];
    memset(v, 0, sizeof *v);
    if (!r) {
        v->status = 2;
        snprintf(v->line, sizeof v->line, "ERROR %s: %s", trace, error ? error : "not readable");
        snprintf(v->detail, sizeof v->detail, "%s", error ? error : "not readable");
        return;
    }
    uint64_t groups = 0;
    for (uint32_t i = 0; i < r->nleaks; i++) {
        const struct gs_leak *g = &r->leaks[i];
        if (!(l->fail_on & (1u << g->cls)) || g->suppressed || g->inherited)
            continue;
        groups++;
        if (g->mem == GS_MC_DEVICE) {
            v->device_bytes += g->bytes;
        } else {
            v->leak_bytes += g->bytes;
            v->leak_blocks += g->blocks;
        }
    }
    if (l->fail_on & GS_CHECK_GROWTH)
        for (uint32_t i = 0; i < r->nsuspects; i++)
            v->suspects += !r->suspects[i].suppressed;

    int over_bytes = v->leak_bytes > l->max_bytes;
    int over_blocks = v->leak_blocks > l->max_blocks;
    int over_dev = v->device_bytes > l->max_device_bytes;
    int over_growth = v->suspects > 0;
    classes(cl, sizeof cl, l->fail_on & ~GS_CHECK_GROWTH);
    char who[600];
    snprintf(who, sizeof who, "%s (pid %" PRIu64 " %.200s)", trace, r->pid,
             r->command ? r->command : "");
    if (!r->complete && l->require_complete) {
        v->status = 2;
        snprintf(v->line, sizeof v->line, "ERROR %s: incomplete trace: %s", who, r->damage);
        snprintf(v->detail, sizeof v->detail, "%s", r->damage);
        return;
    }
    v->status = over_bytes || over_blocks || over_dev || over_growth;
    snprintf(v->line, sizeof v->line, "%s %s: %s in %" PRIu64 " block%s leaked (%s)",
             v->status ? "FAIL" : "PASS", who, gs_fmt_bytes(b1, v->leak_bytes), v->leak_blocks,
             v->leak_blocks == 1 ? "" : "s", cl[0] ? cl : "no classes");
    if (v->device_bytes || l->max_device_bytes != UINT64_MAX)
        append(v->line, sizeof v->line, ", %s device", gs_fmt_bytes(b1, v->device_bytes));
    if (l->fail_on & GS_CHECK_GROWTH)
        append(v->line, sizeof v->line, ", %" PRIu64 " growth suspect%s", v->suspects,
               v->suspects == 1 ? "" : "s");
    uint64_t sup = 0;
    for (int c = 0; c < GS_RC__N; c++)
        if (l->fail_on & (1u << c))
            sup += r->suppressed[c].blocks;
    if (sup)
        append(v->line, sizeof v->line, "; %" PRIu64 " block%s suppressed", sup, sup == 1 ? "" : "s");
    if (over_bytes)
        append(v->line, sizeof v->line, "; bytes > %s allowed", gs_fmt_bytes(b2, l->max_bytes));
    if (over_blocks)
        append(v->line, sizeof v->line, "; blocks > %" PRIu64 " allowed", l->max_blocks);
    if (over_dev)
        append(v->line, sizeof v->line, "; device bytes > %s allowed",
               gs_fmt_bytes(b2, l->max_device_bytes));
    if (!r->complete)
        append(v->line, sizeof v->line, " [incomplete trace: %s]", r->damage);

    /* the detail: every exceeded limit, then the leaks and suspects behind it */
    char *d = v->detail;
    size_t dl = sizeof v->detail;
    if (over_bytes)
        append(d, dl, "leaked %" PRIu64 " bytes (%s), limit %" PRIu64 "\n", v->leak_bytes, cl,
               l->max_bytes);
    if (over_blocks)
        append(d, dl, "leaked %" PRIu64 " blocks (%s), limit %" PRIu64 "\n", v->leak_blocks, cl,
               l->max_blocks);
    if (over_dev)
        append(d, dl, "leaked %" PRIu64 " device bytes (%s), limit %" PRIu64 "\n", v->device_bytes,
               cl, l->max_device_bytes);
    if (over_growth)
        append(d, dl, "%" PRIu64 " allocation site%s grow steadily\n", v->suspects,
               v->suspects == 1 ? "" : "s");
    uint32_t shown = 0;
    for (uint32_t i = 0; i < r->nleaks && shown < 10 && (over_bytes || over_blocks || over_dev); i++) {
        const struct gs_leak *g = &r->leaks[i];
        if (!(l->fail_on & (1u << g->cls)) || g->suppressed || g->inherited)
            continue;
        shown++;
        append(d, dl, "\n%" PRIu64 " bytes in %" PRIu64 " blocks, %s, %s\n", g->bytes, g->blocks,
               gs_class_name(g->cls), gs_memcat_name(g->mem));
        for (uint32_t k = 0; k < g->st.n && k < 8; k++) {
            append(d, dl, "  #%u ", k);
            frame_line(d, dl, &g->st.f[k]);
            append(d, dl, "\n");
        }
    }
    for (uint32_t i = 0, s = 0; over_growth && i < r->nsuspects && s < 5; i++) {
        const struct gs_suspect *g = &r->suspects[i];
        if (g->suppressed)
            continue;
        s++;
        append(d, dl, "\ngrowth: +%.0f %s (confidence %.2f), %s\n", g->rate,
               g->axis == GS_AXIS_STEP ? "bytes/step" : "bytes/s", g->confidence,
               gs_memcat_name(g->mem));
        for (uint32_t k = 0; k < g->st.n && k < 8; k++) {
            append(d, dl, "  #%u ", k);
            frame_line(d, dl, &g->st.f[k]);
            append(d, dl, "\n");
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gcspy check TRACE... [limits] [--suppressions FILE] [--junit FILE]\n"
            "\n"
            "The CI gate: one verdict line per trace; exit status 0 when every trace is\n"
            "within the limits, 1 when one is exceeded, 2 on any error.\n"
            "\n"
            "limits (sizes take K, M, G suffixes):\n"
            "  --max-leak-bytes N         leaked host, pinned and managed bytes allowed\n"
            "  --max-leak-blocks N        leaked host, pinned and managed blocks allowed\n"
            "                             (neither given: both 0; one given: the other unlimited)\n"
            "  --max-device-leak-bytes N  leaked device bytes allowed (0)\n"
            "  --fail-on LIST             what counts, comma-separated: definite, indirect,\n"
            "                             possible, reachable, not-freed, growth, all\n"
            "                             (default definite,indirect)\n"
            "options:\n"
            "  --suppressions FILE        LeakSanitizer-format 'leak:PATTERN' lines (repeatable)\n"
            "  --junit FILE               also write JUnit XML for CI dashboards\n"
            "  --json FILE                also write the JSON report, verdicts included\n"
            "  --require-complete         an incomplete or damaged trace is an error\n"
            "  --no-symbols               do not read debug information\n"
            "  --growth-min-bytes N       least fitted rise for a growth suspect (64K)\n"
            "  -q, --quiet                print the verdict lines only\n");
}

static int write_file(const char *path, const struct gs_reporter *rep,
                      const struct gs_report_item *items, size_t n,
                      const struct gs_report_opts *ro)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gcspy check: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = gs_report_write(rep, f, items, n, ro);
    if (fclose(f) || rc) {
        fprintf(stderr, "gcspy check: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

int gs_cmd_check(int argc, char **argv)
{
    if (gs_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    struct gs_args a = { argc, argv, 1, "check", 0 };
    struct gs_analyze_opts ao;
    gs_analyze_defaults(&ao);
    struct gs_check_limits lim;
    gs_check_defaults(&lim);
    struct gs_supps supps;
    memset(&supps, 0, sizeof supps);
    const char *junit = NULL, *json = NULL, *v;
    int symbols = 1, quiet = 0, dashdash = 0, set_bytes = 0, set_blocks = 0;
    char **paths = calloc((size_t)argc, sizeof *paths);
    size_t npaths = 0;
    int rc = 2;
    if (!paths) {
        fprintf(stderr, "gcspy check: out of memory\n");
        return 2;
    }
    while (a.i < argc && !a.bad) {
        const char *s = argv[a.i];
        uint64_t u;
        if (dashdash || s[0] != '-' || strcmp(s, "-") == 0) {
            paths[npaths++] = argv[a.i++];
        } else if (strcmp(s, "--") == 0) {
            dashdash = 1;
            a.i++;
        } else if (gs_arg_val(&a, "--max-leak-bytes", &v)) {
            if (!a.bad && gs_parse_size(&a, "--max-leak-bytes", v, &u) == 0) {
                lim.max_bytes = u;
                set_bytes = 1;
            }
        } else if (gs_arg_val(&a, "--max-leak-blocks", &v)) {
            if (!a.bad && gs_parse_size(&a, "--max-leak-blocks", v, &u) == 0) {
                lim.max_blocks = u;
                set_blocks = 1;
            }
        } else if (gs_arg_val(&a, "--max-device-leak-bytes", &v)) {
            if (!a.bad && gs_parse_size(&a, "--max-device-leak-bytes", v, &u) == 0)
                lim.max_device_bytes = u;
        } else if (gs_arg_val(&a, "--fail-on", &v)) {
            char bad[128];
            if (!a.bad && gs_check_parse_fail_on(v, &lim.fail_on, bad, sizeof bad)) {
                fprintf(stderr, "gcspy check: --fail-on: unknown class '%s' (definite, indirect, "
                                "possible, reachable, not-freed, growth, all)\n", bad);
                a.bad = 1;
            }
        } else if (gs_arg_val(&a, "--suppressions", &v)) {
            char err[1024];
            if (!a.bad && gs_supp_load(&supps, v, err, sizeof err)) {
                fprintf(stderr, "gcspy check: %s\n", err);
                a.bad = 1;
            }
        } else if (gs_arg_val(&a, "--junit", &v)) {
            if (!a.bad)
                junit = v;
        } else if (gs_arg_val(&a, "--json", &v)) {
            if (!a.bad)
                json = v;
        } else if (gs_arg_flag(&a, "--require-complete")) {
            lim.require_complete = 1;
        } else if (gs_arg_flag(&a, "--no-symbols")) {
            symbols = 0;
        } else if (gs_arg_val(&a, "--growth-min-bytes", &v)) {
            if (!a.bad && gs_parse_size(&a, "--growth-min-bytes", v, &u) == 0)
                ao.growth.min_bytes = (double)u;
        } else if (gs_arg_flag(&a, "-q") || gs_arg_flag(&a, "--quiet")) {
            quiet = 1;
        } else {
            fprintf(stderr, "gcspy check: unknown option '%s' (see gcspy check --help)\n", s);
            a.bad = 1;
        }
    }
    if (a.bad)
        goto out;
    if (!npaths) {
        fprintf(stderr, "gcspy check: no trace given (see gcspy check --help)\n");
        goto out;
    }
    if (set_bytes && !set_blocks)
        lim.max_blocks = UINT64_MAX;
    if (set_blocks && !set_bytes)
        lim.max_bytes = UINT64_MAX;
    /* every group that can fail the gate is symbolized, so suppressions see it */
    ao.all_classes_mask = lim.fail_on & ((1u << GS_RC__N) - 1);

    struct gs_loaded ld;
    if (gs_load_traces("check", paths, npaths, &ao, symbols, supps.n ? &supps : NULL, quiet,
                       &ld)) {
        fprintf(stderr, "gcspy check: out of memory\n");
        gs_loaded_free(&ld);
        goto out;
    }
    struct gs_verdict *vs = calloc(ld.n, sizeof *vs);
    if (!vs) {
        fprintf(stderr, "gcspy check: out of memory\n");
        gs_loaded_free(&ld);
        goto out;
    }
    int worst = 0;
    size_t fails = 0, errors = 0;
    for (size_t i = 0; i < ld.n; i++) {
        gs_check_eval(&lim, ld.items[i].trace, ld.items[i].r, ld.items[i].error, &vs[i]);
        ld.items[i].verdict = &vs[i];
        printf("%s\n", vs[i].line);
        if (vs[i].status > worst)
            worst = vs[i].status;
        fails += vs[i].status == 1;
        errors += vs[i].status == 2;
    }
    if (!quiet) {
        for (size_t k = 0; k < supps.n; k++)
            if (supps.v[k].leaks || supps.v[k].suspects)
                printf("suppressed by leak:%s (%s:%u): %" PRIu64 " blocks, %" PRIu64 " bytes"
                       "%s\n", supps.v[k].pattern, supps.v[k].file ? supps.v[k].file : "-",
                       supps.v[k].line, supps.v[k].blocks, supps.v[k].bytes,
                       supps.v[k].suspects ? " and growth" : "");
        printf("gcspy check: %zu trace%s, %zu failed, %zu error%s\n", ld.n, ld.n == 1 ? "" : "s",
               fails, errors, errors == 1 ? "" : "s");
    }
    if (fflush(stdout))
        worst = 2;
    struct gs_report_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.show_timeline = 1;
    ro.problems = ld.problems;
    if (junit && write_file(junit, &gs_reporter_junit, ld.items, ld.n, &ro))
        worst = 2;
    if (json && write_file(json, &gs_reporter_json, ld.items, ld.n, &ro))
        worst = 2;
    rc = worst;
    free(vs);
    gs_loaded_free(&ld);
out:
    gs_supp_free(&supps);
    free(paths);
    return rc;
}
